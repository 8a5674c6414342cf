//! `GET /admin/audit`: what edihub blocked and why, newest first.
//!
//! Keyset pagination: `next_cursor` is the id of the last event on the page;
//! passing it back as `cursor` continues strictly below it, so new events
//! arriving between pages never shift or repeat rows.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use edihub_store::{AuditEvent, AuditFilter};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::doc::AuditPage;
use crate::api::doc::errors::{BadInput, Unauthenticated, Unavailable};
use crate::auth::Admin;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Largest page.
pub const MAX_LIMIT: i64 = 500;
/// Page size when `limit` is absent.
pub const DEFAULT_LIMIT: i64 = 100;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

#[derive(Debug, Default, Deserialize)]
struct AuditQuery {
    action: Option<String>,
    tenant: Option<String>,
    environment: Option<String>,
    message_type: Option<String>,
    fingerprint: Option<String>,
    original_message_id: Option<String>,
    since: Option<String>,
    until: Option<String>,
    cursor: Option<String>,
    limit: Option<String>,
}

/// An optional RFC 3339 query value `name`.
pub(crate) fn parse_time(name: &str, v: Option<String>) -> Result<Option<DateTime<Utc>>, ApiError> {
    v.filter(|s| !s.is_empty())
        .map(|s| {
            DateTime::parse_from_rfc3339(&s).map(|t| t.with_timezone(&Utc)).map_err(|_| {
                ApiError::BadRequest(format!(
                    "`{name}` must be an RFC 3339 time such as 2026-01-31T12:00:00Z"
                ))
            })
        })
        .transpose()
}

fn non_empty(v: Option<String>) -> Option<String> {
    v.filter(|s| !s.is_empty())
}

impl AuditQuery {
    fn into_filter(self) -> Result<AuditFilter, ApiError> {
        let limit = match non_empty(self.limit) {
            None => DEFAULT_LIMIT,
            Some(s) => match s.parse::<i64>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
                _ => {
                    return Err(ApiError::BadRequest(format!(
                        "`limit` must be a number from 1 to {MAX_LIMIT}"
                    )));
                }
            },
        };
        let cursor = non_empty(self.cursor)
            .map(|c| {
                c.parse::<i64>()
                    .map_err(|_| ApiError::BadRequest("`cursor` is not a cursor this API returned".into()))
            })
            .transpose()?;
        Ok(AuditFilter {
            action: non_empty(self.action),
            tenant: non_empty(self.tenant),
            environment: non_empty(self.environment),
            message_type: non_empty(self.message_type),
            fingerprint: non_empty(self.fingerprint),
            message_id: non_empty(self.original_message_id)
                .map(|id| {
                    uuid::Uuid::parse_str(&id).map_err(|_| {
                        ApiError::BadRequest("`original_message_id` must be a message id (a UUID)".into())
                    })
                })
                .transpose()?,
            since: parse_time("since", self.since)?,
            until: parse_time("until", self.until)?,
            cursor,
            limit,
        })
    }
}

/// The JSON form of one event.
pub fn event_json(e: &AuditEvent) -> Value {
    json!({
        "id": e.id,
        "occurred_at": e.occurred_at.to_rfc3339_opts(SecondsFormat::Micros, true),
        "action": e.action,
        "tenant": e.tenant_id,
        "environment": e.environment_id,
        "message_type": e.message_type,
        "fingerprint": e.fingerprint,
        "idempotency_key": e.idempotency_key,
        "detected_by": e.detected_by,
        "original_message_id": e.message_id,
        "details": e.details.0,
    })
}

/// Audit events (JSON; a browser asking for text/html gets the HTML page).
#[utoipa::path(get, path = "/admin/audit", tag = "admin",
    params(
        ("action" = Option<String>, Query, description = "e.g. message.duplicate_blocked"),
        ("tenant" = Option<String>, Query), ("environment" = Option<String>, Query),
        ("message_type" = Option<String>, Query), ("fingerprint" = Option<String>, Query),
        ("original_message_id" = Option<uuid::Uuid>, Query, description = "events about this original message, e.g. the duplicates blocked against it"),
        ("since" = Option<String>, Query, description = "RFC 3339, inclusive"),
        ("until" = Option<String>, Query, description = "RFC 3339, exclusive"),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "default 100")
    ),
    responses((status = 200, description = "A page of events (HTML for browsers)",
        content((AuditPage = "application/json"), (String = "text/html"))),
        BadInput, Unauthenticated, Unavailable),
    security(("bearer" = []), ("basic" = []))
)]
async fn list(
    State(state): State<AppState>,
    _admin: Admin,
    ApiQuery(query): ApiQuery<AuditQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let filter = query.into_filter()?;
    let events = state.store.list_audit(&filter).await?;
    let next_cursor =
        (events.len() as i64 == filter.limit).then(|| events.last().map(|e| e.id.to_string())).flatten();
    if crate::console::layout::wants_html(&headers) {
        return Ok(
            crate::console::pages::audit::render(&filter, &events, next_cursor.as_deref()).into_response()
        );
    }
    Ok(Json(json!({
        "events": events.iter().map(event_json).collect::<Vec<_>>(),
        "next_cursor": next_cursor,
    }))
    .into_response())
}
