//! `GET /admin/as2/messages`: the AS2 messages received, newest first:
//! partner, Message-ID, when, the MDN asked for and what became of it, and
//! the message stored. Paged by time: `next_before` is the `received_at`
//! of the page's last row, passed back as `before`.
//!
//! `GET /admin/as2/partners`: the stations and partners of the `[as2]`
//! configuration with what each exchange uses, their certificates' ends
//! (flagged [`WARN_DAYS`] ahead) and each partner's last messages; a
//! browser gets the console's page.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::SecondsFormat;
use edihub_store::{As2Filter, As2MessageRow};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::admin::audit::{DEFAULT_LIMIT, MAX_LIMIT, parse_time};
use crate::api::doc::errors::{BadInput, Unauthenticated, Unavailable};
use crate::as2::expiry::{Validity, WARN_DAYS};
use crate::as2::partner::{MdnMode, PartnerProfile, Station};
use crate::auth::Admin;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(partners))
}

#[derive(Debug, Default, Deserialize)]
struct As2Query {
    partner: Option<String>,
    before: Option<String>,
    limit: Option<String>,
}

/// The JSON form of one message received.
fn message_json(m: &As2MessageRow) -> Value {
    json!({
        "station": m.station,
        "partner": m.partner,
        "message_id": m.message_id,
        "tenant": m.tenant_id,
        "environment": m.environment_id,
        "received_at": m.received_at.to_rfc3339_opts(SecondsFormat::Micros, true),
        "mdn_mode": m.mdn_mode,
        "mdn_status": m.mdn_status,
        "mdn_url": m.mdn_url,
        "mdn_attempts": m.mdn_attempts,
        "mdn_error": m.mdn_error,
        "stored_message_id": m.stored_message_id,
    })
}

/// AS2 messages received.
#[utoipa::path(get, path = "/admin/as2/messages", tag = "admin",
    params(
        ("partner" = Option<String>, Query, description = "Only this partner's messages (its AS2 id)"),
        ("before" = Option<String>, Query, description = "RFC 3339: messages received before this time (next_before of the previous page)"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "default 100")
    ),
    responses((status = 200, description = "A page of AS2 messages: `messages` (station, partner, message_id, tenant, environment, received_at, mdn_mode sync/async/none, mdn_status processing/sent/pending/failed, mdn_url, mdn_attempts, mdn_error, stored_message_id) and `next_before`", body = Object),
        BadInput, Unauthenticated, Unavailable),
    security(("bearer" = []), ("basic" = []))
)]
async fn list(
    State(state): State<AppState>,
    _admin: Admin,
    ApiQuery(query): ApiQuery<As2Query>,
) -> Result<Response, ApiError> {
    let limit =
        match query.limit.filter(|s| !s.is_empty()) {
            None => DEFAULT_LIMIT,
            Some(s) => s.parse::<i64>().ok().filter(|n| (1..=MAX_LIMIT).contains(n)).ok_or_else(|| {
                ApiError::BadRequest(format!("`limit` must be a number from 1 to {MAX_LIMIT}"))
            })?,
        };
    let filter = As2Filter {
        partner: query.partner.filter(|s| !s.is_empty()),
        before: parse_time("before", query.before)?,
        limit,
    };
    let rows = state.store.list_as2_messages(&filter).await?;
    let next_before = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| r.received_at.to_rfc3339_opts(SecondsFormat::Micros, true)))
        .flatten();
    Ok(Json(json!({
        "messages": rows.iter().map(message_json).collect::<Vec<_>>(),
        "next_before": next_before,
    }))
    .into_response())
}

/// How many of a partner's last messages the partners list shows.
const LAST_MESSAGES: i64 = 5;

/// A station as listed.
fn station_json(s: &Station, now: chrono::DateTime<chrono::Utc>) -> Value {
    json!({
        "as2_id": s.as2_id.as_str(),
        "tenant": s.tenant,
        "environment": s.environment,
        "async_mdn_url": s.async_mdn_url,
        "certificate": Validity::of(&s.certificate, now),
    })
}

/// A partner as listed, with its last messages.
fn partner_json(p: &PartnerProfile, last: &[As2MessageRow], now: chrono::DateTime<chrono::Utc>) -> Value {
    json!({
        "as2_id": p.as2_id.as_str(),
        "station": p.station.as_str(),
        "url": p.url,
        "signed": p.security.signed,
        "encrypted": p.security.encrypted,
        "compressed": p.security.compressed,
        "mic_algorithm": p.mic_algorithm.name(),
        "encryption_algorithm": p.encryption.name(),
        "mdn": if p.mdn_mode == MdnMode::Async { "async" } else { "sync" },
        "mdn_signed": p.mdn_signed,
        "certificate": Validity::of(&p.certificate, now),
        "last_messages": last.iter().map(message_json).collect::<Vec<_>>(),
    })
}

/// AS2 stations and partners, their certificates and last messages.
#[utoipa::path(get, path = "/admin/as2/partners", tag = "admin",
    responses((status = 200, description = "`stations` (as2_id, tenant, environment, async_mdn_url, certificate) and `partners` (as2_id, station, url, signed, encrypted, compressed, mic_algorithm, encryption_algorithm, mdn, mdn_signed, certificate, last_messages); a certificate is subject, not_after, days_left and state valid/expiring/expired, expiring within `warn_days`. HTML for browsers", body = Object),
        Unauthenticated, Unavailable),
    security(("bearer" = []), ("basic" = []))
)]
async fn partners(
    State(state): State<AppState>,
    _admin: Admin,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let now = chrono::Utc::now();
    let mut listed = Vec::new();
    for p in state.as2.partners() {
        let filter =
            As2Filter { partner: Some(p.as2_id.as_str().to_string()), before: None, limit: LAST_MESSAGES };
        let last: Vec<As2MessageRow> = state
            .store
            .list_as2_messages(&filter)
            .await?
            .into_iter()
            .filter(|m| m.station == p.station.as_str())
            .collect();
        listed.push(partner_json(p, &last, now));
    }
    let stations: Vec<Value> = state.as2.stations().map(|s| station_json(s, now)).collect();
    if crate::console::layout::wants_html(&headers) {
        return Ok(crate::console::pages::as2_partners::render(&stations, &listed).into_response());
    }
    Ok(Json(json!({ "stations": stations, "partners": listed, "warn_days": WARN_DAYS })).into_response())
}
