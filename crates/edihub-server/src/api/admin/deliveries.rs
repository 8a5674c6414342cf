//! Admin API for a message's deliveries: `GET
//! /admin/messages/{id}/deliveries` (status and attempts per destination)
//! and `POST /admin/messages/{id}/redeliver[?destination=…]` (due again at
//! once, with the same `webhook-id`; audited `delivery.replayed`), and
//! `POST /admin/deliveries/replay` (the same for every delivery a JSON
//! filter selects, e.g. a destination's dead letters after its receiver is
//! fixed; one audit event with the filter and the count).

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::admin::messages::load;
use crate::api::doc::Problem;
use crate::api::doc::errors::{
    BadInput, CrossOrigin, NotFound, NotJson, Unauthenticated, Unavailable, Unusable,
};
use crate::auth::Admin;
use crate::error::ApiError;
use crate::extract::{ApiPath, ApiQuery, JsonBody};
use crate::state::AppState;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(redeliver)).routes(routes!(replay))
}

/// A message's deliveries, by destination, each with its attempts (oldest first).
#[utoipa::path(get, path = "/admin/messages/{id}/deliveries", tag = "admin", params(("id" = uuid::Uuid, Path)),
    responses((status = 200, description = "Deliveries with their attempts", body = Object), BadInput, Unauthenticated, NotFound, Unavailable), security(("bearer" = []), ("basic" = [])))]
async fn list(
    State(state): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let message = load(&state, &id).await?;
    let deliveries = state.store.deliveries_of(message.id).await?;
    Ok(Json(json!({ "message_id": message.id, "deliveries": deliveries })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RedeliverQuery {
    destination: Option<String>,
}

/// Deliver a message again (to every destination it had, or to one).
#[utoipa::path(post, path = "/admin/messages/{id}/redeliver", tag = "admin",
    params(("id" = uuid::Uuid, Path), ("destination" = Option<String>, Query, description = "Absent: every destination of the message")),
    responses((status = 202, description = "Queued: the destinations", body = Object), BadInput, Unauthenticated, CrossOrigin, NotJson, (status = 404, description = "No such message, or no delivery of it to that destination", body = Problem, content_type = "application/problem+json"), Unavailable), security(("bearer" = []), ("basic" = [])))]
async fn redeliver(
    State(state): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<RedeliverQuery>,
) -> Result<(axum::http::StatusCode, Json<Value>), ApiError> {
    let message = load(&state, &id).await?;
    let queued = state.store.redeliver(message.id, q.destination.as_deref()).await?;
    if queued.is_empty() {
        let to = q.destination.map(|d| format!(" to `{d}`")).unwrap_or_default();
        return Err(ApiError::NotFound(format!("message {} has no delivery{to}", message.id)));
    }
    Ok((axum::http::StatusCode::ACCEPTED, Json(json!({ "message_id": message.id, "queued": queued }))))
}

/// Body of `POST /admin/deliveries/replay`; every member is optional.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ReplayBody {
    /// Only deliveries to this destination.
    destination: Option<String>,
    /// Only deliveries with this status: `failed`, `delivered` or `pending`.
    status: Option<String>,
    /// Only messages of this type.
    message_type: Option<String>,
    /// Only messages received at or after this time (RFC 3339).
    since: Option<String>,
    /// Only messages received before this time (RFC 3339).
    until: Option<String>,
}

/// An RFC 3339 time of the filter member `name`.
fn time(name: &str, text: Option<&str>) -> Result<Option<chrono::DateTime<chrono::Utc>>, ApiError> {
    let Some(text) = text else { return Ok(None) };
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| Some(t.with_timezone(&chrono::Utc)))
        .map_err(|_| ApiError::Unprocessable(format!("`{name}`: `{text}` is not an RFC 3339 time")))
}

/// Deliver again every delivery the filter selects; answers how many were queued.
#[utoipa::path(post, path = "/admin/deliveries/replay", tag = "admin",
    request_body(content = ReplayBody, content_type = "application/json"),
    responses((status = 202, description = "Queued: how many", body = Object), BadInput, Unauthenticated, CrossOrigin, NotJson, Unusable, Unavailable), security(("bearer" = []), ("basic" = [])))]
async fn replay(
    State(state): State<AppState>,
    _admin: Admin,
    JsonBody(body): JsonBody,
) -> Result<(axum::http::StatusCode, Json<Value>), ApiError> {
    let b: ReplayBody = crate::api::admin::rules::body_json(&body)?;
    if let Some(status) = &b.status
        && ![edihub_store::PENDING, edihub_store::DELIVERED, edihub_store::FAILED].contains(&status.as_str())
    {
        return Err(ApiError::Unprocessable(format!(
            "status `{status}` is none of `failed`, `delivered`, `pending`"
        )));
    }
    let (since, until) = (time("since", b.since.as_deref())?, time("until", b.until.as_deref())?);
    if let (Some(since), Some(until)) = (since, until)
        && since >= until
    {
        return Err(ApiError::Unprocessable("`since` must be before `until`".into()));
    }
    let filter = edihub_store::ReplayFilter {
        destination: b.destination,
        status: b.status,
        message_type: b.message_type,
        since,
        until,
    };
    let queued = state.store.replay_deliveries(&filter).await?;
    Ok((axum::http::StatusCode::ACCEPTED, Json(json!({ "queued": queued, "filter": filter }))))
}
