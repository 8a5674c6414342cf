//! Acknowledgements over HTTP: `?ack=997|999|contrl` or an EDI `Accept`
//! answers an interchange with its 997, 999 or CONTRL (a TA1 or a rejecting
//! UCI for a repeated interchange), with the JSON answer's status, and a
//! control number of its own per partner. Every acknowledgement is parsed
//! back with the hub's parser and checked by an independent one: pyx12 for
//! X12, pydifact for EDIFACT (`tests/ack_check/`, installed by
//! `scripts/test.sh`). Requests no acknowledgement fits are refused before
//! anything is stored.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::support::*;
use axum::http::header;
use edihub_core::{BodyFormat, ParsedBody, parse_body};
use serde_json::{Value, json};

backend_tests!(
    x12_997_then_a_ta1_for_the_repeated_interchange,
    x12_acks_pass_pyx12,
    contrl_then_a_rejection_of_the_repeated_interchange,
    ack_numbers_count_per_partner,
    requests_no_ack_fits_store_nothing,
    envelope_errors_stay_problem_documents,
);

pub(crate) const X12_850: &str = "sapabh_O2C-ASCX12-004010_01a-SalesOrderRequest_X12-850.x12";
const X12_DUAL: &str = "staedi_invoice810_po850_dual.edi";
pub(crate) const D96A: &str = "sapabh_O2C-UNEDIFACT-D96A_01a-SalesOrderRequest_ORDERS-D96A-EAN008.edi";
const D10B: &str = "sapabh_O2C-UNEDIFACT-D10B_01a-SalesOrderRequest_ORDERS-D10B-EAN008.edi";

pub(crate) fn real(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/edifact/real").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Posts an interchange as acme/prod with `?<query>` and extra headers.
pub(crate) async fn post(
    app: &TestApp,
    body: Vec<u8>,
    query: &str,
    headers: &[(&str, &str)],
) -> TestResponse {
    let mut request =
        receive_request(Some(&bearer(ACME_PROD)), Some("application/octet-stream"), body, headers);
    *request.uri_mut() = format!("{RECEIVE}?{query}").parse().expect("uri");
    app.send(request).await
}

/// Asserts the acknowledgement's content type and parses it back with the hub's parser.
#[track_caller]
pub(crate) fn ack_of(res: &TestResponse, media: &str) -> ParsedBody {
    assert_eq!(res.header("content-type"), Some(media), "body: {}", res.text());
    parse_body(&res.body, Some(media))
        .unwrap_or_else(|e| panic!("the ack does not parse back: {e}\n{}", res.text()))
}

/// The segments of one parsed message as JSON arrays (tag first).
pub(crate) fn segments(ack: &ParsedBody, index: usize) -> Vec<Value> {
    ack.documents[index].value().as_array().expect("segments").clone()
}

/// Runs a checker of `tests/ack_check` on `text`; its stdout.
fn python_check(script: &str, module: &str, text: &[u8]) -> String {
    let import = Command::new("python3").args(["-c", &format!("import {module}")]).output();
    assert!(
        import.as_ref().is_ok_and(|o| o.status.success()),
        "python3 cannot import `{module}`; install it with `python3 -m pip install {module}` (scripts/test.sh does): {import:?}"
    );
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/ack_check").join(script);
    let mut child = Command::new("python3")
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    child.stdin.take().expect("stdin").write_all(text).expect("write the ack");
    let out = child.wait_with_output().expect("python3 finishes");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script} refuses the acknowledgement:\n{}\n{stdout}{}",
        String::from_utf8_lossy(text),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// pyx12 validates an X12 acknowledgement.
pub(crate) fn pyx12_valid(res: &TestResponse) {
    assert_eq!(python_check("x12_valid.py", "pyx12", &res.body).trim(), "valid");
}

/// pydifact's reading of an EDIFACT acknowledgement (round trip checked).
pub(crate) fn pydifact_read(res: &TestResponse) -> Value {
    serde_json::from_str(&python_check("edifact_read.py", "pydifact", &res.body))
        .expect("JSON from edifact_read.py")
}

async fn x12_997_then_a_ta1_for_the_repeated_interchange(backend: Backend) {
    let app = TestApp::new(backend).await;
    let first = post(&app, real(X12_850), "ack=997", &[]).await;
    first.expect(202);
    assert!(!first.replayed());
    let ack = ack_of(&first, "application/EDI-X12");
    assert_eq!(ack.format, BodyFormat::X12);
    let ic = ack.interchange.as_ref().expect("an interchange");
    // Sender and receiver swapped; the partner's first acknowledgement number.
    assert_eq!((ic.sender.id.as_str(), ic.receiver.id.as_str()), ("012345678", "TPASCX12"));
    assert_eq!(ic.control_number, "000000001");
    let [set] = ack.documents.as_slice() else { panic!("one 997: {}", first.text()) };
    assert_eq!(set.edi_header().unwrap().hub_type(), "X12.997");
    assert_eq!(
        segments(&ack, 0),
        [
            json!(["AK1", "PO", "6267"]),
            json!(["AK2", "850", "0001"]),
            json!(["AK5", "A"]),
            json!(["AK9", "A", "1", "1", "1"])
        ]
    );
    assert_eq!(app.count_prod().await, 1);

    // The same interchange again: nothing stored, 200 as for JSON, a TA1
    // rejecting the copy as a duplicate, under the next number.
    let again = post(&app, real(X12_850), "ack=997", &[]).await;
    again.expect(200);
    assert!(again.replayed());
    assert_eq!(again.header("content-type"), Some("application/EDI-X12"));
    let text = again.text();
    assert!(text.contains("*000000002*0*P*>~TA1*000006267*240229*0339*R*025~IEA*0*000000002~"), "{text}");
    assert_eq!(app.count_prod().await, 1);
    assert_eq!(app.audit_events("action=interchange.duplicate_blocked").await.len(), 1);
}

async fn x12_acks_pass_pyx12(backend: Backend) {
    let app = TestApp::new(backend).await;
    // Two groups: one 997 for each, in one FA group.
    let first = post(&app, real(X12_DUAL), "", &[("accept", "application/EDI-X12")]).await;
    first.expect(202);
    let ack = ack_of(&first, "application/EDI-X12");
    assert_eq!(ack.documents.len(), 2, "{}", first.text());
    assert_eq!(segments(&ack, 0)[5], json!(["AK9", "A", "2", "2", "2"]));
    pyx12_valid(&first);
    // The repeat's TA1 in a 00501 envelope, as a 999 was asked for.
    let repeat = post(&app, real(X12_DUAL), "ack=999", &[]).await;
    repeat.expect(200);
    assert!(
        repeat.text().contains("*00501*000000002*0*T*>~TA1*000000020*960807*1548*R*025~"),
        "{}",
        repeat.text()
    );
    pyx12_valid(&repeat);
    // A new interchange number with the same transaction sets: without key
    // fields each set is identified by ISA13 + GS06 + ST02, so they are new
    // sets, acknowledged as accepted.
    let renumbered = String::from_utf8(real(X12_DUAL)).unwrap().replace("000000020", "000000021");
    let third = post(&app, renumbered.into_bytes(), "ack=999", &[]).await;
    third.expect(202);
    let ack = ack_of(&third, "application/EDI-X12");
    assert_eq!(ack.documents[0].edi_header().unwrap().hub_type(), "X12.999");
    assert_eq!(segments(&ack, 0)[0], json!(["AK1", "IN", "1", "004010"]));
    assert_eq!(segments(&ack, 1)[2], json!(["IK5", "A"]));
    pyx12_valid(&third);
    assert_eq!(app.count_prod().await, 6);
}

async fn contrl_then_a_rejection_of_the_repeated_interchange(backend: Backend) {
    let app = TestApp::new(backend).await;
    let first = post(&app, real(D96A), "", &[("accept", "application/EDIFACT")]).await;
    first.expect(202);
    let ack = ack_of(&first, "application/EDIFACT");
    assert_eq!(ack.documents[0].edi_header().unwrap().hub_type(), "EDIFACT.CONTRL");
    let read = pydifact_read(&first);
    assert_eq!(read["sender"], json!(["Company_UNEDIFACT_ID", "ZZ"]));
    assert_eq!(read["recipient"], json!(["TP_UNEDIFACT_ID", "ZZ"]));
    assert_eq!(read["syntax_identifier"], json!(["UNOA", 2]));
    assert_eq!(read["control_reference"], "1");
    let contrl = &read["messages"][0];
    assert_eq!(contrl["identifier"], json!(["CONTRL", "D", "3", "UN"]));
    assert_eq!(
        contrl["segments"],
        json!([
            ["UCI", "36790", ["TP_UNEDIFACT_ID", "ZZ"], ["Company_UNEDIFACT_ID", "ZZ"], "7"],
            ["UCM", "1", ["ORDERS", "D", "96A", "UN", "EAN008"], "7"]
        ])
    );

    // The interchange again: rejected as a duplicate (action 4, syntax
    // error 26), under the next number. The D10B file repeats interchange
    // 36790 of the same sender with other content: the same rejection, 422.
    let rejected =
        json!([["UCI", "36790", ["TP_UNEDIFACT_ID", "ZZ"], ["Company_UNEDIFACT_ID", "ZZ"], "4", "26"]]);
    let again = post(&app, real(D96A), "ack=contrl", &[]).await;
    again.expect(200);
    assert!(again.replayed());
    let read = pydifact_read(&again);
    assert_eq!(read["control_reference"], "2");
    assert_eq!(read["messages"][0]["segments"], rejected);
    let other = post(&app, real(D10B), "ack=contrl", &[]).await;
    other.expect(422);
    let read = pydifact_read(&other);
    assert_eq!(read["control_reference"], "3");
    assert_eq!(read["messages"][0]["segments"], rejected);
    assert_eq!(app.count_prod().await, 1);
}

async fn ack_numbers_count_per_partner(backend: Backend) {
    let app = TestApp::new(backend).await;
    let number = |res: &TestResponse| pydifact_read(res)["control_reference"].as_str().unwrap().to_string();
    let other =
        || String::from_utf8(real(D96A)).unwrap().replace("TP_UNEDIFACT_ID", "OTHER_PARTNER").into_bytes();
    let first_other = post(&app, other(), "ack=contrl", &[]).await;
    first_other.expect(202);
    assert_eq!(number(&first_other), "1");
    let d96a = post(&app, real(D96A), "ack=contrl", &[]).await;
    d96a.expect(202);
    assert_eq!(number(&d96a), "1");
    assert_eq!(number(&post(&app, real(D96A), "ack=contrl", &[]).await), "2");
    // A request without an acknowledgement takes no number.
    post(&app, real(D96A), "", &[]).await.expect(200);
    assert_eq!(number(&post(&app, other(), "ack=contrl", &[]).await), "2");
    // Another environment counts on its own.
    let mut qa = receive_request(Some(&bearer(ACME_QA)), Some("application/EDIFACT"), real(D96A), &[]);
    *qa.uri_mut() = format!("{RECEIVE}?ack=contrl").parse().unwrap();
    assert_eq!(number(&app.send(qa).await), "1");
}

async fn requests_no_ack_fits_store_nothing(backend: Backend) {
    let app = TestApp::new(backend).await;
    let xml = || fixture("orders05.xml");
    post(&app, real(D96A), "ack=997", &[])
        .await
        .expect_problem(400, "this interchange is EDIFACT: ask for ack=contrl");
    post(&app, real(X12_850), "ack=contrl", &[]).await.expect_problem(400, "ask for ack=997 or ack=999");
    post(&app, real(X12_850), "ack=998", &[]).await.expect_problem(400, "ack must be 997, 999 or contrl");
    post(&app, xml(), "ack=997", &[]).await.expect_problem(400, "only EDIFACT and X12 interchanges have");
    let only_x12 = [("accept", "application/EDI-X12")];
    post(&app, xml(), "", &only_x12)
        .await
        .expect_problem(406, "IDoc-XML has no acknowledgement and is answered as application/json");
    post(&app, real(D96A), "", &only_x12)
        .await
        .expect_problem(406, "an EDIFACT interchange is acknowledged as application/EDIFACT");
    assert_eq!(app.count_prod().await, 0, "nothing stored");

    // An Accept that also allows JSON gets JSON.
    let res = post(&app, xml(), "", &[("accept", "application/EDI-X12, application/json;q=0.5")]).await;
    accepted(&res);
    // JSON preferred over the acknowledgement: JSON.
    let res = post(&app, real(D96A), "", &[("accept", "application/json, application/EDIFACT;q=0.5")]).await;
    res.expect(202);
    assert_eq!(res.header(header::CONTENT_TYPE.as_str()), Some("application/json"));
    assert_eq!(app.count_prod().await, 2);
}

async fn envelope_errors_stay_problem_documents(backend: Backend) {
    let app = TestApp::new(backend).await;
    // Without a readable header there is no one to acknowledge: a problem document.
    let short = b"ISA*00*          *00*".to_vec();
    post(&app, short, "ack=997", &[]).await.expect_problem(400, "ISA is truncated");
    let unsupported = String::from_utf8(real(D96A)).unwrap().replace("UNOA", "UNOZ");
    post(&app, unsupported.into_bytes(), "ack=contrl", &[]).await.expect_problem(400, "UNOZ");
    // An acknowledgement of the other syntax: the refusal's own problem document.
    let wrong_count = String::from_utf8(real(X12_850)).unwrap().replace("SE*10*0001", "SE*9*0001");
    post(&app, wrong_count.into_bytes(), "ack=contrl", &[]).await.expect_problem(422, "SE01");
    // No acknowledgement asked for: as before.
    let truncated = real(D96A)[..120].to_vec();
    post(&app, truncated, "", &[]).await.expect_problem(400, "EDIFACT syntax error");
    assert_eq!(app.count_prod().await, 0);
    // None of them took an acknowledgement number.
    let ok = post(&app, real(X12_850), "ack=997", &[]).await;
    ok.expect(202);
    assert_eq!(ack_of(&ok, "application/EDI-X12").interchange.unwrap().control_number, "000000001");
}
