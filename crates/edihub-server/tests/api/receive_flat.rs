//! Flat-file IDocs on the receive endpoint (SAP's fixed-width file format,
//! `application/x-sap-idoc-flat` or sniffed from `EDI_DC`): one message per
//! control record, fingerprinted like the IDoc's XML form, so the same IDoc
//! sent once as XML and once flat is one message. Records of the wrong
//! length, a second control record for one IDoc and bytes invalid in the
//! file's encoding are refused naming the record, and nothing is stored.
//! `idoc_descriptions` name the IDoc type descriptions that split segment
//! data into fields; a file that cannot be used stops the start naming it.

use std::path::PathBuf;

use crate::support::*;

backend_tests!(
    flat_file_by_content_type_and_sniffed_is_one_message,
    flat_file_is_a_duplicate_of_its_xml_twin,
    xml_twin_is_a_duplicate_of_the_flat_file,
    record_of_the_wrong_length_is_422_naming_it,
    second_control_record_for_one_idoc_is_422,
    a_file_over_max_idocs_per_packet_stops_at_the_first_idoc_over,
    two_idocs_in_one_file_are_a_packet,
    bytes_of_another_encoding_are_400_naming_the_record,
    flat_file_in_a_declared_charset_is_read,
    unsupported_type_hint_names_the_flat_type,
);

const FLAT: &str = "flat/sapb2bex_ordrsp.idoc";
const XML: &str = "real/sapb2bex_ordrsp-idoc.xml";
const FLAT_TYPE: &str = "application/x-sap-idoc-flat";
/// MANDT and DOCNUM as the fixture's records hold them (3 + 16 characters).
const CLIENT_DOCNUM: &str = "4005220230         ";

fn description_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/idoc/flat").join(name);
    path.to_str().expect("UTF-8 path").to_string()
}

/// ORDERS05 keyed by the order numbers, with the ORDERS05 description.
fn described() -> TestConfig {
    TestConfig::new()
        .with(|c| c.idoc_descriptions = vec![description_file("orders05-ordrsp.description.txt")])
}

fn flat_text() -> String {
    String::from_utf8(fixture(FLAT)).unwrap()
}

async fn post(app: &TestApp, content_type: Option<&str>, body: impl Into<Vec<u8>>) -> TestResponse {
    app.post_receive(Some(&bearer(ACME_PROD)), content_type, body, &[]).await
}

/// Nothing stored and no event written.
async fn assert_nothing_stored(app: &TestApp) {
    assert_eq!(app.count_prod().await, 0);
    assert!(app.audit_events("action=message.duplicate_blocked").await.is_empty());
}

async fn flat_file_by_content_type_and_sniffed_is_one_message(backend: Backend) {
    let app = TestApp::new(backend).await;
    let first = accepted(&post(&app, Some(FLAT_TYPE), fixture(FLAT)).await);
    assert_eq!(first["message_type"], "ORDERS05");
    assert_eq!(first["mestyp"], "ORDRSP");
    assert_eq!(first["docnum"], "5220230");
    let id = first["id"].as_str().unwrap();
    let stored = app.state.store.get_message(id.parse().unwrap()).await.unwrap().expect("stored");
    assert_eq!(stored.payload, fixture(FLAT), "the flat file is kept as received");
    assert_eq!(stored.content_type.as_deref(), Some(FLAT_TYPE));
    // Sniffed from EDI_DC: the same IDoc, a duplicate of the first.
    for content_type in [Some("text/plain"), Some("application/octet-stream"), None] {
        let again = post(&app, content_type, fixture(FLAT)).await;
        let dup = duplicate_of(&again, id);
        assert_eq!(dup["fingerprint"], first["fingerprint"], "{content_type:?}");
    }
    assert_eq!(app.count_prod().await, 1);
}

async fn flat_file_is_a_duplicate_of_its_xml_twin(backend: Backend) {
    let app = TestApp::start(backend, described()).await;
    let xml = accepted(&app.post_xml(ACME_PROD, fixture(XML)).await);
    let flat = post(&app, Some(FLAT_TYPE), fixture(FLAT)).await;
    let dup = duplicate_of(&flat, xml["id"].as_str().unwrap());
    assert_eq!(dup["fingerprint"], xml["fingerprint"]);
    assert_eq!(dup["detected_by"], "fingerprint");
    let id = xml["id"].as_str().unwrap().parse().unwrap();
    let row = app.state.store.get_message(id).await.unwrap().expect("stored");
    // ORDERS05's key fields found values in the XML: the flat file matched them.
    assert_eq!(row.fingerprint_basis, "key_fields");
    assert_eq!(app.count_prod().await, 1);
}

async fn xml_twin_is_a_duplicate_of_the_flat_file(backend: Backend) {
    let app = TestApp::start(backend, described()).await;
    let flat = accepted(&post(&app, None, fixture(FLAT)).await);
    let id = flat["id"].as_str().unwrap();
    let row = app.state.store.get_message(id.parse().unwrap()).await.unwrap().expect("stored");
    assert_eq!(row.fingerprint_basis, "key_fields", "the description split SDATA into ORDERS05's key fields");
    let values = row.key_values.0.to_string();
    assert!(values.contains("0000347163"), "E1EDK01.BELNR read from the flat file: {values}");
    let xml = app.post_xml(ACME_PROD, fixture(XML)).await;
    assert_eq!(duplicate_of(&xml, id)["fingerprint"], flat["fingerprint"]);
    assert_eq!(app.count_prod().await, 1);
}

async fn record_of_the_wrong_length_is_422_naming_it(backend: Backend) {
    let app = TestApp::new(backend).await;
    let mut lines: Vec<String> = flat_text().lines().map(str::to_string).collect();
    // Trailing blanks cut off record 3, as a file transfer that trims lines does.
    lines[2] = lines[2].trim_end().to_string();
    let found = lines[2].chars().count();
    let body = lines.join("\n") + "\n";
    let detail = post(&app, Some(FLAT_TYPE), body).await.expect_problem(422, "flat-file IDoc record 3");
    assert!(
        detail.contains(&format!("has {found} characters; an EDI_DD40 data record has 1063")),
        "{detail}"
    );
    // A control record one character short.
    let mut lines: Vec<String> = flat_text().lines().map(str::to_string).collect();
    lines[0].pop();
    let body = lines.join("\n") + "\n";
    post(&app, Some("text/plain"), body)
        .await
        .expect_problem(422, "flat-file IDoc record 1 (EDI_DC40) has 523");
    assert_nothing_stored(&app).await;
}

async fn second_control_record_for_one_idoc_is_422(backend: Backend) {
    let app = TestApp::new(backend).await;
    let text = flat_text();
    let control = text.lines().next().unwrap();
    let body = format!("{text}{control}\n");
    let records = text.lines().count() + 1;
    let detail = post(&app, Some(FLAT_TYPE), body).await.expect_problem(422, &format!("record {records}"));
    assert!(detail.contains("is a second control record for IDoc 5220230"), "{detail}");
    assert_nothing_stored(&app).await;
}

/// Over `max_idocs_per_packet` (1 here), a flat file is refused with 413
/// at its second control record, before that record is read: the same
/// file is refused for its repeated DOCNUM once the limit takes it in (2).
/// Nothing is stored either way.
async fn a_file_over_max_idocs_per_packet_stops_at_the_first_idoc_over(backend: Backend) {
    let text = flat_text();
    let body = format!("{text}{}\n", text.lines().next().unwrap());
    let app = TestApp::start(backend, TestConfig::new().with(|c| c.max_idocs_per_packet = 1)).await;
    post(&app, Some(FLAT_TYPE), body.clone())
        .await
        .expect_problem(413, "the request holds more than max_idocs_per_packet (1) messages");
    assert_nothing_stored(&app).await;
    let app = TestApp::start(backend, TestConfig::new().with(|c| c.max_idocs_per_packet = 2)).await;
    let detail = post(&app, Some(FLAT_TYPE), body).await.expect_problem(422, "second control record");
    assert!(detail.contains("IDoc 5220230"), "{detail}");
    assert_nothing_stored(&app).await;
}

async fn two_idocs_in_one_file_are_a_packet(backend: Backend) {
    let app = TestApp::new(backend).await;
    let text = flat_text();
    let second = text.replace(CLIENT_DOCNUM, "4005220231         ");
    assert_ne!(second, text);
    let res = post(&app, Some(FLAT_TYPE), format!("{text}{second}")).await;
    res.expect(202);
    let body = res.json();
    let messages = body["messages"].as_array().unwrap_or_else(|| panic!("a packet: {body}"));
    let docnums: Vec<&str> = messages.iter().map(|m| m["docnum"].as_str().unwrap()).collect();
    assert_eq!(docnums, ["5220230", "5220231"]);
    assert_eq!(app.count_prod().await, 2);
}

async fn bytes_of_another_encoding_are_400_naming_the_record(backend: Backend) {
    let app = TestApp::new(backend).await;
    // Record 3 written by a Latin-1 system (é as one byte), the rest UTF-8
    // with a multi-byte character in record 2: no one encoding reads it.
    let mut lines: Vec<Vec<u8>> = flat_text().lines().map(|l| l.as_bytes().to_vec()).collect();
    let at = lines[2].len() - 1;
    lines[2][at] = 0xE9;
    let at = lines[1].len() - 1;
    lines[1].splice(at..=at, "é".bytes());
    let body = lines.join(&b'\n');
    let detail = post(&app, Some(FLAT_TYPE), body).await.expect_problem(400, "flat-file IDoc record 3");
    assert!(detail.contains("invalid UTF-8"), "{detail}");
    assert_nothing_stored(&app).await;
}

async fn flat_file_in_a_declared_charset_is_read(backend: Backend) {
    let app = TestApp::new(backend).await;
    let text = flat_text();
    let last = text.lines().last().unwrap();
    // The last character of the last record becomes é, written in ISO-8859-1.
    let latin: Vec<u8> = text
        .replacen(last, &format!("{}é", &last[..last.len() - 1]), 1)
        .chars()
        .map(|c| u8::try_from(u32::from(c)).expect("Latin-1"))
        .collect();
    let res = post(&app, Some("application/x-sap-idoc-flat; charset=iso-8859-1"), latin).await;
    let body = accepted(&res);
    assert_eq!(body["docnum"], "5220230");
    assert_eq!(app.count_prod().await, 1);
}

async fn unsupported_type_hint_names_the_flat_type(backend: Backend) {
    let app = TestApp::new(backend).await;
    let detail = post(&app, Some("application/pdf"), fixture(FLAT)).await.expect_problem(415, "");
    assert!(detail.contains(FLAT_TYPE), "the hint lists the flat type: {detail}");
    assert_nothing_stored(&app).await;
}
