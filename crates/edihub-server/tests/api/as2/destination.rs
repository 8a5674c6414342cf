//! An `as2` destination on both backends: a message the hub stores is sent
//! to pyas2lib's AS2 server (`tests/as2/pyas2_receiver.py`) signed,
//! encrypted and compressed with the partner's profile, and counts as
//! delivered only on pyas2lib's MDN confirming it with the MIC of what was
//! sent. A partner that cannot verify the hub's signature answers a
//! negative MDN: the delivery stays pending with the reason. A definition
//! naming no partner of its environment is refused naming the key, and
//! nothing is stored.

use axum::body::Body;
use axum::http::{Method, Request, header};
use edihub_server::as2::partner::Security;
use edihub_server::as2::partner_server::PartnerServer;
use serde_json::{Value, json};

use super::{Identity, TempDir, ids, x12};
use crate::delivery::{deliveries, has_status, start_worker, until};
use crate::support::*;

backend_tests!(
    as2_destination_delivers_on_a_confirmed_mdn,
    negative_mdn_keeps_the_delivery_pending_with_the_reason,
    as2_destination_without_a_partner_of_its_environment_is_refused,
);

/// pyas2lib's AS2 server as `PARTNER`, verifying the hub's signatures with `edihub`'s certificate.
fn receiver(edihub: &Identity) -> PartnerServer {
    let them = &ids().them;
    let every = Security { signed: true, encrypted: true, compressed: true };
    PartnerServer::start(&[them.key_pem(), them.cert_pem()].concat(), &edihub.cert_pem(), every)
}

/// The hub with station `EDIHUB` (acme/prod), its partner `PARTNER` at
/// `url` using every protection, and the destination `partner-as2`.
async fn hub(backend: Backend, url: &str) -> (TestApp, TempDir) {
    let dir = TempDir::new("destination-hub");
    let toml = format!(
        "[delivery]\npoll_interval_ms = 50\nretry_schedule = [\"1h\"]\nallow_private_destinations = true\n\
         [[destinations]]\nid = \"partner-as2\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{url}\"\n\
         format = \"as2\"\nas2_partner = \"PARTNER\"\ntimeout_secs = 30\n"
    );
    let as2 = super::as2_config(&dir, |p| {
        p.signed = true;
        p.encrypted = true;
        p.compressed = true;
        p.url = Some(url.to_string());
    });
    let config = TestConfig::new().with(|c| c.as2 = as2).delivery_toml(&toml);
    (TestApp::start(backend, config).await, dir)
}

async fn post_x12(app: &TestApp, body: &[u8]) -> String {
    let res =
        app.post_receive(Some(&bearer(ACME_PROD)), Some("application/EDI-X12"), body.to_vec(), &[]).await;
    res.expect(202);
    res.json()["messages"][0]["id"].as_str().expect("the message's id").to_string()
}

async fn as2_destination_delivers_on_a_confirmed_mdn(backend: Backend) {
    let receiver = receiver(&ids().us);
    let (app, _dir) = hub(backend, &receiver.url).await;
    let stop = start_worker(&app);
    let body = x12(71);
    let id = post_x12(&app, &body).await;
    until("partner-as2 is delivered", async || has_status(&app, &id, "partner-as2", "delivered").await).await;
    stop.cancel();
    assert_eq!(receiver.payload(1).as_deref(), Some(body.as_slice()), "pyas2lib read the bytes as received");
    let delivery = &deliveries(&app, &id).await["partner-as2"];
    assert_eq!(delivery["attempts"], 1);
    let attempt = &delivery["attempt_log"][0];
    assert_eq!(attempt["status_code"], 200);
    let said = attempt["response_prefix"].as_str().expect("what the MDN said");
    assert!(said.starts_with("MDN processed for "), "{said}");
    assert!(said.contains(", sha-256"), "the MIC confirmed: {said}");
}

async fn negative_mdn_keeps_the_delivery_pending_with_the_reason(backend: Backend) {
    // pyas2lib holds another certificate for the hub: our signature is not the one it expects.
    let receiver = receiver(&ids().stranger);
    let (app, _dir) = hub(backend, &receiver.url).await;
    let stop = start_worker(&app);
    let id = post_x12(&app, &x12(72)).await;
    let attempted = async || {
        deliveries(&app, &id).await.get("partner-as2").is_some_and(|d| d["attempts"].as_i64() >= Some(1))
    };
    until("partner-as2 is attempted", attempted).await;
    stop.cancel();
    let delivery = &deliveries(&app, &id).await["partner-as2"];
    assert_eq!(delivery["status"], "pending", "a negative MDN is no delivery: {delivery}");
    let error = delivery["attempt_log"][0]["error"].as_str().expect("the reason");
    assert!(error.contains("MDN does not confirm") && error.contains("the partner answered"), "{error}");
    assert!(receiver.payload(1).is_none(), "pyas2lib kept nothing it could not verify");
}

fn put(path: &str, body: Value) -> Request<Body> {
    Request::builder()
        .method(Method::PUT)
        .uri(path)
        .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

async fn as2_destination_without_a_partner_of_its_environment_is_refused(backend: Backend) {
    let (app, _dir) = hub(backend, "http://127.0.0.1:9/as2").await;
    let cases = [
        (
            json!({"tenant": "acme", "environment": "prod", "url": "http://127.0.0.1:9/as2", "format": "as2"}),
            "`as2` needs the partner's AS2 id",
        ),
        (
            json!({"tenant": "acme", "environment": "prod", "url": "http://127.0.0.1:9/as2", "format": "as2",
                "as2_partner": "NOBODY"}),
            "no partner `NOBODY` of a station of acme/prod",
        ),
        (
            json!({"tenant": "acme", "environment": "qa", "url": "http://127.0.0.1:9/as2", "format": "as2",
                "as2_partner": "PARTNER"}),
            "no partner `PARTNER` of a station of acme/qa",
        ),
        (
            json!({"tenant": "acme", "environment": "prod", "url": "http://127.0.0.1:9/x", "format": "raw",
                "as2_partner": "PARTNER"}),
            "is only for format = \"as2\"",
        ),
    ];
    for (definition, reason) in cases {
        let res = app.send(put("/admin/destinations/wrong-as2", definition.clone())).await;
        res.expect(422);
        let detail = res.json()["detail"].as_str().expect("detail").to_string();
        assert!(detail.contains("as2_partner") && detail.contains(reason), "{definition}: {detail}");
        app.get("/admin/destinations/wrong-as2", Some(&bearer(ADMIN_TOKEN))).await.expect(404);
    }
}
