//! The delivery handoff, on both backends: the first attempt of a small
//! message sends the envelope the receive route rendered when it stored
//! the message (counted as a hit of `edihub_delivery_handoff_total`), and
//! that envelope is byte for byte the one a replay renders from the store,
//! for IDoc-XML, JSON and X12 bodies. The worker wants the envelopes of
//! the environments of its envelope destinations only; a raw destination
//! beside one still gets the bytes as received, a duplicate is handed
//! nothing, and with `delivery.handoff_bytes = 0` nothing is kept.
//!
//! With the worker running, the deliveries of such a message (without a
//! key) are leased at its insert and attempted without a claim (counted
//! as `leased`); under concurrent posts that take more slots than a
//! destination has, the rest are claimed, and every message reaches the
//! destination once, none held up by a lease.

use std::path::PathBuf;

use crate::delivery::{admin_post, deliveries, has_status, post_order, start_worker, until};
use crate::support::receiver::Receiver;
use crate::support::*;
use edihub_store::Scope;
use tokio_util::sync::CancellationToken;

const X12_850: &str = "sapabh_O2C-ASCX12-004010_01a-SalesOrderRequest_X12-850.x12";

fn x12() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/edifact/real").join(X12_850);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// An app whose acme/prod messages go to `env` (envelope) and `raw`, with
/// `handoff_bytes` of handoff.
async fn app(backend: Backend, receiver: &Receiver, handoff_bytes: usize) -> TestApp {
    app_with(backend, receiver, handoff_bytes, "", 50).await
}

/// As [`app`], with `env_extra` added to `env`'s definition and a poll
/// every `poll_ms`.
async fn app_with(
    backend: Backend,
    receiver: &Receiver,
    handoff_bytes: usize,
    env_extra: &str,
    poll_ms: u64,
) -> TestApp {
    let toml = format!(
        "[delivery]\npoll_interval_ms = {poll_ms}\nhandoff_bytes = {handoff_bytes}\n\
         [[destinations]]\nid = \"env\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{}\"\n{env_extra}\n\
         [[destinations]]\nid = \"raw\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{}\"\nformat = \"raw\"\n",
        receiver.url("env"),
        receiver.url("raw"),
    );
    let config = TestConfig::new()
        .message_type("X12.850", |t| t.duplicate_key_fields = strings(["BEG03"]))
        .delivery_toml(&toml);
    TestApp::start(backend, config).await
}

/// The count of `edihub_delivery_handoff_total{result="<result>"}`.
async fn handoff_count(app: &TestApp, result: &str) -> u64 {
    let text = app.get("/metrics", None).await.text();
    let series = format!("edihub_delivery_handoff_total{{result=\"{result}\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&series)).map_or(0, |v| v.parse().expect("a count"))
}

/// Posts an IDoc-XML, a JSON order and an X12 interchange; their ids.
async fn post_three(app: &TestApp) -> Vec<String> {
    let idoc =
        accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await)["id"].as_str().map(str::to_string);
    let json = post_order(app, "handoff-1").await;
    let res = app.post_receive(Some(&bearer(ACME_PROD)), Some("application/EDI-X12"), x12(), &[]).await;
    res.expect(202);
    let x12 = res.json()["messages"][0]["id"].as_str().map(str::to_string);
    vec![idoc.expect("IDoc id"), json, x12.expect("X12 id")]
}

async fn handed_envelopes_are_those_read_back(backend: Backend) {
    let receiver = Receiver::start().await;
    let app = app(backend, &receiver, 16 * 1024 * 1024).await;
    // The worker reads the destinations and wants acme/prod's envelopes;
    // it is stopped before the messages come, so every one of them is
    // handed over before any claim is made.
    let scope = Scope::new("acme", "prod");
    let first = CancellationToken::new();
    let worker = tokio::spawn(edihub_server::delivery::run(app.state.clone(), first.clone()));
    until("the worker wants acme/prod's envelopes", async || app.state.handoff.wants(&scope, 1)).await;
    first.cancel();
    worker.await.expect("the worker ends");
    assert!(!app.state.handoff.wants(&Scope::new("acme", "test"), 1), "no destination there");
    let ids = post_three(&app).await;
    let held = app.state.handoff.held_bytes();
    assert!(held > 0);
    duplicate_of(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await, &ids[0]);
    assert_eq!(app.state.handoff.held_bytes(), held, "a duplicate is handed nothing");
    let stop = start_worker(&app);
    for id in &ids {
        until("delivered", async || has_status(&app, id, "env", "delivered").await).await;
    }
    assert_eq!(handoff_count(&app, "hit").await, 3, "each first attempt sent the handed envelope");
    assert_eq!(handoff_count(&app, "miss").await, 0);

    // A replay is not a first attempt: it renders from the store.
    for id in &ids {
        app.send(admin_post(&format!("/admin/messages/{id}/redeliver?destination=env"))).await.expect(202);
        until("the replay is recorded", async || deliveries(&app, id).await["env"]["attempts"] == 2).await;
    }
    stop.cancel();
    let got = receiver.received("env");
    assert_eq!(got.len(), 6, "three first attempts and three replays, none for the duplicate");
    for id in &ids {
        let sent: Vec<_> = got.iter().filter(|r| r.header("webhook-id") == id.as_str()).collect();
        assert_eq!(sent.len(), 2, "{id}");
        assert!(!sent[0].body.is_empty());
        assert_eq!(sent[0].body, sent[1].body, "{id}: the handed envelope is the one read back");
        let envelope: serde_json::Value = serde_json::from_slice(&sent[0].body).expect("JSON");
        assert_eq!(envelope["id"], id.as_str());
        assert!(!envelope["payload"].is_null(), "a rendering: {envelope}");
    }
    assert_eq!(handoff_count(&app, "hit").await, 3, "replays are not counted as first attempts");
    let raw = receiver.received("raw");
    assert_eq!(raw.len(), 3, "the raw destination reads the store");
    assert!(raw.iter().any(|r| r.body[..] == fixture("orders05.xml")[..]), "the bytes as received");
}

async fn without_a_handoff_first_attempts_read_the_store(backend: Backend) {
    let receiver = Receiver::start().await;
    let app = app(backend, &receiver, 0).await;
    let stop = start_worker(&app);
    let ids = post_three(&app).await;
    for id in &ids {
        until("delivered", async || has_status(&app, id, "env", "delivered").await).await;
    }
    stop.cancel();
    assert_eq!(handoff_count(&app, "hit").await, 0);
    assert!(!app.state.handoff.wants(&Scope::new("acme", "prod"), 1), "off");
    assert_eq!(app.state.handoff.held_bytes(), 0, "nothing was kept");
    let got = receiver.received("env");
    assert_eq!(got.len(), 3);
    for received in &got {
        let envelope: serde_json::Value = serde_json::from_slice(&received.body).expect("JSON");
        assert!(!envelope["payload"].is_null(), "a rendering: {envelope}");
    }
}

/// The webhook-ids `env` received, each with how often.
fn received_counts(receiver: &Receiver) -> std::collections::HashMap<String, usize> {
    let mut counts = std::collections::HashMap::new();
    for r in receiver.received("env") {
        *counts.entry(r.header("webhook-id").to_string()).or_default() += 1;
    }
    counts
}

/// Starts the worker of `app` and waits until it has made its first claim
/// (a warm-up order delivered to `env`), so the claim a worker makes at
/// its start holds no slot while the test posts; returns its stop token.
async fn worker_past_its_first_claim(app: &TestApp) -> CancellationToken {
    let stop = start_worker(app);
    let warm_up = post_order(app, "warm-up").await;
    until("the warm-up order is delivered", async || has_status(app, &warm_up, "env", "delivered").await)
        .await;
    stop
}

/// `edihub_delivery_handoff_total` by result: (leased, hit, miss).
async fn first_attempts(app: &TestApp) -> (u64, u64, u64) {
    (handoff_count(app, "leased").await, handoff_count(app, "hit").await, handoff_count(app, "miss").await)
}

async fn deliveries_leased_at_the_insert_start_without_a_claim(backend: Backend) {
    let receiver = Receiver::start().await;
    // No poll while the test runs: every claim is one the intake asked for.
    let app = app_with(backend, &receiver, 16 * 1024 * 1024, "", 60_000).await;
    let stop = worker_past_its_first_claim(&app).await;
    let before = first_attempts(&app).await;
    let ids = post_three(&app).await;
    for id in &ids {
        until("delivered", async || has_status(&app, id, "env", "delivered").await).await;
        until("delivered raw", async || has_status(&app, id, "raw", "delivered").await).await;
    }
    stop.cancel();
    // The IDoc and the JSON order carry no key: leased at their insert. The
    // X12 interchange is claimed by its control number (a key): its
    // delivery is claimed (the intake wakes the worker for it), and finds
    // the envelope handed over.
    let after = first_attempts(&app).await;
    let delta = (after.0 - before.0, after.1 - before.1, after.2 - before.2);
    assert_eq!(delta, (2, 1, 0), "(leased, claimed with the envelope, read from the store)");
    let counts = received_counts(&receiver);
    for id in &ids {
        assert_eq!(counts.get(id.as_str()), Some(&1), "{id} sent once: {counts:?}");
        assert_eq!(deliveries(&app, id).await["env"]["attempts"], 1, "{id}");
    }
    assert_eq!(receiver.received("raw").len(), 4, "the raw destination is claimed as ever");
}

/// Posts racing for a destination's 4 slots: some are leased at their
/// insert, the others claimed; each is sent once, and none waits for a
/// lease to expire (the leases outlast the test's wait).
async fn concurrent_posts_beyond_the_slots_are_claimed(backend: Backend) {
    const POSTS: u64 = 400;
    let receiver = Receiver::start().await;
    let env = "max_in_flight = 16\ntimeout_secs = 300";
    let app = std::sync::Arc::new(app_with(backend, &receiver, 16 * 1024 * 1024, env, 60_000).await);
    let stop = worker_past_its_first_claim(&app).await;
    let before = first_attempts(&app).await;
    let posts = (0..POSTS).map(|i| {
        let app = app.clone();
        tokio::spawn(async move { post_order(&app, &format!("race-{i}")).await })
    });
    let mut ids = Vec::new();
    for post in posts.collect::<Vec<_>>() {
        ids.push(post.await.expect("post"));
    }
    for id in &ids {
        until("delivered", async || has_status(&app, id, "env", "delivered").await).await;
    }
    stop.cancel();
    let after = first_attempts(&app).await;
    let (leased, claimed) = (after.0 - before.0, after.1 + after.2 - before.1 - before.2);
    assert!(leased > 0, "the first post finds the slots free ({claimed} claimed)");
    assert_eq!(
        leased + claimed,
        POSTS,
        "each first attempt started once ({leased} leased, {claimed} claimed)"
    );
    let counts = received_counts(&receiver);
    assert_eq!(counts.len() as u64, POSTS + 1, "every message arrived");
    assert!(counts.values().all(|n| *n == 1), "none twice: {counts:?}");
}

/// A backlog stored while no worker ran, and new posts racing it for the
/// destination's slots once one runs: the claims drain the backlog while
/// the intake leases what it finds free, and still every message is sent
/// once and none waits for a lease to expire (a claimed delivery never
/// goes without a slot).
async fn a_backlog_and_new_posts_share_the_slots(backend: Backend) {
    const BACKLOG: u64 = 100;
    const POSTS: u64 = 300;
    let receiver = Receiver::start().await;
    let env = "max_in_flight = 16\ntimeout_secs = 300";
    let app = std::sync::Arc::new(app_with(backend, &receiver, 16 * 1024 * 1024, env, 60_000).await);
    let mut ids = Vec::new();
    for i in 0..BACKLOG {
        ids.push(post_order(&app, &format!("backlog-{i}")).await);
    }
    let stop = start_worker(&app);
    let posts = (0..POSTS).map(|i| {
        let app = app.clone();
        tokio::spawn(async move { post_order(&app, &format!("new-{i}")).await })
    });
    for post in posts.collect::<Vec<_>>() {
        ids.push(post.await.expect("post"));
    }
    for id in &ids {
        until("delivered", async || has_status(&app, id, "env", "delivered").await).await;
    }
    stop.cancel();
    let (leased, hit, miss) = first_attempts(&app).await;
    assert_eq!(leased + hit + miss, BACKLOG + POSTS, "each first attempt started once ({leased} leased)");
    let counts = received_counts(&receiver);
    assert_eq!(counts.len() as u64, BACKLOG + POSTS, "every message arrived");
    assert!(counts.values().all(|n| *n == 1), "none twice: {counts:?}");
}

backend_tests!(
    handed_envelopes_are_those_read_back,
    without_a_handoff_first_attempts_read_the_store,
    deliveries_leased_at_the_insert_start_without_a_claim,
    concurrent_posts_beyond_the_slots_are_claimed,
    a_backlog_and_new_posts_share_the_slots
);
