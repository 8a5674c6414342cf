//! The console's edit forms on both backends. A message type and a
//! destination are changed through their forms exactly as the JSON `PUT`
//! would (same rows, the same `*.updated` audit); a refused value shows the
//! form again with 422, the message naming the field, the field marked and
//! every value as typed, and nothing stored or audited; a forged POST
//! (no token) is refused with 403 and changes nothing; hostile values are
//! escaped in the form and in the list.

use crate::console_forms::{browse, form_post, token_in};
use crate::support::*;
use axum::body::Body;
use axum::http::{Request, header};

backend_tests!(
    message_type_form_saves_and_refuses,
    destination_form_saves_and_refuses,
    integration_form_saves_and_refuses
);

const DESTINATIONS: &str = r#"
[[destinations]]
id = "erp"
tenant = "acme"
environment = "prod"
url = "http://127.0.0.1:9/erp"
"#;

/// The form's body: the token, then `pairs` URL-encoded.
fn body(token: &str, pairs: &[(&str, &str)]) -> String {
    let mut out = format!("csrf={token}");
    for (k, v) in pairs {
        out.push_str(&format!("&{k}={}", urlencode(v)));
    }
    out
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// A form POST's page (422 expected): its HTML.
async fn refused(app: &TestApp, path: &str, body: &str) -> String {
    let res = app.send(form_post(path, body, &[])).await;
    assert_eq!(res.status.as_u16(), 422, "{}", res.text());
    assert!(res.header("content-type").is_some_and(|t| t.starts_with("text/html")));
    res.text()
}

async fn message_type_form_saves_and_refuses(backend: Backend) {
    let app = TestApp::new(backend).await;
    let path = "/admin/forms/message-types/shop.return";
    let page = browse(&app, path).await;
    assert!(
        page.contains(
            "<form class=\"edit\" method=\"post\" action=\"/admin/forms/message-types/shop.return\">"
        )
    );
    let token = token_in(&page);

    // A window that is no window: refused naming it, values kept, nothing stored.
    let bad =
        body(&token, &[("duplicate_key_fields", "order.id\n<b>x</b>"), ("duplicate_window", "5 fortnights")]);
    // A scope naming no party: refused naming the key.
    let html = refused(&app, path, &body(&token, &[("fingerprint_scope", "buyer")])).await;
    assert!(
        html.contains("role=\"alert\">Not saved: config key `message_types[0].fingerprint_scope`"),
        "{html}"
    );
    let html = refused(&app, path, &bad).await;
    assert!(
        html.contains("role=\"alert\">Not saved: config key `message_types[0].duplicate_window`"),
        "{html}"
    );
    assert!(
        html.contains(
            "id=\"f-duplicate_window\" name=\"duplicate_window\" value=\"5 fortnights\" aria-invalid=\"true\""
        ),
        "{html}"
    );
    assert!(
        html.contains(">order.id\n&lt;b&gt;x&lt;/b&gt;</textarea>"),
        "typed values kept, escaped: {html}"
    );
    assert!(app.audit_events("action=message_type.updated").await.is_empty());
    let types = app.get("/admin/message-types", Some(&bearer(ADMIN_TOKEN))).await.json();
    assert!(!types.to_string().contains("shop.return"), "nothing stored");

    // Forged: no token.
    let forged = app.send(form_post(path, "duplicate_key_fields=x&duplicate_window=1h", &[])).await;
    forged.expect(403);
    assert!(app.audit_events("action=message_type.updated").await.is_empty());

    // Saved like the PUT would: the row, the audit, back to the list which links to the form.
    let good = body(
        &token,
        &[
            ("duplicate_key_fields", "order.id\r\n\r\n order.customer "),
            ("duplicate_window", "15m"),
            ("fingerprint_scope", "receiver\r\n"),
        ],
    );
    let res = app.send(form_post(path, &good, &[])).await;
    res.expect(303);
    assert_eq!(res.header("location"), Some("/admin/message-types"));
    let audit = app.audit_events("action=message_type.updated").await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    let types = app.get("/admin/message-types", Some(&bearer(ADMIN_TOKEN))).await.json();
    let row =
        types["message_types"].as_array().unwrap().iter().find(|t| t["id"] == "shop.return").unwrap().clone();
    assert_eq!(row["duplicate_key_fields"], serde_json::json!(["order.id", "order.customer"]));
    assert_eq!(row["fingerprint_scope"], serde_json::json!(["receiver"]));
    assert_eq!(
        (row["duplicate_window_seconds"].as_i64(), row["source"].as_str()),
        (Some(900), Some("admin"))
    );
    let list = browse(&app, "/admin/message-types").await;
    assert!(list.contains("href=\"/admin/forms/message-types/shop.return\">Edit</a>"), "{list}");
    let again = browse(&app, path).await;
    assert!(again.contains("value=\"15m\""), "the form shows the stored rule: {again}");
    assert!(again.contains(">receiver</textarea>"), "the form shows the stored scope: {again}");
    assert!(list.contains("<td class=\"scope\"><ul class=\"kv\"><li><code>receiver</code>"), "{list}");
}

async fn destination_form_saves_and_refuses(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(DESTINATIONS)).await;
    let path = "/admin/forms/destinations/erp";
    let page = browse(&app, path).await;
    assert!(page.contains("value=\"http://127.0.0.1:9/erp\""), "{page}");
    assert!(page.contains("name=\"enabled\" value=\"on\" checked"), "{page}");
    let token = token_in(&page);
    let fields = |url: &str, timeout: &str, in_flight: &str| {
        body(
            &token,
            &[
                ("tenant", "acme"),
                ("environment", "prod"),
                ("url", url),
                ("message_types", "shop.order"),
                ("format", "envelope"),
                ("timeout_secs", timeout),
                ("max_in_flight", in_flight),
                ("signature_scheme", ""),
                ("signature_secret_env", ""),
            ],
        )
    };
    let html = refused(&app, path, &fields("gopher://x\"><script>", "10", "")).await;
    assert!(html.contains("config key `destinations[0].url`"), "{html}");
    assert!(
        html.contains("name=\"url\" value=\"gopher://x&quot;&gt;&lt;script&gt;\" aria-invalid=\"true\""),
        "{html}"
    );
    assert!(!html.contains("name=\"enabled\" value=\"on\" checked"), "unchecked stays unchecked");
    let html = refused(&app, path, &fields("http://127.0.0.1:9/erp", "soon", "")).await;
    assert!(html.contains("name=\"timeout_secs\" value=\"soon\" aria-invalid=\"true\""), "{html}");
    let html = refused(&app, path, &fields("http://127.0.0.1:9/erp", "10", "lots")).await;
    assert!(html.contains("name=\"max_in_flight\" value=\"lots\" aria-invalid=\"true\""), "{html}");
    let html = refused(&app, path, &fields("http://127.0.0.1:9/erp", "10", "0")).await;
    assert!(html.contains("config key `destinations[0].max_in_flight`"), "{html}");
    assert!(app.audit_events("action=destination.updated").await.is_empty(), "nothing audited");

    // Saved (disabled, for shop orders, a URL with markup in its query): escaped in the list.
    let hostile = "http://127.0.0.1:9/erp?q=<script>alert(1)</script>";
    let res = app.send(form_post(path, &fields(hostile, "7", "4"), &[])).await;
    res.expect(303);
    let stored = app.get("/admin/destinations/erp", Some(&bearer(ADMIN_TOKEN))).await.json();
    assert_eq!(stored["enabled"], false);
    assert_eq!(stored["definition"]["url"], hostile);
    assert_eq!(stored["definition"]["timeout_secs"], 7);
    assert_eq!(stored["definition"]["max_in_flight"], 4);
    assert_eq!(stored["message_types"], serde_json::json!(["shop.order"]));
    assert_eq!(app.audit_events("action=destination.updated").await.len(), 1);
    let request = Request::builder()
        .uri("/admin/destinations")
        .header(header::AUTHORIZATION, basic("admin", ADMIN_TOKEN))
        .header(header::ACCEPT, "text/html")
        .body(Body::empty())
        .unwrap();
    let list = app.send(request).await.text();
    assert!(
        list.contains("<code>http://127.0.0.1:9/erp?q=&lt;script&gt;alert(1)&lt;/script&gt;</code>"),
        "{list}"
    );
    assert!(!list.contains("<script>"), "{list}");
}

async fn integration_form_saves_and_refuses(backend: Backend) {
    let app = TestApp::new(backend).await;
    let path = "/admin/forms/integrations/forms-hook";
    let token = token_in(&browse(&app, path).await);
    let fields = |scheme: &str, days: &str| {
        body(
            &token,
            &[
                ("tenant", "acme"),
                ("environment", "prod"),
                ("message_type", "forms.event"),
                ("event_id_path", "$.id"),
                ("event_id_days", days),
                ("signature_scheme", scheme),
            ],
        )
    };
    let html = refused(&app, path, &fields("hmac", "30")).await;
    assert!(html.contains("config key `integrations[0].signature.secret_env`"), "{html}");
    assert!(html.contains("name=\"signature_secret_env\" value=\"\" aria-invalid=\"true\""), "{html}");
    assert!(html.contains("name=\"event_id_path\" value=\"$.id\""), "kept: {html}");
    let html = refused(&app, path, &fields("none", "many")).await;
    assert!(html.contains("name=\"event_id_days\" value=\"many\" aria-invalid=\"true\""), "{html}");
    assert!(app.audit_events("action=integration.updated").await.is_empty(), "nothing audited");

    let res = app.send(form_post(path, &fields("none", "30"), &[])).await;
    res.expect(303);
    assert_eq!(res.header("location"), Some("/admin/integrations"));
    assert_eq!(app.audit_events("action=integration.updated").await.len(), 1);
    let list = app.get("/admin/integrations", Some(&bearer(ADMIN_TOKEN))).await.json();
    let row =
        list["integrations"].as_array().unwrap().iter().find(|i| i["id"] == "forms-hook").unwrap().clone();
    let def = &row["definition"];
    assert_eq!(
        (def["event_id"]["path"].as_str(), def["event_id_days"].as_u64()),
        (Some("$.id"), Some(30)),
        "{row}"
    );
    assert_eq!(
        (def["message_type"].as_str(), def["signature"]["scheme"].as_str()),
        (Some("forms.event"), Some("none"))
    );
    let page = browse(&app, "/admin/integrations").await;
    assert!(page.contains("href=\"/admin/forms/integrations/forms-hook\">Edit</a>"), "{page}");
}
