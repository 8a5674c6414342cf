//! The pools and queues each store is made of: [`SqlStore`] over a
//! [`Backend`], of which [`crate::PgStore`] and [`crate::SqliteStore`] are
//! the two instances. Apart from the [`Backend`] trait, so the group insert
//! that the store holds can read that trait without importing the store.

use sqlx::{Database, Transaction};

use crate::PartitionLayout;
use crate::Result;
use crate::backend::Backend;
use crate::ingest::group::Batchers;
use crate::session::Sessions;

/// The [`crate::Store`] over a `Backend`'s pools ([`crate::PgStore`],
/// [`crate::SqliteStore`]).
#[derive(Debug)]
pub struct SqlStore<DB: Database> {
    /// Requests, lookups and admin work.
    pub(crate) db: Sessions<DB>,
    /// The group insert's own connections (see [`crate::ingest::group`]).
    pub(crate) batch_db: Sessions<DB>,
    /// The group insert's queues.
    pub(crate) batchers: Batchers,
    /// PostgreSQL's time partitions (unused on SQLite).
    pub(crate) layout: PartitionLayout,
}

// Not derived: a derived `Clone` would require `DB: Clone`.
impl<DB: Database> Clone for SqlStore<DB> {
    fn clone(&self) -> Self {
        Self {
            db: self.db.clone(),
            batch_db: self.batch_db.clone(),
            batchers: self.batchers.clone(),
            layout: self.layout,
        }
    }
}

// Crate-internal methods: the bound names a crate-private trait on purpose
// (what differs between backends is nobody else's business).
#[expect(private_bounds)]
impl<DB: Backend> SqlStore<DB> {
    /// Starts a write transaction.
    pub(crate) async fn begin(&self) -> Result<Transaction<'static, DB>> {
        self.db.begin().await
    }
}
