//! [`Store`] for [`SqlStore`], written once for both backends: each method
//! takes a session (a connection, or behind a transaction pooler a
//! transaction; see [`crate::session`]) or a write transaction, where a
//! change and its audit event must commit together, and runs its concept's
//! statements.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::Pace;
use crate::backend::{Backend, SqlStore};
use crate::feed::{FeedPage, FeedQuery, StoredMessage};
use crate::{
    ActivityCount, ActivityPoint, AuditEvent, AuditFilter, ClaimedDelivery, DeliveryQueue, DeliveryReport,
    DestinationRow, FinishedAttempt, IngestOutcome, IngestRequest, IntegrationRow, KeyPurge, MessagePage,
    MessageQuery, MessageRow, MessageTypeRow, NewAuditEvent, Recorded, ReplayFilter, Result, RetentionStep,
    Scope, Store,
};

#[async_trait::async_trait]
impl<DB: Backend> Store for SqlStore<DB> {
    fn backend(&self) -> &'static str {
        DB::NAME
    }

    async fn migrate(&self) -> Result<()> {
        if !self.db.is_pinned() {
            DB::migrator().run(&self.db.pool).await?;
            return self.create_partitions(Utc::now()).await.map(drop);
        }
        // Behind a transaction pooler, the migrator's session advisory lock
        // would stay on whichever server connection took it (and its unlock
        // could go to another): all migrations run in one transaction.
        let mut tx = self.db.begin().await?;
        DB::migrate_in(&mut tx).await?;
        tx.commit().await?;
        self.create_partitions(Utc::now()).await.map(drop)
    }

    async fn create_partitions(&self, now: DateTime<Utc>) -> Result<u64> {
        DB::create_partitions_ahead(&self.db, now, self.layout).await
    }

    async fn drop_partitions(
        &self,
        messages: Option<DateTime<Utc>>,
        audit: Option<DateTime<Utc>>,
        pace: &Pace,
    ) -> Result<u64> {
        DB::drop_expired_partitions(&self.db, messages, audit, pace).await
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
        DB::seed_message_types(&mut tx, rows).await?;
        Ok(tx.commit().await?)
    }

    async fn list_message_types(&self) -> Result<Vec<MessageTypeRow>> {
        let mut session = self.db.session().await?;
        let value = DB::list_message_types(&mut session).await?;
        session.done(value).await
    }

    async fn seed_integrations(&self, rows: &[IntegrationRow]) -> Result<()> {
        let mut tx = self.begin().await?;
        DB::seed_integrations(&mut tx, rows).await?;
        Ok(tx.commit().await?)
    }

    async fn list_integrations(&self) -> Result<Vec<IntegrationRow>> {
        let mut session = self.db.session().await?;
        let value = DB::list_integrations(&mut session).await?;
        session.done(value).await
    }

    async fn seed_destinations(&self, rows: &[DestinationRow]) -> Result<()> {
        let mut tx = self.begin().await?;
        DB::seed_destinations(&mut tx, rows).await?;
        Ok(tx.commit().await?)
    }

    async fn list_destinations(&self) -> Result<Vec<DestinationRow>> {
        let mut session = self.db.session().await?;
        let value = DB::list_destinations(&mut session).await?;
        session.done(value).await
    }

    async fn put_destination(&self, row: &DestinationRow) -> Result<Option<DestinationRow>> {
        let mut tx = self.begin().await?;
        let old = DB::put_destination(&mut tx, row).await?;
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
        let value =
            DB::claim_deliveries(&mut session, DB::CLAIM_DELIVERIES, destination, now, lease_until, limit)
                .await?;
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
        // The bound is the first id of `since`'s UTC day, so the statement's
        // text (and PostgreSQL's cached plan of it) changes once a day.
        let day = since.date_naive().and_time(chrono::NaiveTime::MIN).and_utc();
        let bound = crate::partitions::first_id_at(day);
        let text = DB::CLAIM_RECENT_DELIVERIES.replace("{since}", &DB::id_literal(bound));
        let mut session = self.db.session().await?;
        let statement = sqlx::AssertSqlSafe(text);
        let value =
            DB::claim_deliveries(&mut session, statement, destination, now, lease_until, limit).await?;
        session.done(value).await
    }

    async fn claim_line_head(
        &self,
        destination: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClaimedDelivery>> {
        let mut session = self.db.session().await?;
        let value =
            DB::claim_line_head(&mut session, DB::CLAIM_LINE_HEAD, destination, now, lease_until).await?;
        session.done(value).await
    }

    async fn delivery_queues(&self) -> Result<Vec<DeliveryQueue>> {
        let mut session = self.db.session().await?;
        let value = DB::delivery_queues(&mut session).await?;
        session.done(value).await
    }

    async fn finish_deliveries(&self, done: &[FinishedAttempt]) -> Result<Vec<Recorded>> {
        match self.finish_in_one(done).await {
            Ok(recorded) => Ok(recorded),
            Err(e) if done.len() > 1 => {
                // One attempt the database refuses must not sink the others:
                // each is written on its own, in batch order.
                tracing::warn!(attempts = done.len(), error = %e,
                    "delivery: recording a batch of attempts failed; recording them one by one");
                let mut recorded = Vec::with_capacity(done.len());
                for d in done {
                    recorded.push(match self.finish_in_one(std::slice::from_ref(d)).await {
                        Ok(one) => one.into_iter().next().unwrap_or(Recorded::NotRecorded),
                        Err(e) => {
                            tracing::warn!(message_id = %d.message_id, destination = %d.destination_id,
                                error = %e, "delivery: recording an attempt failed; it is made again once its lease expires");
                            Recorded::NotRecorded
                        }
                    });
                }
                Ok(recorded)
            }
            Err(e) => {
                tracing::warn!(error = %e, "delivery: recording an attempt failed; it is made again once its lease expires");
                Ok(vec![Recorded::NotRecorded; done.len()])
            }
        }
    }

    async fn deliveries_of(&self, message_id: Uuid) -> Result<Vec<DeliveryReport>> {
        let mut session = self.db.session().await?;
        let value = DB::deliveries_of(&mut session, message_id).await?;
        session.done(value).await
    }

    async fn redeliver(&self, message_id: Uuid, destination: Option<&str>) -> Result<Vec<String>> {
        let mut tx = self.begin().await?;
        let queued = DB::redeliver(&mut tx, message_id, destination, Utc::now()).await?;
        tx.commit().await?;
        Ok(queued)
    }

    async fn replay_deliveries(&self, filter: &ReplayFilter) -> Result<u64> {
        let mut tx = self.begin().await?;
        let queued = DB::replay_deliveries(&mut tx, filter, Utc::now()).await?;
        tx.commit().await?;
        Ok(queued)
    }

    async fn ingest(&self, req: IngestRequest<'_>) -> Result<IngestOutcome> {
        self.run_ingest(req).await
    }

    async fn get_message(&self, id: Uuid) -> Result<Option<MessageRow>> {
        let mut session = self.db.session().await?;
        let value = DB::get_message(&mut session, id).await?;
        session.done(value).await
    }

    async fn stored_messages(&self, ids: &[Uuid]) -> Result<Vec<StoredMessage>> {
        let mut session = self.db.session().await?;
        let value = DB::stored_messages(&mut session, ids).await?;
        session.done(value).await
    }

    async fn message_body(&self, body_id: Uuid) -> Result<Option<bytes::Bytes>> {
        let mut session = self.db.session().await?;
        let value = DB::message_body(&mut session, body_id).await?;
        session.done(value).await
    }

    async fn feed(&self, query: &FeedQuery<'_>) -> Result<FeedPage> {
        let mut session = self.db.session().await?;
        let value = DB::feed_page(&mut session, DB::FEED_PAGE, query).await?;
        session.done(value).await
    }

    async fn message_bodies(&self, body_ids: &[Uuid]) -> Result<Vec<(Uuid, bytes::Bytes)>> {
        let mut session = self.db.session().await?;
        let value = DB::message_bodies(&mut session, body_ids).await?;
        session.done(value).await
    }

    async fn feed_cursor_key(&self) -> Result<Vec<u8>> {
        let mut session = self.db.session().await?;
        let value = DB::feed_cursor_key(&mut session).await?;
        session.done(value).await
    }

    async fn count_messages(&self, scope: &Scope) -> Result<i64> {
        let mut session = self.db.session().await?;
        let value = DB::count_messages(&mut session, scope).await?;
        session.done(value).await
    }

    async fn insert_audit(&self, event: &NewAuditEvent) -> Result<()> {
        let at = Utc::now();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut session = self.db.session().await?;
            match DB::insert_audits(&mut session, &[(at, event.clone())]).await {
                Ok(()) => return session.done(()).await,
                Err(e) => {
                    drop(session);
                    if attempt > 1 || !DB::create_missing_partition(&self.db, &e, self.layout).await? {
                        return Err(e);
                    }
                }
            }
        }
    }

    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>> {
        let mut session = self.db.session().await?;
        let value = DB::list_audit(&mut session, filter).await?;
        session.done(value).await
    }

    async fn put_message_type(&self, row: &MessageTypeRow) -> Result<Option<MessageTypeRow>> {
        let mut tx = self.begin().await?;
        let old = DB::put_message_type(&mut tx, row).await?;
        tx.commit().await?;
        Ok(old)
    }

    async fn put_integration(&self, row: &IntegrationRow) -> Result<Option<IntegrationRow>> {
        let mut tx = self.begin().await?;
        let old = DB::put_integration(&mut tx, row).await?;
        tx.commit().await?;
        Ok(old)
    }

    async fn find_messages(&self, query: &MessageQuery) -> Result<MessagePage> {
        let mut session = self.db.session().await?;
        let value = DB::find_messages(&mut session, query).await?;
        session.done(value).await
    }

    async fn roll_up_activity(&self, settled: DateTime<Utc>) -> Result<u64> {
        let end = crate::activity_rollup::floor_hour(settled);
        // Most calls find the hour already rolled up: no lock, no write.
        let mut session = self.db.session().await?;
        let held = DB::rollup_state(&mut session).await?;
        let held = session.done(held).await?;
        if held.is_some_and(|r| r.until >= end) {
            return Ok(0);
        }
        let mut tx = self.begin().await?;
        let hours = DB::roll_up(&mut tx, end).await?;
        tx.commit().await?;
        Ok(hours)
    }

    async fn activity(&self, since: DateTime<Utc>) -> Result<Vec<ActivityCount>> {
        let mut session = self.db.session().await?;
        let held = DB::rollup_state(&mut session).await?;
        let value = DB::activity(&mut session, held, since).await?;
        session.done(value).await
    }

    async fn activity_series(&self, bounds: &[DateTime<Utc>]) -> Result<Vec<ActivityPoint>> {
        let mut session = self.db.session().await?;
        let held = DB::rollup_state(&mut session).await?;
        let value = DB::activity_series(&mut session, held, bounds).await?;
        session.done(value).await
    }

    async fn delivery_backlog(&self) -> Result<Vec<crate::DeliveryBacklog>> {
        let mut session = self.db.session().await?;
        let value = DB::delivery_backlog(&mut session).await?;
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
        let value = DB::retention_step(&mut session, step, cutoff, now, batch).await?;
        session.done(value).await
    }

    async fn purge_keys(&self, which: KeyPurge<'_>, cutoff: DateTime<Utc>, batch: i64) -> Result<u64> {
        let mut session = self.db.session().await?;
        let value = DB::purge_keys(&mut session, which, cutoff, batch).await?;
        session.done(value).await
    }

    async fn next_ack_number(&self, scope: &Scope, partner: &str) -> Result<i64> {
        let mut session = self.db.session().await?;
        let value = DB::next_ack_number(&mut session, scope, partner).await?;
        session.done(value).await
    }
}
