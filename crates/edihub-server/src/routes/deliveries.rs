//! Admin API for a message's deliveries: `GET
//! /admin/messages/{id}/deliveries` (status and attempts per destination)
//! and `POST /admin/messages/{id}/redeliver[?destination=…]` (due again at
//! once, with the same `webhook-id`; audited `delivery.replayed`).

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::messages::load;
use crate::api_doc::Problem;
use crate::auth::Admin;
use crate::error::ApiError;
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(redeliver))
}

/// A message's deliveries, by destination, each with its attempts (oldest first).
#[utoipa::path(get, path = "/admin/messages/{id}/deliveries", tag = "admin", params(("id" = uuid::Uuid, Path)),
    responses((status = 200, description = "Deliveries with their attempts", body = Object), (status = 400, description = "Malformed body, header or query", body = Problem, content_type = "application/problem+json"), (status = 401, description = "Missing or wrong credentials", body = Problem, content_type = "application/problem+json"), (status = 404, description = "Not found", body = Problem, content_type = "application/problem+json"), (status = 503, description = "Database unavailable; retry later", body = Problem, content_type = "application/problem+json")), security(("bearer" = []), ("basic" = [])))]
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
    responses((status = 202, description = "Queued: the destinations", body = Object), (status = 400, description = "Malformed body, header or query", body = Problem, content_type = "application/problem+json"), (status = 401, description = "Missing or wrong credentials", body = Problem, content_type = "application/problem+json"), (status = 403, description = "Sent from a page of another origin", body = Problem, content_type = "application/problem+json"), (status = 404, description = "No such message, or no delivery of it to that destination", body = Problem, content_type = "application/problem+json"), (status = 503, description = "Database unavailable; retry later", body = Problem, content_type = "application/problem+json")), security(("bearer" = []), ("basic" = [])))]
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
