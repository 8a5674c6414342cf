//! `GET /admin/as2/messages`: the AS2 messages received, newest first:
//! partner, Message-ID, when, the MDN asked for and what became of it, and
//! the message stored. Paged by time: `next_before` is the `received_at`
//! of the page's last row, passed back as `before`.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::SecondsFormat;
use edihub_store::{As2Filter, As2MessageRow};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::admin::audit::{DEFAULT_LIMIT, MAX_LIMIT, parse_time};
use crate::api::doc::errors::{BadInput, Unauthenticated, Unavailable};
use crate::auth::Admin;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
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
