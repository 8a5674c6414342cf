//! What waits in the group insert's queues ([`Queued`]), what the batch
//! decides for each ([`Verdict`]) and how many rows a batch takes: what the
//! dispatcher, the settling of plain batches and the keyed batches share,
//! so they import it from here rather than from each other.

use chrono::{DateTime, Utc};

use crate::ingest::packet::Progress;
use crate::ingest::settle::Pending;
use crate::{ClaimedDelivery, IngestOutcome, InsertLease, KeyClaim, MessageSummary, NewMessage, Scope};

/// Most rows in one statement (19 parameters each, far under both backends'
/// limits).
pub(crate) const MAX_ROWS: usize = 64;

/// One message waiting for the group insert.
#[derive(Debug)]
pub(crate) struct Queued {
    /// Where it belongs.
    pub scope: Scope,
    /// The request time (timestamps and the window's end).
    pub now: DateTime<Utc>,
    /// The request's key, if any.
    pub key: Option<KeyClaim>,
    /// The request's interchange envelope, kept with its key's answer.
    pub envelope: Option<serde_json::Value>,
    /// The message.
    pub message: NewMessage,
    /// Its deliveries to lease to the caller at the insert (requests
    /// without a key; a keyed batch leases nothing).
    pub lease: Option<InsertLease>,
}

impl Queued {
    /// This request as the settle transaction takes it.
    pub(crate) fn pending(&self) -> Pending<'_> {
        Pending {
            scope: &self.scope,
            now: self.now,
            key: self.key.as_ref(),
            envelope: self.envelope.as_ref(),
            messages: std::slice::from_ref(&self.message),
            progress: Progress::START,
            earlier: &[],
            last: true,
        }
    }
}

/// What the group insert decided for one message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Stored and committed (requests without a key), with the deliveries
    /// the insert leased to the caller.
    Inserted(Vec<ClaimedDelivery>),
    /// A duplicate of this holder; its audit event is committed (requests
    /// without a key).
    Duplicate(MessageSummary),
    /// The whole outcome of a request with a key, committed.
    Outcome(IngestOutcome),
    /// Not decided here: run the ingest transaction.
    Undecided,
}
