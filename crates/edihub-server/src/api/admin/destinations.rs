//! Admin API for push destinations: `GET /admin/destinations`,
//! `GET|PUT /admin/destinations/{id}`, `POST /admin/destinations/{id}/enable`
//! and `/disable`.
//!
//! Like integrations: a change is validated exactly like the config file,
//! stored with `source = "admin"` (the file no longer overwrites it) and
//! audited as `destination.updated` with the old and the new row. It takes
//! effect at the delivery loop's next pass, in every replica (each reads the
//! destinations from the database), and for the outbox at once: the trigger
//! that writes deliveries joins the table.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use edihub_store::{DestinationRow, SOURCE_ADMIN};
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::admin::rules::{definition_at, validate_with};
use crate::api::doc::errors::{
    BadInput, CrossOrigin, NotFound, NotJson, Unauthenticated, Unavailable, Unusable,
};
use crate::auth::Admin;
use crate::config::DestinationConfig;
use crate::error::ApiError;
use crate::extract::{ApiPath, JsonBody};
use crate::ingest::now;
use crate::state::AppState;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(show, put))
        .routes(routes!(enable))
        .routes(routes!(disable))
}

pub(crate) async fn find(state: &AppState, id: &str) -> Result<DestinationRow, ApiError> {
    let rows = state.store.list_destinations().await?;
    rows.into_iter().find(|r| r.id == id).ok_or_else(|| ApiError::NotFound(format!("no destination `{id}`")))
}

/// Validates `def` like the config file and stores it as an admin change.
pub(crate) async fn store(state: &AppState, def: DestinationConfig) -> Result<Json<Value>, ApiError> {
    validate_with(state, |c| c.destinations.push(def.clone()))?;
    let row = crate::delivery::row_of(&def, SOURCE_ADMIN, now());
    let old = state.store.put_destination(&row).await?;
    Ok(Json(json!({ "old": old, "new": row })))
}

/// All push destinations (JSON; a browser gets the console's page).
#[utoipa::path(get, path = "/admin/destinations", tag = "admin",
    responses((status = 200, description = "Destinations (HTML for browsers)", body = Object), Unauthenticated, Unavailable), security(("bearer" = []), ("basic" = [])))]
async fn list(
    State(state): State<AppState>,
    _admin: Admin,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let rows = state.store.list_destinations().await?;
    if crate::console::layout::wants_html(&headers) {
        return Ok(crate::console::pages::destinations::render(&rows).into_response());
    }
    Ok(Json(json!({ "destinations": rows })).into_response())
}

/// One push destination.
#[utoipa::path(get, path = "/admin/destinations/{id}", tag = "admin", params(("id" = String, Path)),
    responses((status = 200, description = "The destination", body = Object), Unauthenticated, NotFound, Unavailable), security(("bearer" = []), ("basic" = [])))]
async fn show(
    State(state): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<DestinationRow>, ApiError> {
    Ok(Json(find(&state, &id).await?))
}

/// Create or change a push destination; audited as destination.updated.
#[utoipa::path(put, path = "/admin/destinations/{id}", tag = "admin", params(("id" = String, Path)),
    request_body(content = DestinationConfig, content_type = "application/json",
        description = "The `id` comes from the path"),
    responses((status = 200, description = "Old and new value", body = Object), BadInput, Unauthenticated, CrossOrigin, NotJson, Unusable, Unavailable), security(("bearer" = []), ("basic" = [])))]
async fn put(
    State(state): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let def: DestinationConfig = definition_at(&body, &id, "destination", "destinations[0]")?;
    store(&state, def).await
}

/// Turns a destination on or off, keeping the rest of its definition.
async fn switch(state: &AppState, id: &str, enabled: bool) -> Result<Json<Value>, ApiError> {
    let row = find(state, id).await?;
    let mut def: DestinationConfig = serde_json::from_value(row.definition.0)
        .map_err(|e| ApiError::Unprocessable(format!("stored destination unreadable: {e}")))?;
    def.enabled = enabled;
    store(state, def).await
}

/// Resume a destination: new messages get deliveries again, queued ones are sent.
#[utoipa::path(post, path = "/admin/destinations/{id}/enable", tag = "admin", params(("id" = String, Path)),
    responses((status = 200, description = "Old and new value", body = Object), Unauthenticated, CrossOrigin, NotJson, NotFound, Unavailable), security(("bearer" = []), ("basic" = [])))]
async fn enable(
    State(state): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    switch(&state, &id, true).await
}

/// Pause a destination: new messages get no deliveries to it, queued ones wait.
#[utoipa::path(post, path = "/admin/destinations/{id}/disable", tag = "admin", params(("id" = String, Path)),
    responses((status = 200, description = "Old and new value", body = Object), Unauthenticated, CrossOrigin, NotJson, NotFound, Unavailable), security(("bearer" = []), ("basic" = [])))]
async fn disable(
    State(state): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    switch(&state, &id, false).await
}
