//! `ordering = "fifo"` end to end, on both backends: a receiver that fails
//! the first message twice sees every message strictly in commit order
//! (the failure holds the line), and the delivery metrics (attempt latency,
//! queue depth, age of the oldest pending delivery) read through
//! `/metrics`. The admin API takes and refuses `ordering` like the file.
//! A parallel destination's own `max_in_flight` caps its attempts at once.

use std::time::Duration;

use crate::support::receiver::{Receiver, Reply};
use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// An app whose acme/prod shop orders go to `line` (fifo) on `receiver`,
/// with a fast retry schedule.
async fn app(backend: Backend, receiver: &Receiver) -> TestApp {
    let extra = format!(
        r#"
[delivery]
retry_schedule = ["200ms", "200ms", "200ms"]
poll_interval_ms = 50

[[destinations]]
id = "line"
tenant = "acme"
environment = "prod"
url = "{line}"
message_types = ["shop.order"]
ordering = "fifo"
"#,
        line = receiver.url("line"),
    );
    TestApp::start(backend, TestConfig::new().delivery_toml(&extra)).await
}

/// Posts a shop order with its own id; returns the message id.
async fn post_order(app: &TestApp, order: &str) -> String {
    let body = json!({ "order": { "id": order } }).to_string();
    let res = app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await;
    accepted(&res)["id"].as_str().expect("id").to_string()
}

/// Waits (polling, up to a minute) until `check` holds.
async fn until<F: AsyncFn() -> bool>(what: &str, check: F) {
    for _ in 0..1200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("gave up waiting until {what}");
}

/// The value of the metric line starting with `series ` (name and labels).
async fn metric(app: &TestApp, series: &str) -> Option<f64> {
    let text = app.get("/metrics", None).await.text();
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Five orders queued before the worker starts; the receiver answers 500
/// twice to the first. It sees the first three times, then the others, in
/// the order they were stored: nothing overtakes a failing head. Meanwhile
/// `/metrics` shows the queue and then the attempts.
async fn fifo_delivers_in_commit_order_behind_a_failure(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.script("line", &[Reply::Status(500), Reply::Status(500)]);
    let app = app(backend, &receiver).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(post_order(&app, &format!("fifo-{i}")).await);
    }
    let depth = r#"edihub_delivery_queue_depth{destination="line"}"#;
    let age = r#"edihub_delivery_oldest_pending_seconds{destination="line"}"#;
    assert_eq!(metric(&app, depth).await, Some(5.0), "five pending before the worker runs");
    assert!(metric(&app, age).await.is_some_and(|a| a >= 0.0), "the oldest's age is reported");

    let stop = CancellationToken::new();
    tokio::spawn(edihub_server::delivery::run(app.state.clone(), stop.clone()));
    until("the receiver has every order", async || receiver.received("line").len() >= 7).await;
    let seen: Vec<String> =
        receiver.received("line").iter().map(|r| r.header("webhook-id").to_string()).collect();
    let expected: Vec<&String> = [&ids[0], &ids[0]].into_iter().chain(&ids).collect();
    assert_eq!(seen.iter().collect::<Vec<_>>(), expected, "strictly in order, the head retried in place");

    until("the queue is empty", async || metric(&app, depth).await == Some(0.0)).await;
    assert_eq!(metric(&app, age).await, Some(0.0));
    let count = r#"edihub_delivery_attempt_seconds_count{destination="line"}"#;
    assert_eq!(metric(&app, count).await, Some(7.0), "every attempt timed");
    let inf = r#"edihub_delivery_attempt_seconds_bucket{destination="line",le="+Inf"}"#;
    assert_eq!(metric(&app, inf).await, Some(7.0));
    let retries = r#"edihub_delivery_attempts_total{destination="line",outcome="retry"}"#;
    assert_eq!(metric(&app, retries).await, Some(2.0));
    stop.cancel();
}

fn admin_put(path: &str, body: Value) -> Request<Body> {
    Request::builder()
        .method(Method::PUT)
        .uri(path)
        .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

/// The admin PUT takes `ordering` and refuses an unknown one naming the
/// key, storing nothing.
async fn admin_sets_the_ordering(backend: Backend) {
    let receiver = Receiver::start().await;
    let app = app(backend, &receiver).await;
    let def = |ordering: &str| json!({ "tenant": "acme", "environment": "prod", "url": "http://127.0.0.1:9/wms", "ordering": ordering });
    let res = app.send(admin_put("/admin/destinations/wms", def("sorted"))).await;
    res.expect_problem(422, "destinations[0].ordering");
    app.get("/admin/destinations/wms", Some(&bearer(ADMIN_TOKEN))).await.expect_problem(404, "wms");
    let res = app.send(admin_put("/admin/destinations/wms", def("fifo"))).await;
    res.expect(200);
    let res = app.get("/admin/destinations/wms", Some(&bearer(ADMIN_TOKEN))).await;
    res.expect(200);
    assert_eq!(res.json()["definition"]["ordering"], "fifo");
    let res = app.get("/admin/destinations/line", Some(&bearer(ADMIN_TOKEN))).await;
    assert_eq!(res.json()["definition"]["ordering"], "fifo", "from the file");
}

/// A destination with `max_in_flight = 2` has two attempts open at once,
/// however many of its deliveries are due; the rest follow as slots free.
async fn max_in_flight_caps_a_destinations_attempts(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.script("capped", &[Reply::Hang; 2]);
    let extra = format!(
        "[delivery]\npoll_interval_ms = 50\n\n[[destinations]]\nid = \"capped\"\ntenant = \"acme\"\n\
         environment = \"prod\"\nurl = \"{}\"\ntimeout_secs = 1\nmax_in_flight = 2\n",
        receiver.url("capped")
    );
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(&extra)).await;
    let stop = CancellationToken::new();
    tokio::spawn(edihub_server::delivery::run(app.state.clone(), stop.clone()));
    for i in 0..6 {
        post_order(&app, &format!("cap-{i}")).await;
    }
    until("two attempts are open", async || receiver.received("capped").len() == 2).await;
    // Ten poll intervals: without the cap the other four would have gone.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.received("capped").len(), 2, "no third attempt while two are open");
    // The two time out after a second; all six then arrive (two retries).
    until("every order arrives", async || receiver.received("capped").len() == 8).await;
    stop.cancel();
}

backend_tests!(
    fifo_delivers_in_commit_order_behind_a_failure,
    admin_sets_the_ordering,
    max_in_flight_caps_a_destinations_attempts
);
