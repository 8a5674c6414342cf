//! `GET /healthz` (the process runs), `GET /readyz` (the database answers)
//! and `GET /metrics` (Prometheus text; unauthenticated like most exporters,
//! so bind edihub to a private interface or filter the path at the proxy).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::api::doc::errors::Unavailable;
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
    let mut body = state.metrics.render(state.store.pool_status());
    body.push_str(&queue_gauges(&state).await);
    ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")], body)
}

/// The delivery queue gauges, from one grouped query; left out (and
/// logged) when the database does not answer, so the rest still scrapes.
/// Scrapes within `QUEUES_FRESH` of a read share it (one read at a time).
async fn queue_gauges(state: &AppState) -> String {
    let mut cached = state.metrics.queues.lock().await;
    if let Some((at, text)) = cached.as_ref()
        && at.elapsed() < crate::metrics::QUEUES_FRESH
    {
        return text.clone();
    }
    let read = async {
        let destinations = state.store.list_destinations().await?;
        let queues = state.store.delivery_queues().await?;
        Ok::<_, edihub_store::StoreError>((destinations, queues))
    };
    match read.await {
        Ok((destinations, queues)) => {
            let ids: Vec<String> = destinations.into_iter().map(|d| d.id).collect();
            let text = crate::metrics::render_queues(&ids, &queues, chrono::Utc::now());
            *cached = Some((std::time::Instant::now(), text.clone()));
            text
        }
        Err(e) => {
            tracing::warn!(error = %e, "metrics: reading the delivery queues failed");
            String::new()
        }
    }
}
