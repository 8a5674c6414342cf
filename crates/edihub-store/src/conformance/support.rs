//! What the checks share: the store under test, a scope no other check
//! uses, a message, a key, an ingest at a given time and its outcomes, and
//! the crate's types they all use. A check imports `super::support::*`.

use std::sync::Arc;

use chrono::{DateTime, Utc};

pub(super) use crate::{
    Answer, DetectedBy, IngestOutcome, IngestRequest, KeyClaim, KeyReusePolicy, MessageOutcome, NewMessage,
    Replay, Scope, Store,
};

/// The store under test.
pub type StoreRef = Arc<dyn Store>;

/// A scope no other check uses.
pub fn fresh_scope() -> Scope {
    Scope::new(format!("t{}", uuid::Uuid::new_v4().simple()), "prod")
}

/// The current time, at the microsecond precision both databases keep.
pub fn now() -> DateTime<Utc> {
    let t = Utc::now();
    DateTime::from_timestamp_micros(t.timestamp_micros()).expect("valid time")
}

/// A message with the given fingerprint and a 1-hour window.
pub fn message(fingerprint: Option<&str>) -> NewMessage {
    NewMessage {
        id: uuid::Uuid::now_v7(),
        message_type: "ORDERS05".into(),
        mestyp: Some("ORDERS".into()),
        docnum: Some("4711".into()),
        sender: Some("Q01CLNT100".into()),
        fingerprint: fingerprint.map(str::to_string),
        fingerprint_basis: if fingerprint.is_some() { "key_fields" } else { "none" }.into(),
        window_seconds: 3600,
        key_values: serde_json::json!([{ "path": "E1EDK01.BELNR", "values": ["4500012345"] }]),
        idempotency_key: None,
        provider_event_id: None,
        packet_index: 0,
        content_type: Some("application/xml".into()),
        payload: bytes::Bytes::from_static(b"<ORDERS05/>"),
    }
}

/// An Idempotency-Key claim over a body with the given hash.
pub fn key(key: &str, body_sha: &str) -> KeyClaim {
    KeyClaim {
        kind: DetectedBy::IdempotencyKey,
        key: key.into(),
        request_sha256: body_sha.into(),
        on_reuse: KeyReusePolicy::Reject,
        window_seconds: None,
    }
}

/// The id an outcome refers to (new or original).
pub fn outcome_id(o: &MessageOutcome) -> uuid::Uuid {
    o.id()
}

/// Runs one ingest with `messages` at `at`.
pub async fn ingest_at(
    store: &StoreRef,
    scope: &Scope,
    key: Option<KeyClaim>,
    messages: Vec<NewMessage>,
    at: DateTime<Utc>,
) -> IngestOutcome {
    store
        .ingest(IngestRequest { scope, key, messages, now: at, envelope: None, lease: None })
        .await
        .expect("ingest")
}

/// The outcomes of a processed ingest; panics on a replay or mismatch.
pub fn processed(outcome: IngestOutcome) -> Vec<MessageOutcome> {
    match outcome {
        IngestOutcome::Processed(answer) => answer.outcomes,
        other => panic!("expected Processed, got {other:?}"),
    }
}
