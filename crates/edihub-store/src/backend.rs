//! What the shared parts of the two stores need of a backend (the pools
//! and queues each store is made of are [`crate::SqlStore`]'s, in
//! `sql_store.rs`).
//!
//! [`PgStore`](crate::PgStore) and [`SqliteStore`](crate::SqliteStore) each
//! implement [`crate::Store`] on their own (`postgres/mod.rs`,
//! `sqlite/mod.rs`), with the statements of most concepts written whole per
//! backend beside them. The ingest is still written once over both, as traits
//! with a single generic implementation ([`IngestSql`], [`KeySql`]); where a fingerprint's claim lives is
//! [`ClaimSql`]. [`Backend`] gathers them with what the ingest needs of a
//! backend: how a write transaction starts, the packet lookup, fingerprint
//! locks and a missing partition.

use sqlx::Database;

use crate::claims::ClaimSql;
use crate::ingest::key_statements::KeySql;
use crate::ingest::statements::{IngestSql, ScopedHolder};
use crate::session::Sessions;
use crate::{PartitionLayout, Result, Scope, StoreError};

/// A database edihub can store into: PostgreSQL or SQLite.
pub(crate) trait Backend:
    IngestSql + KeySql + ClaimSql + Database<Connection: sqlx::migrate::Migrate>
{
    /// The statement that starts a write transaction: `BEGIN` on PostgreSQL;
    /// `BEGIN IMMEDIATE` on SQLite, so the write lock is taken up front
    /// instead of failing when a read transaction tries to upgrade.
    const BEGIN: &'static str;

    /// Whether a keyed group-insert batch is first tried as one statement
    /// ([`KeySql::claim_and_insert`], a data-modifying CTE): on
    /// PostgreSQL that saves the transaction's `BEGIN`, second statement and
    /// `COMMIT` round trips; SQLite has no such CTEs, and its round trips
    /// stay in the process.
    const ONE_STATEMENT_KEYED_BATCH: bool;

    /// The holders (live or expired) of any of `fingerprints` in `scope`,
    /// for a packet's set-wise duplicate lookup (see
    /// [`crate::ingest::packet`]). The group insert's `UNION ALL` probes are
    /// prepared once per batch size; a packet grows the table by thousands
    /// of rows within the request, and a plan cached while the table was
    /// small (a scan per arm) was measured at 1–2.5 s per 256-fingerprint
    /// lookup on PostgreSQL. So each backend passes the fingerprints as one
    /// parameter to a single-relation statement it plans afresh.
    fn packet_holders(
        conn: &mut Self::Connection,
        scope: &Scope,
        fingerprints: &[&str],
    ) -> impl Future<Output = Result<Vec<ScopedHolder>>> + Send;

    /// Takes, in one global order, a transaction-scoped lock on each of
    /// `fingerprints` in `scope` before the ingest transaction inserts them
    /// one by one in packet order. Two packets that carry the same
    /// fingerprints in opposite order would otherwise each hold one claim
    /// and wait for the other's (a deadlock PostgreSQL breaks only after
    /// `deadlock_timeout`, failing one of them); now the second waits
    /// before it claims anything. The claims themselves keep packet order,
    /// which is the feed's and delivery's order. SQLite's one writer runs
    /// the transactions one at a time: nothing to do.
    fn lock_fingerprints(
        conn: &mut Self::Connection,
        scope: &Scope,
        fingerprints: &[&str],
    ) -> impl Future<Output = Result<()>> + Send;

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
