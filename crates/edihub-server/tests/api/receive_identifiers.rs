//! Identifiers a document gives itself, on both backends: a message type
//! read from ST01, UNH 0065, EDI_DC40.IDOCTYP or the root element must pass
//! the rule of a type a request names (1–100 characters of `A–Z a–z 0–9 .
//! _ - : /`), and the logical message or version, docnum and sender read
//! from the document must be at most 100 characters without control
//! characters; else 422 naming the field, and nothing of the request is
//! stored. The values are random hex, which PostgreSQL cannot compress:
//! stored, a 3,000-character type broke the overview's index
//! (`activity_hours_pkey`) on every view. A type of exactly 100 characters
//! is stored and the overview, rolled up over it, still renders.

use crate::support::*;
use sha2::{Digest, Sha256};

backend_tests!(long_or_odd_derived_identifiers_are_refused, the_longest_type_is_stored_and_shown);

const X12: &str = "application/EDI-X12";
const EDIFACT: &str = "application/EDIFACT";

/// `n` characters of hex that compress no better than random text.
fn random_hex(n: usize) -> String {
    let mut out = String::new();
    let mut block = Sha256::digest(b"receive_identifiers").to_vec();
    while out.len() < n {
        out.push_str(&hex::encode(&block));
        block = Sha256::digest(&block).to_vec();
    }
    out.truncate(n);
    out
}

fn x12(st01: &str, gs08: &str, st02: &str) -> String {
    format!(
        "ISA*00*          *00*          *ZZ*IDSENDER       *ZZ*ACME           *240301*1200*^*00501*000000001*0*P*>~\
         GS*PO*IDSENDER*ACME*20240301*1200*1*X*{gs08}~ST*{st01}*{st02}~BEG*00*SA*PO-1**20240301~\
         SE*3*{st02}~GE*1*1~IEA*1*000000001~"
    )
}

fn edifact(unh_0065: &str) -> String {
    format!(
        "UNB+UNOC:3+IDSENDER:ZZ+ACME:ZZ+240301:1200+IC1'UNH+M1+{unh_0065}:D:96A:UN'BGM+220+PO-1+9'UNT+3+M1'UNZ+1+IC1'"
    )
}

/// The ORDERS05 fixture with its control record's `field` set to `value`
/// (or removed when `value` is `None`) and its root renamed to `root`.
fn idoc(root: &str, field: &str, value: Option<&str>) -> String {
    let xml = String::from_utf8(fixture("orders05.xml")).unwrap();
    let open = format!("<{field}>");
    let close = format!("</{field}>");
    let start = xml.find(&open).unwrap_or_else(|| panic!("{field} in the fixture"));
    let end = xml[start..].find(&close).unwrap() + start + close.len();
    let replaced = value.map_or(String::new(), |v| format!("{open}{v}{close}"));
    let xml = format!("{}{replaced}{}", &xml[..start], &xml[end..]);
    xml.replace("<ORDERS05>", &format!("<{root}>")).replace("</ORDERS05>", &format!("</{root}>"))
}

async fn post(app: &TestApp, media: &str, body: String) -> TestResponse {
    app.post_receive(Some(&bearer(ACME_PROD)), Some(media), body, &[]).await
}

async fn long_or_odd_derived_identifiers_are_refused(backend: Backend) {
    let app = TestApp::new(backend).await;
    let long = random_hex(3000);
    let type_rule = "must be 1–100 characters of A–Z, a–z, 0–9";
    let cases = [
        (
            X12,
            x12(&long, "005010", "0001"),
            format!("the message type from ST01: the message type {type_rule}"),
        ),
        (X12, x12("850", &long, "0001"), "the version (GS08) must be at most 100 characters".to_string()),
        (X12, x12("850", "005010", &long), "the docnum (ST02) must be at most 100 characters".to_string()),
        (EDIFACT, edifact(&long), format!("the message type from UNH 0065: the message type {type_rule}")),
        (
            "application/xml",
            idoc("ORDERS05", "IDOCTYP", Some(&long)),
            format!("the message type from EDI_DC40.IDOCTYP: the message type {type_rule}"),
        ),
        (
            "application/xml",
            idoc("ORDERS05", "IDOCTYP", Some("ORDERS05\"} 1")),
            format!("the message type from EDI_DC40.IDOCTYP: the message type {type_rule}"),
        ),
        (
            "application/xml",
            idoc(&format!("Z{long}"), "IDOCTYP", None),
            format!("the message type from the root element: the message type {type_rule}"),
        ),
        (
            "application/xml",
            idoc("ORDERS05", "MESTYP", Some(&long)),
            "the logical message (EDI_DC40.MESTYP) must be at most 100 characters".to_string(),
        ),
        (
            "application/xml",
            idoc("ORDERS05", "SNDPRN", Some(&long)),
            "the sender (EDI_DC40.SNDPRN) must be at most 100 characters".to_string(),
        ),
    ];
    for (media, body, detail) in cases {
        post(&app, media, body).await.expect_problem(422, &detail);
    }
    // IDoc-JSON, and the second IDoc of a packet: the whole packet is refused.
    let json = format!(
        r#"{{"ORDERS05":{{"IDOC":{{"EDI_DC40":{{"DOCNUM":"1","IDOCTYP":"{long}","MESTYP":"ORDERS"}},"E1EDK01":{{"BELNR":"1"}}}}}}}}"#
    );
    post(&app, "application/json", json).await.expect_problem(422, "the message type from EDI_DC40.IDOCTYP");
    let good = idoc_element(&fixture("orders05.xml"));
    let bad = idoc_element(idoc("ORDERS05", "IDOCTYP", Some(&long)).as_bytes());
    let packet = format!("<ORDERS05>{good}{bad}</ORDERS05>");
    let res = post(&app, "application/xml", packet).await;
    res.expect_problem(422, "the message type from EDI_DC40.IDOCTYP of message 2 in the request");
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    assert!(app.audit_events("").await.is_empty(), "nothing audited");
    // A named type keeps its own rule (400), whatever the document says.
    let res = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("x-message-type", &long)]).await;
    res.expect_problem(400, "X-Message-Type");
    // The overview renders.
    overview(&app).await;
}

async fn the_longest_type_is_stored_and_shown(backend: Backend) {
    let app = TestApp::new(backend).await;
    // `X12.` and 97 characters: one over.
    post(&app, X12, x12(&random_hex(97), "005010", "0001")).await.expect_problem(422, "got 101 bytes");
    let st01 = random_hex(96);
    let stored = accepted_interchange(&post(&app, X12, x12(&st01, "005010", "0001")).await);
    assert_eq!(stored["messages"][0]["message_type"], format!("X12.{st01}"));
    let idoctyp = random_hex(100);
    accepted(&app.post_xml(ACME_PROD, idoc("ORDERS05", "IDOCTYP", Some(&idoctyp))).await);
    assert_eq!(app.count_prod().await, 2);
    // Roll the current hour up as the overview does once it has settled:
    // the index of the rolled-up counts takes the longest types.
    let later = chrono::Utc::now() + chrono::Duration::hours(2);
    app.state.store.roll_up_activity(later).await.expect("roll up");
    let page = overview(&app).await;
    assert!(page.contains(&st01) && page.contains(&idoctyp), "both types on the overview");
}

/// `GET /admin` as a browser; asserts 200 and returns the page.
async fn overview(app: &TestApp) -> String {
    let request = axum::http::Request::builder()
        .uri("/admin")
        .header("authorization", basic("admin", ADMIN_TOKEN))
        .header("accept", "text/html")
        .body(axum::body::Body::empty())
        .unwrap();
    let res = app.send(request).await;
    res.expect(200);
    res.text()
}
