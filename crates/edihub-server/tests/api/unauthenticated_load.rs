//! Unauthenticated load cannot starve authenticated senders.
//!
//! Whatever the headers alone rule out is refused before a byte of the body
//! is read: an unknown integration, a missing, malformed or stale signature
//! header, wrong credentials on the receive route, a Content-Length over the
//! limit. The tests send the headers and no body at all: the answer must
//! come anyway (waiting for the body would end in the request timeout's 503).
//!
//! Webhook bodies whose headers pass are read within a budget of their own
//! (`max_inflight_webhook_body_bytes`): clients trickling such bodies hold
//! that budget, never the one of authenticated senders, whose large upload
//! is stored while the tricklers are still unanswered. Within it, one client
//! address holds at most its share
//! (`max_inflight_webhook_body_bytes_per_address`): two tricklers declaring
//! 2.1 MB each from one address leave the rest to correctly signed 150 kB
//! webhooks from another, stored while the tricklers still hold their
//! connections. And a body that arrives slower than
//! `body_read_min_bytes_per_sec` after `body_read_grace_secs` is cut off
//! with 408, on the webhook and the receive route alike, which frees its
//! share for the signed webhook queued behind it on the same address.

use std::net::Ipv4Addr;
use std::time::Duration;

use crate::support::live::LiveServer;
use crate::support::raw::{Trickler, answer_within, connect_from, head, request};
use crate::support::webhook::*;
use crate::support::*;
use tokio::io::AsyncWriteExt;

backend_tests!(
    headers_alone_are_refused_without_reading_the_body,
    trickled_webhooks_do_not_delay_a_sender,
    tricklers_leave_the_webhook_budget_to_other_addresses,
    slow_bodies_are_cut_off_and_free_their_share,
);

const CLIENT: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// Long enough that no answer in these tests can come from the timeout
/// unless a request really waited for it.
/// The webhook integrations, an 8 s request timeout and 1 MB bodies.
fn timeout() -> TestConfig {
    TestConfig::new().webhooks().with(|c| {
        c.request_timeout_secs = 8;
        c.max_body_bytes = 1_000_000;
    })
}

/// Sends `head` with a Content-Length of 500,000 and no body; returns the
/// answer that arrives within 5 s (the request timeout is 8 s).
async fn answer_without_body(server: &LiveServer, path: &str, headers: &[(&str, String)]) -> (u16, String) {
    let mut all = headers.to_vec();
    all.push(("Content-Length", "500000".into()));
    all.push(("Content-Type", "application/json".into()));
    let (mut reader, mut writer) = connect_from(server.addr, CLIENT).await.into_split();
    writer.write_all(head("POST", path, &all).as_bytes()).await.expect("write head");
    let answer = answer_within(&mut reader, Duration::from_secs(5)).await;
    drop(writer);
    answer.unwrap_or_else(|| panic!("{path} {headers:?}: no answer without the body"))
}

/// Path, headers, expected status, a part of the expected detail.
type Case = (&'static str, Vec<(&'static str, String)>, u16, &'static str);

async fn headers_alone_are_refused_without_reading_the_body(backend: Backend) {
    let app = TestApp::start(backend, timeout()).await;
    let server = LiveServer::start(app.state.clone()).await;
    let now = now_secs();
    let zero_sig = format!("sha256={}", "0".repeat(64));
    let cases: Vec<Case> = vec![
        ("/api/webhook/nope", vec![("x-gubee-signature", zero_sig.clone())], 404, "no integration `nope`"),
        ("/api/webhook/gubee", vec![], 401, "the x-gubee-signature header is missing"),
        ("/api/webhook/gubee", vec![("x-gubee-signature", "sha256=zz".into())], 401, "header is malformed"),
        ("/api/webhook/shop", vec![("x-shopify-hmac-sha256", "%%%".into())], 401, "header is malformed"),
        (
            "/api/webhook/stripe",
            vec![("stripe-signature", format!("t={},v1={}", now - 3600, "0".repeat(64)))],
            401,
            "more than 300 s away",
        ),
        (
            "/api/webhook/std",
            vec![("webhook-id", "msg_1".into()), ("webhook-timestamp", now.to_string())],
            401,
            "webhook-signature header is missing",
        ),
        (RECEIVE, vec![("Authorization", bearer("not-a-key"))], 401, "API key is not valid"),
        (RECEIVE, vec![], 401, "credentials are missing"),
    ];
    for (path, headers, status, detail) in &cases {
        let (got, text) = answer_without_body(&server, path, headers).await;
        assert_eq!(got, *status, "{path} {headers:?}: {text}");
        assert!(text.contains(PROBLEM_JSON) && text.contains(detail), "{path}: {text}");
    }
    // Over max_body_bytes by its Content-Length, from a real sender: 413 at once.
    let over = [("Authorization", bearer(ACME_PROD)), ("Content-Length", "2000000".into())];
    let (mut reader, mut writer) = connect_from(server.addr, CLIENT).await.into_split();
    writer.write_all(head("POST", RECEIVE, &over).as_bytes()).await.expect("head");
    let (got, text) = answer_within(&mut reader, Duration::from_secs(5)).await.expect("413 without the body");
    assert_eq!(got, 413, "{text}");
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    server.stop().await;
}

/// The ORDERS05 fixture with its own order number, padded to about `size` bytes.
fn order(belnr: &str, size: usize) -> Vec<u8> {
    let text = String::from_utf8(fixture("orders05.xml")).expect("UTF-8").replace("4500012345", belnr);
    let pad = size.saturating_sub(text.len() + 7);
    let end = text.rfind("</").expect("a closing tag");
    format!("{}<!--{}-->{}", &text[..end], "x".repeat(pad), &text[end..]).into_bytes()
}

async fn trickled_webhooks_do_not_delay_a_sender(backend: Backend) {
    // Each trickled body (200 kB declared) wants the whole webhook budget;
    // before the fix it took 200 kB of the senders' 256 KiB.
    let config = timeout().with(|c| {
        c.max_inflight_body_bytes = 262_144;
        c.max_inflight_webhook_body_bytes = 131_072;
    });
    let app = TestApp::start(backend, config).await;
    let server = LiveServer::start(app.state.clone()).await;
    // Well-formed signature headers: nothing rules them out before the body.
    let trickled = [
        ("x-gubee-signature", format!("sha256={}", "0".repeat(64))),
        ("Content-Type", "application/json".into()),
        ("Content-Length", "200000".into()),
    ];
    let mut tricklers = Vec::new();
    for _ in 0..3 {
        let h = head("POST", "/api/webhook/gubee", &trickled);
        tricklers.push(Trickler::start(server.addr, CLIENT, &h, Duration::from_millis(200)).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    // An authenticated 200 kB IDoc is stored while they trickle…
    let idoc = order("4500077001", 200_000);
    let upload = [
        ("Authorization", bearer(ACME_PROD)),
        ("Content-Type", "application/xml".into()),
        ("Content-Length", idoc.len().to_string()),
    ];
    let (status, text) = request(server.addr, CLIENT, &head("POST", RECEIVE, &upload), &idoc).await;
    assert_eq!(status, 202, "the sender's upload: {text}");
    // …and a correctly signed small webhook too.
    let body = r#"{"itemId":"I-1","type":"stock","received":"2024-01-01"}"#;
    let mut signed = gubee_headers(body);
    signed.push(("Content-Type", "application/json".into()));
    signed.push(("Content-Length", body.len().to_string()));
    let (status, text) =
        request(server.addr, CLIENT, &head("POST", "/api/webhook/gubee", &signed), body.as_bytes()).await;
    assert_eq!(status, 202, "the signed webhook: {text}");

    // The tricklers still hold their budget: none has been answered yet.
    for (i, t) in tricklers.iter_mut().enumerate() {
        let answer = answer_within(&mut t.reader, Duration::from_millis(50)).await;
        assert!(answer.is_none(), "trickler {i} was answered before the sender was served: {answer:?}");
    }
    assert_eq!(app.count_prod().await, 2);
    // They end in the request timeout, as any slow request does.
    for t in &mut tricklers {
        let (status, _) = answer_within(&mut t.reader, Duration::from_secs(15)).await.expect("an answer");
        assert_eq!(status, 503);
    }
    drop(tricklers);
    server.stop().await;
}

/// The tricklers' address, and a well-behaved provider's.
const TRICKLER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const PROVIDER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

/// The webhook integrations, 3 MB bodies, the default webhook budget
/// (4 MiB, 1 MiB per address) and a request timeout no answer here comes
/// from; body reads get `grace_secs` before they must arrive at 1 KiB/s.
fn shares(grace_secs: u64) -> TestConfig {
    TestConfig::new().webhooks().with(|c| {
        c.request_timeout_secs = 60;
        c.max_body_bytes = 3_000_000;
        c.body_read_grace_secs = grace_secs;
        c.body_read_min_bytes_per_sec = 1024;
    })
}

/// Starts `n` clients that send a bogus Gubee signature and a 2.1 MB
/// Content-Length from `from`, then a byte of body a second.
async fn bogus_tricklers(server: &LiveServer, from: Ipv4Addr, n: usize) -> Vec<Trickler> {
    let headers = [
        ("x-gubee-signature", format!("sha256={}", "0".repeat(64))),
        ("Content-Type", "application/json".into()),
        ("Content-Length", "2100000".into()),
    ];
    let mut tricklers = Vec::new();
    for _ in 0..n {
        let h = head("POST", "/api/webhook/gubee", &headers);
        tricklers.push(Trickler::start(server.addr, from, &h, Duration::from_secs(1)).await);
    }
    tricklers
}

/// A correctly signed Gubee webhook of item `item`, padded to about 150 kB
/// (a body the budget counts): its request head and body.
fn signed_webhook(item: &str) -> (String, Vec<u8>) {
    let pad = "x".repeat(150_000);
    let body = format!(r#"{{"itemId":"{item}","type":"stock","received":"2024-01-01","pad":"{pad}"}}"#);
    let mut headers = gubee_headers(&body);
    headers.push(("Content-Type", "application/json".into()));
    headers.push(("Content-Length", body.len().to_string()));
    (head("POST", "/api/webhook/gubee", &headers), body.into_bytes())
}

async fn tricklers_leave_the_webhook_budget_to_other_addresses(backend: Backend) {
    // A grace longer than the test: the tricklers hold their bodies throughout.
    let app = TestApp::start(backend, shares(30)).await;
    let server = LiveServer::start(app.state.clone()).await;
    let mut tricklers = bogus_tricklers(&server, TRICKLER, 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Three signed webhooks at once from another address: all stored.
    let sends = ["S-1", "S-2", "S-3"].map(|item| {
        let (h, body) = signed_webhook(item);
        let addr = server.addr;
        tokio::spawn(async move { request(addr, PROVIDER, &h, &body).await })
    });
    for send in sends {
        let (status, text) = send.await.expect("send");
        assert_eq!(status, 202, "a signed webhook: {text}");
    }
    assert_eq!(app.count_prod().await, 3);
    // The tricklers still hold their connections, unanswered.
    for (i, t) in tricklers.iter_mut().enumerate() {
        let answer = answer_within(&mut t.reader, Duration::from_millis(50)).await;
        assert!(answer.is_none(), "trickler {i} was answered: {answer:?}");
    }
    drop(tricklers);
    server.stop().await;
}

async fn slow_bodies_are_cut_off_and_free_their_share(backend: Backend) {
    let app = TestApp::start(backend, shares(1)).await;
    let server = LiveServer::start(app.state.clone()).await;
    let mut tricklers = bogus_tricklers(&server, TRICKLER, 2).await;
    // An authenticated sender trickling its IDoc is held to the same pace.
    let upload = [
        ("Authorization", bearer(ACME_PROD)),
        ("Content-Type", "application/xml".into()),
        ("Content-Length", "300000".into()),
    ];
    tricklers.push(
        Trickler::start(server.addr, CLIENT, &head("POST", RECEIVE, &upload), Duration::from_secs(1)).await,
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A signed webhook from the tricklers' own address queues behind them
    // for the address's share…
    let (h, body) = signed_webhook("S-4");
    let addr = server.addr;
    let signed = tokio::spawn(async move { request(addr, TRICKLER, &h, &body).await });
    // …each trickler is cut off (the server closes the connection after its answer)…
    for (i, t) in tricklers.iter_mut().enumerate() {
        let (status, text) = answer_within(&mut t.reader, Duration::from_secs(20))
            .await
            .unwrap_or_else(|| panic!("trickler {i}"));
        assert_eq!(status, 408, "trickler {i}: {text}");
        assert!(text.contains(PROBLEM_JSON) && text.contains("the body arrived too slowly"), "{text}");
    }
    // …and the signed webhook is stored once they are.
    let (status, text) = signed.await.expect("send");
    assert_eq!(status, 202, "the signed webhook: {text}");
    assert_eq!(app.count_prod().await, 1, "only the signed webhook");
    drop(tricklers);
    server.stop().await;
}
