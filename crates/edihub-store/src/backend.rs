//! What differs between PostgreSQL and SQLite, and the one store both
//! share.
//!
//! Almost nothing differs: the statements are portable SQL and sqlx maps the
//! same Rust types onto both backends' columns, so the statements are
//! written once, per concept, as traits with a single generic
//! implementation ([`IngestSql`], [`CatalogSql`], [`QuerySql`], [`SearchSql`],
//! [`RetentionSql`], [`ConsoleSql`], [`RollupSql`], [`BacklogSql`], [`AckSql`], [`DestinationSql`], [`OutboxSql`], [`FeedSql`]; each states once which column types it
//! binds and which rows it reads). What is left is [`Backend`]: how a write
//! transaction starts, the migrations, and the one lookup that needs a
//! backend's own SQL,
//! the outbox's lease claim, the feed's visibility rule and PostgreSQL's
//! time partitions (SQLite has none); where a fingerprint's claim lives is
//! [`ClaimSql`], and retention's message purge is
//! [`crate::message_purge::MessagePurgeSql`]. [`SqlStore`] is the store over either, and its
//! [`crate::Store`] implementation (in `store.rs`) is written once.

use chrono::{DateTime, Utc};
use sqlx::{Database, Transaction};

use crate::ack_numbers::AckSql;
use crate::activity_rollup::RollupSql;
use crate::catalog::CatalogSql;
use crate::claims::ClaimSql;
use crate::console::ConsoleSql;
use crate::delivery_backlog::BacklogSql;
use crate::destinations::DestinationSql;
use crate::feed::FeedSql;
use crate::ingest::group::Batchers;
use crate::ingest::key_statements::KeySql;
use crate::ingest::statements::{IngestSql, ScopedHolder};
use crate::message_search::SearchSql;
use crate::outbox::{OutboxSql, QueueSql};
use crate::queries::QuerySql;
use crate::retention::RetentionSql;
use crate::session::Sessions;
use crate::{FinishedAttempt, PartitionLayout, Recorded, Result, Scope, StoreError};

/// A database edihub can store into: PostgreSQL or SQLite.
pub(crate) trait Backend:
    IngestSql
    + KeySql
    + ClaimSql
    + CatalogSql
    + QuerySql
    + SearchSql
    + RetentionSql
    + ConsoleSql
    + RollupSql
    + BacklogSql
    + AckSql
    + DestinationSql
    + OutboxSql
    + FeedSql
    + QueueSql
    + Database<Connection: sqlx::migrate::Migrate>
{
    /// The statement that starts a write transaction: `BEGIN` on PostgreSQL;
    /// `BEGIN IMMEDIATE` on SQLite, so the write lock is taken up front
    /// instead of failing when a read transaction tries to upgrade.
    const BEGIN: &'static str;

    /// Leases due deliveries of one destination: `$1` destination, `$2`
    /// now, `$3` lease end, `$4` limit; returns [`crate::ClaimedDelivery`]
    /// rows. PostgreSQL skips rows another replica's claim has locked
    /// (`FOR UPDATE SKIP LOCKED`); SQLite's one writer runs claims one at a time.
    const CLAIM_DELIVERIES: &'static str;

    /// [`Backend::CLAIM_DELIVERIES`] among the deliveries of messages whose
    /// id is at least `{since}` (written twice in the text, replaced by
    /// [`Backend::id_literal`] of a message-id bound): the worker's claim
    /// between two polls (see [`crate::Store::claim_recent_deliveries`]).
    const CLAIM_RECENT_DELIVERIES: &'static str;

    /// A message id as a constant of this backend's SQL.
    fn id_literal(id: uuid::Uuid) -> String;

    /// Whether a keyed group-insert batch is first tried as one statement
    /// ([`KeySql::claim_and_insert`], a data-modifying CTE): on
    /// PostgreSQL that saves the transaction's `BEGIN`, second statement and
    /// `COMMIT` round trips; SQLite has no such CTEs, and its round trips
    /// stay in the process.
    const ONE_STATEMENT_KEYED_BATCH: bool;

    /// One page of the pull feed (see [`crate::feed`]): `$1` tenant, `$2`
    /// environment, `$3`/`$4` the position to read after, `$5` a message
    /// type or NULL, `$6` the most rows to return, `$7` the most to
    /// examine; [`crate::feed::FeedRow`] rows in position order, only those
    /// no running transaction can precede: the examined ones of the type,
    /// and the last one examined.
    const FEED_PAGE: &'static str;

    /// Leases the head of a `fifo` destination's line (see
    /// `outbox/queue.rs`) if it is pending, due and not leased: `$1`
    /// destination, `$2` now, `$3` lease end; returns at most one
    /// [`crate::ClaimedDelivery`]. PostgreSQL locks the head with a plain
    /// `FOR UPDATE`, so a concurrent claim waits and then finds it leased;
    /// SQLite's one writer runs claims one at a time.
    const CLAIM_LINE_HEAD: &'static str;

    /// The schema migrations of this backend (`migrations/<backend>`).
    fn migrator() -> &'static sqlx::migrate::Migrator;

    /// Applies the pending migrations inside the caller's transaction
    /// `conn` (behind a transaction pooler, see [`crate::session`]), each in
    /// a savepoint, with a transaction-scoped lock in place of the session
    /// lock sqlx's migrator takes.
    fn migrate_in(conn: &mut Self::Connection) -> impl Future<Output = Result<()>> + Send;

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

    /// Creates the partitions of the current and the next `layout.ahead`
    /// periods that do not exist yet; returns how many ranges it created.
    fn create_partitions_ahead(
        sessions: &Sessions<Self>,
        now: DateTime<Utc>,
        layout: PartitionLayout,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Detaches and drops the partitions whose whole range ended by the
    /// cutoffs (see [`crate::partition_drop`]), paced by `pace`; returns
    /// how many periods it dropped.
    fn drop_expired_partitions(
        sessions: &Sessions<Self>,
        messages: Option<DateTime<Utc>>,
        audit: Option<DateTime<Utc>>,
        pace: &crate::Pace,
    ) -> impl Future<Output = Result<u64>> + Send;
}

/// The [`crate::Store`] over a [`Backend`]'s pools ([`crate::PgStore`],
/// [`crate::SqliteStore`]).
#[derive(Debug, Clone)]
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

// Crate-internal methods: the bound names a crate-private trait on purpose
// (what differs between backends is nobody else's business).
#[expect(private_bounds)]
impl<DB: Backend> SqlStore<DB> {
    /// Starts a write transaction.
    pub(crate) async fn begin(&self) -> Result<Transaction<'static, DB>> {
        self.db.begin().await
    }

    /// Records `done` in one transaction (see [`crate::Store::finish_deliveries`]).
    pub(crate) async fn finish_in_one(&self, done: &[FinishedAttempt]) -> Result<Vec<Recorded>> {
        let mut tx = self.begin().await?;
        let recorded = DB::finish_deliveries(&mut tx, done, Utc::now()).await?;
        tx.commit().await?;
        Ok(recorded)
    }
}
