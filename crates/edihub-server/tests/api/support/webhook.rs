//! Webhook helpers: an application with one integration per signature scheme
//! ([`TestConfig::webhooks`]), requests to `POST /api/webhook/{id}`, and each scheme's
//! signature headers, signed by the independent implementations of
//! [`super::signing`].

use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, header};
use edihub_server::config::{EventIdConfig, SignatureConfig};
use serde_json::Value;

use super::signing::{openssl_b64, openssl_hex, python_sign};
use super::{ADMIN_TOKEN, Backend, TestApp, TestConfig, TestResponse, bearer, strings};

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

/// An integration's signature: `scheme` with its secret in `secret_env`.
fn signed(scheme: &str, secret_env: &str) -> Option<SignatureConfig> {
    Some(SignatureConfig {
        scheme: scheme.into(),
        secret_env: Some(secret_env.into()),
        header: None,
        encoding: None,
        prefix: None,
    })
}

/// A generic HMAC signature in `header`, `encoding` (`hex`, `base64`), after `prefix`.
fn hmac(secret_env: &str, header: &str, encoding: &str, prefix: Option<&str>) -> Option<SignatureConfig> {
    signed("hmac", secret_env).map(|s| SignatureConfig {
        header: Some(header.into()),
        encoding: Some(encoding.into()),
        prefix: prefix.map(str::to_string),
        ..s
    })
}

/// The provider's event id in `header`.
fn id_header(header: &str) -> Option<EventIdConfig> {
    Some(EventIdConfig { header: Some(header.into()), path: None })
}

impl TestConfig {
    /// Adds one integration of `acme/prod` per signature scheme, their
    /// message types and their secrets (as a fixed map, never through the
    /// process environment):
    ///
    /// | integration | scheme | type | event id |
    /// |---|---|---|---|
    /// | `shop` | shopify | `shopify.order` | `X-Shopify-Webhook-Id` |
    /// | `gh` | github | `github.event` | `X-GitHub-Delivery` |
    /// | `std` | standard-webhooks | at `$.type` | `webhook-id` |
    /// | `std-test` | standard-webhooks | `std.test` | `webhook-id` |
    /// | `stripe` | stripe | at `$.type` | at `$.id` |
    /// | `gubee` | hmac, hex, `sha256=` in `X-Gubee-Signature` | `gubee.item` | none |
    /// | `gubee-content` | hmac, base64 in `X-Partner-Signature` | `gubee.content` | none |
    pub fn webhooks(self) -> Self {
        self.message_type("shopify.order", |t| t.duplicate_key_fields = strings(["$.id"]))
            .message_type("github.event", |t| t.duplicate_key_fields = strings(["$"]))
            .message_type("invoice.paid", |t| t.duplicate_key_fields = strings(["$.data.invoice"]))
            .message_type("payment_intent.succeeded", |t| {
                t.duplicate_key_fields = strings(["$.data.object.id"])
            })
            .message_type("gubee.item", |t| {
                t.duplicate_key_fields = strings(["$.itemId", "$.type", "$.received"])
            })
            .message_type("gubee.content", |t| {
                t.duplicate_key_fields = strings(["$"]);
                t.exclude_fields = strings(["$.sent", "$.attempts"]);
            })
            .integration("shop", |i| {
                i.message_type = Some("shopify.order".into());
                i.event_id = id_header("X-Shopify-Webhook-Id");
                i.signature = signed("shopify", "SHOP_SECRET");
            })
            .integration("gh", |i| {
                i.message_type = Some("github.event".into());
                i.event_id = id_header("X-GitHub-Delivery");
                i.signature = signed("github", "GITHUB_SECRET");
            })
            .integration("std", |i| {
                i.message_type_path = Some("$.type".into());
                i.event_id = id_header("webhook-id");
                i.signature = signed("standard-webhooks", "STD_SECRET");
            })
            .integration("std-test", |i| {
                i.message_type = Some("std.test".into());
                i.event_id = id_header("webhook-id");
                i.signature = signed("standard-webhooks", "STD_SECRET");
            })
            .integration("stripe", |i| {
                i.message_type_path = Some("$.type".into());
                i.event_id = Some(EventIdConfig { header: None, path: Some("$.id".into()) });
                i.signature = signed("stripe", "STRIPE_SECRET");
            })
            .integration("gubee", |i| {
                i.message_type = Some("gubee.item".into());
                i.signature = hmac("GUBEE_SECRET", "X-Gubee-Signature", "hex", Some("sha256="));
            })
            .integration("gubee-content", |i| {
                i.message_type = Some("gubee.content".into());
                i.signature = hmac("PARTNER_SECRET", "X-Partner-Signature", "base64", None);
            })
            .secret("SHOP_SECRET", SHOP_SECRET)
            .secret("GITHUB_SECRET", GITHUB_SECRET)
            .secret("STD_SECRET", STD_SECRET)
            .secret("STRIPE_SECRET", STRIPE_SECRET)
            .secret("GUBEE_SECRET", GUBEE_SECRET)
            .secret("PARTNER_SECRET", PARTNER_SECRET)
    }
}

/// An application with the webhook integrations of [`TestConfig::webhooks`].
pub async fn webhook_app(backend: Backend) -> TestApp {
    TestApp::start(backend, TestConfig::new().webhooks()).await
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
