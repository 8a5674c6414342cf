//! EDIFACT and X12 interchanges on the receive endpoint: one message per
//! transaction set, answered like a packet with the interchange's envelope.
//! Dedup in two layers: a repeated interchange control number (per sender
//! and receiver) is a duplicate of the whole interchange; in a new
//! interchange each message is deduplicated on its own. Envelopes whose
//! counts disagree (422) or that are malformed (400) store nothing.

use std::path::PathBuf;

use crate::support::*;
use serde_json::Value;
use tokio::task::JoinSet;

backend_tests!(
    x12_order_then_resend_is_a_duplicate,
    edifact_cross_version_pair_is_one_order,
    interchange_with_three_sets_gives_three_results,
    interchange_numbers_are_scoped_by_sender,
    one_interchange_sent_at_once_is_stored_once,
    counts_that_disagree_are_422_and_store_nothing,
    syntax_errors_are_400_and_store_nothing,
);

/// The message types of the demo configuration, with their key fields.
fn edi_types() -> TestConfig {
    TestConfig::new()
        .message_type("X12.850", |t| t.duplicate_key_fields = strings(["BEG03"]))
        .message_type("EDIFACT.ORDERS", |t| t.duplicate_key_fields = strings(["BGM.02"]))
}

fn real(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/edifact/real").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

const X12_850: &str = "sapabh_O2C-ASCX12-004010_01a-SalesOrderRequest_X12-850.x12";
const D96A: &str = "sapabh_O2C-UNEDIFACT-D96A_01a-SalesOrderRequest_ORDERS-D96A-EAN008.edi";
const D10B: &str = "sapabh_O2C-UNEDIFACT-D10B_01a-SalesOrderRequest_ORDERS-D10B-EAN008.edi";

async fn post(app: &TestApp, content_type: Option<&str>, body: impl Into<Vec<u8>>) -> TestResponse {
    app.post_receive(Some(&bearer(ACME_PROD)), content_type, body, &[]).await
}

fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().unwrap_or_else(|| panic!("messages array: {body}"))
}

async fn x12_order_then_resend_is_a_duplicate(backend: Backend) {
    let app = TestApp::start(backend, edi_types()).await;
    let first = post(&app, Some("application/EDI-X12"), real(X12_850)).await;
    first.expect(202);
    let body = first.json();
    let ic = &body["interchange"];
    assert_eq!(ic["syntax"], "X12");
    assert_eq!(ic["control_number"], "000006267");
    assert_eq!(ic["sender"]["id"], "TPASCX12");
    assert_eq!(ic["sender"]["qualifier"], "ZZ");
    assert_eq!(ic["receiver"]["id"], "012345678");
    let [m] = messages(&body).as_slice() else { panic!("one message: {body}") };
    let id = assert_outcome(m, "accepted");
    assert_eq!(m["message_type"], "X12.850");
    assert_eq!(m["mestyp"], "004010");
    assert_eq!(m["docnum"], "0001");
    assert_eq!(app.count_prod().await, 1);
    let row = app.state.store.get_message(id.parse().unwrap()).await.unwrap().expect("stored");
    assert_eq!(row.fingerprint_basis, "key_fields");

    // The same interchange again: a duplicate of the whole interchange,
    // answered with the first answer.
    let again = post(&app, Some("application/edi-x12"), real(X12_850)).await;
    again.expect(200);
    assert!(again.replayed());
    assert_eq!(again.json(), body);
    let events = app.audit_events("action=interchange.duplicate_blocked").await;
    let [e] = events.as_slice() else { panic!("one interchange event: {events:?}") };
    assert_eq!(e["detected_by"], "interchange");
    assert_eq!(e["idempotency_key"], "X12|ZZ:TPASCX12|01:012345678|000006267");
    assert_eq!(e["original_message_id"], id);
    assert_eq!(e["details"]["same_payload"], true);
    assert!(app.audit_events("action=message.duplicate_blocked").await.is_empty());
    assert_eq!(app.count_prod().await, 1);

    // The same order in a new interchange: the message layer catches it by BEG03.
    let renumbered = String::from_utf8(real(X12_850)).unwrap().replace("000006267", "000006268");
    let third = post(&app, Some("application/EDI-X12"), renumbered).await;
    third.expect(200);
    let body = third.json();
    assert_eq!(body["interchange"]["control_number"], "000006268");
    let [m] = messages(&body).as_slice() else { panic!("one message: {body}") };
    assert_outcome(m, "duplicate");
    assert_eq!(m["id"], id);
    assert_eq!(m["detected_by"], "fingerprint");
    assert_eq!(app.count_prod().await, 1);
    assert_eq!(app.audit_events("action=message.duplicate_blocked").await.len(), 1);
}

async fn interchange_numbers_are_scoped_by_sender(backend: Backend) {
    let app = TestApp::start(backend, edi_types()).await;
    post(&app, Some("application/EDI-X12"), real(X12_850)).await.expect(202);
    // ISA13 000006267 again, from another sender (fixed width kept), another order.
    let other = String::from_utf8(real(X12_850))
        .unwrap()
        .replace("TPASCX12       ", "OTHERSENDER    ")
        .replace("68DHHA7B", "OTHER-PO-1");
    let res = post(&app, Some("application/EDI-X12"), other).await;
    res.expect(202);
    assert_eq!(res.json()["interchange"]["sender"]["id"], "OTHERSENDER");
    assert_eq!(app.count_prod().await, 2);
    assert!(app.audit_events("action=interchange.duplicate_blocked").await.is_empty());
}

async fn edifact_cross_version_pair_is_one_order(backend: Backend) {
    let app = TestApp::start(backend, edi_types()).await;
    // Generic types: the interchange is sniffed from `UNB`.
    let first = post(&app, Some("text/plain"), real(D96A)).await;
    first.expect(202);
    let body = first.json();
    assert_eq!(body["interchange"]["syntax"], "EDIFACT");
    assert_eq!(body["interchange"]["control_number"], "36790");
    let id = assert_outcome(&messages(&body)[0], "accepted");
    assert_eq!(messages(&body)[0]["message_type"], "EDIFACT.ORDERS");
    assert_eq!(messages(&body)[0]["mestyp"], "D96A");

    // The D10B file reuses interchange number 36790 between the same
    // partners for other content: refused, not answered with the D96A's result.
    post(&app, None, real(D10B)).await.expect_problem(422, "was already received with other content");
    let events = app.audit_events("action=interchange.mismatch").await;
    let [e] = events.as_slice() else { panic!("one interchange event: {events:?}") };
    assert_eq!(e["details"]["same_payload"], false);
    assert_eq!(e["original_message_id"], id);

    // In a new interchange, the same order (BGM 1004) in D10B is caught by its key.
    let renumbered = String::from_utf8(real(D10B)).unwrap().replace("+36790", "+36791");
    let third = post(&app, Some("application/EDIFACT"), renumbered).await;
    third.expect(200);
    let body = third.json();
    assert_outcome(&messages(&body)[0], "duplicate");
    assert_eq!(messages(&body)[0]["id"], id);
    assert_eq!(messages(&body)[0]["detected_by"], "fingerprint");
    assert_eq!(app.count_prod().await, 1);
}

async fn interchange_with_three_sets_gives_three_results(backend: Backend) {
    let app = TestApp::start(backend, edi_types()).await;
    let res = post(&app, Some("application/EDI-X12"), real("staedi_invoice810_po850_dual.edi")).await;
    res.expect(202);
    let body = res.json();
    let got: Vec<(String, String)> = messages(&body)
        .iter()
        .map(|m| {
            assert_outcome(m, "accepted");
            (m["message_type"].as_str().unwrap().to_string(), m["docnum"].as_str().unwrap().to_string())
        })
        .collect();
    let want = [("X12.810", "000000001"), ("X12.810", "000000002"), ("X12.850", "000191240")];
    assert_eq!(got, want.map(|(t, d)| (t.to_string(), d.to_string())));
    assert_eq!(app.count_prod().await, 3);
    // In a new interchange (ISA13/IEA02), the 850 is caught by BEG03; the
    // 810s have no key fields, and their control numbers (ISA13 + GS06 +
    // ST02) are new: new invoices.
    let text = String::from_utf8(real("staedi_invoice810_po850_dual.edi")).unwrap();
    let again = post(&app, Some("application/EDI-X12"), text.replace("000000020", "000000021")).await;
    again.expect(202);
    let body = again.json();
    let by: Vec<&str> = messages(&body).iter().map(|m| m["detected_by"].as_str().unwrap_or("-")).collect();
    assert_eq!(by, ["-", "-", "fingerprint"], "{body}");
    assert_eq!(app.count_prod().await, 5);
}

async fn counts_that_disagree_are_422_and_store_nothing(backend: Backend) {
    let app = TestApp::start(backend, edi_types()).await;
    // A real file whose UNT says 19 segments for a message of 21.
    post(&app, Some("application/EDIFACT"), real("sapb2bex_edi-ordrsp.edi"))
        .await
        .expect_problem(422, "UNT 0074 of message 5220230 says 19 segments, the message has 21");
    let x12 = String::from_utf8(real(X12_850)).unwrap();
    post(&app, Some("application/EDI-X12"), x12.replace("SE*10*0001", "SE*10*0002"))
        .await
        .expect_problem(422, "SE02 `0002` does not match ST02 `0001`");
    post(&app, Some("application/EDI-X12"), x12.replace("GE*1*6267", "GE*2*6267"))
        .await
        .expect_problem(422, "GE01 of group 6267 says 2 transaction sets");
    assert_eq!(app.count_prod().await, 0);
}

async fn syntax_errors_are_400_and_store_nothing(backend: Backend) {
    let app = TestApp::start(backend, edi_types()).await;
    let edifact = String::from_utf8(real(D96A)).unwrap();
    post(&app, Some("application/EDIFACT"), edifact.replace("UNT+15+1'", ""))
        .await
        .expect_problem(400, "inside message 1");
    post(&app, None, edifact.replace("UNOA", "UNOZ"))
        .await
        .expect_problem(400, "UNB 0001 syntax identifier `UNOZ`");
    let x12 = String::from_utf8(real(X12_850)).unwrap();
    post(&app, Some("application/EDI-X12"), &x12[..60]).await.expect_problem(400, "ISA is truncated");
    post(&app, Some("application/EDI-X12"), x12.trim_end_matches('~'))
        .await
        .expect_problem(400, "is not terminated by `~`");
    assert_eq!(app.count_prod().await, 0);
}

/// 16 copies of one interchange at once (each in its own task, released
/// together): one 202, 15 replays, one message stored, 15 interchange events.
async fn one_interchange_sent_at_once_is_stored_once(backend: Backend) {
    const N: usize = 16;
    let app = TestApp::start(backend, edi_types()).await;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(N));
    let mut tasks = JoinSet::new();
    for _ in 0..N {
        let (router, barrier) = (app.router.clone(), barrier.clone());
        let request =
            receive_request(Some(&bearer(ACME_PROD)), Some("application/EDI-X12"), real(X12_850), &[]);
        tasks.spawn(async move {
            barrier.wait().await;
            send_on(router, request).await
        });
    }
    let mut statuses = Vec::new();
    while let Some(res) = tasks.join_next().await {
        let res = res.expect("request task");
        if res.status.as_u16() == 200 {
            assert!(res.replayed(), "a repeat is a replay of the first answer");
        }
        statuses.push(res.status.as_u16());
    }
    statuses.sort_unstable();
    let mut want = vec![200; N - 1];
    want.push(202);
    assert_eq!(statuses, want);
    assert_eq!(app.count_prod().await, 1);
    assert_eq!(app.audit_events("action=interchange.duplicate_blocked").await.len(), N - 1);
}
