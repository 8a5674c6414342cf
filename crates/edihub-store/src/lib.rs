//! Storage for edihub: one [`Store`] trait, implemented by [`PgStore`]
//! (PostgreSQL) and [`SqliteStore`] (SQLite).
//!
//! Every dedup guarantee lives in the database, not in process memory: the
//! unique key of a fingerprint's claim on `(tenant_id, environment_id,
//! fingerprint)` (see each backend's `ingest/insert.rs`) and the primary key of `idempotency_keys`
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
//!   an environment's, `audit.rs`: the audit log and its insert,
//!   `console.rs` and
//!   `activity_rollup.rs`: the overview's counts; `outbox.rs`: the
//!   delivery leases, queue depths, replays and verdicts; `feed.rs`: the
//!   feed's page; `ingest/`: the ingest's statements, `insert.rs` (the
//!   message insert, which also says where a fingerprint's claim lives:
//!   `message_claims` on PostgreSQL, a column on SQLite), `claims.rs`
//!   (holder probes, releases, PostgreSQL's fingerprint locks), `keys.rs`
//!   (request keys), PostgreSQL's `keyed_batch.rs` (a keyed batch in
//!   one statement) and `upload.rs` (large payloads sent by `COPY`);
//!   PostgreSQL's `migrate.rs`: migrations, also behind a
//!   transaction pooler). The concept modules at the crate's root hold
//!   what both backends share: the types, and the decisions taken the
//!   same way on either (what seeding deletes, what a change audits, a
//!   search's next page, which hours a roll-up adds, what a verdict
//!   applies), some over a small trait of the backend's statements.
//! - `store.rs`: the [`Store`] trait; `sql_store.rs`: [`SqlStore`], the
//!   pools and queues both stores are made of; `backend.rs`: the
//!   `Backend` trait, what the shared ingest needs of a backend besides
//!   its connection's statements (`BEGIN`, the keyed batch's one
//!   statement, a missing partition);
//!   `outbox/finish.rs`: recording attempts one by one when their batch
//!   fails; `partitions.rs` and
//!   `partition_drop.rs`: PostgreSQL's time partitions, created ahead and
//!   on demand, dropped by retention;
//!   `session.rs`: units of work on a pool, directly or behind a
//!   transaction pooler ([`Pooler`]).
//! - `ingest/`: storing messages exactly once.
//!   - `mod.rs`: which path a request takes; retries;
//!   - `statements.rs`: what the ingest asks of a backend's connection
//!     (`IngestSql`: insert, holder probes, fingerprint locks, releases,
//!     audit events) and the row it inserts; `keys.rs`: the same for
//!     request keys (`KeySql`) and the key comparisons both backends
//!     share (`rendered_keys.rs`: what keys kept by an older edihub need
//!     read besides); `insert_answer.rs`: what the message insert returns
//!     (its ids, and on PostgreSQL the holders it met);
//!   - `decide.rs`: duplicate or new, replay or mismatch: the decisions all
//!     paths share;
//!   - `settle.rs`: the settle transaction, the one way a batch of
//!     requests (or a request on its own, a batch of one) is stored in a
//!     transaction: keys, then messages (`messages.rs`: a packet's known
//!     duplicates, then insert rounds), answers, repeats;
//!   - `group/`: many concurrent requests in one statement (`mod.rs`: the
//!     queues; `plain.rs`: settling a batch without keys; `keyed.rs`: a
//!     batch with keys, one statement where the backend has one, else the
//!     settle transaction; `audits.rs`: the group audit, one writer of the
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

mod ack_numbers;
mod activity_rollup;
mod as2;
mod audit;
mod backend;
mod catalog;
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
mod sql_store;
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
pub use catalog::{GLOBAL_TENANT, IntegrationRow, MessageTypeRow, SOURCE_ADMIN, SOURCE_CONFIG};
pub use console::{
    ACCEPTED, ActivityCount, ActivityPoint, Counted, SIGNATURE_REJECTED, hourly_bounds, series_bounds,
};
pub use delivery_backlog::DeliveryBacklog;
pub use destinations::DestinationRow;
pub use error::{Result, StoreError};
pub use feed::{FeedMessage, FeedPage, FeedPosition, FeedQuery, StoredMessage};
pub use message_search::SEARCH_SCAN;
pub use model::{
    MessageMeta, MessagePage, MessageQuery, MessageRow, MessageSummary, NewMessage, RetentionStep, Scope,
    docnum_forms,
};
pub use outbox::{
    AttemptRow, ClaimedDelivery, DELIVERED, DeliveryQueue, DeliveryReport, DeliveryRow, FAILED,
    FinishedAttempt, PENDING, Recorded, ReplayFilter, Verdict, storable_text,
};
pub use outcome::{
    Answer, DetectedBy, IngestOutcome, IngestRequest, InsertLease, KeyClaim, KeyReusePolicy, MessageOutcome,
    Replay,
};
pub use partition_drop::Pace;
pub use partitions::{PartitionLayout, PartitionPeriod};
pub use postgres::PgStore;
pub use sap_status::{
    NewSapStatus, SAP_CREATED, SAP_IN_TARGET, SAP_NOT_CREATED, SapRefusal, SapStatusRow, SapStatusState,
};
pub use settings::{PoolSettings, Pooler};
pub use sql_store::SqlStore;
pub use sqlite::SqliteStore;
/// JSON column wrapper, re-exported so callers need no sqlx dependency.
pub use sqlx::types::Json;
pub use store::{KeyPurge, Store};

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
