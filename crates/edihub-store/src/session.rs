//! Units of work on a pool, connected directly or through a transaction
//! pooler (see [`crate::Pooler`]).
//!
//! Connected directly, a unit of work that needs no transaction runs its
//! statements on a plain pooled connection, and each connection keeps its
//! prepared statements (sqlx's statement cache).
//!
//! A pooler in transaction mode (PgBouncer 1.18, Debian 12's) lends a
//! server connection for one transaction only and does not track prepared
//! statements. sqlx sends each statement as two round trips (`Parse` and
//! `Describe`, then `Bind` and `Execute`, each ended by a `Sync`): outside a
//! transaction the pooler may hand the second to another server connection,
//! where the statement does not exist or another client's does. And with
//! its statement cache disabled, sqlx 0.9 still names every statement
//! (`sqlx_s_1`, `sqlx_s_2`, … per client connection) and never closes it,
//! so the names of different clients collide on a shared server connection
//! (`prepared statement "sqlx_s_1" already exists`, seen in our test through
//! PgBouncer). So, behind such a pooler, every unit of work is a
//! transaction that starts with `BEGIN; DEALLOCATE ALL` (one round trip):
//! the server connection stays with us from the first statement to the
//! last, and the names left there by an earlier transaction are gone before
//! ours are prepared. Nothing else is kept on a server connection between
//! transactions: no session `SET`, no session advisory lock (migrations take
//! a transaction-scoped one, see `store.rs`), no `LISTEN`, no temporary
//! table.

use std::ops::{Deref, DerefMut};

use sqlx::pool::PoolConnection;
use sqlx::{Database, Pool, Transaction};

use crate::{Result, StoreError};

/// What starts a unit of work behind a transaction pooler.
const PINNED_BEGIN: &str = "BEGIN; DEALLOCATE ALL";

/// A pool and how its units of work start.
#[derive(Debug)]
pub(crate) struct Sessions<DB: Database> {
    /// The connections.
    pub(crate) pool: Pool<DB>,
    /// The statement that starts a write transaction.
    begin: &'static str,
    /// Whether every unit of work is a transaction (behind a pooler).
    pinned: bool,
}

// Not derived: a derived `Clone` would require `DB: Clone`.
impl<DB: Database> Clone for Sessions<DB> {
    fn clone(&self) -> Self {
        Self { pool: self.pool.clone(), begin: self.begin, pinned: self.pinned }
    }
}

impl<DB: Database> Sessions<DB> {
    /// Units of work on `pool` connected directly: transactions start with
    /// `begin`.
    pub(crate) fn direct(pool: Pool<DB>, begin: &'static str) -> Self {
        Self { pool, begin, pinned: false }
    }

    /// Units of work on `pool` behind a transaction pooler (PostgreSQL):
    /// each is a transaction starting with `BEGIN; DEALLOCATE ALL`.
    pub(crate) fn pinned(pool: Pool<DB>) -> Self {
        Self { pool, begin: PINNED_BEGIN, pinned: true }
    }

    /// Whether every unit of work is a transaction (behind a pooler).
    pub(crate) fn is_pinned(&self) -> bool {
        self.pinned
    }

    /// Starts a write transaction, safe to cancel.
    ///
    /// sqlx's `begin` is not: dropped after its `BEGIN` went out but before
    /// the answer came back, it returns the connection to the pool inside a
    /// transaction sqlx does not know about (its rollback guard acts only
    /// once the transaction is counted). The next autocommit statement on
    /// that connection would then run inside that transaction, uncommitted,
    /// while the request it served is answered as stored. A request's future
    /// is dropped whenever its client goes away (seen under load:
    /// PostgreSQL's "there is already a transaction in progress"), so the
    /// `BEGIN` runs in a task of its own, which always completes; a
    /// transaction whose caller is gone is then dropped, which rolls it back.
    pub(crate) async fn begin(&self) -> Result<Transaction<'static, DB>> {
        let (pool, begin) = (self.pool.clone(), self.begin);
        match tokio::spawn(async move { pool.begin_with(begin).await }).await {
            Ok(begun) => Ok(begun?),
            Err(e) => Err(StoreError::Invariant(format!("starting a transaction: {e}"))),
        }
    }

    /// Starts a unit of work that needs no transaction of its own: a pooled
    /// connection, or behind a pooler a transaction. End it with
    /// [`Session::done`] so that a transaction commits.
    pub(crate) async fn session(&self) -> Result<Session<DB>> {
        Ok(if self.pinned {
            Session::Pinned(self.begin().await?)
        } else {
            Session::Direct(self.pool.acquire().await?)
        })
    }
}

/// A unit of work from [`Sessions::session`]; derefs to the connection.
pub(crate) enum Session<DB: Database> {
    /// A pooled connection, connected directly.
    Direct(PoolConnection<DB>),
    /// A transaction, behind a pooler.
    Pinned(Transaction<'static, DB>),
}

impl<DB: Database> Session<DB> {
    /// Ends the unit of work, committing its transaction if it has one,
    /// and returns `value` (what the work found). A session dropped without
    /// `done` (an error on the way) rolls back.
    pub(crate) async fn done<T>(self, value: T) -> Result<T> {
        if let Session::Pinned(tx) = self {
            tx.commit().await?;
        }
        Ok(value)
    }
}

impl<DB: Database> Deref for Session<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        match self {
            Session::Direct(conn) => conn,
            Session::Pinned(tx) => tx,
        }
    }
}

impl<DB: Database> DerefMut for Session<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        match self {
            Session::Direct(conn) => conn,
            Session::Pinned(tx) => tx,
        }
    }
}
