//! Acknowledgements of refused interchanges: a partner that asked for an
//! acknowledgement gets one for an interchange refused with 422 (counts or
//! references that disagree) or 400 (a syntax error after a readable
//! header), with that status, and nothing stored. A 997/999 rejects the
//! sets read, naming the one in error; a TA1 or a rejecting UCI answers
//! errors of the interchange envelope. Every acknowledgement is parsed back
//! with the hub's parser and checked by pyx12 or pydifact. A TA1 asked
//! for with ISA14 `1` comes beside the 997.

use crate::edi_acks::{D96A, X12_850, ack_of, post, pydifact_read, pyx12_valid, real, segments};
use crate::support::*;
use serde_json::json;

backend_tests!(
    x12_refusals_answer_with_997_999_or_ta1,
    edifact_refusals_answer_with_contrl,
    ta1_on_request_beside_the_997,
);

const X12: &str = "application/EDI-X12";
const EDIFACT: &str = "application/EDIFACT";

/// The real 850 with one change; its ISA12 `00400` is sent as `00401`,
/// the control version pyx12 knows (its acknowledgement repeats ISA12).
fn x12_850_with(from: &str, to: &str) -> Vec<u8> {
    let text = String::from_utf8(real(X12_850)).unwrap().replace("*U*00400*", "*U*00401*");
    assert!(text.contains(from), "{from}");
    text.replace(from, to).into_bytes()
}

fn d96a_with(from: &str, to: &str) -> Vec<u8> {
    let text = String::from_utf8(real(D96A)).unwrap();
    assert!(text.contains(from), "{from}");
    text.replace(from, to).into_bytes()
}

/// The acknowledgement's ISA13 / UNB 0020.
#[track_caller]
fn number(res: &TestResponse, media: &str) -> String {
    let text = res.text();
    match media {
        X12 => text.get(90..99).unwrap_or_else(|| panic!("an ISA: {text}")).to_string(),
        _ => ack_of(res, media).interchange.unwrap().control_number,
    }
}

async fn x12_refusals_answer_with_997_999_or_ta1(backend: Backend) {
    let app = TestApp::new(backend).await;
    // SE01 disagrees: 422, a 997 rejecting the set with AK3/AK4 and AK5 code 4.
    let res = post(&app, x12_850_with("SE*10*0001", "SE*9*0001"), "ack=997", &[]).await;
    res.expect(422);
    let ack = ack_of(&res, X12);
    assert_eq!(
        segments(&ack, 0),
        [
            json!(["AK1", "PO", "6267"]),
            json!(["AK2", "850", "0001"]),
            json!(["AK3", "SE", "10", "", "8"]),
            json!(["AK4", "1", "96", "7", "9"]),
            json!(["AK5", "R", "4"]),
            json!(["AK9", "R", "1", "1", "0"])
        ]
    );
    pyx12_valid(&res);
    assert_eq!(number(&res, X12), "000000001");
    // The same as a 999 (Accept only asks for a 997; ?ack= for a 999).
    let res = post(&app, x12_850_with("SE*10*0001", "SE*10*0002"), "ack=999", &[]).await;
    res.expect(422);
    let text = res.text();
    assert!(text.contains("AK2*850*0001~IK3*SE*10**8~IK4*2*329*7*0002~IK5*R*3~AK9*R*1*1*0~"), "{text}");
    pyx12_valid(&res);
    // GE01 disagrees: the group rejected with AK905 5.
    let res = post(&app, x12_850_with("GE*1*6267", "GE*2*6267"), "", &[("accept", X12)]).await;
    res.expect(422);
    assert!(res.text().contains("AK2*850*0001~AK5*R~AK9*R*2*1*0*5~"), "{}", res.text());
    pyx12_valid(&res);
    // IEA01 disagrees: a TA1 alone, rejected with note 021.
    let res = post(&app, x12_850_with("IEA*1*", "IEA*3*"), "ack=997", &[]).await;
    res.expect(422);
    assert!(res.text().ends_with("~TA1*000006267*240229*0339*R*021~IEA*0*000000004~"), "{}", res.text());
    pyx12_valid(&res);
    // A syntax error after the ISA (no IEA): 400, a TA1 with note 023.
    let res = post(&app, x12_850_with("~IEA*1*000006267~", "~"), "ack=997", &[]).await;
    res.expect(400);
    assert!(res.text().contains("~TA1*000006267*240229*0339*R*023~IEA*0*000000005~"), "{}", res.text());
    pyx12_valid(&res);
    // Nothing of any of them was stored.
    assert_eq!(app.count_prod().await, 0);
    // The sound interchange afterwards is stored, acknowledged under the next number.
    let ok = post(&app, real(X12_850), "ack=997", &[]).await;
    ok.expect(202);
    assert_eq!(number(&ok, X12), "000000006");
    assert_eq!(app.count_prod().await, 1);
}

async fn edifact_refusals_answer_with_contrl(backend: Backend) {
    let app = TestApp::new(backend).await;
    // UNT 0074 disagrees: 422, a CONTRL rejecting the interchange, the message named.
    let res = post(&app, d96a_with("UNT+15+1", "UNT+14+1"), "", &[("accept", EDIFACT)]).await;
    res.expect(422);
    let text = res.text();
    assert!(text.contains("+4'UCM+1+ORDERS:D:96A:UN:EAN008+4+29'UCS+15'UCD+29+1'UNT+6+1'"), "{text}");
    let read = pydifact_read(&res);
    let segs = &read["messages"][0]["segments"];
    assert_eq!(
        segs[0],
        json!(["UCI", "36790", ["TP_UNEDIFACT_ID", "ZZ"], ["Company_UNEDIFACT_ID", "ZZ"], "4"])
    );
    assert_eq!(segs[1], json!(["UCM", "1", ["ORDERS", "D", "96A", "UN", "EAN008"], "4", "29"]));
    assert_eq!(number(&res, EDIFACT), "1");
    // UNZ 0020 disagrees: the UCI rejects it with code 28.
    let res = post(&app, d96a_with("UNZ+1+36790", "UNZ+1+36791"), "ack=contrl", &[]).await;
    res.expect(422);
    assert!(res.text().contains("Company_UNEDIFACT_ID:ZZ+4+28'UNT+3+1'"), "{}", res.text());
    pydifact_read(&res);
    // The last segment unterminated: 400, UCI code 13.
    let res = post(&app, d96a_with("UNZ+1+36790'", "UNZ+1+36790"), "ack=contrl", &[]).await;
    res.expect(400);
    assert!(res.text().contains("+4+13'UNT+3+1'"), "{}", res.text());
    pydifact_read(&res);
    assert_eq!(number(&res, EDIFACT), "3");
    assert_eq!(app.count_prod().await, 0);
}

async fn ta1_on_request_beside_the_997(backend: Backend) {
    let app = TestApp::new(backend).await;
    let asked = x12_850_with("*000006267*0*P*", "*000006267*1*P*");
    let res = post(&app, asked.clone(), "ack=997", &[]).await;
    res.expect(202);
    let text = res.text();
    assert!(text.contains("*000000001*0*P*>~TA1*000006267*240229*0339*A*000~GS*FA*"), "{text}");
    assert_eq!(ack_of(&res, X12).documents.len(), 1, "the 997 after the TA1");
    pyx12_valid(&res);
    // The repeat: the TA1 rejecting the copy, alone.
    let res = post(&app, asked, "ack=997", &[]).await;
    res.expect(200);
    assert!(res.text().ends_with("~TA1*000006267*240229*0339*R*025~IEA*0*000000002~"), "{}", res.text());
    assert_eq!(app.count_prod().await, 1);
}
