//! Requests sent all at once, as senders that retry do: [`burst`] releases
//! them together, and [`assert_one_keyed`] checks that a burst of one keyed
//! request stored exactly one message and answered every repeat with it.

use axum::body::Body;
use axum::http::Request;

use super::{TestApp, TestResponse, accepted, send_on};

/// Sends all `requests` at once, each in its own task on its own clone of
/// the router, released together by a barrier, and collects the answers (in
/// completion order).
pub async fn burst(app: &TestApp, requests: Vec<Request<Body>>) -> Vec<TestResponse> {
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(requests.len()));
    let mut tasks = tokio::task::JoinSet::new();
    let mut out = Vec::with_capacity(requests.len());
    for request in requests {
        let router = app.router.clone();
        let barrier = barrier.clone();
        tasks.spawn(async move {
            barrier.wait().await;
            send_on(router, request).await
        });
    }
    while let Some(res) = tasks.join_next().await {
        out.push(res.expect("request task"));
    }
    out
}

/// Asserts the answers of a burst of one request carrying `key` (an
/// Idempotency-Key or a provider event id, as the audit shows it): exactly
/// one 202, every other answer a 200 replay of its body byte for byte, one
/// message stored in acme/prod, and one `message.duplicate_blocked` event per
/// replay, detected by `detected_by`, naming the stored message. Returns its id.
pub async fn assert_one_keyed(
    app: &TestApp,
    answers: &[TestResponse],
    detected_by: &str,
    key: &str,
) -> String {
    let statuses: Vec<u16> = answers.iter().map(|r| r.status.as_u16()).collect();
    let (new, replays): (Vec<_>, Vec<_>) = answers.iter().partition(|r| r.status.as_u16() == 202);
    assert_eq!(new.len(), 1, "exactly one 202: {statuses:?}");
    let id = accepted(new[0])["id"].as_str().expect("id").to_string();
    for res in &replays {
        res.expect(200);
        assert!(res.replayed(), "Idempotency-Replayed: true");
        assert_eq!(res.body, new[0].body, "the original body, byte for byte");
    }
    assert_eq!(app.count_prod().await, 1);
    let events = app.audit_events("action=message.duplicate_blocked").await;
    assert_eq!(events.len(), replays.len(), "one event per replay");
    for e in &events {
        assert_eq!(e["detected_by"], detected_by);
        assert_eq!(e["idempotency_key"], key);
        assert_eq!(e["original_message_id"], id.as_str());
    }
    id
}
