//! The console's Redeliver in a real browser. edihub serves on a port-0
//! listener with its delivery worker; two receivers run in this test: `erp`
//! answers 200, `crm` answers 500 with a body carrying a script, behind a
//! destination URL carrying another. Headless Chromium, as an admin:
//! overview → message list → (keyboard) the message → its Deliveries panel
//! shows both attempts, the receiver's hostile answer as text → (keyboard)
//! Redeliver to erp → back on the page, which announces it, and then shows
//! the new attempt. A page of another origin that posts the same form is
//! refused with 403 and queues nothing. Nothing any page carries runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::browser::{Browser, Cdp, open, screenshot, seen, visit};
use crate::support::live::LiveServer;
use crate::support::*;
use axum::Router;
use axum::http::StatusCode;
use serde_json::{Value, json};

/// What the failing receiver answers: markup that would run if unescaped.
const HOSTILE_ANSWER: &str = "<script>window.__xss=3</script><img src=x onerror=\"window.__xss=4\">";
/// The query of the failing destination's URL (accepted by URL parsing as is).
const HOSTILE_QUERY: &str = "q=<script>window.__xss=5</script>";

/// Receivers on one loopback port: `/erp` answers 200, `/crm` 500 with
/// [`HOSTILE_ANSWER`]; returns the address and how many requests `/erp` got.
async fn receivers() -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let erp_hits = Arc::new(AtomicUsize::new(0));
    let hits = erp_hits.clone();
    let app = Router::new()
        .route(
            "/erp",
            axum::routing::post(move || {
                hits.fetch_add(1, Ordering::SeqCst);
                async { (StatusCode::OK, "accepted") }
            }),
        )
        .route("/crm", axum::routing::post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, HOSTILE_ANSWER) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, erp_hits)
}

fn config(addr: std::net::SocketAddr) -> TestConfig {
    let toml = format!(
        r#"
[delivery]
retry_schedule = ["1h"]
poll_interval_ms = 50

[[destinations]]
id = "erp"
tenant = "acme"
environment = "prod"
url = "http://{addr}/erp"

[[destinations]]
id = "crm"
tenant = "acme"
environment = "prod"
url = "http://{addr}/crm?{HOSTILE_QUERY}"
"#
    );
    TestConfig::new().delivery_toml(&toml)
}

/// The attempts shown per destination on the message page, as JSON text.
const PANEL: &str = "JSON.stringify(Object.fromEntries([...document.querySelectorAll('article.delivery')].map(a => \
    [a.dataset.destination, { status: a.querySelector('.status').textContent, \
      codes: [...a.querySelectorAll('tr.attempt .code')].map(td => td.textContent), \
      said: [...a.querySelectorAll('tr.attempt .said')].map(td => td.textContent) }])))";

fn panel(cdp: &mut Cdp) -> Value {
    serde_json::from_str(cdp.eval(PANEL).as_str().expect("panel JSON")).expect("panel")
}

/// Presses Enter on the element `selector` (focused first, as Tab would).
fn press_enter(cdp: &mut Cdp, selector: &str) {
    cdp.eval(&format!("document.querySelector('{selector}').focus()"));
    assert_eq!(cdp.eval(&format!("document.activeElement === document.querySelector('{selector}')")), true);
    for kind in ["keyDown", "keyUp"] {
        let key = json!({ "type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r" });
        cdp.call("Input.dispatchKeyEvent", key);
    }
}

/// The browser's walk; returns what it saw at each step.
fn drive(base: &str, plain: &str, id: &str) -> Value {
    let mut browser = Browser::launch();
    let mut cdp = Cdp::connect(browser.devtools_port());
    cdp.call("Page.enable", json!({}));
    open(&mut cdp, base, "/admin#deliveries");
    let overview = seen(&mut cdp, "document.querySelectorAll('#destination-backlog tr.backlog').length");
    screenshot(&mut cdp, "overview-deliveries");
    open(&mut cdp, base, "/admin/messages");
    let list = seen(&mut cdp, "document.querySelectorAll('tr.message').length");
    // To the message with the keyboard: its link in the list, then Enter.
    press_enter(&mut cdp, &format!("tr.message a[href=\"/admin/messages/{id}\"]"));
    cdp.wait_for(&format!(
        "location.pathname === '/admin/messages/{id}' && document.readyState === 'complete' && !!document.querySelector('#deliveries')"
    ));
    let before = panel(&mut cdp);
    press_enter(&mut cdp, "#redeliver-erp");
    cdp.wait_for("location.search.includes('redelivered=erp') && !!document.querySelector('#redelivered')");
    let notice = cdp.eval("document.querySelector('#redelivered').textContent");
    // The worker sends it at its next pass: reload until the second attempt shows.
    for _ in 0..200 {
        if panel(&mut cdp)["erp"]["codes"].as_array().is_some_and(|c| c.len() == 2) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        cdp.call("Page.reload", json!({}));
        cdp.wait_for("document.readyState === 'complete' && !!document.querySelector('#deliveries')");
    }
    let after = panel(&mut cdp);
    screenshot(&mut cdp, "message-deliveries");
    let xss_on_message = cdp.eval("window.__xss === undefined ? null : window.__xss");
    let destinations = visit(
        &mut cdp,
        base,
        "/admin/destinations",
        "destinations",
        "[...document.querySelectorAll('#destinations td.url code')].map(c => c.textContent)",
    );

    // An edit form, by keyboard: a timeout that is no number is refused, naming the field.
    open(&mut cdp, base, "/admin/forms/destinations/erp");
    cdp.eval("document.querySelector('#f-timeout_secs').focus()");
    cdp.eval("document.querySelector('#f-timeout_secs').select()");
    cdp.call("Input.insertText", json!({ "text": "soon" }));
    press_enter(&mut cdp, "#save");
    cdp.wait_for("document.readyState === 'complete' && !!document.querySelector('#refusal')");
    let edit = seen(
        &mut cdp,
        "({ refusal: document.querySelector('#refusal').textContent, \
           invalid: document.querySelector('[aria-invalid=true]').id, \
           kept: document.querySelector('#f-timeout_secs').value, \
           url: document.querySelector('#f-url').value })",
    );
    screenshot(&mut cdp, "destination-edit");

    // A page of another origin posting the Redeliver form (it cannot know a token).
    let forged = format!(
        "<form method=post action='{plain}/admin/forms/redeliver/{id}'><input name=destination value=erp></form>\
         <script>document.forms[0].submit()</script>"
    );
    let nav = cdp.call("Page.navigate", json!({ "url": format!("data:text/html,{}", urlencode(&forged)) }));
    assert!(nav.get("errorText").is_none(), "{nav}");
    cdp.wait_for(&format!(
        "location.href.startsWith('{plain}/admin/forms/') && document.readyState === 'complete'"
    ));
    let refused = cdp.eval("document.body.innerText");
    json!({ "overview": overview, "list": list, "before": before, "notice": notice, "after": after,
            "xss_on_message": xss_on_message, "destinations": destinations, "edit": edit, "refused": refused })
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redeliver_in_chromium() {
    let (addr, erp_hits) = receivers().await;
    let app = TestApp::start(Backend::Sqlite, config(addr)).await;
    let body = json!({ "docnum": "B-1", "order": { "id": "browser-1" } }).to_string();
    let id = accepted(&app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let server = LiveServer::start(app.state.clone()).await;
    // The worker of the live server makes the first attempts.
    for _ in 0..600 {
        let reports = app.state.store.deliveries_of(id.parse().unwrap()).await.unwrap();
        if reports.len() == 2 && reports.iter().all(|r| r.attempt_log.len() == 1) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let base = format!("http://admin:{ADMIN_TOKEN}@{}", server.addr);
    let plain = format!("http://{}", server.addr);
    let walk = {
        let id = id.clone();
        tokio::task::spawn_blocking(move || drive(&base, &plain, &id)).await.expect("browser driver")
    };

    assert_eq!(walk["overview"]["title"], "edihub overview");
    assert_eq!(walk["overview"]["probe"], 2, "both destinations in the backlog");
    assert_eq!(walk["list"]["probe"], 1, "the message is listed");
    assert_eq!(
        walk["before"]["erp"],
        json!({ "status": "delivered", "codes": ["200"], "said": ["accepted"] })
    );
    let crm = &walk["before"]["crm"];
    assert_eq!((&crm["status"], &crm["codes"]), (&json!("pending"), &json!(["500"])), "{walk}");
    assert!(crm["said"][0].as_str().unwrap().contains(HOSTILE_ANSWER), "the answer is shown as text: {walk}");
    assert!(walk["notice"].as_str().unwrap().contains("Queued again: erp"), "{walk}");
    assert_eq!(walk["after"]["erp"]["codes"], json!(["200", "200"]), "the new attempt is shown: {walk}");
    assert_eq!(walk["after"]["crm"]["codes"], json!(["500"]), "only erp was queued again");
    let urls = walk["destinations"]["probe"].as_array().unwrap().clone();
    assert!(urls.iter().any(|u| u.as_str().unwrap().ends_with(HOSTILE_QUERY)), "URL shown as text: {walk}");
    for (what, page) in [("message", &walk["xss_on_message"]), ("destinations", &walk["destinations"]["xss"])]
    {
        assert_eq!(page, &Value::Null, "nothing ran on the {what} page");
    }
    assert_eq!(walk["destinations"]["scripts"], 0);

    let edit = &walk["edit"]["probe"];
    assert!(edit["refusal"].as_str().unwrap().contains("destinations[0].timeout_secs"), "{walk}");
    assert_eq!((&edit["invalid"], &edit["kept"]), (&json!("f-timeout_secs"), &json!("soon")), "{walk}");
    assert!(edit["url"].as_str().unwrap().ends_with("/erp"), "the other values kept: {walk}");
    assert_eq!(app.audit_events("action=destination.updated").await.len(), 0, "nothing saved");

    // The forged post: 403, and nothing was queued by it.
    assert!(walk["refused"].as_str().unwrap().contains("refused"), "{walk}");
    assert_eq!(erp_hits.load(Ordering::SeqCst), 2, "one first attempt and one redelivery");
    let replayed = app.audit_events("action=delivery.replayed").await;
    assert_eq!(replayed.len(), 1, "only the real button queued: {replayed:?}");
    server.stop().await;
}
