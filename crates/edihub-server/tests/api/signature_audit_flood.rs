//! A flood of bad webhook signatures writes a bounded number of audit rows.
//!
//! Refusals are gathered per integration, reason and client address and
//! written as one `webhook.signature_rejected` event each per interval
//! (`signature_rejection_audit_secs`), with a count; past `MAX_SOURCES`
//! addresses in an interval, the rest are counted under `other`. Every
//! refusal is counted in `edihub_webhook_signatures_rejected_total` at once.
//! The server runs on loopback, clients on several 127.x addresses; the
//! interval is an hour, so the events written are the ones of the final
//! flush at shutdown: exactly one per (integration, reason, address).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use crate::support::live::LiveServer;
use crate::support::raw::{head, request};
use crate::support::webhook::*;
use crate::support::*;
use edihub_server::integrations::rejections::{MAX_SOURCES, OTHER_SOURCES};

backend_tests!(bad_signatures_are_audited_in_aggregate, addresses_past_the_cap_are_counted_as_other);

/// The webhook integrations, with rejections audited hourly (the test flushes them).
fn hourly() -> TestConfig {
    TestConfig::new().webhooks().with(|c| c.signature_rejection_audit_secs = 3600)
}

/// Posts `body` to `integration` from `source` with `headers`; asserts 401.
async fn post_bad(server: &LiveServer, source: Ipv4Addr, integration: &str, headers: &[(&str, String)]) {
    let body = br#"{"itemId":"I-9","type":"stock","received":"2024-01-01"}"#;
    let mut all = headers.to_vec();
    all.push(("Content-Type", "application/json".into()));
    all.push(("Content-Length", body.len().to_string()));
    let path = format!("/api/webhook/{integration}");
    let (status, text) = request(server.addr, source, &head("POST", &path, &all), body).await;
    assert_eq!(status, 401, "{text}");
}

/// (integration, reason, source) → count of the rejection events.
async fn rejection_counts(app: &TestApp) -> BTreeMap<(String, String, String), u64> {
    let mut out = BTreeMap::new();
    for e in app.audit_events(&format!("action={REJECTED}")).await {
        let d = &e["details"];
        let text = |k: &str| d[k].as_str().unwrap_or_else(|| panic!("{k} in {e}")).to_string();
        let key = (text("integration"), text("reason"), text("source"));
        let previous = out.insert(key, d["count"].as_u64().expect("a count"));
        assert!(previous.is_none(), "two events for one key: {e}");
    }
    out
}

fn metric(text: &str, labels: &str) -> f64 {
    let name = format!("edihub_webhook_signatures_rejected_total{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&name))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no sample {name} in:\n{text}"))
}

async fn bad_signatures_are_audited_in_aggregate(backend: Backend) {
    let app = TestApp::start(backend, hourly()).await;
    let server = LiveServer::start(app.state.clone()).await;
    let (a, b) = (Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(127, 0, 0, 2));
    let wrong = vec![("x-gubee-signature", format!("sha256={}", "0".repeat(64)))];
    for _ in 0..150 {
        post_bad(&server, a, "gubee", &wrong).await;
    }
    for _ in 0..60 {
        post_bad(&server, b, "gubee", &wrong).await;
        post_bad(&server, b, "gubee", &[]).await;
    }
    for _ in 0..30 {
        post_bad(&server, a, "shop", &[("x-shopify-hmac-sha256", "AAAA".into())]).await;
    }
    let metrics = app.get("/metrics", None).await.text();
    assert_eq!(metric(&metrics, "integration=\"gubee\",reason=\"mismatch\""), 210.0);
    assert_eq!(metric(&metrics, "integration=\"gubee\",reason=\"missing\""), 60.0);
    assert_eq!(metric(&metrics, "integration=\"shop\",reason=\"malformed\""), 30.0);
    // Nothing is written per request…
    assert!(app.audit_events(&format!("action={REJECTED}")).await.is_empty());
    // …and the shutdown writes what the interval gathered.
    server.stop().await;
    let mismatch = "the signature does not match the body".to_string();
    let key = |i: &str, r: &str, s: Ipv4Addr| (i.to_string(), r.to_string(), s.to_string());
    let expected = BTreeMap::from([
        (key("gubee", &mismatch, a), 150),
        (key("gubee", &mismatch, b), 60),
        (key("gubee", "the x-gubee-signature header is missing", b), 60),
        (key("shop", "the x-shopify-hmac-sha256 header is malformed", a), 30),
    ]);
    assert_eq!(rejection_counts(&app).await, expected);
    let events = app.audit_events(&format!("action={REJECTED}")).await;
    for e in &events {
        assert_eq!((e["tenant"].as_str(), e["environment"].as_str()), (Some("acme"), Some("prod")), "{e}");
        let (first, last) = (e["details"]["first_at"].as_str(), e["details"]["last_at"].as_str());
        assert!(first.is_some() && first <= last, "{e}");
    }
    assert_eq!(app.count_prod().await, 0, "nothing stored");
}

async fn addresses_past_the_cap_are_counted_as_other(backend: Backend) {
    let app = TestApp::start(backend, hourly()).await;
    let server = LiveServer::start(app.state.clone()).await;
    let wrong = vec![("x-gubee-signature", format!("sha256={}", "0".repeat(64)))];
    let extra = 30;
    for i in 0..(MAX_SOURCES + extra) {
        let source = Ipv4Addr::new(127, 0, 1 + (i / 200) as u8, 1 + (i % 200) as u8);
        post_bad(&server, source, "gubee", &wrong).await;
    }
    server.stop().await;
    let counts = rejection_counts(&app).await;
    assert_eq!(counts.len(), MAX_SOURCES + 1, "one event per kept address plus `other`");
    assert_eq!(counts.values().sum::<u64>(), (MAX_SOURCES + extra) as u64, "the counts add up");
    let other = counts.iter().find(|((_, _, s), _)| s == OTHER_SOURCES).map(|(_, n)| *n);
    assert_eq!(other, Some(extra as u64));
}
