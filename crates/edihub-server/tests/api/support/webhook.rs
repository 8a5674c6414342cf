//! Webhook helpers: an application with one integration per signature scheme
//! (secrets passed as `SecretSource::Fixed`, never through the process
//! environment), requests to `POST /api/webhook/{id}`, and each scheme's
//! signature headers, signed by the independent implementations of
//! [`super::signing`].

use std::collections::HashMap;

use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, header};
use edihub_server::SecretSource;
use edihub_store::testing::TestDb;
use serde_json::Value;

use super::signing::{openssl_b64, openssl_hex, python_sign};
use super::{ADMIN_TOKEN, Backend, TestApp, TestResponse, bearer, config_toml};

/// Shopify app secret (the docs' demo value).
pub const SHOP_SECRET: &str = "dev-shop-secret";
/// GitHub webhook secret: the one of GitHub's documented example.
pub const GITHUB_SECRET: &str = "It's a Secret to Everybody";
/// Standard Webhooks secret: the one of the specification's test vector.
pub const STD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// Stripe endpoint secret (used as text, `whsec_` included).
pub const STRIPE_SECRET: &str = "whsec_dev_stripe_secret";
/// Generic HMAC secret of `gubee` (hex, `sha256=` prefix).
pub const GUBEE_SECRET: &str = "dev-gubee-secret";
/// Generic HMAC secret of `gubee-content` (base64, no prefix).
pub const PARTNER_SECRET: &str = "dev-partner-secret";
/// The audit action of a refused signature.
pub const REJECTED: &str = "webhook.signature_rejected";

/// Integrations and their message types, added to the harness's base config.
const WEBHOOK_TOML: &str = r#"
[[message_types]]
id = "shopify.order"
duplicate_key_fields = ["$.id"]

[[message_types]]
id = "github.event"
duplicate_key_fields = ["$"]

[[message_types]]
id = "invoice.paid"
duplicate_key_fields = ["$.data.invoice"]

[[message_types]]
id = "payment_intent.succeeded"
duplicate_key_fields = ["$.data.object.id"]

[[message_types]]
id = "gubee.item"
duplicate_key_fields = ["$.itemId", "$.type", "$.received"]

[[message_types]]
id = "gubee.content"
duplicate_key_fields = ["$"]
exclude_fields = ["$.sent", "$.attempts"]

[[integrations]]
id = "shop"
tenant = "acme"
environment = "prod"
message_type = "shopify.order"
event_id = { header = "X-Shopify-Webhook-Id" }
signature = { scheme = "shopify", secret_env = "SHOP_SECRET" }

[[integrations]]
id = "gh"
tenant = "acme"
environment = "prod"
message_type = "github.event"
event_id = { header = "X-GitHub-Delivery" }
signature = { scheme = "github", secret_env = "GITHUB_SECRET" }

[[integrations]]
id = "std"
tenant = "acme"
environment = "prod"
message_type_path = "$.type"
event_id = { header = "webhook-id" }
signature = { scheme = "standard-webhooks", secret_env = "STD_SECRET" }

[[integrations]]
id = "std-test"
tenant = "acme"
environment = "prod"
message_type = "std.test"
event_id = { header = "webhook-id" }
signature = { scheme = "standard-webhooks", secret_env = "STD_SECRET" }

[[integrations]]
id = "stripe"
tenant = "acme"
environment = "prod"
message_type_path = "$.type"
event_id = { path = "$.id" }
signature = { scheme = "stripe", secret_env = "STRIPE_SECRET" }

[[integrations]]
id = "gubee"
tenant = "acme"
environment = "prod"
message_type = "gubee.item"
signature = { scheme = "hmac", secret_env = "GUBEE_SECRET", header = "X-Gubee-Signature", encoding = "hex", prefix = "sha256=" }

[[integrations]]
id = "gubee-content"
tenant = "acme"
environment = "prod"
message_type = "gubee.content"
signature = { scheme = "hmac", secret_env = "PARTNER_SECRET", header = "X-Partner-Signature", encoding = "base64" }
"#;

/// The secrets of [`WEBHOOK_TOML`], by variable name.
fn secrets() -> SecretSource {
    let pairs = [
        ("SHOP_SECRET", SHOP_SECRET),
        ("GITHUB_SECRET", GITHUB_SECRET),
        ("STD_SECRET", STD_SECRET),
        ("STRIPE_SECRET", STRIPE_SECRET),
        ("GUBEE_SECRET", GUBEE_SECRET),
        ("PARTNER_SECRET", PARTNER_SECRET),
    ];
    SecretSource::Fixed(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<HashMap<_, _>>())
}

/// An application with the webhook integrations above.
pub async fn webhook_app(backend: Backend) -> TestApp {
    webhook_app_with(backend, "").await
}

/// [`webhook_app`] with top-level keys `extra` (e.g. `request_timeout_secs = 5`).
pub async fn webhook_app_with(backend: Backend, extra: &str) -> TestApp {
    let db = TestDb::new(backend).await;
    let toml = config_toml(&db.url, &format!("{extra}\n{WEBHOOK_TOML}"));
    let config = edihub_server::Config::from_toml_with_secrets(&toml, secrets())
        .unwrap_or_else(|e| panic!("webhook test config refused: {e}"));
    let store = db.store().await;
    let state = edihub_server::prepare_with(store, config).await.expect("prepare");
    let router = edihub_server::router(state.clone());
    TestApp { state, router, db }
}

/// Unix seconds now.
pub fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Builds `POST /api/webhook/{integration}` with a JSON content type.
pub fn webhook_request<N: AsRef<str>, V: AsRef<str>>(
    integration: &str,
    body: impl Into<Vec<u8>>,
    headers: &[(N, V)],
) -> Request<Body> {
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(format!("/api/webhook/{integration}"))
        .header(header::CONTENT_TYPE, "application/json");
    for (name, value) in headers {
        builder = builder.header(name.as_ref(), HeaderValue::from_str(value.as_ref()).expect("header value"));
    }
    builder.body(Body::from(body.into())).expect("request")
}

impl TestApp {
    /// Posts a webhook to `integration`.
    pub async fn post_webhook<N: AsRef<str>, V: AsRef<str>>(
        &self,
        integration: &str,
        body: impl Into<Vec<u8>>,
        headers: &[(N, V)],
    ) -> TestResponse {
        self.send(webhook_request(integration, body, headers)).await
    }

    /// `PUT /admin/integrations/{id}` with the admin token.
    pub async fn put_integration(&self, id: &str, definition: &Value) -> TestResponse {
        let request = Request::builder()
            .method(Method::PUT)
            .uri(format!("/admin/integrations/{id}"))
            .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(definition.to_string()))
            .expect("request");
        self.send(request).await
    }
}

/// Standard Webhooks headers for `std`/`std-test`, signed by the reference library.
pub fn std_headers(msg_id: &str, body: &str, ts: i64) -> Vec<(&'static str, String)> {
    let sig = python_sign(STD_SECRET, msg_id, body, &[ts]).remove(0);
    vec![
        ("webhook-id", msg_id.to_string()),
        ("webhook-timestamp", ts.to_string()),
        ("webhook-signature", sig),
    ]
}

/// `Stripe-Signature: t=<ts>,v1=<openssl hex of "<ts>.<body>">`.
pub fn stripe_headers(body: &str, ts: i64) -> Vec<(&'static str, String)> {
    let sig = openssl_hex(STRIPE_SECRET.as_bytes(), format!("{ts}.{body}").as_bytes());
    vec![("stripe-signature", format!("t={ts},v1={sig}"))]
}

/// `X-Gubee-Signature: sha256=<openssl hex>`.
pub fn gubee_headers(body: &str) -> Vec<(&'static str, String)> {
    vec![("x-gubee-signature", format!("sha256={}", openssl_hex(GUBEE_SECRET.as_bytes(), body.as_bytes())))]
}

/// `X-Partner-Signature: <openssl base64>` for `gubee-content`.
pub fn partner_headers(body: &str) -> Vec<(&'static str, String)> {
    vec![("x-partner-signature", openssl_b64(PARTNER_SECRET.as_bytes(), body.as_bytes()))]
}
