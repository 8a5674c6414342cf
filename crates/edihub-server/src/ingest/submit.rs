//! The end every ingest route shares: hand the checked messages and the
//! request's key claim to the store, count what happened, and answer.
//!
//! The receive and webhook handlers differ in how they authenticate, read
//! and check a request; from the store call on they are the same, so that
//! part lives here once.

use axum::response::Response;
use edihub_core::Interchange;
use edihub_store::{
    DetectedBy, IngestOutcome, IngestRequest, InsertLease, KeyClaim, MessageOutcome, NewMessage, Scope,
};
use serde_json::value::RawValue;

use super::{now, outcome_response};
use crate::delivery::Reservation;
use crate::edi::acks::PendingAck;
use crate::edi::interchange::{envelope, reused_number};
use crate::error::ApiError;
use crate::state::AppState;

/// A request that passed its route's checks, ready for the store.
#[derive(Debug)]
pub struct Submission<'a> {
    /// Where the messages belong.
    pub scope: &'a Scope,
    /// The request-level claim (Idempotency-Key, provider event id or
    /// interchange control number), if any.
    pub key: Option<KeyClaim>,
    /// The messages, in request order.
    pub messages: Vec<NewMessage>,
    /// The EDIFACT / X12 interchange the messages came in, whose envelope
    /// the answer carries (and the key keeps for repeats).
    pub interchange: Option<Interchange>,
    /// The acknowledgement the sender asked for instead of the JSON answer
    /// (EDIFACT / X12, see [`crate::edi::acks`]).
    pub ack: Option<PendingAck>,
    /// The JSON rendering of the request's one document, written when the
    /// delivery handoff wants its envelope (see `delivery::handoff`):
    /// handed over once the message is stored as new, with the deliveries
    /// its insert leased to this process's worker.
    pub handoff: Option<Box<RawValue>>,
}

/// Stores a request's messages (or replays its key), counts the outcome and
/// builds the HTTP answer from it. A request the store refuses (its key
/// claimed by other content) tells the IDocs' SAP sender so (see
/// [`crate::sap_status::refused_messages`]).
pub async fn submit(state: &AppState, submission: Submission<'_>) -> Result<Response, ApiError> {
    let Submission { scope, key, messages, interchange, ack, handoff } = submission;
    let owed = crate::sap_status::candidates(state, scope, &messages);
    // Attempt slots for the deliveries the insert is to lease; those it
    // does not lease are given back when the reservation goes.
    let reservation = match (&handoff, messages.as_slice()) {
        (Some(_), [message]) if key.is_none() => state.handoff.reserve(scope, &message.message_type),
        _ => None,
    };
    let outcome = match reservation {
        // Completed in a task of its own, as its insert is: once leased, a
        // delivery must reach the worker even if the client goes away
        // meanwhile, or it would wait for its lease to expire.
        Some(reservation) => {
            let (state, scope, interchange) = (state.clone(), scope.clone(), interchange.clone());
            let leased = async move {
                let lease = Some(reservation.lease.clone());
                let outcome = store(&state, &scope, None, messages, interchange.as_ref(), lease).await?;
                hand(&state, &scope, &outcome, handoff.as_deref(), Some(reservation));
                Ok::<_, ApiError>(outcome)
            };
            tokio::spawn(leased).await.map_err(ApiError::internal)??
        }
        None => {
            let outcome = store(state, scope, key, messages, interchange.as_ref(), None).await?;
            hand(state, scope, &outcome, handoff.as_deref(), None);
            outcome
        }
    };
    let refused = outcome == IngestOutcome::KeyMismatch;
    let answer = match (ack, &interchange) {
        (Some(ack), _) => ack.respond(outcome),
        // The control number was claimed by other content: refused, never
        // answered with the other interchange's messages.
        (None, Some(ic)) if refused => Err(reused_number(ic)),
        (None, _) => outcome_response(outcome),
    };
    if let Err(e) = &answer
        && refused
        && !owed.is_empty()
    {
        crate::sap_status::refused_messages(state, scope, &owed, e).await;
    }
    answer
}

/// Hands over the envelope of a request's one message stored as new, with
/// `payload`, its document's rendering, and the deliveries its insert
/// leased with their slots in `reservation` (see `delivery::handoff`).
fn hand(
    state: &AppState,
    scope: &Scope,
    outcome: &IngestOutcome,
    payload: Option<&RawValue>,
    reservation: Option<Reservation>,
) {
    if let (Some(payload), IngestOutcome::Processed(answer)) = (payload, outcome)
        && let [MessageOutcome::Accepted(stored)] = answer.outcomes.as_slice()
    {
        state.handoff.hand(scope, stored, payload, reservation, &answer.leased);
    }
}

/// Hands a request's messages and key claim to the store (with `lease`,
/// the deliveries to lease at the insert), counts what happened, records
/// the status owed to a SAP sender (see [`crate::sap_status`]), wakes the
/// feed and flags the delivery worker's claims for what was stored without
/// a lease: the part of [`submit`] every intake shares, also the AS2
/// intake, which answers with an MDN instead.
pub async fn store(
    state: &AppState,
    scope: &Scope,
    key: Option<KeyClaim>,
    messages: Vec<NewMessage>,
    interchange: Option<&Interchange>,
    lease: Option<InsertLease>,
) -> Result<IngestOutcome, ApiError> {
    // A replay has no per-message outcomes: it is counted once, for the
    // first message's type, under the detector of the key that replayed.
    let detector = key.as_ref().map_or(DetectedBy::IdempotencyKey, |k| k.kind);
    let first_type = messages.first().map(|m| m.message_type.clone()).unwrap_or_default();
    let envelope = interchange.map(envelope).transpose()?;
    let sap_candidates = crate::sap_status::candidates(state, scope, &messages);
    let outcome =
        state.store.ingest(IngestRequest { scope, key, messages, now: now(), envelope, lease }).await?;
    if !sap_candidates.is_empty() {
        crate::sap_status::record(state, scope, &sap_candidates, &outcome).await;
    }
    record_outcome(state, &scope.tenant_id, &outcome, &first_type, detector);
    if let IngestOutcome::Processed(answer) = &outcome
        && let accepted = answer.outcomes.iter().filter(|o| o.is_new()).count()
        && accepted > 0
    {
        state.handoff.stored(scope, accepted, &answer.leased);
        state.feed.notify(scope);
    }
    Ok(outcome)
}

/// Counts what an ingest did. A replay has no per-message outcomes: it is
/// counted once for `replay_type` under the key's detector.
fn record_outcome(
    state: &AppState,
    tenant: &str,
    outcome: &IngestOutcome,
    replay_type: &str,
    replay: DetectedBy,
) {
    let metrics = &state.metrics;
    // Senders choose message types freely (X-Message-Type); only configured
    // types become label values, so a sender cannot create unbounded series.
    let label =
        |t: &str| if state.catalog.is_configured(tenant, t) { t.to_string() } else { "other".to_string() };
    match outcome {
        IngestOutcome::Processed(answer) => {
            for o in &answer.outcomes {
                match o {
                    MessageOutcome::Accepted(s) => metrics.accepted(&label(&s.message_type)),
                    MessageOutcome::Duplicate { existing, detected_by } => {
                        metrics.duplicate(&label(&existing.message_type), detected_by.as_str());
                    }
                }
            }
        }
        IngestOutcome::Replayed(_) => {
            metrics.duplicate(&label(replay_type), replay.as_str());
        }
        IngestOutcome::KeyMismatch => {}
    }
}
