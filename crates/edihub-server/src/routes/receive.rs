//! `POST /api/edi-hub/receive-message`: IDocs (XML or JSON, single or packet)
//! and plain JSON from SAP systems.
//!
//! The handler only translates HTTP into an [`IngestRequest`]: authentication
//! happens in the extractor, parsing and fingerprints in `edihub-core`, every
//! dedup decision inside the store's transaction. The response is rendered
//! inside that transaction (so it can be stored with the Idempotency-Key) and
//! sent only after the commit.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use axum::routing::post;
use edihub_core::{FingerprintSpec, parse_body};
use edihub_store::{DetectedBy, IngestRequest, KeyClaim, NewMessage};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::auth::Sender;
use crate::error::ApiError;
use crate::ingest::{now, outcome_response, read_body, render_outcomes, validate_key, validate_type};
use crate::state::AppState;

/// The routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new().route("/api/edi-hub/receive-message", post(receive))
}

#[derive(Debug, Deserialize)]
struct ReceiveQuery {
    message_type: Option<String>,
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ApiError> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(Some)
            .map_err(|_| ApiError::BadRequest(format!("the {name} header must be printable ASCII"))),
    }
}

async fn receive(
    State(state): State<AppState>,
    Sender(sender): Sender,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let query = Query::<ReceiveQuery>::try_from_uri(&uri)
        .map_err(|e| ApiError::BadRequest(format!("invalid query string: {e}")))?;
    let header_key = header_text(&headers, "idempotency-key")?.map(validate_key).transpose()?;
    let explicit_type = match header_text(&headers, "x-message-type")? {
        Some(t) => Some(validate_type(t)?),
        None => query.message_type.as_deref().map(validate_type).transpose()?,
    };
    let content_type = header_text(&headers, "content-type")?.map(str::to_string);
    let bytes = read_body(&headers, body, state.config.max_body_bytes).await?;

    let parsed = parse_body(&bytes, content_type.as_deref())?;
    let body_key = parsed.idempotency_key.as_deref().map(validate_key).transpose()?;
    // The header wins over the body member.
    let idempotency_key = header_key.or(body_key);
    let tenant = sender.scope.tenant_id.as_str();
    let payload: Arc<[u8]> = Arc::from(&bytes[..]);
    let mut messages = Vec::with_capacity(parsed.documents.len());
    for (index, doc) in parsed.documents.iter().enumerate() {
        let is_configured = |t: &str| state.catalog.is_configured(tenant, t);
        let message_type = doc.message_type(explicit_type, &is_configured)?;
        let rule = state.catalog.rule(tenant, &message_type);
        let spec = FingerprintSpec {
            message_type: &message_type,
            key_fields: &rule.key_fields,
            exclude_fields: &rule.exclude_fields,
        };
        let fp = edihub_core::fingerprint(doc, &spec);
        messages.push(NewMessage {
            id: uuid::Uuid::now_v7(),
            mestyp: doc.mestyp().map(str::to_string),
            docnum: doc.docnum().map(str::to_string),
            sender: doc.control().and_then(|c| c.sndprn.clone()),
            fingerprint: fp.hex.clone(),
            fingerprint_basis: serde_json::to_value(fp.basis)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            window_seconds: rule.window_seconds,
            key_values: serde_json::to_value(&fp.key_values).unwrap_or_default(),
            idempotency_key: idempotency_key.clone(),
            provider_event_id: None,
            packet_index: i32::try_from(index).unwrap_or(i32::MAX),
            content_type: content_type.clone(),
            payload: payload.clone(),
            message_type,
        });
    }
    let key = idempotency_key.map(|key| KeyClaim {
        kind: DetectedBy::IdempotencyKey,
        key,
        request_sha256: hex::encode(Sha256::digest(&bytes)),
        on_reuse: sender.on_key_reuse,
    });
    let packet = parsed.documents.len() > 1;
    let render = move |outcomes: &[_]| render_outcomes(outcomes, packet);
    let outcome = state
        .store
        .ingest(IngestRequest { scope: &sender.scope, key, messages, now: now(), render: &render })
        .await?;
    outcome_response(outcome)
}
