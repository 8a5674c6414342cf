//! The answer to an ingest, the same for every route and for every replay:
//! one JSON object per message (`"status":"accepted"` or `"duplicate"`), a
//! packet as `{"messages":[…]}`, an interchange as
//! `{"interchange":{…},"messages":[…]}`, 202 when anything was new.
//!
//! The store keeps a key's answer as data ([`Answer`]), so a repeat is
//! rendered here by the same code from the same data: byte for byte the
//! first answer.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use edihub_store::{Answer, IngestOutcome, MessageOutcome, MessageSummary, Replay};
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

/// The status and body of an answer: 202 when any message was new, else
/// 200; more than one message (a packet) answers `{"messages":[…]}`, an
/// interchange adds its envelope.
pub fn render_answer(answer: &Answer) -> (StatusCode, String) {
    let any_new = answer.outcomes.iter().any(MessageOutcome::is_new);
    let messages = || Value::Array(answer.outcomes.iter().map(outcome_json).collect());
    let body = match &answer.envelope {
        Some(envelope) => json!({ "interchange": envelope, "messages": messages() }),
        None if answer.outcomes.len() > 1 => json!({ "messages": messages() }),
        None => answer.outcomes.first().map(outcome_json).unwrap_or(Value::Null),
    };
    (if any_new { StatusCode::ACCEPTED } else { StatusCode::OK }, body.to_string())
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut res = (status, body).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

/// The HTTP answer to a committed ingest. A replay is 200 with the first
/// answer's body and `Idempotency-Replayed: true`.
pub fn outcome_response(outcome: IngestOutcome) -> Result<Response, ApiError> {
    let replayed = |body: String| {
        let mut res = json_response(StatusCode::OK, body);
        res.headers_mut().insert("idempotency-replayed", HeaderValue::from_static("true"));
        res
    };
    match outcome {
        IngestOutcome::Processed(answer) => {
            let (status, body) = render_answer(&answer);
            Ok(json_response(status, body))
        }
        IngestOutcome::Replayed(Replay::Answer(answer)) => Ok(replayed(render_answer(&answer).1)),
        // Kept by an edihub from before answers were data: as it was sent.
        IngestOutcome::Replayed(Replay::Rendered { body, .. }) => Ok(replayed(body)),
        IngestOutcome::KeyMismatch => Err(ApiError::Unprocessable(
            "this Idempotency-Key was already used with a different payload; use a new key for a new message"
                .into(),
        )),
    }
}
