//! `GET /admin`: the console's overview page (HTML for everyone; the
//! numbers come from the same store as `/metrics`, but per tenant and
//! environment and over fixed periods): counts of the last 24 hours and 7
//! days, a chart of the last 24 hours, and the delivery backlog. It only
//! reads: the hours the store's rollup holds come from there (kept up to
//! date by [`crate::console::activity_rollup`]), the rest is counted
//! directly.

pub mod deliveries;
pub mod summary;

use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};
use chrono::Duration;

use crate::api::doc::errors::{Unauthenticated, Unavailable};
use crate::auth::Admin;
use crate::error::ApiError;
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(show))
}

/// The console's overview page (HTML).
#[utoipa::path(get, path = "/admin", tag = "admin",
    responses((status = 200, description = "The overview page", body = String, content_type = "text/html"),
        Unauthenticated, Unavailable),
    security(("bearer" = []), ("basic" = [])))]
async fn show(State(state): State<AppState>, _admin: Admin) -> Result<Response, ApiError> {
    let now = crate::ingest::now();
    let day = state.store.activity(now - Duration::hours(24)).await?;
    let week = state.store.activity(now - Duration::days(7)).await?;
    let bounds = edihub_store::hourly_bounds(now, 24);
    let series = state.store.activity_series(&bounds).await?;
    let backlog = state.store.delivery_backlog().await?;
    let page: Html<String> =
        crate::console::pages::overview::summary::render(&day, &week, &bounds, &series, &backlog);
    Ok(page.into_response())
}
