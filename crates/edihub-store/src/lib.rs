//! Storage for edihub: one [`Store`] trait, implemented by [`PgStore`]
//! (PostgreSQL) and [`SqliteStore`] (SQLite).
//!
//! Every dedup guarantee lives in the database, not in process memory: the
//! unique key of a fingerprint's claim on `(tenant_id, environment_id,
//! fingerprint)` (see `claims.rs`) and the primary key of `idempotency_keys`
//! decide every race, so several edihub
//! replicas can share one PostgreSQL. The store decides and returns domain
//! outcomes ([`IngestOutcome`]); rendering them is the server's business.
//! The conformance suite (feature `testing`) checks both backends against
//! the same expectations.
//!
//! # Layout
//!
//! - `lib.rs`: the [`Store`] trait and [`connect`]; `settings.rs`: how it
//!   connects ([`PoolSettings`]).
//! - `outcome.rs`: what a request asks ([`IngestRequest`]) and what happened
//!   ([`IngestOutcome`], [`MessageOutcome`], the [`Answer`] a key keeps).
//! - `model.rs`: messages to store, stored messages, lookup filters.
//! - `postgres/` and `sqlite/`: each backend's store ([`PgStore`],
//!   [`SqliteStore`]): `mod.rs` opens its pools and implements [`Store`];
//!   beside it, one file per concept holds that concept's statements,
//!   written whole for the backend (`ack_numbers.rs`, `catalog.rs`,
//!   `destinations.rs`, `delivery_backlog.rs`, `retention.rs`,
//!   `message_search.rs`, `messages.rs`: a message by id and the count of
//!   an environment's, `audit.rs`: the audit log, `console.rs` and
//!   `activity_rollup.rs`: the overview's counts; `outbox.rs`: the
//!   delivery leases, queue depths, replays and verdicts; `feed.rs`: the
//!   feed's page; PostgreSQL's `migrate.rs`: migrations, also behind a
//!   transaction pooler). The concept modules at the crate's root hold
//!   what both backends share: the types, and the decisions taken the
//!   same way on either (what seeding deletes, what a change audits, a
//!   search's next page, which hours a roll-up adds, what a verdict
//!   applies), some over a small trait of the backend's statements.
//! - `backend.rs`: [`SqlStore`], the pools and queues both stores are made
//!   of, and the [`Backend`] trait: what the shared ingest needs of a
//!   backend (`BEGIN`, the packet lookup, fingerprint locks, a missing
//!   partition); `store.rs`: recording attempts one by one when their
//!   batch fails;
//!   `claims.rs`: where a fingerprint's claim lives (`message_claims` on
//!   PostgreSQL, a column on SQLite); `partitions.rs` and
//!   `partition_drop.rs`: PostgreSQL's time partitions, created ahead and
//!   on demand, dropped by retention;
//!   `session.rs`: units of work on a pool, directly or behind a
//!   transaction pooler ([`Pooler`]).
//! - `ingest/`: storing messages exactly once.
//!   - `mod.rs`: which path a request takes; retries;
//!   - `statements.rs`: the message statements (insert, holder probes,
//!     audit events), one method each, with the row binder every path
//!     shares; `key_statements.rs`: the request keys' claims, kept answers
//!     and the keyed batch's one statement (`rendered_keys.rs`: what keys
//!     kept by an older edihub need read besides); `insert_answer.rs`: what the
//!     message insert returns (its ids, and on PostgreSQL the holders it met);
//!   - `decide.rs`: duplicate or new, replay or mismatch: the decisions all
//!     paths share;
//!   - `transaction.rs`: one request in one transaction;
//!   - `group/`: many concurrent requests in one statement (`mod.rs`: the
//!     queues; `settle.rs`: settling a batch without keys; `keyed.rs`: a
//!     batch with keys; `audits.rs`: the group audit, one writer of the
//!     batches' duplicate and repeat events);
//!   - `packet.rs`: large packets committed in chunks.
//! - `ack_numbers.rs`: acknowledgement control numbers per partner.
//! - `as2.rs`: AS2 messages received: the claim of a Message-ID, the MDN
//!   it was answered with, asynchronous MDNs waiting to be posted.
//! - `sap_status.rs`: status changes owed to a sending SAP system (39, 41,
//!   40 per IDoc) until a status message carries them.
//! - `catalog.rs`: message types and integrations, seeded from the
//!   configuration, changed by admins (audited).
//! - `destinations.rs`: push destinations, seeded and changed like
//!   integrations; `outbox/`: the deliveries written with each message
//!   (by PostgreSQL's insert statement, by SQLite's trigger), their leases
//!   and attempts (`model.rs`: the rows).
//! - `feed.rs`: the pull feed, pages of an environment's messages in an
//!   order no late commit can break.
//! - `audit.rs`: audit events; `queries.rs`: what lookups by id share;
//!   `message_search.rs`: message search, in bounded pages;
//!   `console.rs`: the overview's aggregates, `activity_rollup.rs` their
//!   hourly rollup, `delivery_backlog.rs` its delivery backlog per
//!   destination; `retention.rs`: batched purges.
//! - `conformance/`, `testing.rs` (feature `testing`): the suite every
//!   backend must pass, and throwaway test databases.
//!
//! [`Backend`]: backend

mod ack_numbers;
mod activity_rollup;
mod as2;
mod audit;
mod backend;
mod catalog;
mod claims;
#[cfg(feature = "testing")]
pub mod conformance;
mod console;
mod delivery_backlog;
mod destinations;
mod error;
mod feed;
mod ingest;
mod message_search;
mod model;
mod outbox;
mod outcome;
mod partition_drop;
mod partitions;
mod postgres;
mod queries;
mod retention;
mod sap_status;
mod session;
mod settings;
mod sqlite;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

use std::sync::Arc;

pub use as2::{
    AS2_DUPLICATE_BLOCKED, AS2_MESSAGE_ID_REUSED, As2Claim, As2Filter, As2Key, As2MdnAttempt, As2MessageRow,
    As2Settlement, MDN_FAILED, MDN_PENDING, MDN_PROCESSING, MDN_SENT, MdnHeaders, NewAs2Message,
};
pub use audit::{
    AuditEvent, AuditFilter, DELIVERY_FAILED, DELIVERY_REPLAYED, DELIVERY_WITHDRAWN, DESTINATION_UPDATED,
    DUPLICATE_BLOCKED, INTEGRATION_UPDATED, INTERCHANGE_DUPLICATE_BLOCKED, INTERCHANGE_MISMATCH,
    KEY_MISMATCH, MESSAGE_TYPE_UPDATED, NewAuditEvent,
};
pub use backend::SqlStore;
pub use catalog::{GLOBAL_TENANT, IntegrationRow, MessageTypeRow, SOURCE_ADMIN, SOURCE_CONFIG};
pub use console::{ACCEPTED, ActivityCount, ActivityPoint, SIGNATURE_REJECTED, hourly_bounds, series_bounds};
pub use delivery_backlog::DeliveryBacklog;
pub use destinations::DestinationRow;
pub use error::{Result, StoreError};
pub use feed::{FeedMessage, FeedPage, FeedPosition, FeedQuery, StoredMessage};
pub use message_search::SEARCH_SCAN;
pub use model::*;
pub use outbox::{
    AttemptRow, ClaimedDelivery, DELIVERED, DeliveryQueue, DeliveryReport, DeliveryRow, FAILED,
    FinishedAttempt, PENDING, Recorded, ReplayFilter, Verdict, storable_text,
};
pub use outcome::{
    Answer, DetectedBy, IngestOutcome, IngestRequest, KeyClaim, KeyReusePolicy, MessageOutcome, Replay,
};
pub use partition_drop::Pace;
pub use partitions::{PartitionLayout, PartitionPeriod};
pub use postgres::PgStore;
pub use sap_status::{
    NewSapStatus, SAP_CREATED, SAP_IN_TARGET, SAP_NOT_CREATED, SapStatusRow, SapStatusState,
};
pub use settings::{PoolSettings, Pooler};
pub use sqlite::SqliteStore;
/// JSON column wrapper, re-exported so callers need no sqlx dependency.
pub use sqlx::types::Json;

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
    /// Runs one request's ingest transaction (see the `ingest` module docs).
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
    /// The bodies held by `body_ids` ([`FeedMessage::body_id`]), in no
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
    /// periods (see [`PartitionLayout`]) that do not exist yet, one replica
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
    /// Claims an AS2 message's Message-ID (see [`crate::as2`]): one of
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

/// Opens the store a database URL names: `sqlite://…` or `postgres://…`.
pub async fn connect(url: &str, opts: &PoolSettings) -> Result<Arc<dyn Store>> {
    if url.starts_with("sqlite:") {
        Ok(Arc::new(SqliteStore::connect(url, opts).await?))
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Arc::new(PgStore::connect(url, opts).await?))
    } else {
        Err(StoreError::UnsupportedUrl(url.to_string()))
    }
}
