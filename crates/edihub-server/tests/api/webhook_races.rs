//! Webhooks under concurrency and live reconfiguration: 48 simultaneous
//! deliveries of one provider event, each with its own fresh valid signature
//! (event id in a header, or in the body), answer exactly one 202 and 47
//! byte-identical 200 replays, store one message and audit 47 blocked
//! repeats; 48 simultaneous partner retries without an event id are caught by
//! the fingerprint the same way. An admin's `PUT /admin/integrations/{id}`
//! takes effect on the next webhook without a restart and is audited with the
//! old and the new definition.

use crate::support::webhook::*;
use crate::support::*;
use axum::body::Body;
use axum::http::Request;
use serde_json::json;

const N: usize = 48;

backend_tests!(
    one_standard_webhooks_event_at_once_stores_one,
    one_stripe_event_at_once_stores_one,
    partner_retries_without_event_id_at_once_store_one,
    admin_change_takes_effect_on_the_next_webhook,
);

/// Asserts one stored message for a burst of the provider event `key` (see
/// [`assert_one_keyed`]), and no refused signature: each copy was signed anew.
async fn assert_one_event(app: &TestApp, answers: &[TestResponse], key: &str) {
    assert_eq!(answers.len(), N);
    assert_one_keyed(app, answers, "provider_event_id", key).await;
    assert!(app.audit_events("action=webhook.signature_rejected").await.is_empty());
}

async fn one_standard_webhooks_event_at_once_stores_one(backend: Backend) {
    let app = webhook_app(backend).await;
    let body = r#"{"type":"invoice.paid","data":{"invoice":"INV-RACE-1","amount":4200}}"#;
    let msg_id = "msg_race_standard_webhooks";
    let now = now_secs();
    // One reference-library signature per delivery, each at its own timestamp.
    let timestamps: Vec<i64> = (0..N as i64).map(|i| now - i).collect();
    let sigs = python_sign(STD_SECRET, msg_id, body, &timestamps);
    let requests = timestamps
        .iter()
        .zip(&sigs)
        .map(|(ts, sig)| {
            let headers = [
                ("webhook-id", msg_id.to_string()),
                ("webhook-timestamp", ts.to_string()),
                ("webhook-signature", sig.clone()),
            ];
            webhook_request("std", body, &headers)
        })
        .collect();
    let answers = burst(&app, requests).await;
    assert_one_event(&app, &answers, &format!("std:{msg_id}")).await;
}

async fn one_stripe_event_at_once_stores_one(backend: Backend) {
    let app = webhook_app(backend).await;
    let body =
        r#"{"id":"evt_race_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_race_1"}}}"#;
    let now = now_secs();
    let requests =
        (0..N as i64).map(|i| webhook_request("stripe", body, &stripe_headers(body, now - i))).collect();
    let answers = burst(&app, requests).await;
    assert_one_event(&app, &answers, "stripe:evt_race_1").await;
}

async fn partner_retries_without_event_id_at_once_store_one(backend: Backend) {
    let app = webhook_app(backend).await;
    let requests = (0..N)
        .map(|attempt| {
            let body = format!(
                r#"{{"itemId":"SKU-RACE","type":"stock.updated","received":"2024-05-01T10:00:00Z","sent":"2024-05-01T10:{:02}:00Z","attempts":{},"stock":3}}"#,
                attempt,
                attempt + 1
            );
            webhook_request("gubee", body.as_str(), &gubee_headers(&body))
        })
        .collect();
    let answers = burst(&app, requests).await;
    let statuses: Vec<u16> = answers.iter().map(|r| r.status.as_u16()).collect();
    let new: Vec<_> = answers.iter().filter(|r| r.status.as_u16() == 202).collect();
    assert_eq!(new.len(), 1, "exactly one 202: {statuses:?}");
    let original = accepted(new[0]);
    let id = original["id"].as_str().unwrap();
    for res in answers.iter().filter(|r| r.status.as_u16() != 202) {
        assert_eq!(duplicate_of(res, id)["detected_by"], "fingerprint");
        assert!(!res.replayed());
    }
    assert_eq!(app.count_prod().await, 1);
    let fp = original["fingerprint"].as_str().unwrap();
    let events = app.audit_events(&format!("action=message.duplicate_blocked&fingerprint={fp}")).await;
    assert_eq!(events.len(), N - 1);
    assert!(events.iter().all(|e| e["detected_by"] == "fingerprint" && e["original_message_id"] == id));
}

/// Posts a GitHub issue event signed with openssl.
async fn post_issue(app: &TestApp, number: u32) -> TestResponse {
    let body = format!(r#"{{"action":"opened","issue":{{"number":{number}}}}}"#);
    let sig = format!("sha256={}", openssl_hex(GITHUB_SECRET.as_bytes(), body.as_bytes()));
    let headers = [("x-hub-signature-256", sig), ("x-github-delivery", format!("delivery-{number}"))];
    app.post_webhook("gh", body, &headers).await
}

async fn admin_change_takes_effect_on_the_next_webhook(backend: Backend) {
    let app = webhook_app(backend).await;
    assert_eq!(accepted(&post_issue(&app, 1).await)["message_type"], "github.event");

    let definition = json!({
        "tenant": "acme",
        "environment": "prod",
        "message_type": "github.issue",
        "event_id": { "header": "X-GitHub-Delivery" },
        "signature": { "scheme": "github", "secret_env": "GITHUB_SECRET" },
    });
    // Without the admin token nothing changes.
    let anonymous = Request::put("/admin/integrations/gh").body(Body::from(definition.to_string())).unwrap();
    app.send(anonymous).await.expect_problem(401, "");
    let res = app.put_integration("gh", &definition).await;
    res.expect(200);
    let answer = res.json();
    assert_eq!(answer["old"]["definition"]["message_type"], "github.event", "{answer}");
    assert_eq!(answer["new"]["definition"]["message_type"], "github.issue", "{answer}");

    // The next webhook, on the same process and without a restart, uses it.
    assert_eq!(accepted(&post_issue(&app, 2).await)["message_type"], "github.issue");
    assert_eq!(app.count_prod().await, 2);

    let events = app.audit_events("action=integration.updated").await;
    assert_eq!(events.len(), 1, "{events:?}");
    let details = &events[0]["details"];
    assert_eq!(details["integration"], "gh");
    assert_eq!(details["old"]["definition"]["message_type"], "github.event", "{details}");
    assert_eq!(details["new"]["definition"]["message_type"], "github.issue", "{details}");
    assert_eq!(
        (events[0]["tenant"].as_str(), events[0]["environment"].as_str()),
        (Some("acme"), Some("prod"))
    );
    // The secret never reaches the audit log, only the variable's name.
    assert!(!details.to_string().contains(GITHUB_SECRET), "{details}");
}
