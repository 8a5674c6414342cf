//! `GET /healthz` (the process runs), `GET /readyz` (the database answers)
//! and `GET /metrics` (Prometheus text; unauthenticated like most exporters,
//! so bind edihub to a private interface or filter the path at the proxy).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::state::AppState;

/// The routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
}

async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

async fn readyz(State(state): State<AppState>) -> Result<(StatusCode, Json<Value>), ApiError> {
    match state.store.ping().await {
        Ok(()) => Ok((StatusCode::OK, Json(json!({ "status": "ready", "database": state.store.backend() })))),
        Err(e) => Err(ApiError::Unavailable(e)),
    }
}

async fn metrics(State(state): State<AppState>) -> impl axum::response::IntoResponse {
    let body = state.metrics.render(state.store.pool_status());
    ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")], body)
}
