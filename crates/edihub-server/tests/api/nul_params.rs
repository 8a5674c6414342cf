//! A NUL character in any query parameter, path segment, admin JSON member
//! or console form field, on both backends: 400 naming where it was (never a
//! 500 from PostgreSQL, which stores no NUL in text), and nothing stored,
//! changed, queued or audited.

use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::json;

backend_tests!(nul_in_any_parameter_is_refused_by_name);

/// One destination nobody answers (no worker runs here).
const DESTINATIONS: &str = r#"
[[destinations]]
id = "erp"
tenant = "acme"
environment = "prod"
url = "http://127.0.0.1:9/erp"
"#;

fn request(method: Method, path: &str, authorization: &str, json_body: Option<String>) -> Request<Body> {
    let builder = Request::builder().method(method).uri(path).header(header::AUTHORIZATION, authorization);
    match json_body {
        Some(body) => builder.header(header::CONTENT_TYPE, "application/json").body(Body::from(body)),
        None => builder.body(Body::empty()),
    }
    .expect("request")
}

/// Everything a refused request could have changed.
async fn state_of(app: &TestApp, id: &str) -> (i64, serde_json::Value, usize, serde_json::Value) {
    let deliveries = app.get(&format!("/admin/messages/{id}/deliveries"), Some(&bearer(ADMIN_TOKEN))).await;
    deliveries.expect(200);
    let types = app.get("/admin/message-types", Some(&bearer(ADMIN_TOKEN))).await;
    types.expect(200);
    (app.count_prod().await, deliveries.json(), app.audit_events("").await.len(), types.json())
}

async fn nul_in_any_parameter_is_refused_by_name(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(DESTINATIONS)).await;
    let body = json!({ "order": { "id": "nul-1" } }).to_string();
    let res = app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await;
    let id = accepted(&res)["id"].as_str().expect("id").to_string();
    let before = state_of(&app, &id).await;
    let admin = bearer(ADMIN_TOKEN);
    let feed = bearer(ACME_PROD_FEED);

    let mut cases: Vec<(Request<Body>, &str)> = Vec::new();
    let audit = ["action", "tenant", "environment", "message_type", "fingerprint", "original_message_id"];
    for name in audit.into_iter().chain(["since", "until", "cursor", "limit"]) {
        let path = format!("/admin/audit?{name}=a%00b");
        cases.push((request(Method::GET, &path, &admin, None), name));
    }
    let search = [
        "tenant",
        "environment",
        "fingerprint",
        "idempotency_key",
        "docnum",
        "message_type",
        "sender",
        "key_value",
        "since",
        "until",
        "cursor",
        "limit",
    ];
    for name in search {
        let path = format!("/admin/messages?tenant=acme&{name}=%00");
        cases.push((request(Method::GET, &path, &admin, None), name));
    }
    for name in ["after", "limit", "message_type", "wait"] {
        let path = format!("/api/edi-hub/messages?{name}=x%00");
        cases.push((request(Method::GET, &path, &feed, None), name));
    }
    let paths = [
        (Method::GET, "/admin/messages/a%00b".to_string(), "id"),
        (Method::GET, format!("/admin/messages/{id}?redelivered=erp%00"), "redelivered"),
        (Method::GET, "/admin/forms/message-types/ORDERS05?tenant=ac%00me".to_string(), "tenant"),
        (Method::GET, "/admin/destinations/erp%00".to_string(), "id"),
        (Method::POST, format!("/admin/messages/{id}/redeliver?destination=erp%00"), "destination"),
        (Method::POST, "/admin/destinations/erp%00/disable".to_string(), "id"),
        (Method::POST, "/admin/destinations/erp%00/enable".to_string(), "id"),
    ];
    for (method, path, name) in paths {
        cases.push((request(method, &path, &admin, None), name));
    }
    let replay = ["destination", "status", "message_type", "since", "until"];
    for name in replay {
        let body = json!({ name: "erp\u{0}" }).to_string();
        cases.push((request(Method::POST, "/admin/deliveries/replay", &admin, Some(body)), name));
    }
    let put = json!({ "duplicate_key_fields": ["$.order.id"] }).to_string();
    let put_for_tenant =
        request(Method::PUT, "/admin/message-types/shop.order?tenant=ac%00me", &admin, Some(put));
    cases.push((put_for_tenant, "tenant"));
    let type_body = json!({ "duplicate_key_fields": ["$.order.id", "$.a\u{0}"] }).to_string();
    let put_type = request(Method::PUT, "/admin/message-types/shop.order", &admin, Some(type_body));
    cases.push((put_type, "duplicate_key_fields[1]"));
    let destination = json!({ "tenant": "acme", "environment": "prod", "url": "http://127.0.0.1:9/\u{0}" });
    let put_destination =
        request(Method::PUT, "/admin/destinations/erp", &admin, Some(destination.to_string()));
    cases.push((put_destination, "url"));

    for (request, name) in cases {
        let what = format!("{} {}", request.method(), request.uri());
        let res = app.send(request).await;
        assert_eq!(res.status.as_u16(), 400, "{what}: {}", res.text());
        let detail = res.json()["detail"].as_str().unwrap_or_default().to_string();
        assert!(detail.contains(&format!("`{name}`")) && detail.contains("NUL"), "{what}: {detail}");
    }

    // A console form field: refused once its token is checked.
    let page = crate::console_forms::browse(&app, &format!("/admin/messages/{id}")).await;
    let token = crate::console_forms::token_in(&page);
    let action = format!("/admin/forms/redeliver/{id}");
    let form = crate::console_forms::form_post(&action, &format!("csrf={token}&destination=erp%00"), &[]);
    app.send(form).await.expect_problem(400, "`destination`");

    assert_eq!(state_of(&app, &id).await, before, "nothing stored, changed, queued or audited");
}
