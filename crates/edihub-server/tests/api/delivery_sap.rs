//! SAP as a destination (`format = "sap-idoc-xml"`), on both backends:
//! an IDoc received by the hub is posted as IDoc-XML to a stand-in for
//! SAP's inbound IDoc-XML service that checks it as SAP's rules say
//! (`support::sap_receiver`): Basic credentials, `sap-client`, the control
//! record addressed from the hub to the environment's SAP system, the XML
//! shape, and with the IDoc type's description the segments' order and
//! fields. A message that is no IDoc is never sent and its delivery fails
//! with the reason. No SAP system is available to the tests.

use std::path::PathBuf;

use edihub_core::sap::SapProfile;
use edihub_core::{IdocDescription, IdocDescriptions};
use edihub_server::config::SapSystemConfig;

use crate::delivery::{deliveries, has_status, start_worker, until};
use crate::support::sap_receiver::SapReceiver;
use crate::support::*;

backend_tests!(
    received_idoc_reaches_sap_as_idoc_xml,
    flat_file_reaches_sap_in_its_described_order,
    message_that_is_no_idoc_is_not_sent,
);

const PASSWORD: &str = "sap-rfc-user-password";
const DESCRIPTION: &str = "orders05-ordrsp.description.txt";

fn sap_system() -> SapSystemConfig {
    SapSystemConfig {
        logical_system: "S4HCLNT100".into(),
        partner_type: "LS".into(),
        port: "SAPS4H".into(),
        client: "100".into(),
        hub_partner: "EDIHUB".into(),
        hub_partner_type: "LS".into(),
        hub_port: "EDIHUB".into(),
        status: None,
    }
}

fn description_path() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/idoc/flat").join(DESCRIPTION);
    path.to_str().expect("UTF-8 path").to_string()
}

fn descriptions() -> IdocDescriptions {
    let mut all = IdocDescriptions::new();
    let text = std::fs::read_to_string(description_path()).expect("description");
    all.insert(IdocDescription::read(&text).expect("valid description")).expect("one description");
    all
}

/// The hub with acme/prod's SAP system and a `sap-idoc-xml` destination
/// `s4h` to `receiver`, and the receiver, which knows `known` types.
async fn hub_and_sap(
    backend: Backend,
    known: IdocDescriptions,
    hub_describes: bool,
) -> (TestApp, SapReceiver) {
    let sap = SapReceiver::start(sap_system().profile(), known, basic("EDIHUB_RFC", PASSWORD)).await;
    let toml = format!(
        "[delivery]\npoll_interval_ms = 50\nretry_schedule = [\"50ms\"]\n[[destinations]]\nid = \"s4h\"\n\
         tenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{}\"\nformat = \"sap-idoc-xml\"\n\
         basic_auth = {{ user = \"EDIHUB_RFC\", password_env = \"SAP_PASSWORD\" }}\n",
        sap.url()
    );
    let config = TestConfig::new().delivery_toml(&toml).secret("SAP_PASSWORD", PASSWORD).with(|c| {
        let acme = c.tenants.iter_mut().find(|t| t.id == "acme").expect("acme");
        acme.environments.iter_mut().find(|e| e.id == "prod").expect("prod").sap = Some(sap_system());
        if hub_describes {
            c.idoc_descriptions = vec![description_path()];
        }
    });
    (TestApp::start(backend, config).await, sap)
}

fn only_idoc(sap: &SapReceiver) -> edihub_core::sap::SapIdoc {
    let calls = sap.calls();
    let [call] = calls.as_slice() else { panic!("one call: {calls:?}") };
    let idocs = call.verdict.clone().unwrap_or_else(|p| panic!("SAP's rules refused it: {p:?}"));
    let [idoc] = idocs.as_slice() else { panic!("one IDoc per call: {idocs:?}") };
    assert_eq!(call.query, "sap-client=100");
    idoc.clone()
}

async fn received_idoc_reaches_sap_as_idoc_xml(backend: Backend) {
    let (app, sap) = hub_and_sap(backend, IdocDescriptions::new(), false).await;
    let stop = start_worker(&app);
    let id =
        accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await)["id"].as_str().unwrap().to_string();
    until("s4h is delivered", async || has_status(&app, &id, "s4h", "delivered").await).await;
    stop.cancel();
    let idoc = only_idoc(&sap);
    let profile: SapProfile = sap_system().profile();
    let field = |n: &str| idoc.control_field(n).map(str::to_string);
    assert_eq!(idoc.root, "ORDERS05");
    assert_eq!(field("DOCNUM").as_deref(), Some("0000000000004711"), "the IDoc keeps its number");
    assert_eq!(field("IDOCTYP").as_deref(), Some("ORDERS05"));
    assert_eq!(field("MESTYP").as_deref(), Some("ORDERS"));
    assert_eq!(field("MANDT").as_deref(), Some(profile.client.as_str()));
    assert_eq!(field("DIRECT").as_deref(), Some("2"), "inbound to SAP");
    assert_eq!(field("RCVPRN").as_deref(), Some("S4HCLNT100"));
    assert_eq!(field("RCVPOR").as_deref(), Some("SAPS4H"));
    assert_eq!(field("RCVPRT").as_deref(), Some("LS"));
    assert_eq!(field("SNDPRN").as_deref(), Some("EDIHUB"));
    assert_eq!(field("SNDPOR").as_deref(), Some("EDIHUB"));
    let e1edk01 = idoc.segments.iter().find(|s| s.name == "E1EDK01").expect("E1EDK01 kept");
    let stored = app.state.store.get_message(id.parse().unwrap()).await.unwrap().expect("stored");
    let belnr = e1edk01.fields.iter().find(|(n, _)| n == "BELNR").map(|(_, v)| v.clone());
    let key = stored.key_values.0[0]["values"][0].as_str().map(str::to_string);
    assert_eq!(belnr, key, "the order number SAP gets is the one the hub keyed on");
    let calls = sap.calls();
    assert!(calls[0].headers["content-type"].to_str().unwrap().starts_with("application/xml"));
    let body = String::from_utf8(calls[0].body.to_vec()).expect("UTF-8");
    assert!(
        body.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ORDERS05><IDOC BEGIN=\"1\"><EDI_DC40 SEGMENT=\"1\">"
        ),
        "{body}"
    );
}

async fn flat_file_reaches_sap_in_its_described_order(backend: Backend) {
    let (app, sap) = hub_and_sap(backend, descriptions(), true).await;
    let stop = start_worker(&app);
    let res = app
        .post_receive(
            Some(&bearer(ACME_PROD)),
            Some("application/x-sap-idoc-flat"),
            fixture("flat/sapb2bex_ordrsp.idoc"),
            &[],
        )
        .await;
    let id = accepted(&res)["id"].as_str().unwrap().to_string();
    until("s4h is delivered", async || has_status(&app, &id, "s4h", "delivered").await).await;
    stop.cancel();
    // The check read the segments against the description: order, fields, lengths.
    let idoc = only_idoc(&sap);
    assert_eq!(idoc.control_field("DOCNUM"), Some("5220230"));
    assert_eq!(idoc.control_field("MESTYP"), Some("ORDRSP"));
    let names: Vec<&str> = idoc.segments.iter().map(|s| s.name.as_str()).collect();
    let d = descriptions();
    let d = d.get("ORDERS05").expect("described");
    let positions: Vec<usize> = names.iter().map(|n| d.position(n).expect("a defined segment")).collect();
    assert!(positions.windows(2).all(|w| w[0] <= w[1]), "in the definition's order: {names:?}");
    assert_eq!(names.first(), Some(&"E1EDK01"));
}

async fn message_that_is_no_idoc_is_not_sent(backend: Backend) {
    let (app, sap) = hub_and_sap(backend, IdocDescriptions::new(), false).await;
    let stop = start_worker(&app);
    let res =
        app.post_json(ACME_PROD, r#"{"order":{"id":"json-1"}}"#, &[("x-message-type", "shop.order")]).await;
    let id = accepted(&res)["id"].as_str().unwrap().to_string();
    until("s4h has failed", async || has_status(&app, &id, "s4h", "failed").await).await;
    stop.cancel();
    let delivery = deliveries(&app, &id).await.remove("s4h").expect("the delivery");
    let log = delivery["attempt_log"].to_string();
    assert!(log.contains("cannot be written as IDoc-XML"), "{log}");
    assert!(sap.calls().is_empty(), "nothing reached SAP");
}
