//! The SQLite store: the embedded default, one file, no server to run.
//!
//! Settings, and why:
//! - WAL journal: readers never block the writer.
//! - `synchronous = NORMAL`: a commit survives a crash of edihub (the WAL is
//!   written before we answer); only a power loss can lose the last commits.
//! - every write transaction starts with `BEGIN IMMEDIATE`, taking the write
//!   lock up front, so concurrent requests queue on `busy_timeout` instead of
//!   failing when a read transaction tries to upgrade.
//! - one group insert in flight at a time (see [`crate::ingest::group`]): SQLite has
//!   one writer, so the new messages of concurrent requests queue in edihub
//!   and go in together, one statement and one commit per batch, instead of
//!   each request waiting for the lock on its own.

//!
//! `mod.rs` opens the pools and implements [`Store`]: each method takes a
//! session (a pooled connection; see [`crate::session`]) or a write
//! transaction, where a change and its audit event must commit together,
//! and runs its concept's statements. `outbox.rs` holds the delivery
//! leases and `feed.rs` the feed's page.

mod ack_numbers;
mod activity_rollup;
mod as2;
mod audit;
mod catalog;
mod console;
mod delivery_backlog;
mod destinations;
mod feed;
mod ingest;
mod message_search;
mod messages;
mod outbox;
mod retention;
mod sap_status;

use std::str::FromStr;

use chrono::{DateTime, Utc};
use sqlx::Sqlite;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use uuid::Uuid;

use crate::as2::{As2Claim, As2Filter, As2Key, As2MdnAttempt, As2MessageRow, As2Settlement, NewAs2Message};
use crate::backend::Backend;
use crate::feed::{FeedPage, FeedQuery, StoredMessage};
use crate::ingest::group::{Batchers, STATEMENT_CACHE};
use crate::ingest::keys::Claim;
use crate::ingest::statements::Row;
use crate::session::Sessions;
use crate::sql_store::SqlStore;
use crate::{
    ActivityCount, ActivityPoint, AuditEvent, AuditFilter, ClaimedDelivery, DeliveryQueue, DeliveryReport,
    DestinationRow, FinishedAttempt, IngestOutcome, IngestRequest, IntegrationRow, KeyPurge, MessagePage,
    MessageQuery, MessageRow, MessageTypeRow, NewAuditEvent, NewMessage, NewSapStatus, Pace, PartitionLayout,
    Recorded, ReplayFilter, Result, RetentionStep, SapRefusal, SapStatusRow, Scope, Store, StoreError,
};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

/// A [`crate::Store`] on an SQLite file.
pub type SqliteStore = SqlStore<Sqlite>;

impl SqlStore<Sqlite> {
    /// Opens (creating if needed, with its folder) the database at `url` (`sqlite://path`).
    pub async fn connect(url: &str, opts: &crate::PoolSettings) -> Result<Self> {
        if opts.pooler != crate::Pooler::None {
            return Err(StoreError::PoolerWithoutServer);
        }
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
        // a keyed batch's commit, the third the group audit's).
        let batch_pool = SqlitePoolOptions::new()
            .max_connections(3)
            .acquire_timeout(opts.acquire_timeout)
            .connect_with(connect.statement_cache_capacity(STATEMENT_CACHE))
            .await?;
        let begin = <Sqlite as Backend>::BEGIN;
        let batch_db = Sessions::direct(batch_pool, begin);
        let batchers = Batchers::spawn(batch_db.clone(), 1, None);
        Ok(Self { db: Sessions::direct(pool, begin), batch_db, batchers, layout: opts.partitions })
    }
}

#[async_trait::async_trait]
impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        "SQLite"
    }

    async fn migrate(&self) -> Result<()> {
        Ok(MIGRATOR.run(&self.db.pool).await?)
    }

    /// SQLite has no partitions.
    async fn create_partitions(&self, _: DateTime<Utc>) -> Result<u64> {
        Ok(0)
    }

    /// SQLite has no partitions.
    async fn drop_partitions(
        &self,
        _: Option<DateTime<Utc>>,
        _: Option<DateTime<Utc>>,
        _: &Pace,
    ) -> Result<u64> {
        Ok(0)
    }

    fn pool_status(&self) -> (u32, usize) {
        (self.db.pool.size(), self.db.pool.num_idle())
    }

    async fn ping(&self) -> Result<()> {
        let mut conn = self.db.pool.acquire().await?;
        sqlx::Connection::ping(&mut *conn).await?;
        Ok(())
    }

    async fn close(&self) {
        self.batch_db.pool.close().await;
        self.db.pool.close().await;
    }

    async fn seed_message_types(&self, rows: &[MessageTypeRow]) -> Result<()> {
        let mut tx = self.begin().await?;
        catalog::seed_message_types(&mut tx, rows).await?;
        Ok(tx.commit().await?)
    }

    async fn list_message_types(&self) -> Result<Vec<MessageTypeRow>> {
        let mut session = self.db.session().await?;
        let value = catalog::list_message_types(&mut session).await?;
        session.done(value).await
    }

    async fn seed_integrations(&self, rows: &[IntegrationRow]) -> Result<()> {
        let mut tx = self.begin().await?;
        catalog::seed_integrations(&mut tx, rows).await?;
        Ok(tx.commit().await?)
    }

    async fn list_integrations(&self) -> Result<Vec<IntegrationRow>> {
        let mut session = self.db.session().await?;
        let value = catalog::list_integrations(&mut session).await?;
        session.done(value).await
    }

    async fn seed_destinations(&self, rows: &[DestinationRow]) -> Result<()> {
        let mut tx = self.begin().await?;
        destinations::seed_destinations(&mut tx, rows).await?;
        Ok(tx.commit().await?)
    }

    async fn list_destinations(&self) -> Result<Vec<DestinationRow>> {
        let mut session = self.db.session().await?;
        let value = destinations::list_destinations(&mut session).await?;
        session.done(value).await
    }

    async fn put_destination(&self, row: &DestinationRow) -> Result<Option<DestinationRow>> {
        let mut tx = self.begin().await?;
        let old = destinations::put_destination(&mut tx, row).await?;
        tx.commit().await?;
        Ok(old)
    }

    async fn claim_deliveries(
        &self,
        destination: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<ClaimedDelivery>> {
        let mut session = self.db.session().await?;
        let value = outbox::claim_deliveries(&mut session, destination, now, lease_until, limit).await?;
        session.done(value).await
    }

    async fn claim_recent_deliveries(
        &self,
        destination: &str,
        since: DateTime<Utc>,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<ClaimedDelivery>> {
        let mut session = self.db.session().await?;
        let value =
            outbox::claim_recent_deliveries(&mut session, destination, since, now, lease_until, limit)
                .await?;
        session.done(value).await
    }

    async fn claim_line_head(
        &self,
        destination: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClaimedDelivery>> {
        let mut session = self.db.session().await?;
        let value = outbox::claim_line_head(&mut session, destination, now, lease_until).await?;
        session.done(value).await
    }

    async fn delivery_queues(&self) -> Result<Vec<DeliveryQueue>> {
        let mut session = self.db.session().await?;
        let value = outbox::delivery_queues(&mut session).await?;
        session.done(value).await
    }

    async fn finish_deliveries(&self, done: &[FinishedAttempt]) -> Result<Vec<Recorded>> {
        crate::outbox::finish_each(done, |batch| async move {
            let mut tx = self.begin().await?;
            let now = Utc::now();
            let recorded = crate::outbox::verdicts::record(&mut *tx, batch, now).await?;
            sap_status::after_verdicts(&mut tx, batch, &recorded, now).await?;
            tx.commit().await?;
            Ok(recorded)
        })
        .await
    }

    async fn deliveries_of(&self, message_id: Uuid) -> Result<Vec<DeliveryReport>> {
        let mut session = self.db.session().await?;
        let value = outbox::deliveries_of(&mut session, message_id).await?;
        session.done(value).await
    }

    async fn redeliver(&self, message_id: Uuid, destination: Option<&str>) -> Result<Vec<String>> {
        let mut tx = self.begin().await?;
        let queued = outbox::redeliver(&mut tx, message_id, destination, Utc::now()).await?;
        tx.commit().await?;
        Ok(queued)
    }

    async fn replay_deliveries(&self, filter: &ReplayFilter) -> Result<u64> {
        let mut tx = self.begin().await?;
        let queued = outbox::replay_deliveries(&mut tx, filter, Utc::now()).await?;
        tx.commit().await?;
        Ok(queued)
    }

    async fn ingest(&self, req: IngestRequest<'_>) -> Result<IngestOutcome> {
        self.run_ingest(req).await
    }

    async fn get_message(&self, id: Uuid) -> Result<Option<MessageRow>> {
        let mut session = self.db.session().await?;
        let value = messages::get_message(&mut session, id).await?;
        session.done(value).await
    }

    async fn stored_messages(&self, ids: &[Uuid]) -> Result<Vec<StoredMessage>> {
        let mut session = self.db.session().await?;
        let value = feed::stored_messages(&mut session, ids).await?;
        session.done(value).await
    }

    async fn message_body(&self, body_id: Uuid) -> Result<Option<bytes::Bytes>> {
        let mut session = self.db.session().await?;
        let value = feed::message_body(&mut session, body_id).await?;
        session.done(value).await
    }

    async fn feed(&self, query: &FeedQuery<'_>) -> Result<FeedPage> {
        let mut session = self.db.session().await?;
        let value = crate::feed::feed_page(&mut *session, query).await?;
        session.done(value).await
    }

    async fn message_bodies(&self, body_ids: &[Uuid]) -> Result<Vec<(Uuid, bytes::Bytes)>> {
        let mut session = self.db.session().await?;
        let value = feed::message_bodies(&mut session, body_ids).await?;
        session.done(value).await
    }

    async fn feed_cursor_key(&self) -> Result<Vec<u8>> {
        let mut session = self.db.session().await?;
        let value = feed::feed_cursor_key(&mut session).await?;
        session.done(value).await
    }

    async fn count_messages(&self, scope: &Scope) -> Result<i64> {
        let mut session = self.db.session().await?;
        let value = messages::count_messages(&mut session, scope).await?;
        session.done(value).await
    }

    async fn insert_audit(&self, event: &NewAuditEvent) -> Result<()> {
        let mut session = self.db.session().await?;
        audit::insert_audits(&mut session, &[(Utc::now(), event.clone())]).await?;
        session.done(()).await
    }

    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>> {
        let mut session = self.db.session().await?;
        let value = audit::list_audit(&mut session, filter).await?;
        session.done(value).await
    }

    async fn put_message_type(&self, row: &MessageTypeRow) -> Result<Option<MessageTypeRow>> {
        let mut tx = self.begin().await?;
        let old = catalog::put_message_type(&mut tx, row).await?;
        tx.commit().await?;
        Ok(old)
    }

    async fn put_integration(&self, row: &IntegrationRow) -> Result<Option<IntegrationRow>> {
        let mut tx = self.begin().await?;
        let old = catalog::put_integration(&mut tx, row).await?;
        tx.commit().await?;
        Ok(old)
    }

    async fn find_messages(&self, query: &MessageQuery) -> Result<MessagePage> {
        let mut session = self.db.session().await?;
        let value = crate::message_search::find_messages(&mut *session, query).await?;
        session.done(value).await
    }

    async fn roll_up_activity(&self, settled: DateTime<Utc>) -> Result<u64> {
        let end = crate::activity_rollup::floor_hour(settled);
        let mut session = self.db.session().await?;
        let held = activity_rollup::rollup_state(&mut session).await?;
        if crate::activity_rollup::holds(session.done(held).await?, end) {
            return Ok(0);
        }
        let mut tx = self.begin().await?;
        let hours = crate::activity_rollup::roll_up(&mut *tx, end).await?;
        tx.commit().await?;
        Ok(hours)
    }

    async fn activity(&self, since: DateTime<Utc>) -> Result<Vec<ActivityCount>> {
        let mut session = self.db.session().await?;
        let held = activity_rollup::rollup_state(&mut session).await?;
        let value = console::activity(&mut session, held, since).await?;
        session.done(value).await
    }

    async fn activity_series(&self, bounds: &[DateTime<Utc>]) -> Result<Vec<ActivityPoint>> {
        let mut session = self.db.session().await?;
        let held = activity_rollup::rollup_state(&mut session).await?;
        let value = console::activity_series(&mut session, held, bounds).await?;
        session.done(value).await
    }

    async fn delivery_backlog(&self) -> Result<Vec<crate::DeliveryBacklog>> {
        let mut session = self.db.session().await?;
        let value = delivery_backlog::delivery_backlog(&mut session).await?;
        session.done(value).await
    }

    async fn retention_step(
        &self,
        step: RetentionStep,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        let mut session = self.db.session().await?;
        let value = retention::retention_step(&mut session, step, cutoff, now, batch).await?;
        session.done(value).await
    }

    async fn purge_keys(&self, which: KeyPurge<'_>, cutoff: DateTime<Utc>, batch: i64) -> Result<u64> {
        let mut session = self.db.session().await?;
        let value = retention::purge_keys(&mut session, which, cutoff, batch).await?;
        session.done(value).await
    }

    async fn record_sap_statuses(
        &self,
        scope: &Scope,
        changes: &[NewSapStatus],
        now: DateTime<Utc>,
    ) -> Result<u64> {
        let mut tx = self.begin().await?;
        let added = sap_status::record(&mut tx, scope, changes, now).await?;
        tx.commit().await?;
        Ok(added)
    }

    async fn record_sap_refusals(
        &self,
        scope: &Scope,
        refusals: &[SapRefusal],
        now: DateTime<Utc>,
    ) -> Result<u64> {
        let mut tx = self.begin().await?;
        let added = sap_status::record_refusals(&mut tx, scope, refusals, now).await?;
        tx.commit().await?;
        Ok(added)
    }

    async fn pending_sap_statuses(&self, scope: &Scope, limit: i64) -> Result<Vec<SapStatusRow>> {
        let mut session = self.db.session().await?;
        let rows = sap_status::pending(&mut session, scope, limit).await?;
        session.done(rows).await
    }

    async fn store_sap_status_message(
        &self,
        scope: &Scope,
        message: &NewMessage,
        carries: &[i64],
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let mut tx = self.begin().await?;
        if !sap_status::carry(&mut tx, scope, carries, message.id).await? {
            return Ok(false);
        }
        let row = Row { scope, now, message, payload_holder: None, lease: None };
        ingest::insert_messages(&mut tx, &[row]).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn sap_statuses_of(&self, id: Uuid) -> Result<Vec<SapStatusRow>> {
        let mut session = self.db.session().await?;
        let rows = sap_status::of_message(&mut session, id).await?;
        session.done(rows).await
    }

    async fn next_ack_number(&self, scope: &Scope, partner: &str) -> Result<i64> {
        let mut session = self.db.session().await?;
        let value = ack_numbers::next_ack_number(&mut session, scope, partner).await?;
        session.done(value).await
    }

    async fn claim_as2_message(&self, new: &NewAs2Message) -> Result<As2Claim> {
        let mut tx = self.begin().await?;
        let claim = as2::claim(&mut tx, new).await?;
        tx.commit().await?;
        Ok(claim)
    }

    async fn settle_as2_message(&self, key: &As2Key, settlement: &As2Settlement) -> Result<()> {
        let mut session = self.db.session().await?;
        as2::settle(&mut session, key, settlement).await?;
        session.done(()).await
    }

    async fn release_as2_message(&self, key: &As2Key) -> Result<()> {
        let mut session = self.db.session().await?;
        as2::release(&mut session, key).await?;
        session.done(()).await
    }

    async fn as2_message(&self, key: &As2Key) -> Result<Option<As2MessageRow>> {
        let mut session = self.db.session().await?;
        let row = as2::get(&mut session, key).await?;
        session.done(row).await
    }

    async fn list_as2_messages(&self, filter: &As2Filter) -> Result<Vec<As2MessageRow>> {
        let mut session = self.db.session().await?;
        let rows = as2::list(&mut session, filter).await?;
        session.done(rows).await
    }

    async fn claim_as2_mdns(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<As2MessageRow>> {
        let mut session = self.db.session().await?;
        let rows = as2::claim_mdns(&mut session, now, lease_until, limit).await?;
        session.done(rows).await
    }

    async fn finish_as2_mdn(&self, attempt: &As2MdnAttempt) -> Result<()> {
        let mut session = self.db.session().await?;
        as2::finish_mdn(&mut session, attempt).await?;
        session.done(()).await
    }
}

impl Backend for Sqlite {
    const BEGIN: &'static str = "BEGIN IMMEDIATE";

    /// SQLite has no data-modifying CTEs.
    async fn claim_and_insert(
        _: &Sessions<Self>,
        _: &[Claim<'_>],
        _: &[Row<'_>],
    ) -> Result<Option<Vec<Uuid>>> {
        Ok(None)
    }

    /// SQLite has no partitions.
    async fn create_missing_partition(
        _: &Sessions<Self>,
        _: &StoreError,
        _: PartitionLayout,
    ) -> Result<bool> {
        Ok(false)
    }
}
