//! The [`Store`] trait: everything edihub keeps, as one interface both
//! backends implement (`postgres/`, `sqlite/`) and the conformance suite
//! holds them to. Its own file, so the backends and the shared logic import
//! it without importing the crate root that names every part.

use crate::{
    ActivityCount, ActivityPoint, As2Claim, As2Filter, As2Key, As2MdnAttempt, As2MessageRow, As2Settlement,
    AuditEvent, AuditFilter, ClaimedDelivery, DeliveryBacklog, DeliveryQueue, DeliveryReport, DestinationRow,
    FeedPage, FeedQuery, FinishedAttempt, IngestOutcome, IngestRequest, IntegrationRow, MessagePage,
    MessageQuery, MessageRow, MessageTypeRow, NewAs2Message, NewAuditEvent, NewMessage, NewSapStatus, Pace,
    Recorded, ReplayFilter, Result, RetentionStep, SapRefusal, SapStatusRow, Scope, StoredMessage,
};

/// Everything edihub keeps. Implementations must be safe to share between
/// tasks and must make every method atomic.
#[async_trait::async_trait]
pub trait Store: Send + Sync + std::fmt::Debug {
    /// `PostgreSQL` or `SQLite`.
    fn backend(&self) -> &'static str;
    /// Applies pending schema migrations.
    async fn migrate(&self) -> Result<()>;
    /// Open and idle connections of the pool.
    fn pool_status(&self) -> (u32, usize);
    /// Checks that the database answers.
    async fn ping(&self) -> Result<()>;
    /// Closes the pool, waiting for connections to return.
    async fn close(&self);
    /// Makes the config-sourced message types equal to `rows`, leaving
    /// admin-edited rows alone.
    async fn seed_message_types(&self, rows: &[MessageTypeRow]) -> Result<()>;
    /// All message types, global and per tenant.
    async fn list_message_types(&self) -> Result<Vec<MessageTypeRow>>;
    /// Makes the config-sourced integrations equal to `rows`, leaving
    /// admin-edited rows alone.
    async fn seed_integrations(&self, rows: &[IntegrationRow]) -> Result<()>;
    /// All integrations.
    async fn list_integrations(&self) -> Result<Vec<IntegrationRow>>;
    /// Makes the config-sourced destinations equal to `rows`, leaving
    /// admin-edited rows alone.
    async fn seed_destinations(&self, rows: &[DestinationRow]) -> Result<()>;
    /// All push destinations.
    async fn list_destinations(&self) -> Result<Vec<DestinationRow>>;
    /// An admin's change of a destination, audited as `destination.updated`.
    async fn put_destination(&self, row: &DestinationRow) -> Result<Option<DestinationRow>>;
    /// Leases up to `limit` of `destination`'s deliveries that are due at
    /// `now` until `lease_until`, oldest due first. Concurrent claims (in
    /// this process or another replica) never return the same delivery
    /// while its lease holds.
    async fn claim_deliveries(
        &self,
        destination: &str,
        now: chrono::DateTime<chrono::Utc>,
        lease_until: chrono::DateTime<chrono::Utc>,
        limit: i64,
    ) -> Result<Vec<ClaimedDelivery>>;
    /// As [`Store::claim_deliveries`], among the deliveries of messages
    /// stored since the start of `since`'s UTC day (none older). The
    /// cheaper claim where the store is partitioned by time: PostgreSQL
    /// reads only the partitions of those days, where the full claim plans
    /// and locks every partition of `deliveries` (on SQLite both cost the
    /// same). The delivery worker claims recent deliveries between its
    /// polls and the whole queue at each poll.
    async fn claim_recent_deliveries(
        &self,
        destination: &str,
        since: chrono::DateTime<chrono::Utc>,
        now: chrono::DateTime<chrono::Utc>,
        lease_until: chrono::DateTime<chrono::Utc>,
        limit: i64,
    ) -> Result<Vec<ClaimedDelivery>>;
    /// Leases the head of `destination`'s line until `lease_until`, for a
    /// destination with `ordering = "fifo"`: its oldest delivery not yet
    /// delivered (by the message's `received_at`, then id), and only if that
    /// one is pending, due at `now` and not leased. So at most one delivery
    /// is in flight, a retry or a dead letter (`failed`, until replayed)
    /// holds the line, and concurrent claims in any replica get it once.
    async fn claim_line_head(
        &self,
        destination: &str,
        now: chrono::DateTime<chrono::Utc>,
        lease_until: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<ClaimedDelivery>>;
    /// Every destination with pending deliveries: how many, and when the
    /// oldest was created (one grouped query, for the metrics).
    async fn delivery_queues(&self) -> Result<Vec<DeliveryQueue>>;
    /// Records a claimed delivery's attempt and verdict, releasing its
    /// lease; `Verdict::Failed` is audited as `delivery.failed`.
    async fn finish_delivery(&self, done: &FinishedAttempt) -> Result<Recorded> {
        let recorded = self.finish_deliveries(std::slice::from_ref(done)).await?;
        Ok(recorded.into_iter().next().unwrap_or(Recorded::NotRecorded))
    }
    /// Records several attempts as [`Store::finish_delivery`] does, in one
    /// transaction: the workers' attempts that end together share a commit.
    /// If that transaction fails, each attempt is recorded in one of its
    /// own, so an attempt the database refuses costs only itself. Returns
    /// what became of each, in order; an attempt not recorded keeps its
    /// lease, and is made again once that expires.
    async fn finish_deliveries(&self, done: &[FinishedAttempt]) -> Result<Vec<Recorded>>;
    /// A message's deliveries with their attempts, by destination.
    async fn deliveries_of(&self, message_id: uuid::Uuid) -> Result<Vec<DeliveryReport>>;
    /// Makes a message's deliveries (or the one to `destination`) due now,
    /// whatever their status, each audited as `delivery.replayed`; returns
    /// the destinations queued.
    async fn redeliver(&self, message_id: uuid::Uuid, destination: Option<&str>) -> Result<Vec<String>>;
    /// Makes every delivery `filter` selects due now, whatever its status,
    /// audited as one `delivery.replayed` event; returns how many.
    async fn replay_deliveries(&self, filter: &ReplayFilter) -> Result<u64>;
    /// Stores one request's messages exactly once, its key with them; returns
    /// only after the commit (see the `ingest` module docs).
    async fn ingest(&self, req: IngestRequest<'_>) -> Result<IngestOutcome>;
    /// A message by id, payload included.
    async fn get_message(&self, id: uuid::Uuid) -> Result<Option<MessageRow>>;
    /// A message by id with the id of the row holding its body, and that
    /// body only if it is the message's own: a packet's deliveries read the
    /// shared body once ([`Store::message_body`]) instead of once each.
    async fn stored_message(&self, id: uuid::Uuid) -> Result<Option<StoredMessage>> {
        Ok(self.stored_messages(&[id]).await?.pop())
    }
    /// Several messages as [`Store::stored_message`] reads one, in one
    /// statement (the delivery worker reads a claimed batch so); in no
    /// particular order, an id no longer stored left out.
    async fn stored_messages(&self, ids: &[uuid::Uuid]) -> Result<Vec<StoredMessage>>;
    /// The body held by message `body_id` ([`StoredMessage::body_id`]);
    /// `None` once purged.
    async fn message_body(&self, body_id: uuid::Uuid) -> Result<Option<bytes::Bytes>>;
    /// One page of an environment's pull feed: the messages after
    /// `query.after`, oldest first, with where their bodies are. Following
    /// [`FeedPage::next`] yields every message once, in a stable order,
    /// even when transactions commit out of order (see the `feed` module).
    async fn feed(&self, query: &FeedQuery<'_>) -> Result<FeedPage>;
    /// The bodies held by `body_ids` ([`crate::FeedMessage::body_id`]), in no
    /// particular order; a purged one is left out.
    async fn message_bodies(&self, body_ids: &[uuid::Uuid]) -> Result<Vec<(uuid::Uuid, bytes::Bytes)>>;
    /// The database's secret key of feed cursors (32 bytes, made by a
    /// migration): every replica seals and opens cursors with the same key.
    async fn feed_cursor_key(&self) -> Result<Vec<u8>>;
    /// How many messages an environment holds.
    async fn count_messages(&self, scope: &Scope) -> Result<i64>;
    /// Appends an audit event outside any ingest transaction.
    async fn insert_audit(&self, event: &NewAuditEvent) -> Result<()>;
    /// Audit events matching `filter`, newest first.
    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>>;
    /// An admin's change of a message type, audited as `message_type.updated`
    /// with the old and new rows; returns the old row.
    async fn put_message_type(&self, row: &MessageTypeRow) -> Result<Option<MessageTypeRow>>;
    /// An admin's change of an integration, audited as `integration.updated`.
    async fn put_integration(&self, row: &IntegrationRow) -> Result<Option<IntegrationRow>>;
    /// One page of messages matching `query`, newest first, and where the
    /// next page starts (see [`MessagePage::next`]).
    async fn find_messages(&self, query: &MessageQuery) -> Result<MessagePage>;
    /// Adds to the overview's hourly rollup every hour that ended before
    /// `settled` (a time before which every request has committed or rolled
    /// back) and is not in it yet; returns how many hours it added (see the
    /// `activity_rollup` module). Safe to call from every replica at once.
    async fn roll_up_activity(&self, settled: chrono::DateTime<chrono::Utc>) -> Result<u64>;
    /// What happened since `since`, per (tenant, environment, message type):
    /// messages accepted, duplicates blocked per detector, webhook
    /// signatures refused (see [`ActivityCount`]). Whole hours the rollup
    /// holds are read from it, the rest counted directly.
    async fn activity(&self, since: chrono::DateTime<chrono::Utc>) -> Result<Vec<ActivityCount>>;
    /// Messages accepted and duplicates blocked in each interval between
    /// consecutive `bounds` (oldest first), one point per interval; from
    /// the rollup for the whole hours it holds, like [`Store::activity`].
    async fn activity_series(&self, bounds: &[chrono::DateTime<chrono::Utc>]) -> Result<Vec<ActivityPoint>>;
    /// Every destination's delivery backlog: pending and failed counts and
    /// the oldest pending delivery (see [`DeliveryBacklog`]).
    async fn delivery_backlog(&self) -> Result<Vec<DeliveryBacklog>>;
    /// Creates PostgreSQL's time partitions of the current and the next
    /// periods (see [`crate::PartitionLayout`]) that do not exist yet, one replica
    /// at a time; returns how many ranges it created (SQLite: none).
    async fn create_partitions(&self, now: chrono::DateTime<chrono::Utc>) -> Result<u64>;
    /// Detaches and drops the PostgreSQL partitions whose whole range ended
    /// by the cutoffs and that hold nothing today's rules keep; returns how
    /// many periods it dropped (SQLite: none), pausing between a period's
    /// detaches and after each period as `pace` says. The rest is left to
    /// [`Store::retention_step`].
    async fn drop_partitions(
        &self,
        messages: Option<chrono::DateTime<chrono::Utc>>,
        audit: Option<chrono::DateTime<chrono::Utc>>,
        pace: &Pace,
    ) -> Result<u64>;
    /// Runs one batch of a retention step; returns the rows changed (a batch
    /// smaller than `batch` means the step is done). `cutoff` is the oldest
    /// time kept, `now` decides which fingerprints have expired.
    async fn retention_step(
        &self,
        step: RetentionStep,
        cutoff: chrono::DateTime<chrono::Utc>,
        now: chrono::DateTime<chrono::Utc>,
        batch: i64,
    ) -> Result<u64>;
    /// Deletes one batch of the request keys `which` names that were
    /// created before `cutoff`; returns how many (fewer than `batch`: done).
    async fn purge_keys(
        &self,
        which: KeyPurge<'_>,
        cutoff: chrono::DateTime<chrono::Utc>,
        batch: i64,
    ) -> Result<u64>;
    /// Records status changes owed to `scope`'s SAP system at `now` (see
    /// the `sap_status` module), each with the 41 or 40 its message's
    /// deliveries already earned; a change whose IDoc number already has
    /// that status pending adds nothing. Returns how many were added.
    async fn record_sap_statuses(
        &self,
        scope: &Scope,
        changes: &[NewSapStatus],
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<u64>;
    /// Records a 40 with its reason for each IDoc of `refusals`, refused by
    /// the hub and stored as no message, at `now`; a refusal whose IDoc
    /// number already has a 40 pending adds nothing. Returns how many were
    /// added.
    async fn record_sap_refusals(
        &self,
        scope: &Scope,
        refusals: &[SapRefusal],
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<u64>;
    /// Up to `limit` of `scope`'s pending status changes, oldest first.
    async fn pending_sap_statuses(&self, scope: &Scope, limit: i64) -> Result<Vec<SapStatusRow>>;
    /// Stores `message` (a status IDoc, with its deliveries) and marks the
    /// changes `carries` carried by it, in one transaction; false, storing
    /// nothing, when another batch carried one of them first or `carries`
    /// is empty (a status message carries at least one change).
    async fn store_sap_status_message(
        &self,
        scope: &Scope,
        message: &NewMessage,
        carries: &[i64],
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<bool>;
    /// The status changes about message `id` and those the status message
    /// `id` carries, in the order they were recorded.
    async fn sap_statuses_of(&self, id: uuid::Uuid) -> Result<Vec<SapStatusRow>>;
    /// The next acknowledgement control number for `partner` in `scope`
    /// (1, 2, 3, …): never the same twice, across restarts and replicas.
    async fn next_ack_number(&self, scope: &Scope, partner: &str) -> Result<i64>;
    /// Claims an AS2 message's Message-ID (see the `as2` module): one of
    /// any number of concurrent claims of the same key gets
    /// [`As2Claim::New`]; the others get the row, with its repeat audited
    /// (`as2.duplicate_blocked` or `as2.message_id_reused`) in the same
    /// transaction.
    async fn claim_as2_message(&self, new: &NewAs2Message) -> Result<As2Claim>;
    /// Completes a claim with the MDN answered (or to be posted) and the
    /// message stored.
    async fn settle_as2_message(&self, key: &As2Key, settlement: &As2Settlement) -> Result<()>;
    /// Deletes a claim that has no MDN yet: its message failed and leaves nothing.
    async fn release_as2_message(&self, key: &As2Key) -> Result<()>;
    /// The AS2 message `key`, if received.
    async fn as2_message(&self, key: &As2Key) -> Result<Option<As2MessageRow>>;
    /// AS2 messages received, newest first.
    async fn list_as2_messages(&self, filter: &As2Filter) -> Result<Vec<As2MessageRow>>;
    /// Leases up to `limit` asynchronous MDNs due at `now` until
    /// `lease_until`, counting an attempt on each; concurrent claims (in
    /// any replica) never return the same MDN while its lease holds.
    async fn claim_as2_mdns(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        lease_until: chrono::DateTime<chrono::Utc>,
        limit: i64,
    ) -> Result<Vec<As2MessageRow>>;
    /// Records an attempt to post an asynchronous MDN and releases its lease.
    async fn finish_as2_mdn(&self, attempt: &As2MdnAttempt) -> Result<()>;
}

/// Which request keys [`Store::purge_keys`] deletes.
#[derive(Debug, Clone, Copy)]
pub enum KeyPurge<'a> {
    /// Every Idempotency-Key and event id, except the event ids of these
    /// integrations (they keep theirs for a period of their own).
    AllExcept(&'a [String]),
    /// The event ids of this integration only.
    EventIdsOf(&'a String),
}
