//! `GET /healthz` (the process runs) and `GET /readyz` (the database answers).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::state::AppState;

/// The routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new().route("/healthz", get(healthz)).route("/readyz", get(readyz))
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
