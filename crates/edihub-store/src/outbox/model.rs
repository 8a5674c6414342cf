//! The outbox's rows: deliveries, their attempts, a worker's claim and
//! what it records after an attempt.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A delivery still to be made.
pub const PENDING: &str = "pending";
/// A delivery the receiver accepted (2xx).
pub const DELIVERED: &str = "delivered";
/// A delivery given up on: retries exhausted or `410 Gone` (dead letter).
pub const FAILED: &str = "failed";

/// A delivery a worker claimed: it holds the lease until it records the attempt.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ClaimedDelivery {
    /// The message to deliver (also the `webhook-id`).
    pub message_id: Uuid,
    /// Where to.
    pub destination_id: String,
    /// Attempts made before this one.
    pub attempts: i32,
    /// The lease taken, as stored: the attempt's verdict counts only while
    /// the delivery still holds it ([`FinishedAttempt::lease_until`]).
    pub lease_until: DateTime<Utc>,
    /// When the message was stored (its delivery created).
    pub created_at: DateTime<Utc>,
}

/// One (message, destination) delivery as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct DeliveryRow {
    /// The message.
    pub message_id: Uuid,
    /// The destination.
    pub destination_id: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    /// Attempts made so far.
    pub attempts: i32,
    /// When the next attempt is due (while pending).
    pub next_attempt_at: DateTime<Utc>,
    /// Set while a worker runs an attempt.
    pub lease_until: Option<DateTime<Utc>>,
    /// The receiver's status code at the last attempt, if it answered.
    pub last_status_code: Option<i32>,
    /// What went wrong at the last attempt, if anything.
    pub last_error: Option<String>,
    /// When the message was stored.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct AttemptRow {
    /// When it started.
    pub attempted_at: DateTime<Utc>,
    /// The receiver's status code, if it answered.
    pub status_code: Option<i32>,
    /// Milliseconds until the answer (or the error).
    pub latency_ms: i64,
    /// Timeout, connection error, or what the status means.
    pub error: Option<String>,
    /// The first bytes of the receiver's answer, as text: bytes that are
    /// not UTF-8 and NUL characters read as U+FFFD ([`storable_text`]).
    pub response_prefix: Option<String>,
}

/// A delivery with its attempts, oldest first (a first attempt that
/// delivered is kept on the delivery row, every other one in
/// `delivery_attempts`; the log lists both).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeliveryReport {
    /// The delivery.
    #[serde(flatten)]
    pub delivery: DeliveryRow,
    /// Its attempts.
    pub attempt_log: Vec<AttemptRow>,
}

/// A delivery row as its report reads it: with its first attempt when
/// that one delivered, which is recorded on the row rather than as a row of
/// `delivery_attempts` (see `outbox/verdicts.rs`).
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct ReportedDelivery {
    #[sqlx(flatten)]
    delivery: DeliveryRow,
    first_attempted_at: Option<DateTime<Utc>>,
    first_status_code: Option<i32>,
    first_latency_ms: Option<i64>,
    first_response_prefix: Option<String>,
}

impl ReportedDelivery {
    /// The delivery's columns (`first_*` beside those of [`DeliveryRow`]),
    /// for a `SELECT` that reads it.
    pub(crate) const COLUMNS: &str = "message_id, destination_id, status, attempts, next_attempt_at, \
        lease_until, last_status_code, last_error, created_at, updated_at, first_attempted_at, \
        first_status_code, first_latency_ms, first_response_prefix";

    /// The delivery's destination.
    pub(crate) fn destination_id(&self) -> &str {
        &self.delivery.destination_id
    }

    /// The report: the first attempt recorded on the row, if any, and
    /// `logged`, the delivery's rows of `delivery_attempts` in order, by
    /// the time each attempt started.
    pub(crate) fn report(self, logged: Vec<AttemptRow>) -> DeliveryReport {
        let first = self.first_attempted_at.map(|attempted_at| AttemptRow {
            attempted_at,
            status_code: self.first_status_code,
            latency_ms: self.first_latency_ms.unwrap_or_default(),
            error: None,
            response_prefix: self.first_response_prefix,
        });
        let mut attempt_log: Vec<AttemptRow> = first.into_iter().chain(logged).collect();
        // Oldest first: a first attempt that delivered after a stalled one
        // (whose verdict came too late) was made after that one.
        attempt_log.sort_by_key(|a| a.attempted_at);
        DeliveryReport { delivery: self.delivery, attempt_log }
    }
}

/// What a worker records after an attempt.
#[derive(Debug, Clone)]
pub struct FinishedAttempt {
    /// The delivery's message.
    pub message_id: Uuid,
    /// The delivery's destination.
    pub destination_id: String,
    /// The attempt.
    pub attempt: AttemptRow,
    /// What happens next.
    pub verdict: Verdict,
    /// The lease the attempt ran under ([`ClaimedDelivery::lease_until`]).
    /// A worker that stalled past it may find the delivery claimed again by
    /// another replica: its attempt is still logged, but its verdict is not
    /// recorded, so it cannot overwrite the newer attempt's.
    pub lease_until: DateTime<Utc>,
    /// Whether the message's environment reports status to its SAP system
    /// (`sap.status`): only then may its verdict owe a 41 or 40, so a batch
    /// without such attempts costs the status no statement.
    pub sap_status: bool,
}

/// What became of one finished attempt handed to
/// [`crate::Store::finish_deliveries`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The attempt is logged and its verdict applied.
    Applied,
    /// The attempt is logged, but its lease had passed to another attempt
    /// (see [`FinishedAttempt::lease_until`]): its verdict changed nothing.
    Superseded,
    /// Nothing of it was written (the database refused it): the delivery
    /// keeps its lease, and once that expires it is attempted again.
    NotRecorded,
}

impl Recorded {
    /// Whether the attempt is in the attempt log.
    pub fn logged(self) -> bool {
        self != Recorded::NotRecorded
    }
}

/// Text a receiver sent, as it is stored: PostgreSQL's `text` and `jsonb`
/// refuse the NUL character, so each NUL becomes U+FFFD (the character
/// invalid UTF-8 is decoded to), on both backends alike.
pub fn storable_text(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

impl AttemptRow {
    /// The attempt with its texts made storable ([`storable_text`]).
    pub fn storable(&self) -> AttemptRow {
        let clean = |t: &Option<String>| t.as_deref().map(|t| storable_text(t).into_owned());
        AttemptRow {
            error: clean(&self.error),
            response_prefix: clean(&self.response_prefix),
            ..self.clone()
        }
    }
}

/// What happens to a delivery after an attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Accepted: done.
    Delivered,
    /// Try again at this time.
    RetryAt(DateTime<Utc>),
    /// Give up (audited `delivery.failed`).
    Failed,
}

/// Which deliveries [`crate::Store::replay_deliveries`] makes due again;
/// every field is optional, all given ones must match.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ReplayFilter {
    /// Only deliveries to this destination.
    pub destination: Option<String>,
    /// Only deliveries with this status (`failed`, `delivered`, `pending`).
    pub status: Option<String>,
    /// Only deliveries of messages of this type.
    pub message_type: Option<String>,
    /// Only messages received at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only messages received before this time.
    pub until: Option<DateTime<Utc>>,
}
