//! Status back to SAP (`sap.status`), over the real router on both
//! backends: an IDoc from the environment's SAP system gets status IDocs
//! (ALEAUD01 or SYSTAT01), stored as messages and delivered by the
//! `sap-idoc-xml` destination to a stand-in for SAP's inbound IDoc-XML
//! service that checks every call as SAP's rules say
//! (`support::sap_receiver`, with the status types described). Read field
//! by field as SAP gets them: 39 when stored (ALEAUD01's E1STATE reports
//! the receiver's 64), 41 after delivery (53), 40 with the reason when the
//! delivery fails for good (SYSTAT01 reports the sender's status itself);
//! a re-sent IDoc gets its status again; re-sends racing while the first
//! status is queued queue one; a refused IDoc (422, 403, a reused
//! Idempotency-Key) gets 40 with the refusal's reason and stores nothing.
//! The console's message page shows them.

use edihub_core::IdocDescriptions;
use edihub_core::sap::{SapIdoc, SapSegment, StatusIdocType};
use edihub_server::config::{SapStatusConfig, SapSystemConfig};
use edihub_store::Scope;
use tokio_util::sync::CancellationToken;

use crate::delivery::{start_worker, until};
use crate::support::receiver::{Receiver, Reply};
use crate::support::sap_receiver::SapReceiver;
use crate::support::*;

backend_tests!(
    idoc_from_sap_gets_39_then_41,
    failing_destination_gives_40_with_the_reason,
    resent_idoc_gets_its_status_again,
    racing_resends_queue_one_status,
    full_batch_goes_before_the_interval,
    refused_packet_gets_40_with_the_reason,
    forbidden_type_and_reused_key_get_40,
);

const PASSWORD: &str = "sap-rfc-user-password";
const DOCNUM: &str = "0000000000004711";

/// acme/prod's SAP system: the sender of `orders05.xml` (Q01CLNT100).
fn sap_system(idoc: &str) -> SapSystemConfig {
    sap_system_with(SapStatusConfig { idoc: idoc.into(), interval: "100ms".into(), max_per_idoc: 500 })
}

/// acme/prod's SAP system with `status`.
fn sap_system_with(status: SapStatusConfig) -> SapSystemConfig {
    SapSystemConfig {
        logical_system: "Q01CLNT100".into(),
        partner_type: "LS".into(),
        port: "SAPQ01".into(),
        client: "100".into(),
        hub_partner: "EDIHUB".into(),
        hub_partner_type: "LS".into(),
        hub_port: "EDIHUB".into(),
        status: Some(status),
    }
}

struct Hub {
    app: TestApp,
    /// The stand-in for SAP's IDoc-XML service (destination `s4h`).
    sap: SapReceiver,
    /// The destination of the orders (`erp`).
    erp: Receiver,
}

/// The hub with acme/prod's SAP system reporting status as `idoc`, a
/// `sap-idoc-xml` destination `s4h` for the status IDocs and a destination
/// `erp` for the orders.
async fn hub(backend: Backend, idoc: &str) -> Hub {
    hub_with(backend, sap_system(idoc)).await
}

/// As [`hub`], with `system` as acme/prod's SAP system.
async fn hub_with(backend: Backend, system: SapSystemConfig) -> Hub {
    hub_configured(backend, system, None).await
}

/// As [`hub_with`], acme/prod's senders sending only `message_types` if given.
async fn hub_configured(backend: Backend, system: SapSystemConfig, message_types: Option<&[&str]>) -> Hub {
    let mut known = IdocDescriptions::new();
    for kind in [StatusIdocType::Aleaud01, StatusIdocType::Systat01] {
        known.insert(kind.description()).expect("one description per type");
    }
    let sap = SapReceiver::start(system.profile(), known, basic("EDIHUB_RFC", PASSWORD)).await;
    let erp = Receiver::start().await;
    let toml = format!(
        "[delivery]\npoll_interval_ms = 50\nretry_schedule = [\"50ms\"]\n\
         [[destinations]]\nid = \"s4h\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{}\"\n\
         format = \"sap-idoc-xml\"\nmessage_types = [\"ALEAUD01\", \"SYSTAT01\"]\n\
         basic_auth = {{ user = \"EDIHUB_RFC\", password_env = \"SAP_PASSWORD\" }}\n\
         [[destinations]]\nid = \"erp\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{}\"\n\
         message_types = [\"ORDERS05\"]\n",
        sap.url(),
        erp.url("orders")
    );
    let config = TestConfig::new().delivery_toml(&toml).secret("SAP_PASSWORD", PASSWORD).with(|c| {
        let acme = c.tenants.iter_mut().find(|t| t.id == "acme").expect("acme");
        let prod = acme.environments.iter_mut().find(|e| e.id == "prod").expect("prod");
        prod.sap = Some(system);
        if let Some(types) = message_types {
            prod.message_types = Some(types.iter().map(|t| t.to_string()).collect());
        }
    });
    Hub { app: TestApp::start(backend, config).await, sap, erp }
}

fn start_batcher(app: &TestApp) -> CancellationToken {
    let stop = CancellationToken::new();
    tokio::spawn(edihub_server::sap_status::run(app.state.clone(), stop.clone()));
    stop
}

fn field<'a>(segment: &'a SapSegment, name: &str) -> &'a str {
    segment.fields.iter().find(|(n, _)| n == name).map_or("", |(_, v)| v.as_str())
}

/// One confirmation as SAP reads it: DOCNUM, MESTYP, STATUS, STATXT and
/// the segment it came in.
#[derive(Debug, Clone)]
struct Confirmation {
    docnum: String,
    mestyp: String,
    status: String,
    statxt: String,
    segment: SapSegment,
}

/// Every status IDoc SAP got, in order; each call passed SAP's checks and
/// is addressed from the hub to the SAP system.
fn status_idocs(sap: &SapReceiver) -> Vec<SapIdoc> {
    let mut out = Vec::new();
    for call in sap.calls() {
        assert_eq!(call.query, "sap-client=100");
        let idocs = call.verdict.clone().unwrap_or_else(|p| panic!("SAP's rules refused it: {p:?}"));
        for idoc in idocs {
            assert_eq!(idoc.control_field("RCVPRN"), Some("Q01CLNT100"));
            assert_eq!(idoc.control_field("RCVPOR"), Some("SAPQ01"));
            assert_eq!(idoc.control_field("SNDPRN"), Some("EDIHUB"));
            assert_eq!(idoc.control_field("DIRECT"), Some("2"));
            out.push(idoc);
        }
    }
    out
}

/// The confirmations of every status IDoc SAP got, in order.
fn confirmations(sap: &SapReceiver) -> Vec<Confirmation> {
    let mut out = Vec::new();
    for idoc in status_idocs(sap) {
        for top in &idoc.segments {
            match top.name.as_str() {
                "E1ADHDR" => {
                    assert_eq!(idoc.control_field("IDOCTYP"), Some("ALEAUD01"));
                    assert_eq!(idoc.control_field("MESTYP"), Some("ALEAUD"));
                    for state in &top.children {
                        out.push(Confirmation {
                            docnum: field(state, "DOCNUM").into(),
                            mestyp: field(top, "MESTYP").into(),
                            status: field(state, "STATUS").into(),
                            statxt: field(state, "STATXT").into(),
                            segment: state.clone(),
                        });
                    }
                }
                "E1STATS" => {
                    assert_eq!(idoc.control_field("IDOCTYP"), Some("SYSTAT01"));
                    assert_eq!(idoc.control_field("MESTYP"), Some("STATUS"));
                    out.push(Confirmation {
                        docnum: field(top, "DOCNUM").into(),
                        mestyp: String::new(),
                        status: field(top, "STATUS").into(),
                        statxt: field(top, "STATXT").into(),
                        segment: top.clone(),
                    });
                }
                other => panic!("not a status segment: {other}"),
            }
        }
    }
    out
}

async fn idoc_from_sap_gets_39_then_41(backend: Backend) {
    let Hub { app, sap, erp } = hub(backend, "ALEAUD01").await;
    let batcher = start_batcher(&app);
    let id =
        accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await)["id"].as_str().unwrap().to_string();
    let uuid = id.parse().unwrap();
    // The 39 goes into a status message before anything is delivered.
    until("the 39 is carried", async || {
        let rows = app.state.store.sap_statuses_of(uuid).await.unwrap();
        rows.iter().any(|r| r.status == "39" && r.batch_message_id.is_some())
    })
    .await;
    let worker = start_worker(&app);
    until("SAP has two confirmations", async || confirmations(&sap).len() >= 2).await;
    worker.cancel();
    batcher.cancel();
    assert_eq!(erp.received("orders").len(), 1, "the order reached erp once");

    let got = confirmations(&sap);
    let seen: Vec<(&str, &str, &str, &str)> = got
        .iter()
        .map(|c| (c.docnum.as_str(), c.mestyp.as_str(), c.status.as_str(), c.statxt.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            // ALEAUD01 reports the receiving system's status: 64 makes the sender's IDoc 39, 53 makes it 41.
            (DOCNUM, "ORDERS", "64", "IDoc stored by edihub as message &1"),
            (DOCNUM, "ORDERS", "53", "IDoc delivered by edihub to every destination"),
        ]
    );
    let stored = &got[0].segment;
    assert_eq!(field(stored, "STATYP"), "S");
    assert_eq!(field(stored, "STAPA1_LNG"), id, "the message id, whole in the long parameter");
    assert_eq!(field(stored, "STAPA1"), id.chars().take(19).collect::<String>() + "…", "cut to 20");
    let prtob = stored.children.iter().find(|s| s.name == "E1PRTOB").expect("E1PRTOB");
    assert_eq!(field(prtob, "OBJKEY"), id, "what the hub made of the IDoc");
    assert_eq!(status_idocs(&sap).len(), 2, "one status IDoc per batch");

    // The console's message page shows the status sent back, each change with its status message.
    let html = console_page(&app, &format!("/admin/messages/{id}")).await;
    let panel = html.split("<section id=\"sap-status\">").nth(1).expect("the Status to SAP panel");
    let codes: Vec<&str> = panel.split("<td class=\"sap-status-code\">").skip(1).map(|c| &c[..2]).collect();
    assert_eq!(codes, ["39", "41"]);
    assert!(panel.contains(&format!("IDoc stored by edihub as message {id}")), "the text with its parameter");
    let carrier = app.state.store.sap_statuses_of(uuid).await.unwrap()[0].batch_message_id.expect("carried");
    assert!(panel.contains(&format!("<a href=\"/admin/messages/{carrier}\">")), "links its status message");
    let status_page = console_page(&app, &format!("/admin/messages/{carrier}")).await;
    assert!(status_page.contains("<section id=\"sap-status\">"), "a status message lists what it carries");

    // The status IDocs are messages of the environment, which report no status themselves.
    let scope = Scope::new("acme", "prod");
    assert_eq!(app.count("acme", "prod").await, 3, "the order and two status IDocs");
    assert!(app.state.store.pending_sap_statuses(&scope, 10).await.unwrap().is_empty());
}

async fn failing_destination_gives_40_with_the_reason(backend: Backend) {
    let Hub { app, sap, erp } = hub(backend, "SYSTAT01").await;
    erp.always("orders", Reply::Status(500));
    let (batcher, worker) = (start_batcher(&app), start_worker(&app));
    let id =
        accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await)["id"].as_str().unwrap().to_string();
    until("SAP has the 40", async || confirmations(&sap).iter().any(|c| c.status == "40")).await;
    worker.cancel();
    batcher.cancel();
    let got = confirmations(&sap);
    let statuses: Vec<(&str, &str)> = got.iter().map(|c| (c.docnum.as_str(), c.status.as_str())).collect();
    assert_eq!(statuses, [(DOCNUM, "39"), (DOCNUM, "40")], "SYSTAT01 reports the sender's status itself");
    assert_eq!(got[0].statxt, "IDoc stored by edihub as message &1");
    let failed = &got[1];
    assert!(failed.statxt.starts_with("Delivery to erp failed: "), "{}", failed.statxt);
    assert!(failed.statxt.contains("500"), "the reason: {}", failed.statxt);
    assert!(failed.statxt.chars().count() <= 70, "cut to SAP's 70 characters");
    assert_eq!(field(&failed.segment, "STAPA1"), "erp");
    assert_eq!(field(&failed.segment, "STAPA2"), "500");
    assert_eq!(field(&failed.segment, "STATYP"), "E");
    assert_eq!(field(&failed.segment, "MANDT"), "100");
    let row = app.state.store.sap_statuses_of(id.parse().unwrap()).await.unwrap();
    assert_eq!(row.iter().map(|r| r.status.as_str()).collect::<Vec<_>>(), ["39", "40"]);
}

async fn resent_idoc_gets_its_status_again(backend: Backend) {
    let Hub { app, sap, erp: _erp } = hub(backend, "ALEAUD01").await;
    let (batcher, worker) = (start_batcher(&app), start_worker(&app));
    let first = app.post_xml(ACME_PROD, fixture("orders05.xml")).await;
    let id = accepted(&first)["id"].as_str().unwrap().to_string();
    until("SAP has the 53", async || confirmations(&sap).iter().any(|c| c.status == "53")).await;
    let before = confirmations(&sap).len();

    // SAP sends the confirmed IDoc again: a duplicate, and its status again.
    let again = app.post_xml(ACME_PROD, fixture("orders05.xml")).await;
    again.expect(200);
    assert_eq!(again.json()["id"], id.as_str(), "no second document");
    until("SAP has the status again", async || confirmations(&sap).len() > before).await;
    let last = confirmations(&sap).pop().expect("a confirmation");
    assert_eq!((last.docnum.as_str(), last.status.as_str()), (DOCNUM, "53"), "its current status: 41");

    // An IDoc of another sender owes it nothing.
    let other = String::from_utf8(fixture("orders05.xml"))
        .unwrap()
        .replace("<SNDPRN>Q01CLNT100</SNDPRN>", "<SNDPRN>OTHERSYS</SNDPRN>")
        .replace("<BELNR>", "<BELNR>9");
    let other_id = accepted(&app.post_xml(ACME_PROD, other).await)["id"].as_str().unwrap().to_string();
    let status_messages = app.count("acme", "prod").await - 2;
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    worker.cancel();
    batcher.cancel();
    assert!(app.state.store.sap_statuses_of(other_id.parse().unwrap()).await.unwrap().is_empty());
    assert_eq!(app.count("acme", "prod").await - 2, status_messages, "no status IDoc for it");
}

async fn racing_resends_queue_one_status(backend: Backend) {
    const N: usize = 16;
    let Hub { app, sap: _sap, erp: _erp } = hub(backend, "ALEAUD01").await;
    let scope = Scope::new("acme", "prod");
    let request =
        || receive_request(Some(&bearer(ACME_PROD)), Some("application/xml"), fixture("orders05.xml"), &[]);
    let answers = burst(&app, (0..N).map(|_| request()).collect()).await;
    let codes: Vec<u16> = answers.iter().map(|r| r.status.as_u16()).collect();
    assert_eq!(codes.iter().filter(|c| **c == 202).count(), 1, "{codes:?}");
    let pending = app.state.store.pending_sap_statuses(&scope, 100).await.unwrap();
    let seen: Vec<(&str, &str)> = pending.iter().map(|r| (r.docnum.as_str(), r.status.as_str())).collect();
    assert_eq!(seen, [(DOCNUM, "39")], "one status queued for the IDoc and its re-sends");

    let system = sap_system("ALEAUD01");
    let batch = edihub_server::sap_status::batch_once(&app.state, &scope, &system, false).await.unwrap();
    assert_eq!(batch.len(), 1, "one status IDoc");
    // Re-sent again at once after the status left: one status queued again.
    let answers = burst(&app, (0..N).map(|_| request()).collect()).await;
    assert!(answers.iter().all(|r| r.status.as_u16() == 200));
    let pending = app.state.store.pending_sap_statuses(&scope, 100).await.unwrap();
    let seen: Vec<(&str, &str)> = pending.iter().map(|r| (r.docnum.as_str(), r.status.as_str())).collect();
    assert_eq!(seen, [(DOCNUM, "39")]);
    assert_eq!(app.count("acme", "prod").await, 2, "the IDoc and one status IDoc");
}

async fn full_batch_goes_before_the_interval(backend: Backend) {
    let status = SapStatusConfig { idoc: "ALEAUD01".into(), interval: "1h".into(), max_per_idoc: 2 };
    let Hub { app, sap: _sap, erp: _erp } = hub_with(backend, sap_system_with(status)).await;
    let batcher = start_batcher(&app);
    let second = String::from_utf8(fixture("orders05.xml"))
        .unwrap()
        .replace("<DOCNUM>0000000000004711</DOCNUM>", "<DOCNUM>0000000000004712</DOCNUM>")
        .replace("<BELNR>", "<BELNR>2");
    let first =
        accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await)["id"].as_str().unwrap().to_string();
    let carried = async |id: &str| {
        let rows = app.state.store.sap_statuses_of(id.parse().unwrap()).await.unwrap();
        rows.first().and_then(|r| r.batch_message_id)
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(carried(&first).await, None, "one change waits for the interval or a second one");
    let second = accepted(&app.post_xml(ACME_PROD, second).await)["id"].as_str().unwrap().to_string();
    until("the full batch is stored", async || carried(&second).await.is_some()).await;
    batcher.cancel();
    let batch = carried(&first).await.expect("carried");
    assert_eq!(Some(batch), carried(&second).await, "both 39s in one status IDoc");
    let status = app.state.store.get_message(batch).await.unwrap().expect("the status message");
    assert_eq!(status.message_type, "ALEAUD01");
    let payload = String::from_utf8(status.payload.clone()).unwrap();
    assert_eq!(payload.matches("<E1STATE SEGMENT=\"1\">").count(), 2, "{payload}");
}

/// `orders05.xml` numbered `docnum`, its order `belnr`.
fn order(docnum: &str, belnr: &str) -> String {
    String::from_utf8(fixture("orders05.xml"))
        .unwrap()
        .replace(&format!("<DOCNUM>{DOCNUM}</DOCNUM>"), &format!("<DOCNUM>{docnum}</DOCNUM>"))
        .replace("<BELNR>4500012345</BELNR>", &format!("<BELNR>{belnr}</BELNR>"))
}

/// The pending status changes of acme/prod: (DOCNUM, status, text, parameters, message).
async fn pending(app: &TestApp) -> Vec<(String, String, String, Vec<String>, Option<uuid::Uuid>)> {
    let rows = app.state.store.pending_sap_statuses(&Scope::new("acme", "prod"), 100).await.unwrap();
    rows.into_iter().map(|r| (r.docnum, r.status, r.text, r.params.0, r.message_id)).collect()
}

async fn refused_packet_gets_40_with_the_reason(backend: Backend) {
    let Hub { app, sap, erp: _erp } = hub(backend, "ALEAUD01").await;
    // A packet of the order and an IDoc whose DOCNUM is over the limit: the whole packet is refused.
    let long = "1".repeat(101);
    let packet = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ORDERS05>{}{}</ORDERS05>",
        idoc_element(&fixture("orders05.xml")),
        idoc_element(order(&long, "4500099999").as_bytes())
    );
    let res = app.post_xml(ACME_PROD, packet.clone()).await;
    let detail = res.expect_problem(422, "the docnum (EDI_DC40.DOCNUM) of message 2 in the request");
    assert_eq!(app.count("acme", "prod").await, 0, "nothing stored as a message");
    // The IDoc with a SAP number gets the 40; the one whose number cannot be trusted gets none.
    let reason = format!("IDoc refused by edihub: {detail}");
    assert_eq!(
        pending(&app).await,
        [(DOCNUM.to_string(), "40".to_string(), reason.clone(), vec!["422".to_string()], None)]
    );

    // Sent again while the 40 is pending: the same answer, nothing more queued.
    let again = app.post_xml(ACME_PROD, packet).await;
    assert_eq!(again.expect_problem(422, "of message 2 in the request"), detail);
    assert_eq!(pending(&app).await.len(), 1, "one pending 40 per DOCNUM");

    let scope = Scope::new("acme", "prod");
    let batch =
        edihub_server::sap_status::batch_once(&app.state, &scope, &sap_system("ALEAUD01"), false).await;
    let batch = batch.unwrap();
    assert_eq!(batch.len(), 1, "one status IDoc");
    let worker = start_worker(&app);
    until("SAP has the 40", async || !confirmations(&sap).is_empty()).await;
    worker.cancel();
    let got = confirmations(&sap);
    assert_eq!(got.len(), 1);
    let c = &got[0];
    assert_eq!(
        (c.docnum.as_str(), c.mestyp.as_str(), c.status.as_str()),
        (DOCNUM, "ORDERS", "51"),
        "40 in SAP"
    );
    assert_eq!(c.statxt.chars().count(), 70, "cut to SAP's 70 characters: {}", c.statxt);
    assert!(c.statxt.ends_with('…'), "{}", c.statxt);
    assert!(reason.starts_with(c.statxt.trim_end_matches('…')), "{} / {reason}", c.statxt);
    assert_eq!(field(&c.segment, "STATYP"), "E");
    assert_eq!(field(&c.segment, "STAPA1"), "422");
    assert!(c.segment.children.iter().all(|s| s.name != "E1PRTOB"), "no message to name");
    assert_eq!(app.count("acme", "prod").await, 1, "the status IDoc only");

    // The status message's console page lists the refusal, about no message.
    let html = console_page(&app, &format!("/admin/messages/{}", batch[0])).await;
    let panel = html.split("<section id=\"sap-status\">").nth(1).expect("the Status to SAP panel");
    assert!(panel.contains("<span class=\"muted\">refused</span>"), "{panel}");
    assert!(panel.contains("IDoc refused by edihub: the docnum (EDI_DC40.DOCNUM)"), "{panel}");
}

async fn forbidden_type_and_reused_key_get_40(backend: Backend) {
    let Hub { app, sap, erp: _erp } =
        hub_configured(backend, sap_system("SYSTAT01"), Some(&["ORDERS05"])).await;
    // A type acme/prod's senders may not send: 403, a 40 with the reason.
    let other_type = order("0000000000004720", "4500000020").replace("ORDERS05", "ORDERS06");
    let res = app.post_xml(ACME_PROD, other_type).await;
    let forbidden = res.expect_problem(403, "may not send message type `ORDERS06`");

    // An Idempotency-Key reused with another IDoc: 422, a 40 for the IDoc refused, the first keeps its 39.
    let key = [("idempotency-key", "sap-run-1")];
    let first = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await;
    let id: uuid::Uuid = accepted(&first)["id"].as_str().unwrap().parse().unwrap();
    let res = app.post_xml_with(ACME_PROD, order("0000000000004721", "4500000021"), &key).await;
    let reused = res.expect_problem(422, "this Idempotency-Key was already used with a different payload");
    assert_eq!(app.count("acme", "prod").await, 1, "the first order only");

    assert_eq!(
        pending(&app).await,
        [
            (
                "0000000000004720".to_string(),
                "40".to_string(),
                format!("IDoc refused by edihub: {forbidden}"),
                vec!["403".to_string()],
                None
            ),
            (
                DOCNUM.to_string(),
                "39".to_string(),
                "IDoc stored by edihub as message &1".to_string(),
                vec![id.to_string()],
                Some(id)
            ),
            (
                "0000000000004721".to_string(),
                "40".to_string(),
                format!("IDoc refused by edihub: {reused}"),
                vec!["422".to_string()],
                None
            ),
        ]
    );

    let batcher = start_batcher(&app);
    let worker = start_worker(&app);
    until("SAP has the three statuses", async || confirmations(&sap).len() >= 3).await;
    worker.cancel();
    batcher.cancel();
    let got = confirmations(&sap);
    let seen: Vec<(&str, &str)> = got.iter().map(|c| (c.docnum.as_str(), c.status.as_str())).collect();
    // (The stored order's 41 may follow once erp has it.)
    assert_eq!(
        seen[..3],
        [("0000000000004720", "40"), (DOCNUM, "39"), ("0000000000004721", "40")],
        "SYSTAT01 reports the sender's status itself"
    );
    assert_eq!(field(&got[0].segment, "STAPA1"), "403");
    assert_eq!(field(&got[0].segment, "STATYP"), "E");
    assert_eq!(field(&got[2].segment, "STAPA1"), "422");
    assert!(got[2].statxt.starts_with("IDoc refused by edihub: this Idempotency-Key"), "{}", got[2].statxt);
}

/// `GET path` as a browser with the admin credential; the page's HTML.
async fn console_page(app: &TestApp, path: &str) -> String {
    let request = axum::http::Request::builder()
        .uri(path)
        .header("authorization", basic("admin", ADMIN_TOKEN))
        .header("accept", "text/html")
        .body(axum::body::Body::empty())
        .unwrap();
    let res = app.send(request).await;
    res.expect(200);
    res.text()
}
