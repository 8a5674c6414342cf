//! The PostgreSQL store: production and multi-replica deployments.
//!
//! Transactions run at READ COMMITTED: the unique indexes make concurrent
//! claims wait for each other, and each statement sees what committed before
//! it, which is all the ingest transaction needs (see [`crate::ingest`]).

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres, Transaction};

use crate::Result;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// Group inserts in flight at once (see [`crate::batch`]).
const GROUP_INSERTS: usize = 4;

/// A [`crate::Store`] on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    batcher: crate::batch::Batcher,
}

impl PgStore {
    /// Connects a pool to `url` (`postgres://…`).
    pub async fn connect(url: &str, opts: &crate::PoolSettings) -> Result<Self> {
        let connect: PgConnectOptions = url.parse()?;
        let pool = PgPoolOptions::new()
            .max_connections(opts.max_connections)
            // No ping before each use (a round trip per request): a
            // connection that died with the server fails its statement
            // instead, which is answered 503 and dropped from the pool.
            .test_before_acquire(false)
            .acquire_timeout(opts.acquire_timeout)
            .idle_timeout(Some(Duration::from_secs(300)))
            .connect_with(connect)
            .await?;
        // A few group inserts in flight let PostgreSQL flush one batch's WAL
        // while the next is being sent; more would only shrink the batches.
        let batcher = crate::batch::Batcher::spawn(GROUP_INSERTS, pool.clone());
        Ok(Self { pool, batcher })
    }

    async fn begin(&self) -> Result<Transaction<'static, Postgres>> {
        Ok(self.pool.begin_with("BEGIN").await?)
    }
}

crate::ingest::impl_sql_store!(PgStore, Postgres, MIGRATOR, "BEGIN");
