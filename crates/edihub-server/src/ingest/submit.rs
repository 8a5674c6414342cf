//! The end every ingest route shares: hand the checked messages and the
//! request's key claim to the store, count what happened, and answer.
//!
//! The receive and webhook handlers differ in how they authenticate, read
//! and check a request; from the store call on they are the same, so that
//! part lives here once.

use std::sync::Arc;

use axum::response::Response;
use edihub_core::Interchange;
use edihub_store::{DetectedBy, IngestOutcome, IngestRequest, KeyClaim, MessageOutcome, NewMessage, Scope};

use super::{now, outcome_response, render_outcomes};
use crate::edi::render_interchange;
use crate::error::ApiError;
use crate::state::AppState;

/// The shape of the answer, which the store renders before its commit so
/// the same bytes can be stored with the key and replayed.
#[derive(Debug, Clone)]
pub enum AnswerShape {
    /// One message (`{…}`) or a packet (`{"messages":[…]}`).
    Messages {
        /// More than one message: answer as a packet.
        packet: bool,
    },
    /// An EDIFACT / X12 interchange: a packet with its envelope.
    Interchange(Interchange),
}

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
    /// How the answer is laid out.
    pub shape: AnswerShape,
}

/// Stores a request's messages (or replays its key), counts the outcome and
/// builds the HTTP answer.
pub async fn submit(state: &AppState, submission: Submission<'_>) -> Result<Response, ApiError> {
    let Submission { scope, key, messages, shape } = submission;
    // A replay has no per-message outcomes: it is counted once, for the
    // first message's type, under the detector of the key that replayed.
    let detector = key.as_ref().map_or(DetectedBy::IdempotencyKey, |k| k.kind);
    let first_type = messages.first().map(|m| m.message_type.clone()).unwrap_or_default();
    let render = Arc::new(move |outcomes: &[_]| match &shape {
        AnswerShape::Interchange(interchange) => render_interchange(outcomes, interchange),
        AnswerShape::Messages { packet } => render_outcomes(outcomes, *packet),
    });
    let outcome = state.store.ingest(IngestRequest { scope, key, messages, now: now(), render }).await?;
    record_outcome(state, &scope.tenant_id, &outcome, &first_type, detector);
    outcome_response(outcome)
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
        IngestOutcome::Processed { outcomes, .. } => {
            for o in outcomes {
                match o {
                    MessageOutcome::Accepted(s) => metrics.accepted(&label(&s.message_type)),
                    MessageOutcome::Duplicate { existing, detected_by } => {
                        metrics.duplicate(&label(&existing.message_type), detected_by.as_str());
                    }
                }
            }
        }
        IngestOutcome::Replayed { .. } => {
            metrics.duplicate(&label(replay_type), replay.as_str());
        }
        IngestOutcome::KeyMismatch => {}
    }
}
