//! [`Store`] for [`SqlStore`], written once for both backends: each method
//! takes a connection (or a write transaction, where a change and its audit
//! event must commit together) and runs its concept's statements.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::backend::{Backend, SqlStore};
use crate::feed::{FeedPage, FeedQuery};
use crate::{
    ActivityCount, ActivityPoint, AuditEvent, AuditFilter, ClaimedDelivery, DeliveryQueue, DeliveryReport,
    DestinationRow, FinishedAttempt, IngestOutcome, IngestRequest, IntegrationRow, KeyPurge, MessageMeta,
    MessageQuery, MessageRow, MessageTypeRow, NewAuditEvent, ReplayFilter, Result, RetentionStep, Scope,
    Store,
};

#[async_trait::async_trait]
impl<DB: Backend> Store for SqlStore<DB> {
    fn backend(&self) -> &'static str {
        DB::NAME
    }

    async fn migrate(&self) -> Result<()> {
        DB::migrator().run(&self.pool).await?;
        Ok(())
    }

    fn pool_status(&self) -> (u32, usize) {
        (self.pool.size(), self.pool.num_idle())
    }

    async fn ping(&self) -> Result<()> {
        let mut conn = self.pool.acquire().await?;
        sqlx::Connection::ping(&mut *conn).await?;
        Ok(())
    }

    async fn close(&self) {
        self.batch_pool.close().await;
        self.pool.close().await;
    }

    async fn seed_message_types(&self, rows: &[MessageTypeRow]) -> Result<()> {
        let mut tx = self.begin().await?;
        DB::seed_message_types(&mut tx, rows).await?;
        Ok(tx.commit().await?)
    }

    async fn list_message_types(&self) -> Result<Vec<MessageTypeRow>> {
        DB::list_message_types(&mut *self.pool.acquire().await?).await
    }

    async fn seed_integrations(&self, rows: &[IntegrationRow]) -> Result<()> {
        let mut tx = self.begin().await?;
        DB::seed_integrations(&mut tx, rows).await?;
        Ok(tx.commit().await?)
    }

    async fn list_integrations(&self) -> Result<Vec<IntegrationRow>> {
        DB::list_integrations(&mut *self.pool.acquire().await?).await
    }

    async fn seed_destinations(&self, rows: &[DestinationRow]) -> Result<()> {
        let mut tx = self.begin().await?;
        DB::seed_destinations(&mut tx, rows).await?;
        Ok(tx.commit().await?)
    }

    async fn list_destinations(&self) -> Result<Vec<DestinationRow>> {
        DB::list_destinations(&mut *self.pool.acquire().await?).await
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
        let mut conn = self.pool.acquire().await?;
        DB::claim_deliveries(&mut conn, DB::CLAIM_DELIVERIES, destination, now, lease_until, limit).await
    }

    async fn claim_line_head(
        &self,
        destination: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClaimedDelivery>> {
        let mut conn = self.pool.acquire().await?;
        DB::claim_line_head(&mut conn, DB::CLAIM_LINE_HEAD, destination, now, lease_until).await
    }

    async fn delivery_queues(&self) -> Result<Vec<DeliveryQueue>> {
        DB::delivery_queues(&mut *self.pool.acquire().await?).await
    }

    async fn finish_delivery(&self, done: &FinishedAttempt) -> Result<()> {
        let mut tx = self.begin().await?;
        DB::finish_delivery(&mut tx, done, Utc::now()).await?;
        Ok(tx.commit().await?)
    }

    async fn deliveries_of(&self, message_id: Uuid) -> Result<Vec<DeliveryReport>> {
        DB::deliveries_of(&mut *self.pool.acquire().await?, message_id).await
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
        DB::get_message(&mut *self.pool.acquire().await?, id).await
    }

    async fn feed(&self, query: &FeedQuery<'_>) -> Result<FeedPage> {
        DB::feed_page(&mut *self.pool.acquire().await?, DB::FEED_PAGE, query).await
    }

    async fn count_messages(&self, scope: &Scope) -> Result<i64> {
        DB::count_messages(&mut *self.pool.acquire().await?, scope).await
    }

    async fn insert_audit(&self, event: &NewAuditEvent) -> Result<()> {
        let at = Utc::now();
        DB::insert_audits(&mut *self.pool.acquire().await?, &[(at, event.clone())]).await
    }

    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>> {
        DB::list_audit(&mut *self.pool.acquire().await?, filter).await
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

    async fn find_messages(&self, query: &MessageQuery) -> Result<Vec<MessageMeta>> {
        DB::find_messages(&mut *self.pool.acquire().await?, query).await
    }

    async fn roll_up_activity(&self, settled: DateTime<Utc>) -> Result<u64> {
        let end = crate::activity_rollup::floor_hour(settled);
        // Most calls find the hour already rolled up: no lock, no write.
        let held = DB::rollup_state(&mut *self.pool.acquire().await?).await?;
        if held.is_some_and(|r| r.until >= end) {
            return Ok(0);
        }
        let mut tx = self.begin().await?;
        let hours = DB::roll_up(&mut tx, end).await?;
        tx.commit().await?;
        Ok(hours)
    }

    async fn activity(&self, since: DateTime<Utc>) -> Result<Vec<ActivityCount>> {
        let mut conn = self.pool.acquire().await?;
        let held = DB::rollup_state(&mut conn).await?;
        DB::activity(&mut conn, held, since).await
    }

    async fn activity_series(&self, bounds: &[DateTime<Utc>]) -> Result<Vec<ActivityPoint>> {
        let mut conn = self.pool.acquire().await?;
        let held = DB::rollup_state(&mut conn).await?;
        DB::activity_series(&mut conn, held, bounds).await
    }

    async fn delivery_backlog(&self) -> Result<Vec<crate::DeliveryBacklog>> {
        DB::delivery_backlog(&mut *self.pool.acquire().await?).await
    }

    async fn retention_step(
        &self,
        step: RetentionStep,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        DB::retention_step(&mut *self.pool.acquire().await?, step, cutoff, now, batch).await
    }

    async fn purge_keys(&self, which: KeyPurge<'_>, cutoff: DateTime<Utc>, batch: i64) -> Result<u64> {
        DB::purge_keys(&mut *self.pool.acquire().await?, which, cutoff, batch).await
    }

    async fn next_ack_number(&self, scope: &Scope, partner: &str) -> Result<i64> {
        DB::next_ack_number(&mut *self.pool.acquire().await?, scope, partner).await
    }
}
