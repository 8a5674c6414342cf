//! The address policy of deliveries, on both backends, with
//! `delivery.allow_private_destinations` off: a destination whose name
//! resolves to loopback (`localhost`) is refused at send time, each attempt
//! recorded with the reason and retried, and the receiver gets nothing; a
//! literal private or metadata address is refused when an admin saves it
//! (422 naming the url, nothing stored or audited) and, for a row stored
//! before the policy existed, at send time.

use axum::body::Body;
use axum::http::{Method, Request, header};
use chrono::Utc;
use edihub_store::{DestinationRow, Json, SOURCE_ADMIN};
use serde_json::json;

use crate::delivery::{deliveries, post_order, start_worker, until};
use crate::support::receiver::Receiver;
use crate::support::*;

fn put(path: &str, body: serde_json::Value) -> Request<Body> {
    Request::builder()
        .method(Method::PUT)
        .uri(path)
        .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

async fn private_destinations_are_refused_unless_allowed(backend: Backend) {
    let receiver = Receiver::start().await;
    let named = receiver.url("named").replace("127.0.0.1", "localhost");
    let toml = format!(
        "[delivery]\nallow_private_destinations = false\nretry_schedule = [\"200ms\", \"200ms\", \"1h\"]\n\
         poll_interval_ms = 50\n[[destinations]]\nid = \"named\"\ntenant = \"acme\"\nenvironment = \"prod\"\n\
         url = \"{named}\"\nmessage_types = [\"shop.order\"]\n"
    );
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(&toml)).await;

    // Saving a literal private or metadata address is refused, naming the url.
    for url in [
        receiver.url("literal"),
        "http://2130706433/x".to_string(),
        "http://[::ffff:127.0.0.1]/x".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://0.0.0.0:8080/x".to_string(),
    ] {
        let body = json!({ "tenant": "acme", "environment": "prod", "url": url });
        let res = app.send(put("/admin/destinations/literal", body)).await;
        res.expect_problem(422, "url");
        assert!(res.text().contains("deliveries"), "{url}: {}", res.text());
    }
    app.get("/admin/destinations/literal", Some(&bearer(ADMIN_TOKEN))).await.expect(404);
    assert!(app.audit_events("action=destination.updated").await.is_empty(), "nothing stored or audited");

    // A row stored before the policy (written straight to the store).
    let def = json!({ "id": "stored", "tenant": "acme", "environment": "prod", "url": receiver.url("stored"),
        "message_types": ["shop.order"], "format": "envelope", "ordering": "parallel", "timeout_secs": 5,
        "enabled": true });
    let row = DestinationRow {
        id: "stored".into(),
        tenant_id: "acme".into(),
        environment_id: "prod".into(),
        message_types: Some(Json(vec!["shop.order".into()])),
        enabled: true,
        definition: Json(def),
        source: SOURCE_ADMIN.into(),
        updated_at: Utc::now(),
    };
    app.state.store.put_destination(&row).await.expect("stored");

    let stop = start_worker(&app);
    let id = post_order(&app, "ssrf-1").await;
    until("both are attempted three times", async || {
        let d = deliveries(&app, &id).await;
        d["named"]["attempts"] == 3 && d["stored"]["attempts"] == 3
    })
    .await;
    stop.cancel();
    let d = deliveries(&app, &id).await;
    let named_error = d["named"]["attempt_log"][0]["error"].as_str().expect("an error").to_string();
    assert!(
        named_error.starts_with("refused: localhost resolves to no address deliveries may reach")
            && named_error.contains("is a loopback address")
            && named_error.contains("allow_private_destinations"),
        "{named_error}"
    );
    assert_eq!(
        d["stored"]["attempt_log"][0]["error"],
        "refused: 127.0.0.1 is a loopback address; deliveries reach private addresses only with delivery.allow_private_destinations = true"
    );
    for name in ["named", "stored"] {
        let log = d[name]["attempt_log"].as_array().expect("log");
        assert!(
            log.iter().all(|a| a["status_code"].is_null() && a["response_prefix"].is_null()),
            "{name}: {log:?}"
        );
        assert_eq!(d[name]["status"], "pending", "{name}: retried like a connection error");
    }
    assert!(receiver.received("named").is_empty() && receiver.received("stored").is_empty(), "nothing sent");
}

backend_tests!(private_destinations_are_refused_unless_allowed);
