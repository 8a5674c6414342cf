//! `GET /admin`: the console's overview page (HTML for everyone; the
//! numbers come from the same store as `/metrics`, but per tenant and
//! environment and over fixed periods): counts of the last 24 hours and 7
//! days, a chart of the last 24 hours, and the delivery backlog. Each view
//! first rolls the hours that have settled into the store's hourly rollup,
//! so the counts read only the last hour or two of messages directly.

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

/// A request's rows are stamped with its start time and commit before its
/// `request_timeout_secs` ends (a request past it is dropped and its
/// transaction rolled back); this margin covers what runs on after the
/// handler (a group insert's batch, clocks of replicas a little apart).
const SETTLE_MARGIN: Duration = Duration::seconds(60);

/// The time before which every request has committed or rolled back: the
/// hours that ended before it can be rolled up (see
/// [`edihub_store::Store::roll_up_activity`]).
fn settled(state: &AppState, now: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
    let timeout = i64::try_from(state.config.request_timeout_secs).ok().and_then(Duration::try_seconds);
    now - timeout.unwrap_or(Duration::days(365)) - SETTLE_MARGIN
}

/// The console's overview page (HTML).
#[utoipa::path(get, path = "/admin", tag = "admin",
    responses((status = 200, description = "The overview page", body = String, content_type = "text/html"),
        Unauthenticated, Unavailable),
    security(("bearer" = []), ("basic" = [])))]
async fn show(State(state): State<AppState>, _admin: Admin) -> Result<Response, ApiError> {
    let now = crate::ingest::now();
    state.store.roll_up_activity(settled(&state, now)).await?;
    let day = state.store.activity(now - Duration::hours(24)).await?;
    let week = state.store.activity(now - Duration::days(7)).await?;
    let bounds = edihub_store::hourly_bounds(now, 24);
    let series = state.store.activity_series(&bounds).await?;
    let backlog = state.store.delivery_backlog().await?;
    let page: Html<String> =
        crate::console::pages::overview::summary::render(&day, &week, &bounds, &series, &backlog);
    Ok(page.into_response())
}
