//! Fields a sender controls stay bounded (both backends): a document number,
//! an event id or a message type taken from the body that is too long or of
//! the wrong shape is refused with a problem naming it, and nothing is
//! stored; detail values of audit events are cut at write time, so an audit
//! page stays small whatever the payloads hold. Event ids: a number stands
//! for its decimal text, and an integration's `event_id_days` keeps its ids
//! past `retention.keys_days`.

use crate::support::webhook::*;
use crate::support::*;
use chrono::Duration;
use edihub_server::retention::run_once;
use serde_json::json;
use tokio_util::sync::CancellationToken;

backend_tests!(
    oversized_docnum_is_refused_and_nothing_stored,
    audit_details_are_cut_at_write_time,
    payload_type_follows_the_header_rule,
    body_event_id_follows_the_header_rule,
    number_and_text_event_ids_are_one_event,
    event_id_days_outlives_keys_days,
);

/// A type whose key is a large free-text field.
fn blob_type() -> TestConfig {
    TestConfig::new().message_type("blob.note", |t| t.duplicate_key_fields = strings(["$.blob"]))
}

async fn oversized_docnum_is_refused_and_nothing_stored(backend: Backend) {
    let app = TestApp::new(backend).await;
    // 1 MB made PostgreSQL fail the docnum index (500); 101 characters is
    // the smallest refused value.
    for len in [1_000_000, 101] {
        let body = json!({ "docnum": "7".repeat(len), "note": "x" }).to_string();
        let res = app.post_json(ACME_PROD, body, &[("x-message-type", "free.event")]).await;
        res.expect_problem(422, "docnum");
    }
    let body = json!({ "docnum": "12\u{0007}34" }).to_string();
    app.post_json(ACME_PROD, body, &[("x-message-type", "free.event")]).await.expect_problem(422, "docnum");
    assert_eq!(app.count_prod().await, 0);
    assert!(app.audit_events("").await.is_empty(), "nothing audited either");
    // 100 characters is still a document number.
    let body = json!({ "docnum": "7".repeat(100) }).to_string();
    accepted(&app.post_json(ACME_PROD, body, &[("x-message-type", "free.event")]).await);
}

async fn audit_details_are_cut_at_write_time(backend: Backend) {
    let app = TestApp::start(backend, blob_type()).await;
    let blob = "b".repeat(200_000);
    let body = json!({ "blob": blob, "docnum": "D-1" }).to_string();
    let first = accepted(&app.post_json(ACME_PROD, body.clone(), &[("x-message-type", "blob.note")]).await);
    for _ in 0..3 {
        let res = app.post_json(ACME_PROD, body.clone(), &[("x-message-type", "blob.note")]).await;
        duplicate_of(&res, first["id"].as_str().unwrap());
    }
    let res = app.get("/admin/audit?limit=500", Some(&bearer(ADMIN_TOKEN))).await;
    res.expect(200);
    assert!(res.body.len() < 20_000, "three duplicates of a 200 KB key made a {} byte page", res.body.len());
    let events = app.audit_events("action=message.duplicate_blocked").await;
    assert_eq!(events.len(), 3);
    for e in &events {
        let kv = &e["details"]["key_values"];
        assert_eq!(kv["truncated"], true, "the key values are cut: {kv}");
        assert!(kv["bytes"].as_u64().unwrap() > 200_000, "the marker keeps the size: {kv}");
        assert!(kv["prefix"].as_str().unwrap().starts_with("[{\"path\""), "and the beginning: {kv}");
        // Small members stay whole.
        assert_eq!(e["details"]["docnum"], "D-1");
    }
    // The message itself keeps its key values whole.
    let id = first["id"].as_str().unwrap();
    let stored = app.state.store.get_message(id.parse().unwrap()).await.unwrap().expect("stored");
    assert_eq!(stored.key_values.0[0]["values"][0].as_str().map(str::len), Some(200_000));
}

async fn payload_type_follows_the_header_rule(backend: Backend) {
    let app = webhook_app(backend).await;
    let now = now_secs();
    let long = "t".repeat(101);
    for (n, (kind, expected)) in [
        (json!("<script>alert(1)</script>"), "characters of A–Z"),
        (json!(long), "got 101 bytes"),
        (json!(42), "must be a string"),
        (json!({ "a": 1 }), "must be a string"),
    ]
    .into_iter()
    .enumerate()
    {
        let body =
            json!({ "id": format!("evt_type_{n}"), "type": kind, "data": { "object": { "id": "pi_1" } } });
        let body = body.to_string();
        let res = app.post_webhook("stripe", body.as_str(), &stripe_headers(&body, now)).await;
        let detail = res.expect_problem(422, "message type at $.type");
        assert!(detail.contains(expected), "{detail}");
    }
    assert_eq!(app.count_prod().await, 0);
    assert!(app.audit_events("").await.is_empty());
}

async fn body_event_id_follows_the_header_rule(backend: Backend) {
    let app = webhook_app(backend).await;
    let now = now_secs();
    let ok_id = "e".repeat(200);
    for id in [json!("e".repeat(201)), json!("evt\u{00e9}"), json!(1.5), json!(["evt_1"]), json!(true)] {
        let body =
            json!({ "id": id, "type": "payment_intent.succeeded", "data": { "object": { "id": "pi_9" } } });
        let body = body.to_string();
        let res = app.post_webhook("stripe", body.as_str(), &stripe_headers(&body, now)).await;
        res.expect_problem(422, "event id at $.id");
    }
    assert_eq!(app.count_prod().await, 0);
    // 200 characters, the limit of a header id, is an event id.
    let body =
        json!({ "id": ok_id, "type": "payment_intent.succeeded", "data": { "object": { "id": "pi_9" } } });
    let body = body.to_string();
    accepted(&app.post_webhook("stripe", body.as_str(), &stripe_headers(&body, now)).await);
    let retry = app.post_webhook("stripe", body.as_str(), &stripe_headers(&body, now)).await;
    assert!(retry.expect(200).replayed(), "the long id was claimed");
}

async fn number_and_text_event_ids_are_one_event(backend: Backend) {
    let app = webhook_app(backend).await;
    let now = now_secs();
    let number = r#"{"id":12345,"type":"payment_intent.succeeded","data":{"object":{"id":"pi_n1"}}}"#;
    let text = r#"{"id":"12345","type":"payment_intent.succeeded","data":{"object":{"id":"pi_n2"}}}"#;
    let first = app.post_webhook("stripe", number, &stripe_headers(number, now)).await;
    accepted(&first);
    // Another payload under the same id, written as text: the same event.
    let res = app.post_webhook("stripe", text, &stripe_headers(text, now)).await;
    assert!(res.expect(200).replayed(), "12345 and \"12345\" are one event id");
    assert_eq!(res.body, first.body);
    assert_eq!(app.count_prod().await, 1);
}

/// `shop` keeps its event ids for a year, `gh` follows `keys_days` (30).
async fn event_id_days_outlives_keys_days(backend: Backend) {
    let app = webhook_app(backend).await;
    let shop = json!({
        "tenant": "acme", "environment": "prod", "message_type": "shopify.order",
        "event_id": { "header": "X-Shopify-Webhook-Id" },
        "signature": { "scheme": "shopify", "secret_env": "SHOP_SECRET" },
        "event_id_days": 365,
    });
    app.put_integration("shop", &shop).await.expect(200);
    let shop_post = |order: u32| {
        let body = format!(r#"{{"id":{order},"total":"10.00"}}"#);
        let sig = openssl_b64(SHOP_SECRET.as_bytes(), body.as_bytes());
        (body, vec![("x-shopify-hmac-sha256", sig), ("x-shopify-webhook-id", "shop-evt-1".to_string())])
    };
    let gh_post = |n: u32| {
        let body = format!(r#"{{"action":"opened","number":{n}}}"#);
        let sig = format!("sha256={}", openssl_hex(GITHUB_SECRET.as_bytes(), body.as_bytes()));
        (body, vec![("x-hub-signature-256", sig), ("x-github-delivery", "gh-evt-1".to_string())])
    };
    let (body, headers) = shop_post(1);
    accepted(&app.post_webhook("shop", body.as_str(), &headers).await);
    let (body, headers) = gh_post(1);
    accepted(&app.post_webhook("gh", body.as_str(), &headers).await);

    let at = |days: i64| chrono::Utc::now() + Duration::days(days);
    run_once(&app.state, at(31), &CancellationToken::new()).await.expect("retention");
    // A new payload under each old event id: shop's id is still known…
    let (body, headers) = shop_post(2);
    let res = app.post_webhook("shop", body.as_str(), &headers).await;
    assert!(res.expect(200).replayed(), "shop's event id outlives keys_days");
    // …gh's was purged after 30 days, so its new payload is a new message.
    let (body, headers) = gh_post(2);
    accepted(&app.post_webhook("gh", body.as_str(), &headers).await);

    run_once(&app.state, at(366), &CancellationToken::new()).await.expect("retention");
    let (body, headers) = shop_post(3);
    accepted(&app.post_webhook("shop", body.as_str(), &headers).await);
}
