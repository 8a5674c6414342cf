//! Webhook signatures over HTTP, made by implementations independent of
//! edihub: Standard Webhooks signed by the reference Python library (and the
//! specification's test vector checked by the configured integration), GitHub's
//! documented example posted end to end, Shopify, Stripe and the generic HMAC
//! scheme signed with the `openssl` CLI. A tampered body, a wrong secret, a
//! stale or a future timestamp and a missing header are 401 problem documents,
//! audited (in aggregate) as `webhook.signature_rejected`, and store nothing, not even the
//! event id; an unknown integration is 404.

use crate::support::webhook::*;
use crate::support::*;
use axum::http::HeaderMap;

backend_tests!(
    standard_webhooks_reference_library_signatures_verify,
    github_documented_example_verifies_end_to_end,
    shopify_and_stripe_signed_with_openssl_are_accepted,
    generic_hmac_signed_with_openssl_is_accepted,
    bad_signatures_are_401_audited_and_store_nothing,
    unknown_integration_is_404,
    hex_digest_sent_to_shopify_is_malformed,
    duplicate_member_names_are_400_after_the_signature_check,
);

/// The Standard Webhooks test vector (the specification's reference
/// libraries, `test_sign_function`).
const SW_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const SW_TS: i64 = 1614265330;
const SW_BODY: &str = r#"{"test": 2432232314}"#;
const SW_SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

async fn standard_webhooks_reference_library_signatures_verify(backend: Backend) {
    let app = webhook_app(backend).await;
    // The reference library reproduces the published vector …
    assert_eq!(python_sign(STD_SECRET, SW_ID, SW_BODY, &[SW_TS]), [SW_SIG]);
    // … and the integration, configured with the vector's secret, verifies it at its time.
    let mut vector = HeaderMap::new();
    for (name, value) in
        [("webhook-id", SW_ID), ("webhook-timestamp", "1614265330"), ("webhook-signature", SW_SIG)]
    {
        vector.insert(name, value.parse().unwrap());
    }
    let integration = app.state.integrations.get("std-test").expect("std-test loaded");
    let verifier = &integration.verifier;
    assert_eq!(verifier.verify(&vector, SW_BODY.as_bytes(), SW_TS + 299), Ok(()));
    assert!(verifier.verify(&vector, br#"{"test": 2432232315}"#, SW_TS).is_err(), "tampered vector body");

    // End to end: the vector's id and body, freshly signed by the reference library.
    let now = now_secs();
    let res = app.post_webhook("std-test", SW_BODY, &std_headers(SW_ID, SW_BODY, now)).await;
    let body = accepted(&res);
    assert_eq!(body["message_type"], "std.test");
    let stored = app.state.store.get_message(body["id"].as_str().unwrap().parse().unwrap()).await.unwrap();
    let stored = stored.expect("stored");
    assert_eq!(stored.payload, SW_BODY.as_bytes(), "raw body kept byte for byte");
    assert_eq!(stored.provider_event_id.as_deref(), Some(SW_ID));

    // Non-ASCII body, type from `$.type`.
    let body = r#"{"type":"invoice.paid","data":{"invoice":"INV-1001","note":"Käse — 12 €"}}"#;
    let res = app.post_webhook("std", body, &std_headers("msg_edihub_1", body, now)).await;
    assert_eq!(accepted(&res)["message_type"], "invoice.paid");

    // Key rotation: any matching v1 entry counts; other versions are ignored.
    let body = r#"{"type":"invoice.paid","data":{"invoice":"INV-1002"}}"#;
    let old_key = python_sign("whsec_b2xkLWtleS1vbGQta2V5", "msg_edihub_2", body, &[now]).remove(0);
    let good = python_sign(STD_SECRET, "msg_edihub_2", body, &[now]).remove(0);
    let mut headers = std_headers("msg_edihub_2", body, now);
    headers[2].1 = format!("{old_key} v1a,{} {good}", &good[3..]);
    accepted(&app.post_webhook("std", body, &headers).await);
    headers[2].1 = format!("{old_key} v2,{}", &good[3..]);
    app.post_webhook("std", body, &headers).await.expect_problem(401, "does not match");
    assert_eq!(app.count_prod().await, 3);
}

async fn github_documented_example_verifies_end_to_end(backend: Backend) {
    let app = webhook_app(backend).await;
    let documented = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    assert_eq!(openssl_hex(GITHUB_SECRET.as_bytes(), b"Hello, World!"), documented);
    let delivery = ("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958".to_string());
    let headers = [("x-hub-signature-256", format!("sha256={documented}")), delivery.clone()];
    // The signature holds, so the request gets past step 3; `Hello, World!`
    // is not JSON, so it ends at step 4 with 400 (docs/webhooks.md).
    let res = app.post_webhook("gh", "Hello, World!", &headers).await;
    let detail = res.expect_problem(400, "invalid JSON");
    assert!(!detail.contains("signature"), "the documented signature must verify: {detail}");
    assert!(app.audit_events(&format!("action={REJECTED}")).await.is_empty());
    // The same signature on another body is refused.
    app.post_webhook("gh", "Hello, World?", &headers).await.expect_problem(401, "does not match the body");

    let body = r#"{"action":"opened","issue":{"number":42,"title":"Invoice INV-1001 missing"}}"#;
    let sig = format!("sha256={}", openssl_hex(GITHUB_SECRET.as_bytes(), body.as_bytes()));
    let res = app.post_webhook("gh", body, &[("x-hub-signature-256", sig), delivery.clone()]).await;
    assert_eq!(accepted(&res)["message_type"], "github.event");
    // The legacy SHA-1 header alone is not a signature.
    let legacy = [("x-hub-signature", "sha1=0000".to_string()), delivery];
    app.post_webhook("gh", body, &legacy).await.expect_problem(401, "x-hub-signature-256 header is missing");
    assert_eq!(app.count_prod().await, 1);
}

async fn shopify_and_stripe_signed_with_openssl_are_accepted(backend: Backend) {
    let app = webhook_app(backend).await;
    // The docs' Shopify example, with its published signature.
    let body = r#"{"id":820982911946154508,"email":"jon@example.com","total_price":"403.00"}"#;
    let sig = openssl_b64(SHOP_SECRET.as_bytes(), body.as_bytes());
    assert_eq!(sig, "BYNMfE9QqlA7ojx7cS1bPjt1/koXKWiV6THaNKhPDYc=");
    let id = ("x-shopify-webhook-id", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043".to_string());
    let res = app.post_webhook("shop", body, &[("x-shopify-hmac-sha256", sig.clone()), id.clone()]).await;
    assert_eq!(accepted(&res)["message_type"], "shopify.order");
    // Hex where Shopify sends base64 is refused (see hex_digest_sent_to_shopify_is_malformed).
    let hex_sig = openssl_hex(SHOP_SECRET.as_bytes(), body.as_bytes());
    app.post_webhook("shop", body, &[("x-shopify-hmac-sha256", hex_sig), id]).await.expect_problem(401, "");

    // Stripe: t=<now>, several v1 entries during a secret roll, v0 ignored.
    let body = r#"{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","type":"payment_intent.succeeded","data":{"object":{"id":"pi_3NG8Dt2eZvKYlo2C0","amount":2000}}}"#;
    let ts = now_secs();
    let good = openssl_hex(STRIPE_SECRET.as_bytes(), format!("{ts}.{body}").as_bytes());
    let other = openssl_hex(b"whsec_old_secret", format!("{ts}.{body}").as_bytes());
    let header = format!("t={ts},v0={good},v1={other},v1={good}");
    let res = app.post_webhook("stripe", body, &[("stripe-signature", header)]).await;
    assert_eq!(accepted(&res)["message_type"], "payment_intent.succeeded");
    let v0_only = format!("t={ts},v0={good}");
    let res = app.post_webhook("stripe", body, &[("stripe-signature", v0_only)]).await;
    res.expect_problem(401, "stripe-signature header is malformed");
    assert_eq!(app.count_prod().await, 2);
}

async fn generic_hmac_signed_with_openssl_is_accepted(backend: Backend) {
    let app = webhook_app(backend).await;
    let item = |sku: &str| {
        format!(
            r#"{{"itemId":"{sku}","type":"stock.updated","received":"2024-05-01T10:00:00Z","sent":"2024-05-01T10:00:03Z","attempts":1,"stock":12}}"#
        )
    };
    let body = item("SKU-1001");
    assert_eq!(
        accepted(&app.post_webhook("gubee", body.as_str(), &gubee_headers(&body)).await)["message_type"],
        "gubee.item"
    );
    // Upper-case hex is accepted too.
    let body = item("SKU-1002");
    let upper = format!("sha256={}", openssl_hex(GUBEE_SECRET.as_bytes(), body.as_bytes()).to_uppercase());
    accepted(&app.post_webhook("gubee", body.as_str(), &[("X-Gubee-Signature", upper)]).await);
    // The configured prefix is required.
    let bare = openssl_hex(GUBEE_SECRET.as_bytes(), body.as_bytes());
    let res = app.post_webhook("gubee", body.as_str(), &[("x-gubee-signature", bare)]).await;
    res.expect_problem(401, "the x-gubee-signature header is malformed");
    // Base64 without a prefix (`gubee-content`).
    let body = item("SKU-1003");
    let res = app.post_webhook("gubee-content", body.as_str(), &partner_headers(&body)).await;
    assert_eq!(accepted(&res)["message_type"], "gubee.content");
    assert_eq!(app.count_prod().await, 3);
}

/// (integration, body, headers, expected reason).
type Case<'a> = (&'a str, &'a str, Vec<(&'static str, String)>, &'static str);

async fn bad_signatures_are_401_audited_and_store_nothing(backend: Backend) {
    let app = webhook_app(backend).await;
    let now = now_secs();
    let body = r#"{"type":"invoice.paid","data":{"invoice":"INV-2001","amount":4200}}"#;
    let tampered = body.replace("4200", "4201");
    let stripe =
        r#"{"id":"evt_bad_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_bad_1"}}}"#;
    let wrong_secret = openssl_b64(b"not-the-shop-secret", body.as_bytes());
    let shop_id = ("x-shopify-webhook-id", "shop-evt-1".to_string());
    let cases: Vec<Case> = vec![
        ("std", tampered.as_str(), std_headers("msg_bad_1", body, now), "does not match the body"),
        ("shop", body, vec![("x-shopify-hmac-sha256", wrong_secret), shop_id.clone()], "does not match"),
        ("std", body, std_headers("msg_bad_1", body, now - 301), "more than 300 s away"),
        ("stripe", stripe, stripe_headers(stripe, now + 310), "more than 300 s away"),
        (
            "std",
            body,
            std_headers("msg_bad_1", body, now)[..2].to_vec(),
            "webhook-signature header is missing",
        ),
        ("gubee", body, vec![], "the x-gubee-signature header is missing"),
    ];
    for (integration, payload, headers, reason) in &cases {
        let res = app.post_webhook(integration, *payload, headers).await;
        let detail = res.expect_problem(401, reason);
        assert!(detail.starts_with("webhook signature rejected: "), "{integration}: {detail}");
    }
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    // Refusals are audited in aggregate (`signature_audit_flood`);
    // the server's interval task writes them, here the test does.
    app.state.rejections.flush(app.state.store.as_ref()).await;
    let events = app.audit_events(&format!("action={REJECTED}")).await;
    assert_eq!(events.len(), cases.len());
    // Newest first.
    for (event, (integration, _, _, reason)) in events.iter().rev().zip(&cases) {
        assert_eq!((event["tenant"].as_str(), event["environment"].as_str()), (Some("acme"), Some("prod")));
        assert_eq!(event["details"]["integration"], *integration, "{event}");
        assert!(event["details"]["reason"].as_str().unwrap().contains(reason), "{event}");
        assert_eq!(event["details"]["count"], 1, "{event}");
    }
    assert!(app.audit_events("action=message.duplicate_blocked").await.is_empty());
    // No event id was claimed: correctly signed retries are processed normally,
    // and timestamps just inside the tolerance are accepted (measured from
    // the clock now: the cases above may have taken a while on a busy machine).
    let now = now_secs();
    accepted(&app.post_webhook("std", body, &std_headers("msg_bad_1", body, now - 290)).await);
    accepted(&app.post_webhook("stripe", stripe, &stripe_headers(stripe, now + 290)).await);
    let shop = vec![("x-shopify-hmac-sha256", openssl_b64(SHOP_SECRET.as_bytes(), body.as_bytes())), shop_id];
    accepted(&app.post_webhook("shop", body, &shop).await);
    assert_eq!(app.count_prod().await, 3);
}

async fn unknown_integration_is_404(backend: Backend) {
    let app = webhook_app(backend).await;
    let body = r#"{"type":"invoice.paid","data":{"invoice":"INV-404"}}"#;
    let res = app.post_webhook("no-such-integration", body, &std_headers("msg_404", body, now_secs())).await;
    res.expect_problem(404, "no-such-integration");
    assert_eq!(app.count_prod().await, 0);
    assert!(app.audit_events("").await.is_empty(), "nothing audited for an unknown endpoint");
}

/// docs/webhooks.md (Troubleshooting) promises "header is malformed" for a
/// hex digest sent to Shopify. A 64-character hex digest is also valid
/// base64 (48 bytes), so the verifier reports a mismatch instead: a decoded
/// digest that is not 32 bytes long should be malformed.
async fn hex_digest_sent_to_shopify_is_malformed(backend: Backend) {
    let app = webhook_app(backend).await;
    let body = r#"{"id":1}"#;
    let hex_sig = openssl_hex(SHOP_SECRET.as_bytes(), body.as_bytes());
    let headers = [("x-shopify-hmac-sha256", hex_sig), ("x-shopify-webhook-id", "shop-hex-1".into())];
    let res = app.post_webhook("shop", body, &headers).await;
    res.expect_problem(401, "the x-shopify-hmac-sha256 header is malformed");
}

/// A body with two members of one name means two things (PRODUCT.md,
/// "Unambiguous input"): 400 naming the member, nothing stored and no event
/// id claimed. The signature is checked first, so a forged body stays 401.
async fn duplicate_member_names_are_400_after_the_signature_check(backend: Backend) {
    let app = webhook_app(backend).await;
    let now = now_secs();
    let body = r#"{"type":"invoice.paid","data":{"invoice":"INV-3001"},"type":"shop.order"}"#;
    let forged = std_headers("msg_dup_1", "{}", now);
    app.post_webhook("std", body, &forged).await.expect_problem(401, "does not match the body");
    let res = app.post_webhook("std", body, &std_headers("msg_dup_1", body, now)).await;
    let detail = res.expect_problem(400, "duplicate JSON member `type` (JSON pointer `/type`)");
    assert!(detail.contains("line 1 column"), "{detail}");
    // The event id taken from the body (`$.id`) is refused the same way.
    let stripe = r#"{"id":"evt_dup_1","type":"payment_intent.succeeded","id":"evt_dup_2"}"#;
    let res = app.post_webhook("stripe", stripe, &stripe_headers(stripe, now)).await;
    res.expect_problem(400, "duplicate JSON member `id`");
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    assert!(app.audit_events("action=message.duplicate_blocked").await.is_empty());
    // No event id was claimed: the sender's corrected retry is processed.
    let fixed = r#"{"type":"invoice.paid","data":{"invoice":"INV-3001"}}"#;
    accepted(&app.post_webhook("std", fixed, &std_headers("msg_dup_1", fixed, now)).await);
    assert_eq!(app.count_prod().await, 1);
}
