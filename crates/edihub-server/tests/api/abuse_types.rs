//! One sender cannot speak for another (both backends): a message type that
//! belongs to an integration is refused (403) from other integrations and
//! from API keys unless a `message_types` list names it, so the suppression
//! attack (post a partner's type with its key first, and the partner's
//! genuine message is answered as a duplicate) fails. A repeated header whose
//! copies could disagree (credentials, key, type, signature, event id) is
//! refused (400) before anything is stored or audited, and so is a
//! `Stripe-Signature` with two timestamps. An integration set through the
//! admin API may read its secret only from a variable under
//! `webhook_secret_prefix` or one the configuration file names.

use crate::support::webhook::*;
use crate::support::*;
use edihub_store::KeyReusePolicy;
use serde_json::json;

backend_tests!(
    integration_cannot_claim_another_integrations_type,
    api_key_cannot_claim_an_integrations_type,
    message_types_lists_allow_and_restrict,
    repeated_receive_headers_are_refused,
    repeated_webhook_headers_are_refused,
    admin_secret_env_is_restricted,
    environment_list_limits_its_api_keys,
);

/// The genuine Shopify webhook of order `id`.
fn shop_order(id: u64, event: &str) -> (String, Vec<(&'static str, String)>) {
    let body = format!(r#"{{"id":{id},"total":"10.00"}}"#);
    let sig = openssl_b64(SHOP_SECRET.as_bytes(), body.as_bytes());
    (body, vec![("x-shopify-hmac-sha256", sig), ("x-shopify-webhook-id", event.to_string())])
}

/// The attack of the report: the Stripe integration's partner signs, with its
/// own valid secret, an event naming the type of `shop` and order `id`.
async fn post_as_stripe(app: &TestApp, id: u64, kind: &str) -> TestResponse {
    let body = json!({ "id": format!("evt_{id}"), "type": kind, "data": { "object": { "id": format!("pi_{id}") } } });
    let body = body.to_string();
    app.post_webhook("stripe", body.as_str(), &stripe_headers(&body, now_secs())).await
}

async fn integration_cannot_claim_another_integrations_type(backend: Backend) {
    let app = webhook_app(backend).await;
    // The spoofed event: `shopify.order` keys on `$.id`, a top-level value the
    // partner chooses. Before, it was stored and the genuine order below was
    // answered `200 duplicate`.
    let spoof = json!({ "id": 9001, "type": "shopify.order" }).to_string();
    let res = app.post_webhook("stripe", spoof.as_str(), &stripe_headers(&spoof, now_secs())).await;
    res.expect_problem(403, "belongs to integration `shop`");
    assert_eq!(app.count_prod().await, 0);
    let (body, headers) = shop_order(9001, "shop-evt-9001");
    accepted(&app.post_webhook("shop", body.as_str(), &headers).await);
    // The types a payload-typed integration is meant to carry still pass.
    let res = post_as_stripe(&app, 1, "payment_intent.succeeded").await;
    res.expect(202);
    assert_eq!(app.count_prod().await, 2);
}

async fn api_key_cannot_claim_an_integrations_type(backend: Backend) {
    let app = webhook_app(backend).await;
    let spoof = json!({ "id": 9002, "docnum": "9002" }).to_string();
    let res = app.post_json(ACME_PROD, spoof.as_str(), &[("x-message-type", "shopify.order")]).await;
    res.expect_problem(403, "belongs to integration `shop`");
    let query = format!("{RECEIVE}?message_type=github.event");
    let request = axum::http::Request::builder()
        .method("POST")
        .uri(query)
        .header("authorization", bearer(ACME_PROD))
        .header("content-type", "application/json")
        .body(axum::body::Body::from(spoof.clone()))
        .unwrap();
    app.send(request).await.expect_problem(403, "belongs to integration `gh`");
    assert_eq!(app.count_prod().await, 0);
    let (body, headers) = shop_order(9002, "shop-evt-9002");
    accepted(&app.post_webhook("shop", body.as_str(), &headers).await);
    // Another environment has no such integration: its keys may use the name.
    accepted(&app.post_json(ACME_QA, spoof.as_str(), &[("x-message-type", "shopify.order")]).await);
}

async fn message_types_lists_allow_and_restrict(backend: Backend) {
    let app = webhook_app(backend).await;
    // A list on the payload-typed integration: exactly its types.
    let stripe = json!({
        "tenant": "acme", "environment": "prod", "message_type_path": "$.type",
        "message_types": ["payment_intent.succeeded", "shopify.order"],
        "event_id": { "path": "$.id" },
        "signature": { "scheme": "stripe", "secret_env": "STRIPE_SECRET" },
    });
    app.put_integration("stripe", &stripe).await.expect(200);
    post_as_stripe(&app, 2, "invoice.paid").await.expect_problem(403, "message_types list does not name it");
    post_as_stripe(&app, 3, "shopify.order").await.expect(202);
    // A listed type is claimed: API keys of the environment lose it too.
    let res = app
        .post_json(ACME_PROD, r#"{"docnum":"1"}"#, &[("x-message-type", "payment_intent.succeeded")])
        .await;
    res.expect_problem(403, "belongs to integration `stripe`");
    // A list on a fixed-type integration, or an empty one, is refused.
    let mut fixed = stripe.clone();
    fixed["message_type"] = json!("x.y");
    fixed.as_object_mut().unwrap().remove("message_type_path");
    app.put_integration("stripe", &fixed).await.expect_problem(422, "message_types");
    let mut empty = stripe.clone();
    empty["message_types"] = json!([]);
    app.put_integration("stripe", &empty).await.expect_problem(422, "message_types");
    let mut bad = stripe;
    bad["message_types"] = json!(["<b>"]);
    app.put_integration("stripe", &bad).await.expect_problem(422, "message_types[0]");
    assert_eq!(app.count_prod().await, 1);
}

async fn repeated_receive_headers_are_refused(backend: Backend) {
    let app = TestApp::new(backend).await;
    let xml = fixture("orders05.xml");
    let cases: [(&str, &[(&str, &str)]); 4] = [
        ("authorization", &[("authorization", "Bearer globex-prod-key")]),
        ("idempotency-key", &[("idempotency-key", "k-1"), ("idempotency-key", "k-2")]),
        ("x-message-type", &[("x-message-type", "ORDERS05"), ("x-message-type", "NOKEYS")]),
        ("content-type", &[("content-type", "application/json")]),
    ];
    for (name, extra) in cases {
        let res =
            app.post_receive(Some(&bearer(ACME_PROD)), Some("application/xml"), xml.clone(), extra).await;
        res.expect_problem(400, &format!("the {name} header is repeated"));
    }
    assert_eq!(app.count_prod().await, 0);
    assert_eq!(app.count("globex", "prod").await, 0);
    assert!(app.audit_events("").await.is_empty());
    // Once each, the same request is stored.
    app.post_xml(ACME_PROD, xml).await.expect(202);
}

async fn repeated_webhook_headers_are_refused(backend: Backend) {
    let app = webhook_app(backend).await;
    let (body, headers) = shop_order(7, "shop-evt-7");
    for (name, value) in [headers[0].clone(), headers[1].clone(), ("content-type", "application/json".into())]
    {
        let mut twice = headers.clone();
        twice.push((name, value));
        let res = app.post_webhook("shop", body.as_str(), &twice).await;
        res.expect_problem(400, &format!("the {name} header is repeated"));
    }
    // Two timestamps in one Stripe-Signature: refused, since which of them
    // the signature covers would be a guess.
    let stripe = r#"{"id":"evt_t2","type":"payment_intent.succeeded","data":{"object":{"id":"pi_t2"}}}"#;
    let now = now_secs();
    let signed = stripe_headers(stripe, now).remove(0).1;
    let two_t = format!("t={},{signed}", now - 3600);
    let res = app.post_webhook("stripe", stripe, &[("stripe-signature", two_t)]).await;
    res.expect_problem(400, "`t=` more than once");
    assert_eq!(app.count_prod().await, 0);
    assert!(app.audit_events("").await.is_empty(), "neither stored nor audited as a bad signature");
    // Several v1= signatures stay allowed (secret rotation).
    let rotated = format!("{signed},v1={}", "0".repeat(64));
    accepted(&app.post_webhook("stripe", stripe, &[("stripe-signature", rotated)]).await);
    accepted(&app.post_webhook("shop", body.as_str(), &headers).await);
}

async fn admin_secret_env_is_restricted(backend: Backend) {
    let app = webhook_app(backend).await;
    let def = |var: &str| {
        json!({
            "tenant": "acme", "environment": "prod", "message_type": "probe.event",
            "signature": { "scheme": "github", "secret_env": var },
        })
    };
    // Process variables: a valid signature would confirm a guess of their value.
    for var in ["DATABASE_URL", "HOME", "PATH", "EDIHUB_DATABASE_URL"] {
        app.put_integration("probe", &def(var)).await.expect_problem(422, "is a process variable");
    }
    app.put_integration("probe", &def("OTHER_SECRET"))
        .await
        .expect_problem(422, "must start with `EDIHUB_SECRET_`");
    // Under the prefix the name is fine; this one is merely unset.
    app.put_integration("probe", &def("EDIHUB_SECRET_PROBE")).await.expect_problem(422, "is not set");
    // A name the configuration file uses stays usable.
    app.put_integration("probe", &def("GITHUB_SECRET")).await.expect(200);
    let listed = app.get("/admin/integrations", Some(&bearer(ADMIN_TOKEN))).await;
    let rows = listed.json()["integrations"].as_array().unwrap().clone();
    let probes: Vec<_> = rows.iter().filter(|r| r["id"] == "probe").collect();
    assert_eq!(probes.len(), 1, "only the accepted definition was stored");
    assert_eq!(probes[0]["definition"]["signature"]["secret_env"], "GITHUB_SECRET");
}

/// Sender key of `initech/prod`, whose `message_types` names only ORDERS05.
const INITECH: &str = "initech-prod-key";

async fn environment_list_limits_its_api_keys(backend: Backend) {
    let mut initech = environment("prod", &[INITECH], KeyReusePolicy::default());
    initech.message_types = Some(strings(["ORDERS05"]));
    let app = TestApp::start(backend, TestConfig::new().environment("initech", initech)).await;
    let json_body = r#"{"docnum":"1","order":{"id":"O-1"}}"#;
    for t in ["free.event", "shop.order"] {
        let res = app.post_json(INITECH, json_body, &[("x-message-type", t)]).await;
        res.expect_problem(403, "message_types list does not name it");
    }
    // The IDoc's own type is a type it sends too: listed, so accepted.
    app.post_xml(INITECH, fixture("orders05.xml")).await.expect(202);
    let res = app.post_xml_with(INITECH, fixture("orders05.xml"), &[("x-message-type", "NOKEYS")]).await;
    res.expect_problem(403, "`NOKEYS`");
    assert_eq!(app.count("initech", "prod").await, 1);
    // Environments without a list are unaffected.
    accepted(&app.post_json(ACME_PROD, json_body, &[("x-message-type", "free.event")]).await);
}
