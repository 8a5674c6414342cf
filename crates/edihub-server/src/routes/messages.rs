//! `GET /admin/messages/{id}`, `GET /admin/messages/{id}/payload` and
//! `GET /admin/messages?fingerprint=…|idempotency_key=…|docnum=…`: find a
//! message and see exactly what was received.
//!
//! The JSON view carries the payload as text when it is valid UTF-8 (the
//! common case) and as base64 otherwise (ISO-8859-1 or UTF-16 IDocs), so the
//! bytes are never altered; `/payload` returns them raw with the original
//! Content-Type, for replay.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use edihub_store::{MessageQuery, MessageRow};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::api_doc::Problem;
use crate::auth::Admin;
use crate::error::ApiError;
use crate::extract::ApiPath;
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(find)).routes(routes!(show)).routes(routes!(payload))
}

fn parse_id(id: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(id).map_err(|_| ApiError::BadRequest(format!("`{id}` is not a message id")))
}

async fn load(state: &AppState, id: &str) -> Result<MessageRow, ApiError> {
    let id = parse_id(id)?;
    state.store.get_message(id).await?.ok_or_else(|| ApiError::NotFound(format!("no message {id}")))
}

fn message_json(m: &MessageRow) -> Value {
    let (payload, encoding) = match std::str::from_utf8(&m.payload) {
        Ok(text) => (text.to_string(), "utf-8"),
        Err(_) => (base64::engine::general_purpose::STANDARD.encode(&m.payload), "base64"),
    };
    json!({
        "id": m.id,
        "tenant": m.tenant_id,
        "environment": m.environment_id,
        "message_type": m.message_type,
        "mestyp": m.mestyp,
        "docnum": m.docnum,
        "sender": m.sender,
        "fingerprint": m.fingerprint,
        "fingerprint_basis": m.fingerprint_basis,
        "fingerprint_expires_at": m.fingerprint_expires_at,
        "key_values": m.key_values.0,
        "idempotency_key": m.idempotency_key,
        "provider_event_id": m.provider_event_id,
        "packet_index": m.packet_index,
        "received_at": m.received_at,
        "content_type": m.content_type,
        "payload_encoding": encoding,
        "payload_bytes": m.payload.len(),
        "payload": payload,
    })
}

/// A message with its raw payload.
#[utoipa::path(get, path = "/admin/messages/{id}", tag = "admin", params(("id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The message", body = Object), (status = 400, description = "Malformed body, header or query", body = Problem, content_type = "application/problem+json"), (status = 401, description = "Missing or wrong credentials", body = Problem, content_type = "application/problem+json"), (status = 404, description = "Not found", body = Problem, content_type = "application/problem+json"), (status = 503, description = "Database unavailable; retry later", body = Problem, content_type = "application/problem+json")), security(("bearer" = []), ("basic" = [])))]
async fn show(
    State(state): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(message_json(&load(&state, &id).await?)))
}

/// The raw payload exactly as received, with its original Content-Type.
#[utoipa::path(get, path = "/admin/messages/{id}/payload", tag = "admin", params(("id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The bytes as received, with their original Content-Type", body = String, content_type = "*/*"),
        (status = 400, description = "Malformed body, header or query", body = Problem, content_type = "application/problem+json"), (status = 401, description = "Missing or wrong credentials", body = Problem, content_type = "application/problem+json"), (status = 404, description = "Not found", body = Problem, content_type = "application/problem+json"), (status = 503, description = "Database unavailable; retry later", body = Problem, content_type = "application/problem+json")), security(("bearer" = []), ("basic" = [])))]
async fn payload(
    State(state): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    let m = load(&state, &id).await?;
    let content_type = m
        .content_type
        .as_deref()
        .and_then(|c| HeaderValue::from_str(c).ok())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let mut res = m.payload.clone().into_response();
    let headers = res.headers_mut();
    headers.insert(header::CONTENT_TYPE, content_type);
    // The bytes are the sender's: never let a browser run them in the
    // admin's origin (a payload labelled text/html could carry a script).
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    let disposition = format!("attachment; filename=\"{}.payload\"", m.id);
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(res)
}

#[derive(Debug, Deserialize)]
struct FindQuery {
    tenant: Option<String>,
    environment: Option<String>,
    fingerprint: Option<String>,
    idempotency_key: Option<String>,
    docnum: Option<String>,
    message_type: Option<String>,
    limit: Option<i64>,
}

/// Find messages by fingerprint, Idempotency-Key or docnum.
#[utoipa::path(get, path = "/admin/messages", tag = "admin",
    params(("tenant" = Option<String>, Query), ("environment" = Option<String>, Query),
        ("fingerprint" = Option<String>, Query), ("idempotency_key" = Option<String>, Query),
        ("docnum" = Option<String>, Query), ("message_type" = Option<String>, Query),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "default 100")),
    responses((status = 200, description = "Matching messages, newest first", body = Object), (status = 400, description = "Malformed body, header or query", body = Problem, content_type = "application/problem+json"), (status = 401, description = "Missing or wrong credentials", body = Problem, content_type = "application/problem+json"), (status = 503, description = "Database unavailable; retry later", body = Problem, content_type = "application/problem+json")), security(("bearer" = []), ("basic" = [])))]
async fn find(State(state): State<AppState>, _admin: Admin, uri: Uri) -> Result<Json<Value>, ApiError> {
    let Query(q) = Query::<FindQuery>::try_from_uri(&uri)
        .map_err(|e| ApiError::BadRequest(format!("invalid query string: {e}")))?;
    let keep = |v: Option<String>| v.filter(|s| !s.is_empty());
    let query = MessageQuery {
        tenant: keep(q.tenant),
        environment: keep(q.environment),
        fingerprint: keep(q.fingerprint),
        idempotency_key: keep(q.idempotency_key),
        docnum: keep(q.docnum),
        message_type: keep(q.message_type),
        limit: match q.limit {
            None => 100,
            Some(n) if (1..=500).contains(&n) => n,
            Some(_) => return Err(ApiError::BadRequest("`limit` must be a number from 1 to 500".into())),
        },
    };
    if query.fingerprint.is_none() && query.idempotency_key.is_none() && query.docnum.is_none() {
        return Err(ApiError::BadRequest(
            "give at least one of fingerprint, idempotency_key or docnum".into(),
        ));
    }
    let found = state.store.find_messages(&query).await?;
    Ok(Json(json!({ "messages": found })))
}
