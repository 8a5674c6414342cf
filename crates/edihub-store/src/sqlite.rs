//! The SQLite store: the embedded default, one file, no server to run.
//!
//! Settings, and why:
//! - WAL journal: readers never block the writer.
//! - `synchronous = NORMAL`: a commit survives a crash of edihub (the WAL is
//!   written before we answer); only a power loss can lose the last commits.
//! - every write transaction starts with `BEGIN IMMEDIATE`, taking the write
//!   lock up front, so concurrent requests queue on `busy_timeout` instead of
//!   failing when a read transaction tries to upgrade.
//! - one group insert in flight at a time (see [`crate::batch`]): SQLite has
//!   one writer, so the new messages of concurrent requests queue in edihub
//!   and go in together, one statement and one commit per batch, instead of
//!   each request waiting for the lock on its own.

use std::str::FromStr;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};

use crate::Result;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

/// A [`crate::Store`] on an SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    batch_pool: SqlitePool,
    batchers: crate::batch::Batchers,
}

impl SqliteStore {
    /// Opens (creating if needed, with its folder) the database at `url` (`sqlite://path`).
    pub async fn connect(url: &str, opts: &crate::PoolSettings) -> Result<Self> {
        let connect = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(opts.acquire_timeout.max(std::time::Duration::from_secs(5)))
            .foreign_keys(true);
        if let Some(dir) = connect.get_filename().parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(sqlx::Error::Io)?;
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(opts.max_connections.clamp(1, 8))
            .acquire_timeout(opts.acquire_timeout)
            .connect_with(connect.clone())
            .await?;
        // SQLite has one writer: one group-insert batch in flight, of either
        // kind, on connections of its own (the second is for the reads after
        // a keyed batch's commit).
        let batch_pool = SqlitePoolOptions::new()
            .max_connections(2)
            .acquire_timeout(opts.acquire_timeout)
            .connect_with(connect.statement_cache_capacity(crate::batch::STATEMENT_CACHE))
            .await?;
        let batchers = crate::batch::Batchers::spawn(batch_pool.clone(), 1, None);
        Ok(Self { pool, batch_pool, batchers })
    }

    async fn begin(&self) -> Result<Transaction<'static, Sqlite>> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }
}

crate::ingest::impl_sql_store!(SqliteStore, Sqlite, MIGRATOR, "BEGIN IMMEDIATE");
