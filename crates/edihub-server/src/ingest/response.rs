//! The answer to an ingest, the same for every route and for every replay:
//! one JSON object per message (`"status":"accepted"` or `"duplicate"`), a
//! packet as `{"messages":[…]}`, 202 when anything was new.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use edihub_store::{IngestOutcome, MessageOutcome, MessageSummary, StoredResponse};
use serde_json::{Value, json};

use crate::error::ApiError;

fn timestamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn summary_json(s: &MessageSummary, status: &str) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("id".into(), json!(s.id));
    m.insert("status".into(), json!(status));
    m.insert("message_type".into(), json!(s.message_type));
    m.insert("mestyp".into(), json!(s.mestyp));
    m.insert("docnum".into(), json!(s.docnum));
    m.insert("fingerprint".into(), json!(s.fingerprint));
    m.insert("received_at".into(), json!(timestamp(&s.received_at)));
    m.insert("deduplicated".into(), json!(s.fingerprint.is_some()));
    m
}

/// The JSON of one message outcome.
pub fn outcome_json(o: &MessageOutcome) -> Value {
    match o {
        MessageOutcome::Accepted(s) => {
            let mut m = summary_json(s, "accepted");
            if s.fingerprint.is_none() {
                m.insert(
                    "warning".into(),
                    json!("no key field and no DOCNUM found: stored without a fingerprint, not deduplicated"),
                );
            }
            Value::Object(m)
        }
        MessageOutcome::Duplicate { existing, detected_by } => {
            let mut m = summary_json(existing, "duplicate");
            m.insert("detected_by".into(), json!(detected_by.as_str()));
            Value::Object(m)
        }
    }
}

/// 202 when any message was new, else 200; a packet answers `{"messages":[…]}`.
pub fn render_outcomes(outcomes: &[MessageOutcome], packet: bool) -> StoredResponse {
    let any_new = outcomes.iter().any(|o| matches!(o, MessageOutcome::Accepted(_)));
    let body = if packet {
        json!({ "messages": outcomes.iter().map(outcome_json).collect::<Vec<_>>() })
    } else {
        outcomes.first().map(outcome_json).unwrap_or(Value::Null)
    };
    StoredResponse { status: if any_new { 202 } else { 200 }, body: body.to_string() }
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut res = (status, body).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

/// The HTTP answer to a committed ingest.
pub fn outcome_response(outcome: IngestOutcome) -> Result<Response, ApiError> {
    match outcome {
        IngestOutcome::Processed { response, .. } => {
            let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::OK);
            Ok(json_response(status, response.body))
        }
        IngestOutcome::Replayed { response } => {
            let mut res = json_response(StatusCode::OK, response.body);
            res.headers_mut().insert("idempotency-replayed", HeaderValue::from_static("true"));
            Ok(res)
        }
        IngestOutcome::KeyMismatch => Err(ApiError::Unprocessable(
            "this Idempotency-Key was already used with a different payload; use a new key for a new message"
                .into(),
        )),
    }
}
