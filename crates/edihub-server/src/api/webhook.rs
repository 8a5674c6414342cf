//! `POST /api/webhook/{integrationId}`: partner webhooks.
//!
//! Order of checks: the integration exists (404), no header it reads is
//! repeated (400), the declared body fits (413), the signature headers are
//! present, well-formed and fresh (401): all before a byte of the body is
//! read. Only then is the body read, within `max_inflight_webhook_body_bytes`
//! (never the authenticated senders' budget) and the client address's share
//! of it (`max_inflight_webhook_body_bytes_per_address`), at the minimum
//! rate of body reads (408 below it), and its signature checked (401). Refusals are counted and audited in aggregate as
//! `webhook.signature_rejected` (see [`crate::integrations::rejections`]);
//! nothing is stored. Then the body must be JSON (400/422), its type and
//! event id well-formed (422), and the integration allowed to send that type
//! (403, see [`crate::producers`]). Then the same ingest transaction as
//! SAP messages: the provider's event id is claimed like an Idempotency-Key
//! (scoped to the integration, so two providers' ids never collide), and the
//! fingerprint rules of the message type apply to the payload.

use std::net::SocketAddr;

use axum::Extension;
use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::response::Response;
use edihub_core::{Document, KeyPath};
use edihub_store::{DetectedBy, KeyClaim, KeyReusePolicy};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::api::doc::MessageResult;
use crate::api::doc::errors::{
    BadInput, BadSignature, BodyTooSlow, IntegrationTypeForbidden, NotFound, TooLarge, Unavailable, Unusable,
};
use crate::config::check_type;
use crate::error::ApiError;
use crate::extract::ApiPath;
use crate::ingest::{
    MAX_KEY_LEN, MessageSource, Submission, build_messages, check_body_headers, header_text, now, parse,
    read_body_from, refuse_repeated, submit, validate_key,
};
use crate::integrations::{EventIdSource, Integration, TypeSource};
use crate::producers::Producer;
use crate::signing::SignatureError;
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(receive))
}

/// The message type at the integration's path: a string that passes
/// [`check_type`], like a type named in a header.
fn payload_type(doc: &Document, p: &KeyPath) -> Result<String, ApiError> {
    let at = p.as_str();
    match doc.values(p).first() {
        Some(Value::String(t)) => check_type(t)
            .map(str::to_string)
            .map_err(|reason| ApiError::Unprocessable(format!("the message type at {at}: {reason}"))),
        Some(_) => Err(ApiError::Unprocessable(format!("the message type at {at} must be a string"))),
        None => Err(ApiError::Unprocessable(format!("no message type at {at} in the payload"))),
    }
}

/// The event id at the integration's path, under the rule of header ids:
/// 1–200 printable ASCII characters. A number must be an integer and stands
/// for its decimal text, so `"id":12345` and `"id":"12345"` are one event.
/// No value (or `null`) means no event id: the fingerprint alone decides.
fn payload_event_id(doc: &Document, p: &KeyPath) -> Result<Option<String>, ApiError> {
    let text = match doc.values(p).into_iter().next() {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
        Some(_) => String::new(),
    };
    validate_key(&text).map(Some).map_err(|_| {
        ApiError::Unprocessable(format!(
            "the event id at {} must be an integer or 1–{MAX_KEY_LEN} printable ASCII characters (got {} bytes)",
            p.as_str(),
            text.len()
        ))
    })
}

/// Counts a refusal (metric at once, audit in aggregate) and builds the 401.
fn reject_signature(
    state: &AppState,
    integ: &Integration,
    peer: Option<SocketAddr>,
    error: &SignatureError,
) -> ApiError {
    let reason = error.to_string();
    state.metrics.signature_rejected(&integ.id, error.kind());
    state.rejections.record(integ, &reason, peer.map(|p| p.ip()), now());
    ApiError::Unauthorized(format!("webhook signature rejected: {reason}"))
}

/// Receive a partner webhook for an integration.
#[utoipa::path(post, path = "/api/webhook/{integration_id}", tag = "webhooks",
    params(("integration_id" = String, Path, description = "Integration id from the configuration")),
    request_body(content = Object, description = "The provider's JSON payload", content_type = "application/json"),
    responses(
        (status = 202, description = "New message stored", body = MessageResult),
        (status = 200, description = "Duplicate or provider event replay", body = MessageResult),
        BadInput, BadSignature, IntegrationTypeForbidden, NotFound, BodyTooSlow, TooLarge, Unusable, Unavailable
    )
)]
async fn receive(
    State(state): State<AppState>,
    ApiPath(integration_id): ApiPath<String>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let integ = state
        .integrations
        .get(&integration_id)
        .ok_or_else(|| ApiError::NotFound(format!("no integration `{integration_id}`")))?;
    refuse_ambiguous_headers(&integ, &headers)?;
    let peer = peer.map(|Extension(ConnectInfo(addr))| addr);
    check_body_headers(&state, &headers)?;
    let presented = integ
        .verifier
        .check_headers(&headers, chrono::Utc::now().timestamp())
        .map_err(|e| reject_signature(&state, &integ, peer, &e))?;
    let budget = &state.webhook_body_budget;
    let (bytes, _permit) = read_body_from(&state, budget, peer.map(|p| p.ip()), &headers, body).await?;
    if let Some(presented) = &presented {
        integ
            .verifier
            .check_body(presented, &bytes)
            .map_err(|e| reject_signature(&state, &integ, peer, &e))?;
    }
    let content_type = header_text(&headers, "content-type")?.map(str::to_string);
    // Webhooks are JSON whatever the provider labels them, and one message:
    // the first document (so no packet limit).
    let parsed = parse(&state.idoc_descriptions, &bytes, Some("application/json"), usize::MAX).await?;
    let doc = parsed
        .documents
        .first()
        .ok_or_else(|| ApiError::Unprocessable("the webhook has no document".into()))?;
    let message_type = match &integ.message_type {
        TypeSource::Fixed(t) => t.clone(),
        TypeSource::Path(p) => payload_type(doc, p)?,
    };
    let event_id = event_id_of(&integ, &headers, doc)?;
    let source = MessageSource {
        explicit_type: Some(&message_type),
        producer: Producer::Integration(&integ),
        idempotency_key: None,
        provider_event_id: event_id.clone(),
        content_type,
        payload: bytes.clone(),
    };
    let messages = build_messages(&state, &integ.scope, &parsed.documents, &source).await?;
    drop(parsed);
    let key = event_id.map(|id| KeyClaim {
        kind: DetectedBy::ProviderEventId,
        key: format!("{}:{id}", integ.id),
        request_sha256: hex::encode(Sha256::digest(&bytes)),
        // A provider retry may re-serialise its body; the event id decides.
        on_reuse: KeyReusePolicy::Replay,
        window_seconds: None,
    });
    submit(
        &state,
        Submission { scope: &integ.scope, key, messages, interchange: None, ack: None, handoff: None },
    )
    .await
}

/// Refuses, before the body is read, a repeated header whose repetition
/// would change who signed the request or which event it is.
fn refuse_ambiguous_headers(integ: &Integration, headers: &HeaderMap) -> Result<(), ApiError> {
    let mut once = vec!["content-type", "content-encoding"];
    once.extend(integ.verifier.header_names());
    if let Some(EventIdSource::Header(h)) = &integ.event_id {
        once.push(h.as_str());
    }
    refuse_repeated(headers, &once)?;
    integ.verifier.check_unambiguous(headers).map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// The provider's event id, from the header or the payload path the
/// integration names; `None` for an integration without one.
fn event_id_of(integ: &Integration, headers: &HeaderMap, doc: &Document) -> Result<Option<String>, ApiError> {
    Ok(match &integ.event_id {
        None => None,
        Some(EventIdSource::Header(h)) => match header_text(headers, h)? {
            Some(v) => Some(validate_key(v.trim()).map_err(|_| {
                ApiError::BadRequest(format!("the {h} header must be 1–200 printable ASCII characters"))
            })?),
            None => return Err(ApiError::BadRequest(format!("the event id header {h} is missing"))),
        },
        Some(EventIdSource::Path(p)) => payload_event_id(doc, p)?,
    })
}
