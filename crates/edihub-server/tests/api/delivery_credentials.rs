//! Destination credentials, on both backends: a URL carrying credentials
//! is refused by the admin API (422 naming `url`; nothing stored, nothing
//! audited, the password never echoed), and a destination's `basic_auth`
//! sends the password from its environment variable while the admin JSON,
//! the console and the audit log show only the variable's name.

use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::json;

use crate::delivery::{has_status, post_order, start_worker, until};
use crate::support::receiver::Receiver;
use crate::support::*;

const PASSWORD: &str = "s3cret-erp-password";

fn put(path: &str, body: serde_json::Value) -> Request<Body> {
    Request::builder()
        .method(Method::PUT)
        .uri(path)
        .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

async fn credentials_are_never_shown(backend: Backend) {
    let receiver = Receiver::start().await;
    let toml = format!(
        "[delivery]\npoll_interval_ms = 50\n[[destinations]]\nid = \"erp\"\ntenant = \"acme\"\nenvironment = \"prod\"\n\
         url = \"{}\"\nmessage_types = [\"shop.order\"]\nbasic_auth = {{ user = \"erp\", password_env = \"ERP_PASSWORD\" }}\n",
        receiver.url("erp")
    );
    let app =
        TestApp::start(backend, TestConfig::new().delivery_toml(&toml).secret("ERP_PASSWORD", PASSWORD))
            .await;

    let in_url = receiver.url("x").replace("http://", &format!("http://erp:{PASSWORD}@"));
    let res = app
        .send(put(
            "/admin/destinations/leaky",
            json!({ "tenant": "acme", "environment": "prod", "url": in_url }),
        ))
        .await;
    res.expect_problem(422, "basic_auth");
    assert!(!res.text().contains(PASSWORD), "{}", res.text());
    app.get("/admin/destinations/leaky", Some(&bearer(ADMIN_TOKEN))).await.expect(404);
    assert!(app.audit_events("action=destination.updated").await.is_empty(), "nothing stored or audited");

    let stop = start_worker(&app);
    let id = post_order(&app, "cred-1").await;
    until("erp is delivered", async || has_status(&app, &id, "erp", "delivered").await).await;
    stop.cancel();
    let got = receiver.received("erp");
    assert_eq!(got[0].header("authorization"), basic("erp", PASSWORD), "the password goes to the receiver");

    // A change through the admin API keeps the credentials by name.
    let changed = json!({ "tenant": "acme", "environment": "prod", "url": receiver.url("erp"), "timeout_secs": 5,
        "basic_auth": { "user": "erp", "password_env": "ERP_PASSWORD" } });
    let res = app.send(put("/admin/destinations/erp", changed)).await;
    res.expect(200);
    let shown = [
        res.text(),
        app.get("/admin/destinations", Some(&bearer(ADMIN_TOKEN))).await.text(),
        app.get("/admin/destinations/erp", Some(&bearer(ADMIN_TOKEN))).await.text(),
        serde_json::to_string(&app.audit_events("").await).expect("events"),
        browse_page(&app, "/admin/destinations").await,
        browse_page(&app, "/admin/forms/destinations/erp").await,
    ];
    for text in &shown {
        assert!(!text.contains(PASSWORD), "the password is shown: {text}");
    }
    assert!(shown[2].contains("ERP_PASSWORD"), "the variable's name is: {}", shown[2]);
    assert!(shown[5].contains("ERP_PASSWORD"), "the form shows the variable's name");
}

/// An admin page as a browser gets it.
async fn browse_page(app: &TestApp, path: &str) -> String {
    let request = Request::builder()
        .uri(path)
        .header(header::AUTHORIZATION, basic("admin", ADMIN_TOKEN))
        .header(header::ACCEPT, "text/html")
        .body(Body::empty())
        .expect("request");
    let res = app.send(request).await;
    res.expect(200);
    res.text()
}

backend_tests!(credentials_are_never_shown);
