//! Delivery end to end, on both backends: messages received by edihub are
//! POSTed by the real delivery worker over loopback HTTP to a receiver
//! this test runs, signed so that the Standard Webhooks reference library
//! (PyPI `standardwebhooks`) verifies them; duplicates are not delivered;
//! failures are retried with the same `webhook-id`; `410` stops; a receiver
//! that never answers times out without holding up another destination;
//! an admin replays a delivery; each message of a packet is delivered with
//! its own document, though they share one stored body; messages stored
//! days ago are delivered too.

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use crate::support::receiver::{Receiver, Reply};
use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The signing secret of the `signed` destination.
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// An app whose acme/prod messages go to `signed` (envelope, signed),
/// `raw` (the bytes as received), `flaky` and `hang` (1 s timeout) on
/// `receiver`, with a fast retry schedule of three delays.
async fn app(backend: Backend, receiver: &Receiver) -> TestApp {
    let extra = format!(
        r#"
[delivery]
retry_schedule = ["200ms", "200ms", "200ms"]
poll_interval_ms = 50

[[destinations]]
id = "signed"
tenant = "acme"
environment = "prod"
url = "{signed}"
signature = {{ scheme = "standard-webhooks", secret_env = "DEST_SECRET" }}

[[destinations]]
id = "raw"
tenant = "acme"
environment = "prod"
url = "{raw}"
format = "raw"
message_types = ["ORDERS05"]

[[destinations]]
id = "flaky"
tenant = "acme"
environment = "prod"
url = "{flaky}"
message_types = ["shop.order"]

[[destinations]]
id = "hang"
tenant = "acme"
environment = "prod"
url = "{hang}"
message_types = ["shop.order"]
timeout_secs = 1
"#,
        signed = receiver.url("signed"),
        raw = receiver.url("raw"),
        flaky = receiver.url("flaky"),
        hang = receiver.url("hang"),
    );
    TestApp::start(backend, TestConfig::new().delivery_toml(&extra).secret("DEST_SECRET", SECRET)).await
}

/// Runs the delivery worker of `app` until the returned token is cancelled.
pub(crate) fn start_worker(app: &TestApp) -> CancellationToken {
    let stop = CancellationToken::new();
    tokio::spawn(edihub_server::delivery::run(app.state.clone(), stop.clone()));
    stop
}

/// Waits (polling, up to a minute) until `check` holds.
pub(crate) async fn until<F: AsyncFn() -> bool>(what: &str, check: F) {
    for _ in 0..1200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("gave up waiting until {what}");
}

/// `message`'s deliveries through the admin API, by destination.
pub(crate) async fn deliveries(app: &TestApp, message: &str) -> HashMap<String, Value> {
    let res = app.get(&format!("/admin/messages/{message}/deliveries"), Some(&bearer(ADMIN_TOKEN))).await;
    res.expect(200);
    let body = res.json();
    let list = body["deliveries"].as_array().expect("deliveries").clone();
    list.into_iter().map(|d| (d["destination_id"].as_str().expect("destination").to_string(), d)).collect()
}

/// Whether `message`'s delivery to `destination` has `status`.
pub(crate) async fn has_status(app: &TestApp, message: &str, destination: &str, status: &str) -> bool {
    deliveries(app, message).await.get(destination).is_some_and(|d| d["status"] == status)
}

/// Posts a shop order with its own id; returns the message id.
pub(crate) async fn post_order(app: &TestApp, order: &str) -> String {
    let body = json!({ "order": { "id": order } }).to_string();
    let res = app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await;
    accepted(&res)["id"].as_str().expect("id").to_string()
}

/// Verifies a delivery with the Standard Webhooks reference library.
fn reference_verifies(secret: &str, headers: &axum::http::HeaderMap, body: &[u8]) -> bool {
    const SCRIPT: &str = "import sys, json\n\
        from standardwebhooks import Webhook\n\
        secret, hid, hts, hsig = sys.argv[1:5]\n\
        body = sys.stdin.buffer.read().decode('utf-8')\n\
        Webhook(secret).verify(body, {'webhook-id': hid, 'webhook-timestamp': hts, 'webhook-signature': hsig})\n\
        print('verified')\n";
    let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT, secret, &h("webhook-id"), &h("webhook-timestamp"), &h("webhook-signature")])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), body).expect("write body");
    let out = child.wait_with_output().expect("python3 ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named"),
        "install the reference library: pip install standardwebhooks"
    );
    out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "verified"
}

/// A new IDoc reaches `signed` as a verified envelope and `raw` as its own
/// bytes, each once with the message id as `webhook-id`; its duplicate is
/// not delivered anywhere.
async fn delivered_signed_and_duplicates_not(backend: Backend) {
    let receiver = Receiver::start().await;
    let app = app(backend, &receiver).await;
    let stop = start_worker(&app);
    let first = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let id = first["id"].as_str().expect("id").to_string();
    duplicate_of(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await, &id);
    until("both deliveries are made", async || {
        has_status(&app, &id, "signed", "delivered").await && has_status(&app, &id, "raw", "delivered").await
    })
    .await;

    let signed = receiver.received("signed");
    assert_eq!(signed.len(), 1, "one delivery, none for the duplicate");
    let got = &signed[0];
    assert_eq!(got.header("webhook-id"), id);
    assert_eq!(got.header("content-type"), "application/json");
    assert!(reference_verifies(SECRET, &got.headers, &got.body), "the reference library verifies it");
    assert!(
        !reference_verifies("whsec_d3JvbmcgLSBzZWNyZXQ=", &got.headers, &got.body),
        "and refuses another key"
    );
    let envelope: Value = serde_json::from_slice(&got.body).expect("JSON envelope");
    assert_eq!(envelope["id"], id.as_str());
    assert_eq!((envelope["tenant"].as_str(), envelope["environment"].as_str()), (Some("acme"), Some("prod")));
    assert_eq!(envelope["message_type"], "ORDERS05");
    assert_eq!(envelope["docnum"], first["docnum"]);
    assert_eq!(envelope["fingerprint"], first["fingerprint"]);
    assert!(envelope["payload"].is_object(), "the JSON rendering of the IDoc: {envelope}");
    assert!(envelope["payload"].to_string().contains("E1EDK01"), "{envelope}");

    let raw = receiver.received("raw");
    assert_eq!(raw.len(), 1);
    assert_eq!(raw[0].header("webhook-id"), id);
    assert_eq!(raw[0].header("content-type"), "application/xml");
    assert!(raw[0].headers.get("webhook-signature").is_none(), "unsigned destination");
    assert_eq!(&raw[0].body[..], &fixture("orders05.xml")[..], "the bytes as received");
    assert!(receiver.received("flaky").is_empty(), "filtered out by message type");
    stop.cancel();
}

/// A packet of five IDocs: five messages, each delivered once to `signed`
/// as an envelope carrying its own IDoc, and to `raw` as the whole packet
/// as received (the five share one stored body, read for them once).
async fn packet_members_each_carry_their_own_document(backend: Backend) {
    let receiver = Receiver::start().await;
    let app = app(backend, &receiver).await;
    let stop = start_worker(&app);
    let packet = crate::receive_packets::minimal_packet("PKT", 5);
    let res = app.post_xml(ACME_PROD, packet.clone().into_bytes()).await;
    res.expect(202);
    let answers = res.json()["messages"].as_array().expect("messages").clone();
    assert_eq!(answers.len(), 5);
    let ids: Vec<String> = answers.iter().map(|m| m["id"].as_str().expect("id").to_string()).collect();
    until("every member is delivered to both", async || {
        let mut all = true;
        for id in &ids {
            all &= has_status(&app, id, "signed", "delivered").await
                && has_status(&app, id, "raw", "delivered").await;
        }
        all
    })
    .await;

    let signed = receiver.received("signed");
    assert_eq!(signed.len(), 5, "one delivery per member");
    for (i, id) in ids.iter().enumerate() {
        let got = signed.iter().find(|r| r.header("webhook-id") == *id).expect("delivered with its id");
        assert!(reference_verifies(SECRET, &got.headers, &got.body), "the reference library verifies it");
        let envelope: Value = serde_json::from_slice(&got.body).expect("JSON envelope");
        let payload = envelope["payload"].to_string();
        assert!(payload.contains(&format!("PKT-{i}")), "member {i} carries its own IDoc: {envelope}");
        for other in (0..5).filter(|j| *j != i) {
            assert!(!payload.contains(&format!("PKT-{other}")), "and no other: {envelope}");
        }
    }
    let raw = receiver.received("raw");
    assert_eq!(raw.len(), 5);
    assert!(raw.iter().all(|r| r.body[..] == *packet.as_bytes()), "raw: the packet as received, each time");
    let mut raw_ids: Vec<String> = raw.iter().map(|r| r.header("webhook-id").to_string()).collect();
    raw_ids.sort();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(raw_ids, sorted, "one raw delivery per member, by its id");
    stop.cancel();
}

/// 500, 500, then 200: three attempts with one id, each recorded; 410
/// stops at once; three more failures than the schedule has give up.
async fn retries_keep_one_id_and_gone_stops(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.script("flaky", &[Reply::Status(500), Reply::Status(500), Reply::Status(200)]);
    receiver.script("hang", &[Reply::Status(410)]);
    let app = app(backend, &receiver).await;
    let stop = start_worker(&app);
    let id = post_order(&app, "retry-1").await;
    until("flaky is delivered", async || has_status(&app, &id, "flaky", "delivered").await).await;
    let got = receiver.received("flaky");
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|r| r.header("webhook-id") == id), "one id on every attempt");
    let d = &deliveries(&app, &id).await["flaky"];
    assert_eq!(d["attempts"], 3);
    let codes: Vec<&Value> =
        d["attempt_log"].as_array().expect("log").iter().map(|a| &a["status_code"]).collect();
    assert_eq!(codes, [&json!(500), &json!(500), &json!(200)]);
    assert_eq!(d["attempt_log"][0]["error"], "HTTP 500 Internal Server Error");
    assert_eq!(d["attempt_log"][2]["response_prefix"], "receiver says hello");
    let metrics = app.get("/metrics", None).await.text();
    for line in [
        r#"edihub_delivery_attempts_total{destination="flaky",outcome="retry"} 2"#,
        r#"edihub_delivery_attempts_total{destination="flaky",outcome="delivered"} 1"#,
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }

    until("hang is failed", async || has_status(&app, &id, "hang", "failed").await).await;
    assert_eq!(receiver.received("hang").len(), 1, "410 stops at once");
    let failed = app.audit(&format!("action=delivery.failed&original_message_id={id}")).await;
    assert_eq!(failed["events"].as_array().expect("events").len(), 1, "{failed}");

    receiver.script("flaky", &[Reply::Status(503); 4]);
    let doomed = post_order(&app, "retry-2").await;
    until("flaky gives up", async || has_status(&app, &doomed, "flaky", "failed").await).await;
    assert_eq!(
        deliveries(&app, &doomed).await["flaky"]["attempts"],
        4,
        "the first attempt and three retries"
    );
    stop.cancel();
}

/// A receiver that never answers times out and is retried, while the other
/// destination of the same messages gets them all.
async fn a_hanging_destination_does_not_hold_others(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.script("hang", &[Reply::Hang; 3]);
    let app = app(backend, &receiver).await;
    let stop = start_worker(&app);
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(post_order(&app, &format!("hang-{i}")).await);
    }
    for id in &ids {
        until("flaky has every message", async || has_status(&app, id, "flaky", "delivered").await).await;
    }
    for id in &ids {
        until("hang is delivered after timing out", async || has_status(&app, id, "hang", "delivered").await)
            .await;
        let d = &deliveries(&app, id).await["hang"];
        assert_eq!(d["attempt_log"][0]["error"], "timed out", "{d}");
        assert_eq!(d["attempt_log"][1]["status_code"], 200, "{d}");
    }
    stop.cancel();
}

/// A body-less admin POST (JSON, as admin writes are).
pub(crate) fn admin_post(path: &str) -> Request<Body> {
    Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::empty())
        .expect("request")
}

/// A replay sends the message again with the same id, audited; unknown
/// destinations and messages are refused, and nothing is queued for them.
async fn redeliver_sends_again_with_the_same_id(backend: Backend) {
    let receiver = Receiver::start().await;
    let app = app(backend, &receiver).await;
    let stop = start_worker(&app);
    let id = post_order(&app, "again-1").await;
    until("flaky is delivered", async || has_status(&app, &id, "flaky", "delivered").await).await;
    let res = app.send(admin_post(&format!("/admin/messages/{id}/redeliver?destination=flaky"))).await;
    res.expect(202);
    assert_eq!(res.json()["queued"], json!(["flaky"]));
    until("the replay arrives", async || receiver.received("flaky").len() == 2).await;
    let got = receiver.received("flaky");
    assert_eq!(got[1].header("webhook-id"), got[0].header("webhook-id"), "same webhook-id");
    until("the replay is recorded", async || deliveries(&app, &id).await["flaky"]["attempts"] == 2).await;
    let audit = app.audit(&format!("action=delivery.replayed&original_message_id={id}")).await;
    assert_eq!(audit["events"][0]["details"]["destination"], "flaky");

    let res = app.send(admin_post(&format!("/admin/messages/{id}/redeliver?destination=nope"))).await;
    res.expect_problem(404, "no delivery to `nope`");
    let unknown = uuid::Uuid::now_v7();
    app.send(admin_post(&format!("/admin/messages/{unknown}/redeliver")))
        .await
        .expect_problem(404, "no message");
    app.send(admin_post("/admin/messages/not-an-id/redeliver")).await.expect_problem(400, "not a message id");
    let audit = app.audit(&format!("action=delivery.replayed&original_message_id={id}")).await;
    assert_eq!(audit["events"].as_array().expect("events").len(), 1, "refused replays are not audited");
    stop.cancel();
}

/// Deliveries of messages stored days ago (late retries, replays) are not
/// left behind by the claims among recent messages the worker makes
/// between its polls: every one is delivered, once, with its id.
async fn old_messages_are_delivered_too(backend: Backend) {
    use edihub_store::conformance::{id_at, ingest_at, message, outcome_id, processed};
    let receiver = Receiver::start().await;
    let app = app(backend, &receiver).await;
    let scope = edihub_store::Scope::new("acme", "prod");
    let stored_at = chrono::Utc::now() - chrono::Duration::days(3);
    let mut ids = Vec::new();
    for i in 0..20 {
        let old = edihub_store::NewMessage { id: id_at(stored_at), ..message(Some(&format!("old-{i}"))) };
        let outcome = ingest_at(&app.state.store, &scope, None, vec![old], stored_at).await;
        ids.push(outcome_id(&processed(outcome)[0]).to_string());
    }
    let stop = start_worker(&app);
    for id in &ids {
        until("every old message is delivered", async || has_status(&app, id, "signed", "delivered").await)
            .await;
    }
    let mut got: Vec<String> =
        receiver.received("signed").iter().map(|r| r.header("webhook-id").to_string()).collect();
    got.sort();
    ids.sort();
    assert_eq!(got, ids, "each old message once");
    stop.cancel();
}

backend_tests!(
    old_messages_are_delivered_too,
    delivered_signed_and_duplicates_not,
    packet_members_each_carry_their_own_document,
    retries_keep_one_id_and_gone_stops,
    a_hanging_destination_does_not_hold_others,
    redeliver_sends_again_with_the_same_id,
);
