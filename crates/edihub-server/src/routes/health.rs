//! `GET /healthz` (the process runs), `GET /readyz` (the database answers)
//! and `GET /metrics` (Prometheus text; unauthenticated like most exporters,
//! so bind edihub to a private interface or filter the path at the proxy).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::api_doc::errors::Unavailable;
use crate::error::ApiError;
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(healthz)).routes(routes!(readyz)).routes(routes!(metrics))
}

/// Liveness: the process serves requests.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "Alive", body = Object)))]
async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// Readiness: the database answers.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, description = "Ready", body = Object), Unavailable))]
async fn readyz(State(state): State<AppState>) -> Result<(StatusCode, Json<Value>), ApiError> {
    match state.store.ping().await {
        Ok(()) => Ok((StatusCode::OK, Json(json!({ "status": "ready", "database": state.store.backend() })))),
        Err(e) => Err(ApiError::Unavailable(e)),
    }
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text exposition", body = String, content_type = "text/plain")))]
async fn metrics(State(state): State<AppState>) -> impl axum::response::IntoResponse {
    let body = state.metrics.render(state.store.pool_status());
    ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")], body)
}
