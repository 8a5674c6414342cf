//! The console's Redeliver form on both backends: the message page shows
//! the deliveries and a form carrying an anti-forgery token; a POST with the
//! token queues the delivery again and redirects back to the page, which
//! says so; a forged POST (no token, a wrong one, one for another message,
//! a cross-site `Origin` or `Sec-Fetch-Site`, a non-form body) is refused
//! with 403 and changes nothing (the delivery is untouched, nothing is
//! audited); the JSON admin API (Authorization header, no cookie, no token)
//! works as before.

use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::{Value, json};

backend_tests!(
    redeliver_form_needs_its_token,
    redeliver_form_refuses_what_the_api_refuses,
    the_page_announces_only_what_was_queued
);

/// One destination that nobody answers (no worker runs here: the delivery
/// stays pending with no attempt).
const DESTINATIONS: &str = r#"
[[destinations]]
id = "erp"
tenant = "acme"
environment = "prod"
url = "http://127.0.0.1:9/erp"
"#;

/// A browser's GET of `path` with the admin credential; the page's text.
pub async fn browse(app: &TestApp, path: &str) -> String {
    let request = Request::builder()
        .uri(path)
        .header(header::AUTHORIZATION, basic("admin", ADMIN_TOKEN))
        .header(header::ACCEPT, "text/html")
        .body(Body::empty())
        .unwrap();
    let res = app.send(request).await;
    res.expect(200);
    res.text()
}

/// The value of the first `name="csrf"` hidden field of a page.
pub fn token_in(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a form token") + "name=\"csrf\" value=\"".len();
    page[at..at + page[at..].find('"').unwrap()].to_string()
}

/// A browser-like form POST with the admin credential and extra headers.
pub fn form_post(path: &str, body: &str, headers: &[(&str, &str)]) -> Request<Body> {
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::AUTHORIZATION, basic("admin", ADMIN_TOKEN))
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Body::from(body.to_string())).unwrap()
}

async fn post_order(app: &TestApp, order: &str) -> String {
    let body = json!({ "order": { "id": order } }).to_string();
    let res = app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await;
    accepted(&res)["id"].as_str().expect("id").to_string()
}

async fn deliveries(app: &TestApp, id: &str) -> Value {
    let res = app.get(&format!("/admin/messages/{id}/deliveries"), Some(&bearer(ADMIN_TOKEN))).await;
    res.expect(200);
    res.json()["deliveries"].clone()
}

async fn redeliver_form_needs_its_token(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(DESTINATIONS)).await;
    let (id, other) = (post_order(&app, "f-1").await, post_order(&app, "f-2").await);
    let page = browse(&app, &format!("/admin/messages/{id}")).await;
    assert!(page.contains("<section id=\"deliveries\">"), "{page}");
    assert!(page.contains(&format!("action=\"/admin/forms/redeliver/{id}\"")), "{page}");
    assert!(page.contains("id=\"redeliver-erp\""), "{page}");
    let token = token_in(&page);
    let other_token = token_in(&browse(&app, &format!("/admin/messages/{other}")).await);
    let before = deliveries(&app, &id).await;
    assert_eq!(before[0]["status"], "pending");
    let overview = browse(&app, "/admin").await;
    assert!(overview.contains("<tr class=\"backlog\" data-destination=\"erp\"><td>erp</td><td>acme / prod</td><td class=\"num\">2</td>"), "{overview}");

    let action = format!("/admin/forms/redeliver/{id}");
    let good = format!("csrf={token}&destination=erp");
    let forged: [(&str, Request<Body>); 7] = [
        ("no token", form_post(&action, "destination=erp", &[])),
        ("empty token", form_post(&action, "csrf=&destination=erp", &[])),
        ("a made-up token", form_post(&action, "csrf=v1.1750000000.00ff&destination=erp", &[])),
        ("another message's token", form_post(&action, &format!("csrf={other_token}"), &[])),
        ("a cross-site Origin", form_post(&action, &good, &[("origin", "http://evil.example")])),
        ("Sec-Fetch-Site: cross-site", form_post(&action, &good, &[("sec-fetch-site", "cross-site")])),
        ("a text/plain body", {
            let mut r = form_post(&action, &good, &[]);
            r.headers_mut().insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
            r
        }),
    ];
    for (what, request) in forged {
        let res = app.send(request).await;
        assert_eq!(res.status.as_u16(), 403, "{what}: {}", res.text());
        assert_eq!(res.header("content-type"), Some(PROBLEM_JSON), "{what}");
    }
    assert_eq!(deliveries(&app, &id).await, before, "a forged POST changes nothing");
    assert!(app.audit_events("action=delivery.replayed").await.is_empty(), "nothing audited");

    // Without the credential: 401 before the token is looked at.
    let mut anonymous = form_post(&action, &good, &[]);
    anonymous.headers_mut().remove(header::AUTHORIZATION);
    app.send(anonymous).await.expect(401);

    // The real form: queued again, audited, and back to the page, which says so.
    let res = app.send(form_post(&action, &good, &[("sec-fetch-site", "same-origin")])).await;
    res.expect(303);
    let location = res.header("location").expect("a redirect").to_string();
    assert!(location.starts_with(&format!("/admin/messages/{id}?redelivered=erp&notice=v1.")), "{location}");
    assert!(location.ends_with("#deliveries"), "{location}");
    let audit = app.audit_events("action=delivery.replayed").await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    let back = browse(&app, location.split('#').next().unwrap()).await;
    assert!(
        back.contains("<p id=\"redelivered\" role=\"status\" class=\"notice\">Queued again: erp."),
        "{back}"
    );
    // The token is good for this action again (a page may be submitted twice).
    app.send(form_post(&action, &format!("csrf={token}"), &[])).await.expect(303);

    // The JSON API: Authorization header, no body, no token, no cookie.
    let json_api = Request::builder()
        .method(Method::POST)
        .uri(format!("/admin/messages/{id}/redeliver"))
        .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
        .body(Body::empty())
        .unwrap();
    let res = app.send(json_api).await;
    res.expect(202);
    assert_eq!(res.json()["queued"], json!(["erp"]));
    assert_eq!(app.audit_events("action=delivery.replayed").await.len(), 3);
}

async fn redeliver_form_refuses_what_the_api_refuses(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(DESTINATIONS)).await;
    let id = post_order(&app, "f-3").await;
    let token = token_in(&browse(&app, &format!("/admin/messages/{id}")).await);
    let action = format!("/admin/forms/redeliver/{id}");
    let res = app.send(form_post(&action, &format!("csrf={token}&destination=nope"), &[])).await;
    res.expect_problem(404, "no delivery to `nope`");
    // A message without deliveries (another environment) shows that, still with no error.
    let qa =
        app.post_json(ACME_QA, json!({ "docnum": "Q-1" }).to_string(), &[("x-message-type", "erp.order")]);
    let qa_id = accepted(&qa.await)["id"].as_str().unwrap().to_string();
    let page = browse(&app, &format!("/admin/messages/{qa_id}")).await;
    assert!(page.contains("id=\"no-deliveries\""), "{page}");
    assert!(app.audit_events("action=delivery.replayed").await.is_empty());
}

/// The notice a page shows after a Redeliver (`#redelivered`), if any.
fn notice_of(page: &str) -> Option<String> {
    let at = page.find("<p id=\"redelivered\"")?;
    Some(page[at..at + page[at..].find("</p>").expect("closed")].to_string())
}

/// `?redelivered=` names what a Redeliver queued only with the form's
/// signature of that list: text a link makes up, a list changed after
/// signing, another message's signature or a destination the message has
/// no delivery to is never shown; and none of those links queues anything.
async fn the_page_announces_only_what_was_queued(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(DESTINATIONS)).await;
    let (id, other) = (post_order(&app, "n-1").await, post_order(&app, "n-2").await);
    let page = format!("/admin/messages/{id}");
    let made_up = [
        format!("{page}?redelivered=erp"),
        format!("{page}?redelivered=%3Cb%3EYour%20session%20expired%2C%20call%20%2B1-555-0100%3C%2Fb%3E"),
        format!("{page}?redelivered=Your+password+expired&notice=v1.1750000000.00ff"),
        format!("{page}?redelivered=erp&notice="),
    ];
    let (before, other_before) = (deliveries(&app, &id).await, deliveries(&app, &other).await);
    for link in &made_up {
        let shown = browse(&app, link).await;
        assert_eq!(notice_of(&shown), None, "{link}");
        assert!(!shown.contains("Your session") && !shown.contains("password expired"), "{link}");
    }
    assert_eq!(deliveries(&app, &id).await, before, "a link queues nothing");
    // A real Redeliver: its link shows the notice.
    let token = token_in(&browse(&app, &page).await);
    let action = format!("/admin/forms/redeliver/{id}");
    let res = app.send(form_post(&action, &format!("csrf={token}&destination=erp"), &[])).await;
    res.expect(303);
    let location = res.header("location").expect("a redirect").split('#').next().unwrap().to_string();
    let shown = browse(&app, &location).await;
    let notice = notice_of(&shown).expect("the notice of what was queued");
    assert!(notice.contains("Queued again: erp."), "{notice}");
    // The same signature with another list, or on another message's page: no notice.
    let changed = location.replace("redelivered=erp", "redelivered=erp%2C%20crm");
    assert_eq!(notice_of(&browse(&app, &changed).await), None, "a list changed after signing");
    let elsewhere = location.replace(&id, &other);
    assert_eq!(notice_of(&browse(&app, &elsewhere).await), None, "another message's page");
    // Only the real Redeliver queued anything: one audit event, the delivery queued once.
    assert_eq!(app.audit_events("action=delivery.replayed").await.len(), 1);
    assert_eq!(deliveries(&app, &other).await, other_before, "the other message's delivery is untouched");
}
