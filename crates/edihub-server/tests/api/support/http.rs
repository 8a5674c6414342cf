//! Requests and responses of the harness: building receive requests,
//! sending them through a router clone, and asserting on the answers
//! (problem documents, accepted and duplicate outcomes).

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use super::{PROBLEM_JSON, RECEIVE};

/// A collected response.
#[derive(Debug, Clone)]
pub struct TestResponse {
    /// HTTP status.
    pub status: StatusCode,
    /// Response headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

impl TestResponse {
    /// The body as JSON (panics with the body text when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header as text, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().expect("ASCII header"))
    }

    /// Asserts the status, printing the body on failure; returns `self`.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Self {
        assert_eq!(self.status.as_u16(), status, "unexpected status; body: {}", self.text());
        self
    }

    /// Whether `Idempotency-Replayed: true` is set.
    pub fn replayed(&self) -> bool {
        self.header("idempotency-replayed") == Some("true")
    }

    /// Asserts an RFC 9457 problem with `status` whose `detail` contains
    /// `detail_part` (case-insensitive); returns the detail.
    #[track_caller]
    pub fn expect_problem(&self, status: u16, detail_part: &str) -> String {
        self.expect(status);
        assert_eq!(self.header("content-type"), Some(PROBLEM_JSON), "problem content type");
        let body = self.json();
        assert_eq!(body["status"], status, "problem status member: {body}");
        let detail = body["detail"].as_str().unwrap_or_else(|| panic!("no detail: {body}")).to_string();
        assert!(
            detail.to_lowercase().contains(&detail_part.to_lowercase()),
            "detail {detail:?} does not mention {detail_part:?}"
        );
        detail
    }
}

/// Builds a receive request.
pub fn receive_request(
    authorization: Option<&str>,
    content_type: Option<&str>,
    body: Vec<u8>,
    extra_headers: &[(&str, &str)],
) -> Request<Body> {
    let mut builder = Request::builder().method(Method::POST).uri(RECEIVE);
    if let Some(auth) = authorization {
        builder = builder.header(header::AUTHORIZATION, auth);
    }
    if let Some(ct) = content_type {
        builder = builder.header(header::CONTENT_TYPE, ct);
    }
    for (name, value) in extra_headers {
        builder = builder.header(*name, HeaderValue::from_str(value).expect("header value"));
    }
    builder.body(Body::from(body)).expect("request")
}

/// Sends one request on `router` and collects the response.
pub async fn send_on(router: Router, request: Request<Body>) -> TestResponse {
    let response = router.oneshot(request).await.expect("infallible");
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("response body").to_bytes();
    TestResponse { status: parts.status, headers: parts.headers, body }
}

/// Asserts the shape of one message outcome and returns its id.
#[track_caller]
pub fn assert_outcome(v: &Value, status: &str) -> String {
    assert_eq!(v["status"], status, "outcome: {v}");
    let id = v["id"].as_str().unwrap_or_else(|| panic!("no id: {v}"));
    uuid::Uuid::parse_str(id).unwrap_or_else(|e| panic!("id {id} is not a UUID: {e}"));
    assert!(v["message_type"].is_string(), "message_type: {v}");
    assert!(v.get("docnum").is_some(), "docnum member: {v}");
    let received = v["received_at"].as_str().unwrap_or_else(|| panic!("no received_at: {v}"));
    chrono::DateTime::parse_from_rfc3339(received).unwrap_or_else(|e| panic!("received_at {received}: {e}"));
    if let Some(fp) = v["fingerprint"].as_str() {
        assert!(fp.len() == 64 && fp.bytes().all(|b| b.is_ascii_hexdigit()), "fingerprint {fp}");
    }
    id.to_string()
}

/// Asserts a 202 single-message answer and returns its JSON.
#[track_caller]
pub fn accepted(res: &TestResponse) -> Value {
    res.expect(202);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert!(!res.replayed(), "a new message is not a replay");
    let body = res.json();
    assert_outcome(&body, "accepted");
    body
}

/// Asserts a 202 answer to an EDIFACT or X12 interchange whose every
/// message was accepted, and returns its JSON.
#[track_caller]
pub fn accepted_interchange(res: &TestResponse) -> Value {
    res.expect(202);
    assert_eq!(res.header("content-type"), Some("application/json"));
    let body = res.json();
    let messages = body["messages"].as_array().unwrap_or_else(|| panic!("no messages: {body}"));
    assert!(!messages.is_empty(), "no messages: {body}");
    for m in messages {
        assert_outcome(m, "accepted");
    }
    body
}

/// Asserts a 200 duplicate of message `original_id` and returns its JSON.
#[track_caller]
pub fn duplicate_of(res: &TestResponse, original_id: &str) -> Value {
    res.expect(200);
    assert_eq!(res.header("content-type"), Some("application/json"));
    let body = res.json();
    assert_outcome(&body, "duplicate");
    assert_eq!(body["id"], original_id, "duplicate must name the original: {body}");
    body
}
