//! Security review, as tests (RELIABILITY.md, "Security review"), in four
//! files: this one (admin routes), `security_scopes`, `security_leaks` and
//! `security_secrets`.
//!
//! - every `/admin` route (taken from the OpenAPI document, so a new route is
//!   covered the day it is added) refuses sender keys, missing, malformed and
//!   look-alike credentials with 401, and changes nothing;
//! - tenant and environment isolation: senders never see or collide with
//!   another environment's data, and the admin filters return exactly the
//!   scope they name (admins see all tenants, by design);
//! - no internal error text in any response, also when the database is gone;
//! - the audit HTML page escapes everything a sender controls;
//! - secrets: only SHA-256 digests in the configuration, and no secret value
//!   in `Debug` output of the configuration or the application state;
//! - constant-time comparison of credentials and signatures (a source guard).
//!
//! Two of these began as failing tests of defects found in review (S1: the
//! payload download could run a sender's script; S2: `Debug` showed the
//! database password); both are fixed and the tests now guard them.

use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::{Value, json};

backend_tests!(every_admin_route_refuses_sender_keys_and_bad_credentials,);

/// Strings that must never reach a client: driver and pool errors, SQL
/// states, file paths of the build, panics.
pub(crate) const LEAKS: &[&str] = &[
    "sqlx",
    "pool",
    "database error:",
    "error returned from database",
    "sqlstate",
    "postgres://",
    "sqlite:",
    "os error",
    "panicked",
    "backtrace",
    ".rs:",
    "/root/",
    "/home/",
    "src/",
    "thread '",
    "invariant",
];

#[track_caller]
pub(crate) fn assert_no_leak(what: &str, res: &TestResponse) {
    let text = res.text().to_lowercase();
    for leak in LEAKS {
        assert!(!text.contains(leak), "{what}: response leaks {leak:?}: {}", res.text());
    }
}

/// Every (method, path) of the OpenAPI document under `/admin`.
fn admin_operations() -> Vec<(Method, String)> {
    let doc = serde_json::to_value(edihub_server::routes().1).expect("OpenAPI as JSON");
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        if !path.starts_with("/admin") {
            continue;
        }
        for method in ["get", "put", "post", "delete", "patch"] {
            if item.get(method).is_some() {
                ops.push((
                    Method::from_bytes(method.to_uppercase().as_bytes()).expect("method"),
                    path.clone(),
                ));
            }
        }
    }
    ops
}

pub(crate) fn request(
    method: &Method,
    uri: &str,
    authorization: Option<&str>,
    body: Option<&Value>,
) -> Request<Body> {
    let mut b = Request::builder().method(method.clone()).uri(uri);
    if let Some(auth) = authorization {
        b = b.header(header::AUTHORIZATION, auth);
    }
    match body {
        Some(v) => b.header(header::CONTENT_TYPE, "application/json").body(Body::from(v.to_string())),
        None => b.body(Body::empty()),
    }
    .expect("request")
}

async fn every_admin_route_refuses_sender_keys_and_bad_credentials(backend: Backend) {
    let app = TestApp::new(backend).await;
    let stored = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let id = stored["id"].as_str().unwrap().to_string();
    let ops = admin_operations();
    assert!(ops.len() >= 8, "the OpenAPI document lists only {} admin operations: {ops:?}", ops.len());
    let before_types = app.get("/admin/message-types", Some(&bearer(ADMIN_TOKEN))).await;
    let before_integrations = app.get("/admin/integrations", Some(&bearer(ADMIN_TOKEN))).await;
    let audit_before = app.audit_events("").await.len();

    let hashed_admin = sha256_hex(ADMIN_TOKEN);
    let refused: Vec<(&str, Option<String>)> = vec![
        ("sender key, Bearer", Some(bearer(ACME_PROD))),
        ("sender key, Basic", Some(basic("sap", ACME_PROD))),
        ("another environment's sender key", Some(bearer(ACME_QA))),
        ("another tenant's sender key", Some(bearer(GLOBEX_PROD))),
        ("no credentials", None),
        ("the admin token's stored SHA-256 (pass-the-hash)", Some(bearer(&hashed_admin))),
        ("admin token plus one character", Some(bearer(&format!("{ADMIN_TOKEN}x")))),
        ("admin token minus its last character", Some(bearer(&ADMIN_TOKEN[..ADMIN_TOKEN.len() - 1]))),
        ("admin token as the Basic user name", Some(basic(ADMIN_TOKEN, ""))),
        ("empty Bearer", Some("Bearer ".to_string())),
        ("unknown scheme", Some(format!("Token {ADMIN_TOKEN}"))),
        ("Basic without base64", Some(format!("Basic {ADMIN_TOKEN}"))),
        ("upper-cased admin token", Some(bearer(&ADMIN_TOKEN.to_uppercase()))),
    ];
    let mut checked = 0;
    for (method, path) in &ops {
        let target = if path.contains("message-types") {
            "ORDERS05"
        } else if path.contains("integrations") {
            "shop-orders"
        } else {
            id.as_str()
        };
        let uri = format!(
            "{}{}",
            path.replace("{id}", target),
            if path == "/admin/messages" { "?docnum=0000000000004711" } else { "" }
        );
        let body = (*method == Method::PUT).then(|| {
            if path.contains("integrations") {
                json!({"tenant":"acme","environment":"prod","message_type":"shop.order","signature":{"scheme":"none"}})
            } else {
                json!({"duplicate_key_fields":["E1EDK01.BELNR"],"duplicate_window":"1s"})
            }
        });
        for (what, auth) in &refused {
            let res = app.send(request(method, &uri, auth.as_deref(), body.as_ref())).await;
            assert_eq!(res.status.as_u16(), 401, "{method} {uri} with {what}: {}", res.text());
            assert_eq!(res.header("content-type"), Some(PROBLEM_JSON), "{method} {uri} with {what}");
            assert!(
                res.headers.get(header::WWW_AUTHENTICATE).is_some(),
                "{method} {uri}: no WWW-Authenticate"
            );
            let text = res.text();
            assert!(
                !text.contains(&id) && !text.contains("E1EDK01") && !text.contains("4711"),
                "{method} {uri} leaks data: {text}"
            );
            assert_no_leak(&format!("{method} {uri}"), &res);
            checked += 1;
        }
        // The route exists and the admin gets past authentication (reads only: no change).
        if *method == Method::GET {
            let res = app.send(request(method, &uri, Some(&bearer(ADMIN_TOKEN)), None)).await;
            assert_ne!(res.status.as_u16(), 401, "{method} {uri} refuses the admin");
            let res = app.send(request(method, &uri, Some(&basic("admin", ADMIN_TOKEN)), None)).await;
            assert_ne!(res.status.as_u16(), 401, "{method} {uri} refuses the admin with Basic");
        }
    }
    assert_eq!(checked, ops.len() * refused.len());
    // Nothing changed: no type, no integration, no audit event.
    let after_types = app.get("/admin/message-types", Some(&bearer(ADMIN_TOKEN))).await;
    let after_integrations = app.get("/admin/integrations", Some(&bearer(ADMIN_TOKEN))).await;
    assert_eq!(before_types.json(), after_types.json(), "a refused request changed message types");
    assert_eq!(
        before_integrations.json(),
        after_integrations.json(),
        "a refused request changed integrations"
    );
    assert_eq!(app.audit_events("").await.len(), audit_before, "a refused request was audited as a change");
}
