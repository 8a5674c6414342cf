//! Per-request observation: request id, structured log line, metrics and the
//! request timeout.
//!
//! The request id is taken from an incoming `x-request-id` (when it is short
//! printable ASCII, so a proxy's id carries through) or made fresh, attached
//! to every log line of the request and returned in the response header.
//! A handler that exceeds `request_timeout_secs` is dropped (its transaction
//! rolls back, nothing half-stored) and the sender gets 503 with Retry-After,
//! never a hanging connection. A request with a payload of 1 MiB or more is
//! settled by the store in a task of its own, which finishes after the 503
//! (its transaction commits or rolls back whole); the retry is then answered
//! as a repeat, unless the message has no fingerprint, as with any answer
//! lost on the way.

use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::error::problem;
use crate::state::AppState;

/// Header carrying the request id.
pub const REQUEST_ID: &str = "x-request-id";

fn request_id(req: &Request) -> String {
    req.headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| uuid::Uuid::now_v7().to_string(), str::to_string)
}

/// The middleware; installed with `Router::layer` after the fallbacks, so
/// every answer, matched or not, passes through it.
pub async fn observe(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let id = request_id(&req);
    let route = req.extensions().get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str).to_string();
    let method = req.method().clone();
    let span = tracing::info_span!("request", request_id = %id, %method, route = %route);
    let started = Instant::now();
    let limit = Duration::from_secs(state.config.request_timeout_secs.max(1));
    let result = tokio::time::timeout(limit, next.run(req).instrument(span.clone())).await;
    let mut res = match result {
        Ok(res) => res,
        Err(_) => {
            span.in_scope(|| tracing::warn!(timeout_secs = limit.as_secs(), "request timed out"));
            let mut res = problem(StatusCode::SERVICE_UNAVAILABLE, "the request took too long; retry later");
            res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            res
        }
    };
    let elapsed = started.elapsed();
    let status = res.status().as_u16();
    state.metrics.request(&route, status, elapsed);
    span.in_scope(|| {
        tracing::info!(status, latency_ms = elapsed.as_secs_f64() * 1000.0, "request finished");
    });
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(REQUEST_ID, v);
    }
    res
}
