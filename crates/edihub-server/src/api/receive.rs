//! `POST /api/edi-hub/receive-message`: IDocs (XML or JSON, single or packet),
//! plain JSON, and EDIFACT / X12 interchanges (one message per transaction
//! set, answered like a packet with the interchange's envelope, or with its
//! acknowledgement when asked: see [`crate::edi::acks`]).
//!
//! The handler only translates HTTP into a [`Submission`] for
//! [`crate::ingest::submit`]: authentication happens in the extractor,
//! parsing and fingerprints in `edihub-core`, every dedup decision in the
//! store (its group insert or its transaction). The answer is rendered from
//! the store's outcomes after the commit.

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use edihub_core::Interchange;
use edihub_store::{DetectedBy, KeyClaim};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::api::doc::MessageResult;
use crate::api::doc::acks::{self, RefusedWithAck};
use crate::api::doc::errors::{
    BodyTooSlow, NotAcceptable, SenderTypeForbidden, TooLarge, Unauthenticated, Unavailable, UnsupportedType,
};
use crate::auth::{Sender, SenderIdentity};
use crate::edi::acks::{self as edi_ack, PendingAck};
use crate::edi::interchange::{interchange_claim, interchange_content};
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::ingest::{
    MessageSource, Submission, build_messages, header_text, parse, read_body, refuse_repeated, submit,
    validate_key, validate_type,
};
use crate::producers::Producer;
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(receive))
}

#[derive(Debug, Deserialize)]
struct ReceiveQuery {
    message_type: Option<String>,
    /// `997`, `999` or `contrl`: answer with that acknowledgement.
    ack: Option<String>,
}

/// Receive an IDoc (XML or JSON, single or packet), a plain JSON message, or an EDIFACT / X12 interchange.
#[utoipa::path(post, path = "/api/edi-hub/receive-message", tag = "receive",
    request_body(description = "IDoc-XML, IDoc as JSON, plain JSON, or an EDIFACT / X12 interchange", content(
        (String = "application/xml"), (String = "text/xml"), (Object = "application/json"),
        (String = "application/EDIFACT"), (String = "application/EDI-X12"),
        (String = "application/octet-stream"))),
    params(
        ("Idempotency-Key" = Option<String>, Header, description = "1–200 printable ASCII characters"),
        ("X-Message-Type" = Option<String>, Header, description = "Message type (required for plain JSON)"),
        ("message_type" = Option<String>, Query, description = "Message type, as the header"),
        ("ack" = Option<String>, Query, description = "997, 999 or contrl: answer an EDIFACT or X12 interchange with that acknowledgement (as does Accept: application/EDI-X12 or application/EDIFACT)")
    ),
    responses(
        (status = 202, description = "New message stored (a packet: any IDoc new); with ?ack= or an EDI Accept, the acknowledgement", content(
            (MessageResult = "application/json"),
            (String = "application/EDI-X12", example = json!(acks::X12_ACCEPTED)),
            (String = "application/EDIFACT", example = json!(acks::EDIFACT_ACCEPTED)))),
        (status = 200, description = "Duplicate or Idempotency-Key replay; nothing new stored; with ?ack= or an EDI Accept, the acknowledgement (for a repeated interchange a TA1, or a CONTRL, rejecting it as a duplicate)", content(
            (MessageResult = "application/json"),
            (String = "application/EDI-X12", example = json!(acks::X12_REPEATED)),
            (String = "application/EDIFACT", example = json!(acks::EDIFACT_REPEATED)))),
        RefusedWithAck, Unauthenticated, SenderTypeForbidden, NotAcceptable, BodyTooSlow, TooLarge, UnsupportedType,
        Unavailable
    ),
    security(("bearer" = []), ("basic" = []))
)]
async fn receive(
    State(state): State<AppState>,
    Sender(sender): Sender,
    ApiQuery(query): ApiQuery<ReceiveQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    refuse_repeated(&headers, &["idempotency-key", "x-message-type", "content-type", "content-encoding"])?;
    let header_key = header_text(&headers, "idempotency-key")?.map(validate_key).transpose()?;
    let explicit_type = match header_text(&headers, "x-message-type")? {
        Some(t) => Some(validate_type(t, "X-Message-Type")?),
        None => query.message_type.as_deref().map(|t| validate_type(t, "message_type")).transpose()?,
    };
    let content_type = header_text(&headers, "content-type")?.map(str::to_string);
    let (bytes, _permit) = read_body(&state, &state.body_budget, &headers, body).await?;

    let max_messages = state.config.max_idocs_per_packet;
    let mut parsed = match parse(&state.idoc_descriptions, &bytes, content_type.as_deref(), max_messages)
        .await
    {
        Ok(parsed) => parsed,
        Err(e) => {
            let body = (&bytes, content_type.as_deref());
            return edi_ack::refused(&state, &sender.scope, query.ack.as_deref(), &headers, body, e).await;
        }
    };
    let ack = edi_ack::requested(query.ack.as_deref(), &headers, parsed.format)?;
    let body_key = parsed.idempotency_key.as_deref().map(validate_key).transpose()?;
    // The header wins over the body member.
    let idempotency_key = header_key.or(body_key);
    let payload = bytes.clone();
    let source = MessageSource {
        explicit_type,
        producer: Producer::Sender { allowed: sender.message_types.as_deref() },
        idempotency_key: idempotency_key.clone(),
        provider_event_id: None,
        content_type,
        payload,
    };
    let messages = build_messages(&state, &sender.scope, &parsed.documents, &source).await?;
    let interchange = parsed.interchange.clone();
    let envelope = parsed.envelope.take();
    // A small message's one document is written for the delivery handoff
    // when its environment has an envelope destination; the parsed tree (a
    // few times the body's size) is gone before the insert either way.
    let handoff = (parsed.documents.len() == 1 && state.handoff.wants(&sender.scope, bytes.len()))
        .then(|| parsed.documents.first().and_then(crate::delivery::handoff_payload))
        .flatten();
    drop(parsed);
    // Checked before an acknowledgement's number is taken for the partner
    // the interchange names.
    let key = request_key(&sender, interchange.as_ref(), idempotency_key, &bytes)?;
    let ack = match (ack, envelope) {
        (Some(kind), Some(envelope)) => Some(PendingAck::take(&state, &sender.scope, kind, envelope).await?),
        _ => None,
    };
    submit(&state, Submission { scope: &sender.scope, key, messages, interchange, ack, handoff }).await
}

/// The request's key claim. An interchange's control number is its request
/// key (see `crate::edi::interchange`): a request has one key claim, and for EDI the
/// control number is the one the standards define, so an Idempotency-Key is
/// not claimed then. An interchange's content is compared without the
/// white space around it ([`interchange_content`]), a request's by its bytes.
fn request_key(
    sender: &SenderIdentity,
    interchange: Option<&Interchange>,
    idempotency_key: Option<String>,
    bytes: &[u8],
) -> Result<Option<KeyClaim>, ApiError> {
    let digest = |bytes: &[u8]| hex::encode(Sha256::digest(bytes));
    Ok(match interchange {
        Some(ic) => {
            let content = digest(interchange_content(bytes));
            Some(interchange_claim(ic, content, sender.interchange_window)?)
        }
        None => idempotency_key.map(|key| KeyClaim {
            kind: DetectedBy::IdempotencyKey,
            key,
            request_sha256: digest(bytes),
            on_reuse: sender.on_key_reuse,
            window_seconds: None,
        }),
    })
}
