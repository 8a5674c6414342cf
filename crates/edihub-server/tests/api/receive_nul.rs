//! A NUL character (U+0000) in a received body, on both backends: 400
//! wherever it stands (PostgreSQL text and jsonb cannot hold it, and no
//! EDI character set, XML 1.0 or identifier has it), and nothing stored or
//! audited. In an EDIFACT or X12 interchange it is a syntax error: after a
//! readable header, a sender that asked for an acknowledgement gets the
//! refusal's (TA1 024, CONTRL action 4 with code 18) like for any other
//! syntax error; in the header itself there is nothing to acknowledge it
//! with, and the answer is the problem document. IDoc-XML, IDoc-JSON,
//! plain JSON and webhook bodies are refused alike.

use crate::support::webhook::*;
use crate::support::*;

backend_tests!(nul_in_interchange_fields_is_a_syntax_error, nul_in_idocs_json_and_webhooks_is_refused);

const X12: &str = "application/EDI-X12";
const EDIFACT: &str = "application/EDIFACT";

/// An X12 850 whose BEG03 (the configured key field) is `po`, under
/// interchange control number `ctrl`.
fn x12(ctrl: u32, po: &str) -> String {
    format!(
        "ISA*00*          *00*          *ZZ*NULSENDER      *ZZ*ACME           *240301*1200*^*00501*{ctrl:09}*0*P*>~\
         GS*PO*NULSENDER*ACME*20240301*1200*{ctrl}*X*005010~ST*850*0001~BEG*00*SA*{po}**20240301~\
         SE*3*0001~GE*1*{ctrl}~IEA*1*{ctrl:09}~"
    )
}

/// A D96A ORDERS whose BGM 1004 (the configured key field) is `po`.
fn edifact(ctrl: u32, po: &str) -> String {
    format!(
        "UNA:+.? 'UNB+UNOC:3+NULSENDER:ZZ+ACME:ZZ+240301:1200+IC{ctrl}'UNH+M1+ORDERS:D:96A:UN'\
         BGM+220+{po}+9'UNT+3+M1'UNZ+1+IC{ctrl}'"
    )
}

async fn post(app: &TestApp, media: &str, query: &str, body: String) -> TestResponse {
    let mut request = receive_request(Some(&bearer(ACME_PROD)), Some(media), body.into_bytes(), &[]);
    *request.uri_mut() = format!("{RECEIVE}{query}").parse().expect("uri");
    app.send(request).await
}

fn edi_app_config() -> TestConfig {
    TestConfig::new()
        .message_type("X12.850", |t| t.duplicate_key_fields = strings(["BEG03"]))
        .message_type("EDIFACT.ORDERS", |t| t.duplicate_key_fields = strings(["BGM.02"]))
}

async fn nul_in_interchange_fields_is_a_syntax_error(backend: Backend) {
    let app = TestApp::start(backend, edi_app_config()).await;
    // (media, body with a NUL, the error's text, the acknowledgement's
    // mark when the header was readable)
    let cases = [
        (X12, x12(1, "PO\0-1"), "segment 4 (BEG) has a NUL character (U+0000) in element 3", Some("*R*024~")),
        (X12, x12(2, "PO-2").replace("ST*850", "ST*85\0"), "segment 3 (ST) has a NUL", Some("*R*024~")),
        (X12, x12(3, "PO-3").replace("ST*850*0001", "ST*850*00\u{0}1"), "in element 2", Some("*R*024~")),
        (X12, x12(4, "PO-4").replace("*X*005010", "*X*0050\0"), "segment 2 (GS) has a NUL", Some("*R*024~")),
        (X12, x12(5, "PO-5").replace("GS*PO*NULSENDER", "GS*PO*NUL\0"), "in element 2", Some("*R*024~")),
        (
            X12,
            x12(6, "PO-6").replace("NULSENDER      ", "NUL\0SENDER     "),
            "segment 1 (ISA) has a NUL",
            None,
        ),
        (
            EDIFACT,
            edifact(7, "PO\0-7"),
            "segment 3 (BGM) has a NUL character (U+0000) in element 2",
            Some("+4+18'"),
        ),
        (EDIFACT, edifact(8, "PO?\0-8"), "segment 3 (BGM) has a NUL", Some("+4+18'")),
        (
            EDIFACT,
            edifact(9, "PO-9").replace("ORDERS:", "ORD\0RS:"),
            "segment 2 (UNH) has a NUL",
            Some("+4+18'"),
        ),
        (
            EDIFACT,
            edifact(10, "PO-10").replace("UNH+M1", "UNH+M\0"),
            "segment 2 (UNH) has a NUL",
            Some("+4+18'"),
        ),
        (
            EDIFACT,
            edifact(11, "PO-11").replace("+NULSENDER", "+NUL\0SENDER"),
            "segment 1 (UNB) has a NUL",
            None,
        ),
    ];
    for (media, body, detail, ack) in cases {
        post(&app, media, "", body.clone()).await.expect_problem(400, detail);
        let query = if media == X12 { "?ack=999" } else { "?ack=contrl" };
        let res = post(&app, media, query, body).await;
        res.expect(400);
        match ack {
            Some(mark) => {
                assert_eq!(res.header("content-type"), Some(media), "{detail}: {}", res.text());
                assert!(res.text().contains(mark), "{detail}: {}", res.text());
                assert!(!res.text().contains('\0'), "the acknowledgement echoes no NUL");
            }
            None => {
                res.expect_problem(400, detail);
            }
        }
    }
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    assert!(app.audit_events("").await.is_empty(), "nothing audited");
    // The same interchanges without the NUL are stored.
    accepted_interchange(&post(&app, X12, "", x12(1, "PO-1")).await);
    accepted_interchange(&post(&app, EDIFACT, "", edifact(7, "PO-7")).await);
    assert_eq!(app.count_prod().await, 2);
}

async fn nul_in_idocs_json_and_webhooks_is_refused(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().webhooks()).await;
    let xml = String::from_utf8(fixture("orders05.xml")).unwrap();
    let raw = xml.replacen("<BELNR>", "<BELNR>\0", 1);
    app.post_xml(ACME_PROD, raw).await.expect_problem(400, "control character U+0000");
    let reference = xml.replacen("<BELNR>", "<BELNR>&#0;", 1);
    app.post_xml(ACME_PROD, reference).await.expect_problem(400, "invalid character reference &#0;");
    let idoc_json = r#"{"ORDERS05":{"IDOC":{"EDI_DC40":{"DOCNUM":"1","IDOCTYP":"ORDERS05","MESTYP":"ORDERS"},
        "E1EDK01":{"BELNR":"PO\u0000-1"}}}}"#;
    app.post_json(ACME_PROD, idoc_json, &[]).await.expect_problem(400, "U+0000 (NUL)");
    let plain = r#"{"docnum":"1\u0000","order":{"id":"A-1"}}"#;
    app.post_json(ACME_PROD, plain, &[("x-message-type", "shop.order")])
        .await
        .expect_problem(400, "U+0000 (NUL)");
    let key = r#"{"idempotencyKey":"k\u00001","docnum":"2","order":{"id":"A-2"}}"#;
    app.post_json(ACME_PROD, key, &[("x-message-type", "shop.order")])
        .await
        .expect_problem(400, "U+0000 (NUL)");
    // A correctly signed webhook whose payload holds a NUL.
    let body = r#"{"id":"evt_\u0000","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1"}}}"#;
    let res = app.post_webhook("stripe", body, &stripe_headers(body, now_secs())).await;
    res.expect_problem(400, "U+0000 (NUL)");
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    assert!(app.audit_events("").await.is_empty(), "nothing audited");
    // The webhook without the NUL is stored.
    let body = body.replace("\\u0000", "0");
    app.post_webhook("stripe", body.as_str(), &stripe_headers(&body, now_secs())).await.expect(202);
    assert_eq!(app.count_prod().await, 1);
}
