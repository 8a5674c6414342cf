//! The AS2 intake: the payload of an opened AS2 message taken through the
//! same pipeline as a sender's request (detection, the interchange's
//! control-number claim, fingerprint dedup, the outbox), in the environment
//! of the station that received it, under the rules of that environment's
//! senders. What comes back is the message stored (or the original it
//! repeats): the AS2 route answers with an MDN, not with JSON.

use edihub_core::Interchange;
use edihub_store::{IngestOutcome, KeyClaim, Replay};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::{MessageSource, build_messages, parse, store};
use crate::as2::partner::Station;
use crate::auth::SenderIdentity;
use crate::edi::interchange::{interchange_claim, interchange_content, reused_number};
use crate::error::ApiError;
use crate::producers::Producer;
use crate::state::AppState;

/// Stores `payload` (an opened AS2 message's, labelled `content_type`) in
/// `station`'s environment; the id of the
/// message stored (the first, for an interchange of several), of the one
/// it repeats, or `None` for a repeat answered by a key kept before
/// answers were data.
pub async fn intake(
    state: &AppState,
    station: &Station,
    payload: bytes::Bytes,
    content_type: &str,
) -> Result<Option<Uuid>, ApiError> {
    let sender = SenderIdentity::of_scope(&state.config, &station.tenant, &station.environment)
        .ok_or_else(|| ApiError::NotFound(format!("the environment of AS2 station `{}`", station.as2_id)))?;
    let bytes = payload;
    let content_type = Some(content_type.to_string());
    let parsed =
        parse(&state.idoc_descriptions, &bytes, content_type.as_deref(), state.config.max_idocs_per_packet)
            .await?;
    let source = MessageSource {
        explicit_type: None,
        producer: Producer::Sender { allowed: sender.message_types.as_deref() },
        idempotency_key: None,
        provider_event_id: None,
        content_type,
        payload: bytes.clone(),
    };
    let messages = build_messages(state, &sender.scope, &parsed.documents, &source).await?;
    let interchange = parsed.interchange.clone();
    drop(parsed);
    let key = interchange.as_ref().map(|ic| claim(ic, &bytes, &sender)).transpose()?;
    match store(state, &sender.scope, key, messages, interchange.as_ref(), None).await? {
        IngestOutcome::Processed(answer) | IngestOutcome::Replayed(Replay::Answer(answer)) => {
            Ok(answer.outcomes.first().map(edihub_store::MessageOutcome::id))
        }
        IngestOutcome::Replayed(Replay::Rendered { .. }) => Ok(None),
        IngestOutcome::KeyMismatch => Err(interchange.as_ref().map_or_else(
            || ApiError::Unprocessable("the interchange repeats another's control number".into()),
            reused_number,
        )),
    }
}

/// The interchange's control-number claim, as a sender's request makes it.
fn claim(ic: &Interchange, bytes: &[u8], sender: &SenderIdentity) -> Result<KeyClaim, ApiError> {
    let content = hex::encode(Sha256::digest(interchange_content(bytes)));
    interchange_claim(ic, content, sender.interchange_window)
}
