//! HTTP hardening of the admin API and of paths.
//!
//! Admin answers are never cached and vary by `Accept`; the HTML audit page
//! cannot be framed. An admin change must be `application/json` (415
//! otherwise; a body-less one may also name no Content-Type, but never a
//! form's or `text/plain`, with or without an Origin) and is refused from
//! a page of another origin (403); neither refusal changes anything. A path segment that is not UTF-8 (`%ff`) is a
//! 400 problem document like every other refusal.

use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request};
use serde_json::json;

backend_tests!(
    admin_answers_are_not_cached_and_html_is_not_framed,
    admin_changes_must_be_json,
    body_less_admin_posts_refuse_what_a_form_sends,
    admin_changes_from_another_origin_are_refused,
    undecodable_path_segments_are_problem_documents,
);

async fn get_with(app: &TestApp, path: &str, accept: &str) -> TestResponse {
    let request = Request::builder()
        .method(Method::GET)
        .uri(path)
        .header("authorization", bearer(ADMIN_TOKEN))
        .header("accept", accept)
        .body(Body::empty())
        .expect("request");
    app.send(request).await
}

async fn admin_answers_are_not_cached_and_html_is_not_framed(backend: Backend) {
    let app = TestApp::new(backend).await;
    let html = get_with(&app, "/admin/audit", "text/html").await;
    html.expect(200);
    assert!(html.header("content-type").is_some_and(|t| t.starts_with("text/html")));
    assert_eq!(html.header("cache-control"), Some("no-store"));
    assert!(html.header("vary").is_some_and(|v| v.to_ascii_lowercase().contains("accept")));
    assert_eq!(html.header("x-frame-options"), Some("DENY"));
    let csp = html.header("content-security-policy").expect("a CSP on admin HTML");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("default-src 'none'"), "{csp}");

    let json = get_with(&app, "/admin/audit", "application/json").await;
    json.expect(200);
    assert_eq!(json.header("cache-control"), Some("no-store"));
    assert!(json.header("vary").is_some_and(|v| v.to_ascii_lowercase().contains("accept")));
    // Refusals of admin routes are not cached either.
    let refused = app.get("/admin/message-types", None).await;
    refused.expect(401);
    assert_eq!(refused.header("cache-control"), Some("no-store"));
    // Non-admin routes are left alone.
    assert_eq!(app.get("/healthz", None).await.header("cache-control"), None);
}

async fn put(app: &TestApp, path: &str, headers: &[(&str, &str)], body: String) -> TestResponse {
    let mut request =
        Request::builder().method(Method::PUT).uri(path).header("authorization", bearer(ADMIN_TOKEN));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    app.send(request.body(Body::from(body)).expect("request")).await
}

async fn message_types(app: &TestApp) -> serde_json::Value {
    let res = app.get("/admin/message-types", Some(&bearer(ADMIN_TOKEN))).await;
    res.expect(200);
    res.json()
}

async fn admin_changes_must_be_json(backend: Backend) {
    let app = TestApp::new(backend).await;
    let before = message_types(&app).await;
    let body = json!({ "duplicate_key_fields": ["$.id"] }).to_string();
    let path = "/admin/message-types/HARDENED";
    for content_type in [None, Some("text/plain"), Some("application/x-www-form-urlencoded")] {
        let headers: Vec<(&str, &str)> = content_type.map(|t| ("content-type", t)).into_iter().collect();
        let res = put(&app, path, &headers, body.clone()).await;
        res.expect_problem(415, "application/json");
    }
    let integration = json!({ "tenant": "acme", "environment": "prod", "message_type": "shop.order" });
    put(&app, "/admin/integrations/hardened", &[("content-type", "text/plain")], integration.to_string())
        .await
        .expect_problem(415, "application/json");
    assert_eq!(message_types(&app).await, before, "nothing changed");
    let integrations = app.get("/admin/integrations", Some(&bearer(ADMIN_TOKEN))).await.json();
    assert_eq!(integrations["integrations"], json!([]), "nothing changed");
    let audit = app.audit_events("").await;
    assert!(audit.is_empty(), "nothing audited: {audit:?}");
    // JSON, with parameters, is accepted.
    put(&app, path, &[("content-type", "application/json; charset=utf-8")], body).await.expect(200);
}

/// What a page of another site can make a browser send, with the admin's
/// cached credentials and no Origin (as some browsers and privacy settings
/// send none): each body-less admin POST refuses it with 415, and nothing
/// changes; JSON, or no Content-Type at all, is accepted.
async fn body_less_admin_posts_refuse_what_a_form_sends(backend: Backend) {
    let destinations = "[[destinations]]\nid = \"erp\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"http://127.0.0.1:9/erp\"\n";
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(destinations)).await;
    let body = json!({ "order": { "id": "csrf-1" } }).to_string();
    let res = app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await;
    let id = accepted(&res)["id"].as_str().expect("id").to_string();
    let post = |path: String, content_type: Option<&str>, body: &'static str| {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("authorization", basic("admin", ADMIN_TOKEN));
        if let Some(t) = content_type {
            request = request.header("content-type", t);
        }
        request.body(Body::from(body)).expect("request")
    };
    let paths = [
        format!("/admin/messages/{id}/redeliver"),
        "/admin/destinations/erp/disable".to_string(),
        "/admin/destinations/erp/enable".to_string(),
    ];
    let forms = [
        ("application/x-www-form-urlencoded", "destination=erp"),
        ("text/plain", "x=y"),
        (
            "multipart/form-data; boundary=b",
            "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\ny\r\n--b--\r\n",
        ),
        ("TEXT/PLAIN; charset=utf-8", ""),
    ];
    for path in &paths {
        for (content_type, body) in forms {
            let res = app.send(post(path.clone(), Some(content_type), body)).await;
            res.expect_problem(415, "application/json");
        }
    }
    assert!(app.audit_events("").await.is_empty(), "nothing changed, nothing audited");
    let erp = app.get("/admin/destinations/erp", Some(&bearer(ADMIN_TOKEN))).await.json();
    assert_eq!((erp["enabled"].as_bool(), erp["source"].as_str()), (Some(true), Some("config")));
    let d = app.get(&format!("/admin/messages/{id}/deliveries"), Some(&bearer(ADMIN_TOKEN))).await.json();
    assert_eq!(d["deliveries"][0]["status"], "pending");
    assert_eq!(d["deliveries"][0]["attempts"], 0);

    // JSON, or no Content-Type at all, goes through.
    app.send(post(paths[1].clone(), Some("application/json"), "")).await.expect(200);
    app.send(post(paths[2].clone(), None, "")).await.expect(200);
    app.send(post(paths[0].clone(), Some("application/json; charset=utf-8"), "")).await.expect(202);
    app.send(post(paths[0].clone(), None, "")).await.expect(202);
    assert_eq!(app.audit_events("action=destination.updated").await.len(), 2);
    assert_eq!(app.audit_events("action=delivery.replayed").await.len(), 2);
}

async fn admin_changes_from_another_origin_are_refused(backend: Backend) {
    let app = TestApp::new(backend).await;
    let before = message_types(&app).await;
    let body = json!({ "duplicate_key_fields": ["$.id"] }).to_string();
    let path = "/admin/message-types/ORIGIN";
    for origin in ["http://evil.example", "null", "http://hub.example:8081"] {
        let headers =
            [("content-type", "application/json"), ("host", "hub.example:8080"), ("origin", origin)];
        put(&app, path, &headers, body.clone()).await.expect_problem(403, "another origin");
    }
    assert_eq!(message_types(&app).await, before, "nothing changed");
    // The hub's own origin, and a client that sends no Origin (curl, scripts), may change it.
    let own = [
        ("content-type", "application/json"),
        ("host", "hub.example:8080"),
        ("origin", "http://hub.example:8080"),
    ];
    put(&app, path, &own, body.clone()).await.expect(200);
    put(&app, path, &[("content-type", "application/json")], body).await.expect(200);
}

async fn undecodable_path_segments_are_problem_documents(backend: Backend) {
    let app = TestApp::new(backend).await;
    let admin = bearer(ADMIN_TOKEN);
    for path in ["/admin/messages/%ff", "/admin/messages/%ff/payload"] {
        app.get(path, Some(&admin)).await.expect_problem(400, "path");
    }
    let body = json!({ "duplicate_key_fields": ["$.id"] }).to_string();
    put(&app, "/admin/message-types/%ff%fe", &[("content-type", "application/json")], body)
        .await
        .expect_problem(400, "path");
    let webhook = Request::builder()
        .method(Method::POST)
        .uri("/api/webhook/%ff")
        .header("content-type", "application/json")
        .body(Body::from("{}"))
        .expect("request");
    app.send(webhook).await.expect_problem(400, "path");
    assert_eq!(app.count_prod().await, 0);
}
