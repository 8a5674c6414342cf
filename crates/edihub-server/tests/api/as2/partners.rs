//! `GET /admin/as2/partners` on both backends: the stations and partners of
//! the configuration with their certificates' ends (valid, expiring within
//! 30 days, expired) and each partner's last messages with their MDN state,
//! as JSON for scripts and as the console's page for a browser, which a
//! real browser shows too (`partners_page_in_chromium`, SQLite only: the
//! page is the same on both backends; its screenshot is
//! docs/console/as2-partners.png).

use axum::body::Body;
use axum::http::{Method, Request, header};

use super::*;
use crate::browser::{Browser, Cdp, visit};
use crate::support::*;

backend_tests!(partners_list_certificates_and_last_messages, partners_page_flags_certificates,);

/// The hub with a third partner `SOON`, whose certificate ends in ten days,
/// and `change` applied to `PARTNER`.
async fn hub(backend: Backend, change: impl FnOnce(&mut As2PartnerConfig)) -> (As2Hub, TempDir) {
    let soon = Identity::new("soon.test", -1, 10);
    let dir = TempDir::new("partners");
    let cert = dir.write("soon.crt", &soon.cert_pem());
    let hub = As2Hub::start_with(backend, |c| {
        change(&mut c.as2.partners[0]);
        c.as2.partners.push(partner_config("SOON", pem(cert)));
    })
    .await;
    (hub, dir)
}

fn get(path: &str, accept: &str) -> Request<Body> {
    Request::builder()
        .method(Method::GET)
        .uri(path)
        .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
        .header(header::ACCEPT, accept)
        .body(Body::empty())
        .expect("request")
}

async fn partners_list_certificates_and_last_messages(backend: Backend) {
    let (hub, _dir) = hub(backend, |_| {}).await;
    let message = Sender::partner(SIGNED_ENCRYPTED).message(&x12(81));
    assert!(hub.send(&message).await.mdn().disposition.is_positive());
    let res = hub.app.send(get("/admin/as2/partners", "application/json")).await;
    res.expect(200);
    let body = res.json();
    assert_eq!(body["warn_days"], 30);
    let station = &body["stations"][0];
    assert_eq!((station["as2_id"].as_str(), station["tenant"].as_str()), (Some("EDIHUB"), Some("acme")));
    assert_eq!(station["certificate"]["state"], "valid");
    let partners = body["partners"].as_array().expect("partners");
    let state = |id: &str| {
        let p = partners.iter().find(|p| p["as2_id"] == id).unwrap_or_else(|| panic!("{id} listed"));
        (
            p["certificate"]["state"].as_str().unwrap().to_string(),
            p["certificate"]["days_left"].as_i64().unwrap(),
        )
    };
    assert_eq!(state("PARTNER").0, "valid");
    assert_eq!(state("SOON"), ("expiring".to_string(), 9), "ten days ahead, less a moment");
    assert_eq!(state("EXPIRED").0, "expired");
    let partner = partners.iter().find(|p| p["as2_id"] == "PARTNER").unwrap();
    assert_eq!((partner["mdn"].as_str(), partner["mdn_signed"].as_bool()), (Some("sync"), Some(true)));
    let last = partner["last_messages"].as_array().expect("last messages");
    assert_eq!(last.len(), 1, "{last:?}");
    assert_eq!(last[0]["message_id"], message.sent.message_id.as_str());
    assert_eq!(last[0]["mdn_status"], "sent");
    let stored = hub.received().await[0].stored_message_id.expect("stored").to_string();
    assert_eq!(last[0]["stored_message_id"], stored);
    let soon = partners.iter().find(|p| p["as2_id"] == "SOON").unwrap();
    assert_eq!(soon["last_messages"].as_array().map(Vec::len), Some(0), "nothing from SOON yet");
}

async fn partners_page_flags_certificates(backend: Backend) {
    let (hub, _dir) = hub(backend, |_| {}).await;
    let message = Sender::partner(SIGNED_ENCRYPTED).message(&x12(82));
    hub.send(&message).await.mdn();
    let res = hub.app.send(get("/admin/as2/partners", "text/html")).await;
    res.expect(200);
    let html = res.text();
    assert!(html.contains("<title>edihub AS2 partners</title>"), "{html}");
    assert_eq!(html.matches("<tr class=\"partner\">").count(), 3);
    assert_eq!(html.matches("<tr class=\"station\">").count(), 1);
    assert_eq!(html.matches("class=\"warn cert-expiring\">expires in 9 days").count(), 1, "SOON flagged");
    assert_eq!(html.matches("class=\"warn cert-expired\">expired").count(), 1, "EXPIRED flagged");
    assert!(html.contains(&format!("{} MDN sync sent", message.sent.message_id.as_str())), "{html}");
    assert!(
        html.contains("<a href=\"/admin/as2/partners\" aria-current=\"page\">AS2 partners</a>"),
        "the section is marked in the navigation"
    );
}

/// The partners page in headless Chromium under the admin credential: the
/// station, the three partners with SOON and EXPIRED flagged, PARTNER's last
/// messages, and no script in the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn partners_page_in_chromium() {
    // PARTNER as a partner in production is: it must sign and encrypt.
    let (hub, _dir) = hub(Backend::Sqlite, |p| (p.signed, p.encrypted) = (true, true)).await;
    for control in [83, 84] {
        let message = Sender::partner(SIGNED_ENCRYPTED).message(&x12(control));
        assert!(hub.send(&message).await.mdn().disposition.is_positive());
    }
    let base = format!("http://admin:{ADMIN_TOKEN}@{}", hub.server.addr);
    let page = tokio::task::spawn_blocking(move || {
        let mut browser = Browser::launch();
        let mut cdp = Cdp::connect(browser.devtools_port());
        cdp.call("Page.enable", serde_json::json!({}));
        let probe = "[document.querySelectorAll('tr.partner').length, \
                     document.querySelectorAll('.cert-expiring, .cert-expired').length]";
        visit(&mut cdp, &base, "/admin/as2/partners", "as2-partners", probe)
    })
    .await
    .expect("browser driver");
    assert_eq!(page["title"], "edihub AS2 partners");
    assert_eq!(page["probe"], serde_json::json!([3, 2]), "three partners, two flagged: {page}");
    assert_eq!(page["scripts"], 0, "no script element: {page}");
}
