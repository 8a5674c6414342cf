//! Webhook deduplication over HTTP: a provider retry (same event id, fresh
//! timestamp and signature, even a re-serialised body) gets the first answer
//! byte for byte with `Idempotency-Replayed: true`, stores nothing and is
//! audited as detected by `provider_event_id`; event ids are scoped to their
//! integration and may come from a header or a JSONPath. Without an event id
//! the message type's fingerprint decides: the Gubee retry with new `sent` and
//! `attempts` is a duplicate on `$.itemId`/`$.type`/`$.received`, and the
//! whole-payload mode ignores key order, whitespace and excluded fields. The
//! message type comes from a JSONPath, and its absence is 422; a configured
//! event-id header that is missing or not 1–200 printable ASCII is 400.

use crate::support::webhook::*;
use crate::support::*;
use serde_json::Value;

backend_tests!(
    provider_retry_replays_the_first_answer,
    event_id_decides_even_for_a_reserialised_body,
    event_id_from_a_json_path,
    gubee_retry_with_new_sent_and_attempts_is_a_duplicate,
    whole_payload_minus_volatile_fields_is_one_message,
    message_type_from_a_json_path,
    event_id_header_is_required_and_checked,
);

/// The `message.duplicate_blocked` audit events, newest first.
async fn blocked(app: &TestApp) -> Vec<Value> {
    app.audit_events("action=message.duplicate_blocked").await
}

async fn provider_retry_replays_the_first_answer(backend: Backend) {
    let app = webhook_app(backend).await;
    let body = r#"{"type":"invoice.paid","data":{"invoice":"INV-1001","amount":4200}}"#;
    let id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
    let now = now_secs();
    let first_headers = std_headers(id, body, now - 30);
    let first = app.post_webhook("std", body, &first_headers).await;
    let original = accepted(&first);
    let original_id = original["id"].as_str().unwrap();

    // The provider retries: same webhook-id, a fresh timestamp and signature.
    let retry_headers = std_headers(id, body, now);
    assert_ne!(retry_headers[2], first_headers[2], "the retry carries its own signature");
    let retry = app.post_webhook("std", body, &retry_headers).await;
    retry.expect(200);
    assert!(retry.replayed(), "Idempotency-Replayed: true");
    assert_eq!(retry.header("content-type"), Some("application/json"));
    assert_eq!(retry.body, first.body, "the original body, byte for byte");

    assert_eq!(app.count_prod().await, 1);
    let stored = app.state.store.get_message(original_id.parse().unwrap()).await.unwrap().expect("stored");
    assert_eq!(stored.provider_event_id.as_deref(), Some(id));
    let events = blocked(&app).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e["detected_by"], "provider_event_id");
    assert_eq!(e["idempotency_key"], format!("std:{id}"), "claimed per integration");
    assert_eq!(e["original_message_id"], original_id);
    assert_eq!(e["message_type"], "invoice.paid");
    assert_eq!(e["fingerprint"], original["fingerprint"]);
    assert_eq!((e["tenant"].as_str(), e["environment"].as_str()), (Some("acme"), Some("prod")));
}

async fn event_id_decides_even_for_a_reserialised_body(backend: Backend) {
    let app = webhook_app(backend).await;
    let shop = |body: &str, delivery: &str| {
        let sig = openssl_b64(SHOP_SECRET.as_bytes(), body.as_bytes());
        vec![("x-shopify-hmac-sha256", sig), ("x-shopify-webhook-id", delivery.to_string())]
    };
    let body = r#"{"id":820982911946154508,"email":"jon@example.com","total_price":"403.00"}"#;
    let first = app.post_webhook("shop", body, &shop(body, "delivery-1")).await;
    accepted(&first);
    // A redelivery, re-serialised by the provider: other bytes, the same event.
    let again = "{\n  \"total_price\": \"403.00\",\n  \"email\": \"jon@example.com\",\n  \"id\": 820982911946154508\n}";
    let retry = app.post_webhook("shop", again, &shop(again, "delivery-1")).await;
    retry.expect(200);
    assert!(retry.replayed());
    assert_eq!(retry.body, first.body);
    let events = blocked(&app).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["detected_by"], "provider_event_id");
    assert_eq!(events[0]["details"]["same_payload"], false);

    // The same id from another integration is another provider's event.
    let gh = r#"{"action":"opened","issue":{"number":7}}"#;
    let sig = format!("sha256={}", openssl_hex(GITHUB_SECRET.as_bytes(), gh.as_bytes()));
    let res = app
        .post_webhook("gh", gh, &[("x-hub-signature-256", sig), ("x-github-delivery", "delivery-1".into())])
        .await;
    accepted(&res);
    assert_eq!(app.count_prod().await, 2);
}

async fn event_id_from_a_json_path(backend: Backend) {
    let app = webhook_app(backend).await;
    let event = |evt: &str, pi: &str| {
        let id = if evt.is_empty() { String::new() } else { format!(r#""id":"{evt}","#) };
        format!(
            r#"{{{id}"type":"payment_intent.succeeded","data":{{"object":{{"id":"{pi}","amount":2000}}}}}}"#
        )
    };
    let now = now_secs();
    let body = event("evt_A", "pi_1");
    let first = app.post_webhook("stripe", body.as_str(), &stripe_headers(&body, now - 20)).await;
    let original = accepted(&first);
    let original_id = original["id"].as_str().unwrap();
    let retry = app.post_webhook("stripe", body.as_str(), &stripe_headers(&body, now)).await;
    retry.expect(200);
    assert!(retry.replayed());
    assert_eq!(retry.body, first.body);

    // Another event id about the same payment intent: caught by the fingerprint.
    let other = event("evt_B", "pi_1");
    let res = app.post_webhook("stripe", other.as_str(), &stripe_headers(&other, now)).await;
    assert_eq!(duplicate_of(&res, original_id)["detected_by"], "fingerprint");
    assert!(!res.replayed());

    // No value at `$.id` is not an error: the fingerprint alone decides.
    let anonymous = event("", "pi_2");
    let res = app.post_webhook("stripe", anonymous.as_str(), &stripe_headers(&anonymous, now)).await;
    let second_id = accepted(&res)["id"].as_str().unwrap().to_string();
    let res = app.post_webhook("stripe", anonymous.as_str(), &stripe_headers(&anonymous, now)).await;
    duplicate_of(&res, &second_id);

    assert_eq!(app.count_prod().await, 2);
    let events = blocked(&app).await;
    let by: Vec<&str> = events.iter().rev().map(|e| e["detected_by"].as_str().unwrap()).collect();
    assert_eq!(by, ["provider_event_id", "fingerprint", "fingerprint"]);
    assert_eq!(events.last().unwrap()["idempotency_key"], "stripe:evt_A");
}

fn gubee(received: &str, sent: &str, attempts: u32) -> String {
    format!(
        r#"{{"itemId":"SKU-1001","type":"stock.updated","received":"{received}","sent":"{sent}","attempts":{attempts},"stock":12}}"#
    )
}

async fn gubee_retry_with_new_sent_and_attempts_is_a_duplicate(backend: Backend) {
    let app = webhook_app(backend).await;
    let body = gubee("2024-05-01T10:00:00Z", "2024-05-01T10:00:03Z", 1);
    let original = accepted(&app.post_webhook("gubee", body.as_str(), &gubee_headers(&body)).await);
    let original_id = original["id"].as_str().unwrap();
    // The partner re-sends it: new `sent`, `attempts: 2`, a valid new signature.
    let retry = gubee("2024-05-01T10:00:00Z", "2024-05-01T10:05:09Z", 2);
    let res = app.post_webhook("gubee", retry.as_str(), &gubee_headers(&retry)).await;
    let dup = duplicate_of(&res, original_id);
    assert_eq!(dup["detected_by"], "fingerprint");
    assert_eq!(dup["fingerprint"], original["fingerprint"]);
    assert!(!res.replayed(), "no event id: not a replay");
    // The same item received again later is a new stock update.
    let later = gubee("2024-05-01T11:00:00Z", "2024-05-01T11:00:02Z", 1);
    let res = app.post_webhook("gubee", later.as_str(), &gubee_headers(&later)).await;
    assert_ne!(accepted(&res)["fingerprint"], original["fingerprint"]);

    assert_eq!(app.count_prod().await, 2);
    let events = blocked(&app).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["detected_by"], "fingerprint");
    assert_eq!(events[0]["original_message_id"], original_id);
    assert_eq!(events[0]["fingerprint"], original["fingerprint"]);
}

async fn whole_payload_minus_volatile_fields_is_one_message(backend: Backend) {
    let app = webhook_app(backend).await;
    let body = r#"{"itemId":"SKU-1001","type":"stock.updated","received":"2024-05-01T10:00:00Z","sent":"2024-05-01T10:00:03Z","attempts":1,"stock":12,"dims":{"w":10,"h":20}}"#;
    let original = accepted(&app.post_webhook("gubee-content", body, &partner_headers(body)).await);
    let original_id = original["id"].as_str().unwrap();
    // Keys reordered (also nested), re-indented, new volatile values.
    let retry = "{\n    \"attempts\": 3,\n    \"dims\": { \"h\": 20, \"w\": 10 },\n    \"stock\": 12,\n\
                 \t\"sent\": \"2024-05-01T10:09:00Z\",\n    \"received\": \"2024-05-01T10:00:00Z\",\n\
                 \"type\": \"stock.updated\", \"itemId\": \"SKU-1001\"\n}\n";
    let res = app.post_webhook("gubee-content", retry, &partner_headers(retry)).await;
    assert_eq!(duplicate_of(&res, original_id)["detected_by"], "fingerprint");
    // A change to a field that is not excluded is a new message.
    let changed = body.replace(r#""stock":12"#, r#""stock":11"#);
    accepted(&app.post_webhook("gubee-content", changed.as_str(), &partner_headers(&changed)).await);
    assert_eq!(app.count_prod().await, 2);
    let events = blocked(&app).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["detected_by"], "fingerprint");
}

async fn message_type_from_a_json_path(backend: Backend) {
    let app = webhook_app(backend).await;
    let now = now_secs();
    for body in [r#"{"data":{"invoice":"INV-3001"}}"#, r#"{"type":"  ","data":{"invoice":"INV-3001"}}"#] {
        let res = app.post_webhook("std", body, &std_headers("msg_type_1", body, now)).await;
        res.expect_problem(422, "no message type at $.type");
    }
    assert_eq!(app.count_prod().await, 0);
    // The refusals claimed no event id: the corrected delivery is processed.
    let body = r#"{"type":"invoice.paid","data":{"invoice":"INV-3001"}}"#;
    let res = app.post_webhook("std", body, &std_headers("msg_type_1", body, now)).await;
    let first = accepted(&res);
    assert_eq!(first["message_type"], "invoice.paid");
    assert_eq!(first["deduplicated"], true);
    // A type nobody configured is stored, not deduplicated, and says so.
    let body = r#"{"type":"customer.created","data":{"customer":"C-1"}}"#;
    let res = app.post_webhook("std", body, &std_headers("msg_type_2", body, now)).await;
    let other = accepted(&res);
    assert_eq!(other["message_type"], "customer.created");
    assert_eq!(other["deduplicated"], false);
    assert!(other["warning"].as_str().is_some_and(|w| w.contains("not deduplicated")), "{other}");
    assert_eq!(app.count_prod().await, 2);
    assert!(blocked(&app).await.is_empty());
}

async fn event_id_header_is_required_and_checked(backend: Backend) {
    let app = webhook_app(backend).await;
    let body = r#"{"action":"opened","issue":{"number":9}}"#;
    let sig =
        ("x-hub-signature-256", format!("sha256={}", openssl_hex(GITHUB_SECRET.as_bytes(), body.as_bytes())));
    let res = app.post_webhook("gh", body, std::slice::from_ref(&sig)).await;
    res.expect_problem(400, "x-github-delivery is missing");
    let long = [sig.clone(), ("x-github-delivery", "d".repeat(201))];
    app.post_webhook("gh", body, &long).await.expect_problem(400, "1–200 printable ASCII");
    assert_eq!(app.count_prod().await, 0);
    // Surrounding whitespace is not part of the id.
    let first = app.post_webhook("gh", body, &[sig.clone(), ("x-github-delivery", "d-1".into())]).await;
    accepted(&first);
    let retry = app.post_webhook("gh", body, &[sig, ("x-github-delivery", " d-1 ".into())]).await;
    assert!(retry.replayed() && retry.body == first.body, "{}", retry.text());
}
