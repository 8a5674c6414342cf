//! A destination moved to another tenant by an admin, on both backends:
//! the deliveries queued for its former owner are withdrawn (failed, with
//! the reason, audited `delivery.withdrawn`) instead of reaching the new
//! owner's receiver, and a replay of one fails again without sending it;
//! the new owner's own messages are delivered as usual.

use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::json;

use crate::delivery::{admin_post, deliveries, has_status, post_order, start_worker, until};
use crate::support::receiver::{Receiver, Reply};
use crate::support::*;

async fn a_moved_destination_never_carries_queued_messages_to_its_new_owner(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.always("old", Reply::Status(503));
    let toml = format!(
        "[delivery]\nretry_schedule = [\"1h\"]\npoll_interval_ms = 50\n\
         [[destinations]]\nid = \"erp\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{}\"\n\
         message_types = [\"shop.order\"]\n",
        receiver.url("old")
    );
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(&toml)).await;
    let stop = start_worker(&app);
    let mut queued = Vec::new();
    for i in 0..3 {
        queued.push(post_order(&app, &format!("moved-{i}")).await);
    }
    for id in &queued {
        until("the first attempt failed", async || deliveries(&app, id).await["erp"]["attempts"] == 1).await;
    }

    let moved = json!({ "tenant": "globex", "environment": "prod", "url": receiver.url("new"),
        "message_types": ["shop.order"] });
    let put = Request::builder()
        .method(Method::PUT)
        .uri("/admin/destinations/erp")
        .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(moved.to_string()))
        .expect("request");
    app.send(put).await.expect(200);
    for id in &queued {
        let d = &deliveries(&app, id).await["erp"];
        assert_eq!(d["status"], "failed", "{d}");
        assert_eq!(d["last_error"], "not delivered: the destination moved from acme/prod to globex/prod");
        assert_eq!(d["attempts"], 1, "withdrawn, not attempted");
    }
    let withdrawn = app.audit_events("action=delivery.withdrawn").await;
    assert_eq!(withdrawn.len(), 1, "{withdrawn:?}");
    assert_eq!(
        (withdrawn[0]["tenant"].as_str(), withdrawn[0]["environment"].as_str()),
        (Some("acme"), Some("prod"))
    );
    assert_eq!(withdrawn[0]["details"]["withdrawn"], 3);

    let body = json!({ "order": { "id": "globex-1" } }).to_string();
    let res = app.post_json(GLOBEX_PROD, body, &[("x-message-type", "shop.order")]).await;
    let theirs = accepted(&res)["id"].as_str().expect("id").to_string();
    until("the new owner's message is delivered", async || {
        has_status(&app, &theirs, "erp", "delivered").await
    })
    .await;

    app.send(admin_post(&format!("/admin/messages/{}/redeliver", queued[0]))).await.expect(202);
    until("the replay is recorded", async || deliveries(&app, &queued[0]).await["erp"]["attempts"] == 2)
        .await;
    stop.cancel();
    let d = &deliveries(&app, &queued[0]).await["erp"];
    assert_eq!(d["status"], "failed", "{d}");
    assert_eq!(
        d["attempt_log"][1]["error"],
        "not sent: the message belongs to acme/prod, the destination now to globex/prod"
    );
    let new = receiver.received("new");
    assert_eq!(new.len(), 1, "the new owner's receiver got its own message only");
    assert_eq!(new[0].header("webhook-id"), theirs);
    assert_eq!(receiver.received("old").len(), 3, "the former owner's receiver got each first attempt once");
}

backend_tests!(a_moved_destination_never_carries_queued_messages_to_its_new_owner);
