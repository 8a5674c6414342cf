//! `max_inflight_body_bytes`: large uploads queue for memory, small ones
//! never wait, and a queued upload is stored once it gets its turn. A large
//! body, buffered in a mapping of its own, is kept whole.
//!
//! The real server runs on a port-0 listener and the test speaks raw
//! HTTP/1.1, so it can hold a large upload half-sent: its share of the budget
//! is taken from its Content-Length before the body is read, so while it is
//! held, a second large upload must wait and a small one must not.

use std::time::Duration;

use crate::support::live::LiveServer;
use crate::support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// 128 KiB of budget: one ~100 KiB upload fills it.
/// A body budget of 128 KiB.
fn budget() -> TestConfig {
    TestConfig::new().with(|c| c.max_inflight_body_bytes = 131_072)
}

/// The ORDERS05 fixture with its own order number, padded with a comment to
/// about `size` bytes (anything over 64 KiB counts against the budget).
fn order(belnr: &str, size: usize) -> Vec<u8> {
    let text = String::from_utf8(fixture("orders05.xml")).expect("UTF-8").replace("4500012345", belnr);
    let pad = size.saturating_sub(text.len() + 7);
    let end = text.rfind("</").expect("a closing tag");
    format!("{}<!--{}-->{}", &text[..end], "x".repeat(pad), &text[end..]).into_bytes()
}

/// Sends headers with the full Content-Length and the first `sent` body bytes.
async fn start_upload(server: &LiveServer, body: &[u8], sent: usize) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let head = format!(
        "POST {RECEIVE} HTTP/1.1\r\nHost: edihub\r\nAuthorization: Bearer {ACME_PROD}\r\n\
         Content-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("write head");
    stream.write_all(&body[..sent]).await.expect("write body");
    stream.flush().await.expect("flush");
    stream
}

/// Sends the rest of the body and reads the status code of the response.
async fn finish_upload(mut stream: TcpStream, body: Vec<u8>, sent: usize) -> u16 {
    stream.write_all(&body[sent..]).await.expect("write rest");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.expect("read response");
    let text = String::from_utf8_lossy(&response);
    text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status in {text:?}"))
}

async fn large_uploads_queue_and_small_ones_pass(backend: Backend) {
    let app = TestApp::start(backend, budget()).await;
    let server = LiveServer::start(app.state.clone()).await;
    let scope = edihub_store::Scope::new("acme", "prod");

    // A holds the whole budget: its headers are in, its body is not.
    let a = order("4500000001", 100_000);
    let held = start_upload(&server, &a, 1000).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    // B, as large, waits for A although its body is complete.
    let b = order("4500000002", 100_000);
    let b_stream = start_upload(&server, &b, 0).await;
    let b_task = tokio::spawn(finish_upload(b_stream, b, 0));

    // A small message is not counted and goes through meanwhile.
    app.post_xml(ACME_PROD, order("4500000003", 2_000)).await.expect(202);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!b_task.is_finished(), "the second large upload waits while the first holds the budget");
    assert_eq!(app.state.store.count_messages(&scope).await.unwrap(), 1, "only the small message is stored");

    // A finishes; then B gets its turn. Both are stored, nothing is lost.
    assert_eq!(finish_upload(held, a, 1000).await, 202);
    assert_eq!(b_task.await.expect("B's task"), 202);
    assert_eq!(app.state.store.count_messages(&scope).await.unwrap(), 3);
    server.stop().await;
}

async fn a_body_larger_than_the_budget_is_processed_alone(backend: Backend) {
    let app = TestApp::start(backend, budget()).await;
    let big = order("4500000004", 300_000);
    let res = app.post_xml(ACME_PROD, big).await;
    accepted(&res);
    let scope = edihub_store::Scope::new("acme", "prod");
    assert_eq!(app.state.store.count_messages(&scope).await.unwrap(), 1);
}

/// A body of a megabyte or more (buffered in a mapping of its own, and on
/// PostgreSQL sent by `COPY`) is stored byte for byte, with a
/// Content-Length and without one; its repeat is its duplicate; one cut
/// off before its Content-Length is in stores nothing.
async fn a_large_body_is_stored_byte_for_byte(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new()).await;
    let server = LiveServer::start(app.state.clone()).await;
    let scope = edihub_store::Scope::new("acme", "prod");
    let body = order("4500000005", 3 * 1024 * 1024);

    drop(start_upload(&server, &body, body.len() / 2).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(app.state.store.count_messages(&scope).await.unwrap(), 0, "a body cut off stores nothing");

    let len = body.len().to_string();
    let res = app.post_xml_with(ACME_PROD, body.clone(), &[("content-length", len.as_str())]).await;
    let id = accepted(&res)["id"].as_str().expect("id").to_string();
    let stored = app.state.store.get_message(id.parse().unwrap()).await.unwrap().expect("stored");
    assert!(stored.payload == body, "the body is stored byte for byte ({} bytes)", stored.payload.len());
    let again = app.post_xml_with(ACME_PROD, body.clone(), &[("content-length", len.as_str())]).await;
    duplicate_of(&again, &id);

    let chunked = order("4500000006", 3 * 1024 * 1024);
    let res = app.post_xml(ACME_PROD, chunked.clone()).await;
    let id = accepted(&res)["id"].as_str().expect("id").to_string();
    let stored = app.state.store.get_message(id.parse().unwrap()).await.unwrap().expect("stored");
    assert!(stored.payload == chunked, "a body without a Content-Length is stored byte for byte");
    assert_eq!(app.state.store.count_messages(&scope).await.unwrap(), 2);
    server.stop().await;
}

backend_tests!(
    large_uploads_queue_and_small_ones_pass,
    a_body_larger_than_the_budget_is_processed_alone,
    a_large_body_is_stored_byte_for_byte
);
