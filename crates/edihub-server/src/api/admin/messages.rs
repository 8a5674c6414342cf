//! `GET /admin/messages/{id}`, `GET /admin/messages/{id}/payload` and
//! `GET /admin/messages?fingerprint=…|idempotency_key=…|docnum=…`: find a
//! message and see exactly what was received.
//!
//! The JSON view carries the payload as text when it is valid UTF-8 (the
//! common case) and as base64 otherwise (ISO-8859-1 or UTF-16 IDocs), so the
//! bytes are never altered; `/payload` returns them raw with the original
//! Content-Type, for replay.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use chrono::{DateTime, Utc};
use edihub_store::{AuditFilter, DUPLICATE_BLOCKED, MessageQuery, MessageRow};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::api::doc::errors::{BadInput, NotFound, Unauthenticated, Unavailable};
use crate::auth::Admin;
use crate::console::forms::token::FormSigner;
use crate::error::ApiError;
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(find)).routes(routes!(show)).routes(routes!(payload))
}

pub(crate) fn parse_id(id: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(id).map_err(|_| ApiError::BadRequest(format!("`{id}` is not a message id")))
}

pub(crate) async fn load(state: &AppState, id: &str) -> Result<MessageRow, ApiError> {
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

/// What the HTML page of a message takes in its query.
#[derive(Debug, Deserialize)]
struct ShowQuery {
    /// The destinations a Redeliver just queued (the page announces them
    /// only with a valid `notice`).
    redelivered: Option<String>,
    /// The Redeliver form's signature of `redelivered`.
    notice: Option<String>,
}

/// The destinations a Redeliver queued, as its redirect named them: only
/// when the link carries the form's signature of the list (made for this
/// page by this admin credential, minutes ago), and only those among the
/// message's deliveries. Any other text in a link is never shown.
fn redelivered(
    signer: &FormSigner,
    q: &ShowQuery,
    page: &str,
    deliveries: &[edihub_store::DeliveryReport],
) -> Option<String> {
    let (list, notice) = (q.redelivered.as_deref()?, q.notice.as_deref()?);
    if !signer.is_notice(page, list, notice) {
        return None;
    }
    let named: Vec<&str> =
        list.split(", ").filter(|d| deliveries.iter().any(|r| r.delivery.destination_id == *d)).collect();
    (!named.is_empty()).then(|| named.join(", "))
}

/// A message with its raw payload.
#[utoipa::path(get, path = "/admin/messages/{id}", tag = "admin", params(("id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The message", body = Object),
        BadInput, Unauthenticated, NotFound, Unavailable),
    security(("bearer" = []), ("basic" = [])))]
async fn show(
    State(state): State<AppState>,
    signer: FormSigner,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ShowQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let m = load(&state, &id).await?;
    if !crate::console::layout::wants_html(&headers) {
        return Ok(Json(message_json(&m)).into_response());
    }
    let deliveries = state.store.deliveries_of(m.id).await?;
    let sap_status = state.store.sap_statuses_of(m.id).await?;
    let token = signer.token(&crate::console::pages::message::deliveries::action(m.id));
    let queued = redelivered(&signer, &q, &format!("/admin/messages/{}", m.id), &deliveries);
    const SHOWN: i64 = 50;
    let filter = AuditFilter {
        action: Some(DUPLICATE_BLOCKED.into()),
        message_id: Some(m.id),
        limit: SHOWN + 1,
        ..Default::default()
    };
    let mut duplicates = state.store.list_audit(&filter).await?;
    let more_duplicates = duplicates.len() as i64 > SHOWN;
    duplicates.truncate(SHOWN as usize);
    let ctx = crate::console::pages::message::Context {
        duplicates: &duplicates,
        more_duplicates,
        docnum_scope: (m.fingerprint_basis == "docnum").then(|| docnum_scope(&m)).flatten(),
        now: crate::ingest::now(),
        deliveries: crate::console::pages::message::deliveries::Panel {
            message_id: m.id,
            deliveries: &deliveries,
            token: &token,
            redelivered: queued.as_deref(),
        },
        sap_status: &sap_status,
    };
    Ok(crate::console::pages::message::render(&m, &ctx).into_response())
}

/// The client, port and partner of the IDoc's control record (re-read from
/// the stored payload: the message keeps only the partner).
fn docnum_scope(m: &MessageRow) -> Option<[Option<String>; 3]> {
    let parsed = edihub_core::parse_body(&m.payload, m.content_type.as_deref()).ok()?;
    let doc = parsed.documents.get(usize::try_from(m.packet_index).ok()?)?;
    let c = doc.control()?;
    Some([c.mandt.clone(), c.sndpor.clone(), c.sndprn.clone()])
}

/// The raw payload exactly as received, with its original Content-Type.
#[utoipa::path(get, path = "/admin/messages/{id}/payload", tag = "admin", params(("id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The bytes as received, with their original Content-Type", body = String, content_type = "*/*"),
        BadInput, Unauthenticated, NotFound, Unavailable),
    security(("bearer" = []), ("basic" = [])))]
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
    sender: Option<String>,
    key_value: Option<String>,
    since: Option<String>,
    until: Option<String>,
    cursor: Option<String>,
    limit: Option<i64>,
}

/// The keyset cursor of a message list: where the next page starts
/// (`MessagePage::next`: a `received_at`, in microseconds, and an id).
fn cursor_of((at, id): (DateTime<Utc>, Uuid)) -> String {
    format!("{}.{id}", at.timestamp_micros())
}

fn parse_cursor(c: &str) -> Result<(DateTime<Utc>, Uuid), ApiError> {
    let bad = || ApiError::BadRequest("`cursor` is not a cursor this API returned".into());
    let (micros, id) = c.split_once('.').ok_or_else(bad)?;
    let at = micros.parse::<i64>().ok().and_then(DateTime::from_timestamp_micros).ok_or_else(bad)?;
    Ok((at, Uuid::parse_str(id).map_err(|_| bad())?))
}

impl FindQuery {
    fn into_query(self) -> Result<MessageQuery, ApiError> {
        let keep = |v: Option<String>| v.filter(|s| !s.is_empty());
        Ok(MessageQuery {
            tenant: keep(self.tenant),
            environment: keep(self.environment),
            tenants: Vec::new(),
            environments: Vec::new(),
            fingerprint: keep(self.fingerprint),
            idempotency_key: keep(self.idempotency_key),
            docnum: keep(self.docnum),
            message_type: keep(self.message_type),
            sender: keep(self.sender),
            key_value: keep(self.key_value),
            since: crate::api::admin::audit::parse_time("since", self.since)?,
            until: crate::api::admin::audit::parse_time("until", self.until)?,
            before: keep(self.cursor).map(|c| parse_cursor(&c)).transpose()?,
            limit: match self.limit {
                None => 100,
                Some(n) if (1..=500).contains(&n) => n,
                Some(_) => return Err(ApiError::BadRequest("`limit` must be a number from 1 to 500".into())),
            },
            scan: None,
        })
    }
}

/// The configured tenants and environments a docnum or fingerprint lookup
/// that names no tenant or no environment is limited to (as
/// `MessageQuery::tenants` and `environments`): the indexes on
/// `(tenant_id, environment_id, docnum)` and `(…, key_fingerprint)` then
/// answer it, one probe per combination, instead of a walk through every
/// message. Nothing for any other query. A message of a tenant or
/// environment no longer configured is then found only with both given.
fn lookup_limits(config: &crate::config::Config, q: &MessageQuery) -> (Vec<String>, Vec<String>) {
    let indexed = q.docnum.is_some() || q.fingerprint.is_some();
    if !indexed {
        return (Vec::new(), Vec::new());
    }
    let tenants = config.tenants.iter().filter(|t| q.tenant.as_deref().is_none_or(|id| id == t.id));
    let mut environments: Vec<String> =
        tenants.clone().flat_map(|t| t.environments.iter().map(|e| e.id.clone())).collect();
    environments.sort();
    environments.dedup();
    let tenants = if q.tenant.is_some() { Vec::new() } else { tenants.map(|t| t.id.clone()).collect() };
    let environments = if q.environment.is_some() { Vec::new() } else { environments };
    (tenants, environments)
}

/// Find messages by fingerprint, Idempotency-Key, docnum, key value or
/// sender (JSON); a browser gets the search page, which also lists without
/// a lookup key.
#[utoipa::path(get, path = "/admin/messages", tag = "admin",
    params(("tenant" = Option<String>, Query), ("environment" = Option<String>, Query),
        ("fingerprint" = Option<String>, Query), ("idempotency_key" = Option<String>, Query),
        ("docnum" = Option<String>, Query), ("message_type" = Option<String>, Query),
        ("sender" = Option<String>, Query, description = "sending partner (SNDPRN)"),
        ("key_value" = Option<String>, Query, description = "a value found at a key field, exactly"),
        ("since" = Option<String>, Query, description = "RFC 3339, inclusive"),
        ("until" = Option<String>, Query, description = "RFC 3339, exclusive"),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page; a page may hold fewer than `limit` messages, even none, and still have one (a search checked row by row examines at most `admin.search_scan_messages`, by default 10,000, a page): follow it until it is null"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "default 100")),
    responses((status = 200, description = "Matching messages, newest first (HTML for browsers)", body = Object),
        BadInput, Unauthenticated, Unavailable),
    security(("bearer" = []), ("basic" = [])))]
async fn find(
    State(state): State<AppState>,
    _admin: Admin,
    ApiQuery(q): ApiQuery<FindQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let mut query = q.into_query()?;
    query.scan = Some(state.config.admin.search_scan_messages);
    (query.tenants, query.environments) = lookup_limits(&state.config, &query);
    let html = crate::console::layout::wants_html(&headers);
    let lookups =
        [&query.fingerprint, &query.idempotency_key, &query.docnum, &query.key_value, &query.sender];
    if !html && lookups.iter().all(|v| v.is_none()) {
        return Err(ApiError::BadRequest(
            "give at least one of fingerprint, idempotency_key, docnum, key_value or sender".into(),
        ));
    }
    let page = state.store.find_messages(&query).await?;
    let next_cursor = page.next.map(cursor_of);
    if html {
        return Ok(crate::console::pages::message_search::render(&query, &page, next_cursor.as_deref())
            .into_response());
    }
    Ok(Json(json!({ "messages": page.messages, "next_cursor": next_cursor })).into_response())
}
