//! What a request asks the store to do and what happened: the domain
//! vocabulary between the server and the database.
//!
//! The store decides and returns outcomes; it never renders HTTP. A request
//! with a key (an Idempotency-Key, a provider's event id or an interchange
//! control number) keeps its [`Answer`], the outcomes as data, with the key,
//! so every repeat is answered from the same data by the same renderer in the
//! server, byte for byte. Keys stored before answers were kept as data hold
//! the rendered response instead; they replay as [`Replay::Rendered`].

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::outbox::model::ClaimedDelivery;
use crate::{MessageSummary, NewMessage, Scope};

/// How a blocked duplicate was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectedBy {
    /// The sender repeated an `Idempotency-Key`.
    IdempotencyKey,
    /// The business fingerprint was already claimed inside its window.
    Fingerprint,
    /// A webhook provider repeated its event id.
    ProviderEventId,
    /// An EDIFACT or X12 interchange control number came again from the
    /// same sender to the same receiver. It is claimed like a request key,
    /// in `idempotency_keys` under its own kind: the claim, its race rule
    /// (the primary key), the stored first answer and the retention are
    /// exactly what an interchange repeat needs, so a table of its own would
    /// only duplicate them.
    Interchange,
}

impl DetectedBy {
    /// The name stored in audit events and shown in responses.
    pub fn as_str(self) -> &'static str {
        match self {
            DetectedBy::IdempotencyKey => "idempotency_key",
            DetectedBy::Fingerprint => "fingerprint",
            DetectedBy::ProviderEventId => "provider_event_id",
            DetectedBy::Interchange => "interchange",
        }
    }

    /// The detector named `name` (as [`DetectedBy::as_str`] writes it).
    pub fn from_name(name: &str) -> Option<Self> {
        [
            DetectedBy::IdempotencyKey,
            DetectedBy::Fingerprint,
            DetectedBy::ProviderEventId,
            DetectedBy::Interchange,
        ]
        .into_iter()
        .find(|by| by.as_str() == name)
    }
}

/// What to do when a key comes back with a different payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyReusePolicy {
    /// Refuse with 422: nothing is silently dropped.
    #[default]
    Reject,
    /// Answer with the first response as if the payload were the same.
    Replay,
}

/// A request-level key (Idempotency-Key, provider event id or interchange) to claim.
#[derive(Debug, Clone)]
pub struct KeyClaim {
    /// Which kind of key this is (`IdempotencyKey`, `ProviderEventId` or `Interchange`).
    pub kind: DetectedBy,
    /// The key as the sender sent it (event ids are prefixed with the integration id).
    pub key: String,
    /// SHA-256 hex of the raw request body, to recognise a different payload.
    pub request_sha256: String,
    /// What to do with the same key and another payload.
    pub on_reuse: KeyReusePolicy,
    /// How long a claim blocks, in seconds: a claim older than this is
    /// released when its key comes again, and the request claims it anew
    /// (an interchange's window). `None`: the claim blocks until retention
    /// deletes it.
    pub window_seconds: Option<i64>,
}

/// What happened to one message of a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum MessageOutcome {
    /// Stored as a new message.
    Accepted(MessageSummary),
    /// Not stored: it repeats `existing`.
    Duplicate {
        /// The original message.
        existing: MessageSummary,
        /// How the repeat was recognised.
        detected_by: DetectedBy,
    },
}

impl MessageOutcome {
    /// The id the outcome refers to: the new message, or the original a
    /// duplicate repeats (what a key's stored answer points to).
    pub fn id(&self) -> Uuid {
        match self {
            MessageOutcome::Accepted(s) => s.id,
            MessageOutcome::Duplicate { existing, .. } => existing.id,
        }
    }

    /// Whether the message was stored as new.
    pub fn is_new(&self) -> bool {
        matches!(self, MessageOutcome::Accepted(_))
    }
}

/// The answer to a request, as data: what happened to each message, in
/// order, and the interchange envelope the request carried (if any). More
/// than one outcome is a packet (or an interchange).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// One outcome per message, in request order.
    pub outcomes: Vec<MessageOutcome>,
    /// The EDIFACT/X12 interchange's envelope (control number, parties), as
    /// the server described it in [`IngestRequest::envelope`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<serde_json::Value>,
    /// The deliveries the insert leased to the caller, as it asked
    /// ([`IngestRequest::lease`]): its worker attempts them without a
    /// claim. Never kept with a key's answer (a repeat leases nothing).
    #[serde(skip)]
    pub leased: Vec<ClaimedDelivery>,
}

/// Deliveries of a request's message that the caller asks the insert to
/// lease to it: its delivery worker will attempt them at once, so the
/// insert writes each lease with the delivery, and no claim has to find
/// and lease them afterwards (see `outbox`). The store leases what it can
/// and says which in [`Answer::leased`]; a delivery it does not lease is
/// claimed as any other.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InsertLease {
    /// (destination, lease until) of each delivery to lease.
    pub to: Vec<(String, chrono::DateTime<chrono::Utc>)>,
}

/// The first answer to a key, given again to a repeat.
#[derive(Debug, Clone, PartialEq)]
pub enum Replay {
    /// The first request's outcomes.
    Answer(Answer),
    /// A response rendered and stored by an edihub from before answers were
    /// kept as data: replayed as it was.
    Rendered {
        /// HTTP status of the first answer.
        status: u16,
        /// Its body.
        body: String,
    },
}

/// Everything one request asks the store to do.
#[derive(Debug)]
pub struct IngestRequest<'a> {
    /// Where the messages belong.
    pub scope: &'a Scope,
    /// A request-level key to claim first, if the sender gave one.
    pub key: Option<KeyClaim>,
    /// The messages, in packet order.
    pub messages: Vec<NewMessage>,
    /// The time the request is processed (used for windows and timestamps).
    pub now: chrono::DateTime<chrono::Utc>,
    /// The interchange envelope to keep with the answer (EDIFACT/X12).
    pub envelope: Option<serde_json::Value>,
    /// The deliveries of the message to lease to the caller at its insert
    /// (a request of one message without a key; other requests lease
    /// nothing).
    pub lease: Option<InsertLease>,
}

impl IngestRequest<'_> {
    /// The answer made of `outcomes` and this request's envelope.
    pub(crate) fn answer(&self, outcomes: Vec<MessageOutcome>) -> Answer {
        Answer { outcomes, envelope: self.envelope.clone(), leased: Vec::new() }
    }
}

/// What the store did with a request; returned only after it committed.
#[derive(Debug, Clone, PartialEq)]
pub enum IngestOutcome {
    /// The messages were processed (each accepted or a duplicate); with a
    /// key, this answer is kept for its repeats.
    Processed(Answer),
    /// The key was seen before: the first answer, to give again.
    Replayed(Replay),
    /// The key was seen before with a different payload.
    KeyMismatch,
}
