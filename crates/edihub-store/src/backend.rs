//! What the ingest, written once over both stores, needs of a backend (the
//! pools and queues each store is made of are [`crate::SqlStore`]'s, in
//! `sql_store.rs`).
//!
//! [`PgStore`](crate::PgStore) and [`SqliteStore`](crate::SqliteStore) each
//! implement [`crate::Store`] on their own (`postgres/mod.rs`,
//! `sqlite/mod.rs`), with every statement written whole per backend beside
//! them. The ingest's paths and decisions are shared ([`crate::ingest`]):
//! they run the statements a backend's connection implements
//! ([`IngestSql`], [`KeySql`], in each backend's `ingest/`), and ask the
//! backend itself only what [`Backend`] names: how a write transaction
//! starts, the keyed batch's one statement and a missing partition.

use uuid::Uuid;

use crate::ingest::keys::{Claim, KeySql};
use crate::ingest::statements::{IngestSql, Row};
use crate::session::Sessions;
use crate::{PartitionLayout, Result, StoreError};

/// A database edihub can store into: PostgreSQL or SQLite.
pub(crate) trait Backend:
    sqlx::Database<Connection: sqlx::migrate::Migrate + IngestSql + KeySql>
{
    /// The statement that starts a write transaction: `BEGIN` on PostgreSQL;
    /// `BEGIN IMMEDIATE` on SQLite, so the write lock is taken up front
    /// instead of failing when a read transaction tries to upgrade.
    const BEGIN: &'static str;

    /// A keyed group-insert batch as one autocommit statement, where the
    /// backend has one: claims `keys` (each the key of the row at its index,
    /// with the answer of a new message) and inserts the claimed requests'
    /// messages, together or not at all; returns the ids inserted, which
    /// name the claimed keys. A key whose message's fingerprint has a
    /// visible holder is not claimed; a holder that commits meanwhile fails
    /// the statement. PostgreSQL: a data-modifying CTE, which saves the
    /// transaction's `BEGIN`, second statement and `COMMIT` round trips.
    /// SQLite has no such CTEs (and its round trips stay in the process):
    /// `None`, and the batch runs as a transaction.
    fn claim_and_insert(
        sessions: &Sessions<Self>,
        keys: &[Claim<'_>],
        rows: &[Row<'_>],
    ) -> impl Future<Output = Result<Option<Vec<Uuid>>>> + Send;

    /// Creates the partition a unit of work that failed with `e` lacked
    /// (PostgreSQL: a row that found no partition, see
    /// [`crate::partitions`]); true when it did, so the work may run
    /// again. SQLite has no partitions: always false.
    fn create_missing_partition(
        sessions: &Sessions<Self>,
        e: &StoreError,
        layout: PartitionLayout,
    ) -> impl Future<Output = Result<bool>> + Send;
}
