//! Security review: secrets. Only SHA-256 digests in the configuration, no
//! secret value in `Debug` output, payload downloads that cannot run a
//! sender's script, and credentials compared in constant time.

use crate::support::webhook::{gubee_headers, webhook_app};
use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request, header};

/// The configuration and the application state print no secret value: API
/// keys and the admin token exist only as SHA-256 digests, and integration
/// secrets are shown by variable name only.
#[tokio::test]
async fn debug_output_shows_no_secret() {
    let shop_secret = "shop-secret-value-9f3k";
    let toml = format!(
        r#"
listen = "127.0.0.1:0"
database_url = "sqlite::memory:"
[admin]
token_sha256 = "{admin}"
[[tenants]]
id = "acme"
  [[tenants.environments]]
  id = "prod"
  api_keys_sha256 = ["{key}"]
[[message_types]]
id = "shop.order"
duplicate_key_fields = ["$.id"]
[[integrations]]
id = "shop"
tenant = "acme"
environment = "prod"
message_type = "shop.order"
signature = {{ scheme = "shopify", secret_env = "SHOP_SECRET" }}
"#,
        admin = sha256_hex(ADMIN_TOKEN),
        key = sha256_hex(ACME_PROD),
    );
    let secrets =
        edihub_server::SecretSource::Fixed([("SHOP_SECRET".to_string(), shop_secret.to_string())].into());
    let config = edihub_server::Config::from_toml_with_secrets(&toml, secrets).expect("config");
    let db = edihub_store::testing::TestDb::new(Backend::Sqlite).await;
    let state = edihub_server::prepare_with(db.store().await, config.clone()).await.expect("prepare");
    for (what, text) in [
        ("Config", format!("{config:?}")),
        ("AppState", format!("{state:?}")),
        ("Config {:#?}", format!("{config:#?}")),
    ] {
        for secret in [shop_secret, ADMIN_TOKEN, ACME_PROD] {
            assert!(!text.contains(secret), "{what} Debug shows a secret: {secret}");
        }
        assert!(text.contains(&sha256_hex(ACME_PROD)), "{what}: keys appear as their digest");
    }
    // The plaintext of a key is refused where a digest belongs, and the error does not echo it.
    let plain = toml.replace(&sha256_hex(ACME_PROD), "my-plaintext-api-key");
    let err = edihub_server::Config::from_toml(&plain).expect_err("a plaintext key is refused").to_string();
    assert!(err.contains("api_keys_sha256") && !err.contains("my-plaintext-api-key"), "{err}");
    let plain = toml.replace(&sha256_hex(ADMIN_TOKEN), "my-plaintext-admin-token");
    let err = edihub_server::Config::from_toml(&plain).expect_err("a plaintext token is refused").to_string();
    assert!(err.contains("token_sha256") && !err.contains("my-plaintext-admin-token"), "{err}");
}

/// S2: `Config`'s derived `Debug` prints `database_url` whole, password
/// included (and `AppState`'s Debug with it). Nothing logs it today, but any
/// `?config` in a log line, panic message or error report would.
#[tokio::test]
async fn debug_output_shows_no_database_password() {
    let toml = format!(
        "database_url = \"postgres://edihub:pg-s3cret-pw@db.internal:5432/edihub\"\n[admin]\ntoken_sha256 = \"{}\"\n",
        sha256_hex(ADMIN_TOKEN)
    );
    let config = edihub_server::Config::from_toml(&toml).expect("config");
    let text = format!("{config:?}");
    assert!(!text.contains("pg-s3cret-pw"), "Config Debug shows the database password: {text}");
}

/// S1: `GET /admin/messages/{id}/payload` serves sender-controlled bytes
/// with the sender-controlled Content-Type, from the admin's origin, with no
/// `Content-Security-Policy`, `X-Content-Type-Options` or
/// `Content-Disposition`. A webhook labelled `Content-Type: text/html` (any
/// label is stored: "webhooks are JSON whatever the provider labels them")
/// whose JSON carries `<script>` is stored XSS against the admin who opens
/// the payload link; an IDoc posted as `application/xhtml+xml` (any `+xml`
/// is accepted as XML) with an XHTML-namespaced `<script>` is the same
/// through the sender API.
#[tokio::test]
async fn payload_download_cannot_run_script() {
    let app = webhook_app(Backend::Sqlite).await;
    let body = r#"{"itemId":"<script>alert(document.domain)</script>","type":"x","received":"2024-06-12"}"#;
    let mut req = Request::builder()
        .method(Method::POST)
        .uri("/api/webhook/gubee")
        .header(header::CONTENT_TYPE, "text/html");
    for (k, v) in gubee_headers(body) {
        req = req.header(k, v);
    }
    let res = app.send(req.body(Body::from(body)).unwrap()).await;
    res.expect(202);
    let webhook_id = res.json()["id"].as_str().unwrap().to_string();

    let xhtml = String::from_utf8(fixture("orders05.xml"))
        .unwrap()
        .replace("<ORDERS05>", "<ORDERS05 xmlns=\"http://www.w3.org/1999/xhtml\">")
        .replace("</IDOC>", "<script>alert(document.domain)</script></IDOC>");
    let res = app.post_receive(Some(&bearer(ACME_PROD)), Some("application/xhtml+xml"), xhtml, &[]).await;
    res.expect(202);
    let idoc_id = res.json()["id"].as_str().unwrap().to_string();

    for id in [webhook_id, idoc_id] {
        let res = app.get(&format!("/admin/messages/{id}/payload"), Some(&bearer(ADMIN_TOKEN))).await;
        res.expect(200);
        let h = |n: &str| res.header(n).unwrap_or("").to_lowercase();
        let sandboxed = h("content-security-policy").contains("sandbox")
            || h("content-security-policy").contains("default-src 'none'");
        let download = h("content-disposition").starts_with("attachment");
        assert!(
            h("x-content-type-options") == "nosniff" && (sandboxed || download),
            "payload of {id} served as {:?} with CSP {:?}, nosniff {:?}, disposition {:?}: a browser runs its script",
            res.header("content-type"),
            res.header("content-security-policy"),
            res.header("x-content-type-options"),
            res.header("content-disposition")
        );
    }
}

/// Credentials and signatures are compared in constant time. A source guard:
/// the admin digest goes through `subtle::ConstantTimeEq`, every webhook MAC
/// through `Mac::verify_slice` (in `check_body`, which every scheme uses), and no digest or signature is compared with
/// `==` (sender keys are looked up by the digest of the presented key, which
/// leaks nothing about stored keys; see src/auth.rs).
#[test]
fn credentials_and_signatures_are_compared_in_constant_time() {
    let auth = include_str!("../../src/auth.rs");
    let signature = include_str!("../../src/signing.rs");
    assert!(auth.contains("ct_eq(&self.admin)"), "the admin digest is not compared with ct_eq");
    assert!(auth.contains("self.senders.get(&digest)"), "sender keys are not looked up by digest");
    // Every scheme's MAC is checked by one function, `check_body`, with verify_slice.
    let check_body = &signature[signature.find("pub fn check_body").expect("check_body")..];
    let check_body = &check_body[..check_body.find("\n    }\n").expect("end of check_body")];
    assert!(check_body.contains(".verify_slice(sig)"), "MACs are not verified with Mac::verify_slice");
    assert!(
        signature.contains("Some(presented) => self.check_body(&presented, body)"),
        "verify bypasses check_body"
    );
    for (n, line) in signature.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let compares = code.contains("==") || code.contains("!=") || code.contains(".eq(");
        let secretish =
            ["sig", "mac", "expected", "digest", "computed"].iter().any(|w| code.to_lowercase().contains(w));
        if compares && secretish {
            assert!(code.contains("len()"), "signature.rs:{}: a signature compared with ==: {line}", n + 1);
        }
    }
}
