//! The destinations' admin API on both backends: listed and shown as
//! seeded, changed and switched off and on (each change audited as
//! `destination.updated`, and kept over a later seed from the file), with
//! the outbox following at once; a bad definition is refused naming its
//! key, and nothing is stored.

use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::{Value, json};

const DESTINATIONS: &str = r#"
[[destinations]]
id = "erp"
tenant = "acme"
environment = "prod"
url = "http://127.0.0.1:9/erp"
"#;

fn admin(method: Method, path: &str, body: Option<Value>) -> Request<Body> {
    let builder =
        Request::builder().method(method).uri(path).header(header::AUTHORIZATION, bearer(ADMIN_TOKEN));
    match body {
        Some(b) => builder.header(header::CONTENT_TYPE, "application/json").body(Body::from(b.to_string())),
        None => builder.body(Body::empty()),
    }
    .expect("request")
}

async fn list(app: &TestApp) -> Vec<Value> {
    let res = app.get("/admin/destinations", Some(&bearer(ADMIN_TOKEN))).await;
    res.expect(200);
    res.json()["destinations"].as_array().expect("destinations").clone()
}

/// The destinations an accepted shop order got deliveries to.
async fn delivered_to(app: &TestApp, order: &str) -> Vec<String> {
    let body = json!({ "order": { "id": order } }).to_string();
    let res = app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await;
    let id = accepted(&res)["id"].as_str().expect("id").to_string();
    let res = app.get(&format!("/admin/messages/{id}/deliveries"), Some(&bearer(ADMIN_TOKEN))).await;
    res.expect(200);
    let deliveries = res.json()["deliveries"].as_array().expect("deliveries").clone();
    deliveries.iter().map(|d| d["destination_id"].as_str().expect("id").to_string()).collect()
}

async fn destination_admin_round_trip(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(DESTINATIONS)).await;
    let rows = list(&app).await;
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0]["id"].as_str(), rows[0]["source"].as_str()), (Some("erp"), Some("config")));
    let res = app.get("/admin/destinations/erp", Some(&bearer(ADMIN_TOKEN))).await;
    res.expect(200);
    assert_eq!(res.json()["definition"]["url"], "http://127.0.0.1:9/erp");
    app.get("/admin/destinations/nope", Some(&bearer(ADMIN_TOKEN))).await.expect_problem(404, "nope");
    assert_eq!(delivered_to(&app, "a-1").await, ["erp"]);

    // Refused, naming the key; nothing stored, nothing audited.
    let bad = json!({ "tenant": "acme", "environment": "prod", "url": "gopher://x" });
    let res = app.send(admin(Method::PUT, "/admin/destinations/wms", Some(bad))).await;
    res.expect_problem(422, "destinations[0].url");
    let no_tenant = json!({ "tenant": "nobody", "environment": "prod", "url": "http://x/" });
    let res = app.send(admin(Method::PUT, "/admin/destinations/wms", Some(no_tenant))).await;
    res.expect_problem(422, "destinations[0].tenant");
    let res = app.send(admin(Method::PUT, "/admin/destinations/wms", Some(json!([1])))).await;
    res.expect_problem(422, "object");
    assert_eq!(list(&app).await.len(), 1);
    let audit = app.audit("action=destination.updated").await;
    assert!(audit["events"].as_array().expect("events").is_empty(), "{audit}");

    // A new destination for shop orders only, then erp switched off.
    let wms = json!({ "tenant": "acme", "environment": "prod", "url": "http://127.0.0.1:9/wms",
        "message_types": ["shop.order"], "timeout_secs": 3 });
    let res = app.send(admin(Method::PUT, "/admin/destinations/wms", Some(wms))).await;
    res.expect(200);
    assert_eq!(res.json()["old"], Value::Null);
    let res = app.send(admin(Method::POST, "/admin/destinations/erp/disable", None)).await;
    res.expect(200);
    assert_eq!(
        (res.json()["old"]["enabled"].as_bool(), res.json()["new"]["enabled"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(delivered_to(&app, "a-2").await, ["wms"], "a disabled destination gets no deliveries");

    // The file's seed does not undo the admin's change.
    let seed = edihub_server::delivery::seed_rows(&app.state.config, chrono::Utc::now());
    app.state.store.seed_destinations(&seed).await.expect("seed");
    let erp = list(&app).await.into_iter().find(|d| d["id"] == "erp").expect("erp");
    assert_eq!((erp["enabled"].as_bool(), erp["source"].as_str()), (Some(false), Some("admin")));

    app.send(admin(Method::POST, "/admin/destinations/erp/enable", None)).await.expect(200);
    assert_eq!(delivered_to(&app, "a-3").await, ["erp", "wms"]);
    app.send(admin(Method::POST, "/admin/destinations/nope/enable", None)).await.expect_problem(404, "nope");
    let audit = app.audit("action=destination.updated").await;
    let events = audit["events"].as_array().expect("events");
    assert_eq!(events.len(), 3, "{audit}");
    assert!(events.iter().all(|e| e["details"]["new"].is_object() && e["tenant"] == "acme"), "{audit}");
}

/// The statuses of `destination`'s deliveries of `ids`, in order.
async fn statuses(app: &TestApp, ids: &[uuid::Uuid], destination: &str) -> Vec<String> {
    let mut out = Vec::new();
    for id in ids {
        let reports = app.state.store.deliveries_of(*id).await.expect("deliveries");
        let d = reports.iter().find(|r| r.delivery.destination_id == destination).expect("delivery");
        out.push(d.delivery.status.clone());
    }
    out
}

/// A replay by filter queues exactly the deliveries it selects (here a
/// destination's dead letters), audited once with the count; a bad filter
/// is refused and changes nothing.
async fn replay_by_filter(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(DESTINATIONS)).await;
    let mut ids = Vec::new();
    for order in ["r-1", "r-2", "r-3"] {
        let body = json!({ "order": { "id": order } }).to_string();
        let res = app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await;
        ids.push(uuid::Uuid::parse_str(accepted(&res)["id"].as_str().expect("id")).expect("uuid"));
    }
    // The first two failed for good, the third was delivered.
    let now = chrono::Utc::now();
    let claimed = app.state.store.claim_deliveries("erp", now, now + chrono::Duration::minutes(1), 10).await;
    let claimed = claimed.expect("claim");
    assert_eq!(claimed.len(), 3);
    for (i, id) in ids.iter().enumerate() {
        let lease_until = claimed.iter().find(|c| c.message_id == *id).expect("claimed").lease_until;
        let verdict = if i < 2 { edihub_store::Verdict::Failed } else { edihub_store::Verdict::Delivered };
        let attempt = edihub_store::AttemptRow {
            attempted_at: now,
            status_code: Some(if i < 2 { 410 } else { 200 }),
            latency_ms: 3,
            error: None,
            response_prefix: None,
        };
        let done = edihub_store::FinishedAttempt {
            message_id: *id,
            destination_id: "erp".into(),
            attempt,
            verdict,
            lease_until,
            sap_status: false,
        };
        app.state.store.finish_delivery(&done).await.expect("finish");
    }
    assert_eq!(statuses(&app, &ids, "erp").await, ["failed", "failed", "delivered"]);

    for (bad, says) in [
        (json!({ "status": "lost" }), "none of"),
        (json!({ "colour": "red" }), "unknown field"),
        (json!({ "since": "yesterday" }), "since"),
        (json!({ "since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z" }), "before"),
    ] {
        let res = app.send(admin(Method::POST, "/admin/deliveries/replay", Some(bad))).await;
        res.expect_problem(422, says);
    }
    assert_eq!(statuses(&app, &ids, "erp").await, ["failed", "failed", "delivered"], "nothing changed");
    let audit = app.audit("action=delivery.replayed").await;
    assert!(audit["events"].as_array().expect("events").is_empty(), "{audit}");

    let filter = json!({ "destination": "erp", "status": "failed", "message_type": "shop.order" });
    let res = app.send(admin(Method::POST, "/admin/deliveries/replay", Some(filter))).await;
    res.expect(202);
    assert_eq!(res.json()["queued"], 2);
    assert_eq!(statuses(&app, &ids, "erp").await, ["pending", "pending", "delivered"]);
    let other_type = json!({ "message_type": "erp.order" });
    let res = app.send(admin(Method::POST, "/admin/deliveries/replay", Some(other_type))).await;
    assert_eq!(res.json()["queued"], 0, "no message of that type");
    let audit = app.audit("action=delivery.replayed").await;
    let events = audit["events"].as_array().expect("events");
    assert_eq!(events.len(), 2, "{audit}");
    assert_eq!(events[1]["details"]["queued"], 2, "oldest last: {audit}");
    assert_eq!(events[1]["details"]["filter"]["status"], "failed");
}

backend_tests!(destination_admin_round_trip, replay_by_filter);
