//! Broken and hostile bodies on the receive endpoint: each gets its
//! documented status as `application/problem+json` with a `detail` naming the
//! problem, stores nothing, leaves no audit trace, and does not poison the
//! hub: the valid document sent right after is accepted with 202.

use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request, header};

backend_tests!(
    truncated_xml_is_400,
    empty_body_is_400,
    invalid_utf8_is_400,
    truncated_json_is_400,
    deep_json_is_400,
    deep_xml_is_400_without_crash,
    billion_laughs_is_400,
    external_entities_are_400,
    body_over_limit_is_413,
    image_content_type_is_415,
    idoc_without_control_record_is_422,
    plain_json_without_message_type_is_422,
    bad_message_type_header_is_400,
);

/// Asserts nothing was stored or audited, then that the real document still goes through.
async fn nothing_stored_then_valid_is_accepted(app: &TestApp) {
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    assert!(app.audit_events("").await.is_empty(), "nothing audited");
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    assert_eq!(app.count_prod().await, 1);
}

fn orders_text() -> String {
    String::from_utf8(fixture("orders05.xml")).unwrap()
}

async fn truncated_xml_is_400(backend: Backend) {
    let app = TestApp::new(backend).await;
    let text = orders_text();
    // Cut between two segments: every element from the root down is left open.
    let cut = &text[..text.find("<E1EDK02").unwrap()];
    app.post_xml(ACME_PROD, cut).await.expect_problem(400, "truncated");
    // Cut inside a tag.
    let mid_tag = &text[..text.find("<E1EDK02").unwrap() + 5];
    let detail = app.post_xml(ACME_PROD, mid_tag).await.expect_problem(400, "");
    assert!(!detail.is_empty());
    nothing_stored_then_valid_is_accepted(&app).await;
}

async fn empty_body_is_400(backend: Backend) {
    let app = TestApp::new(backend).await;
    for content_type in [Some("application/xml"), Some("application/json"), None] {
        for body in ["", "  \r\n\t "] {
            let res = app.post_receive(Some(&bearer(ACME_PROD)), content_type, body, &[]).await;
            res.expect_problem(400, "empty");
        }
    }
    nothing_stored_then_valid_is_accepted(&app).await;
}

async fn invalid_utf8_is_400(backend: Backend) {
    let app = TestApp::new(backend).await;
    // "Müller" written as ISO-8859-1 inside a document declared UTF-8.
    let mut body = fixture("orders05.xml");
    let needle = "Müller".as_bytes();
    let at = body.windows(needle.len()).position(|w| w == needle).unwrap() + 1;
    body.splice(at..at + 2, [0xFC]);
    let detail = app.post_xml(ACME_PROD, body).await.expect_problem(400, "invalid");
    assert!(detail.contains("UTF-8") && detail.contains("byte"), "{detail}");
    // The same in JSON.
    let res =
        app.post_json(ACME_PROD, b"{\"docnum\":\"M\xfcller\"}".to_vec(), &[("x-message-type", "x.y")]).await;
    res.expect_problem(400, "UTF-8");
    nothing_stored_then_valid_is_accepted(&app).await;
}

async fn truncated_json_is_400(backend: Backend) {
    let app = TestApp::new(backend).await;
    let json = fixture("orders05.json");
    let res = app.post_json(ACME_PROD, json[..json.len() / 2].to_vec(), &[]).await;
    res.expect_problem(400, "invalid JSON");
    nothing_stored_then_valid_is_accepted(&app).await;
}

async fn deep_json_is_400(backend: Backend) {
    let app = TestApp::new(backend).await;
    let typ = [("x-message-type", "x.y")];
    let arrays = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
    app.post_json(ACME_PROD, arrays, &typ).await.expect_problem(400, "nesting");
    let objects = format!("{}1{}", r#"{"a":"#.repeat(1000), "}".repeat(1000));
    app.post_json(ACME_PROD, objects, &typ).await.expect_problem(400, "nesting");
    nothing_stored_then_valid_is_accepted(&app).await;
}

async fn deep_xml_is_400_without_crash(backend: Backend) {
    let app = TestApp::new(backend).await;
    let depth = 100_000;
    let body = format!(
        "<ORDERS05><IDOC BEGIN=\"1\">{}{}</IDOC></ORDERS05>",
        "<E1EDK01>".repeat(depth),
        "</E1EDK01>".repeat(depth)
    );
    app.post_xml(ACME_PROD, body).await.expect_problem(400, "nesting");
    // Unclosed, too.
    let open_only = format!("<ORDERS05>{}", "<a>".repeat(depth));
    app.post_xml(ACME_PROD, open_only).await.expect(400);
    nothing_stored_then_valid_is_accepted(&app).await;
}

async fn billion_laughs_is_400(backend: Backend) {
    let app = TestApp::new(backend).await;
    let mut doc = String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE ORDERS05 [\n <!ENTITY lol \"lol\">\n");
    for i in 1..10 {
        let prev = if i == 1 { "lol".to_string() } else { format!("lol{}", i - 1) };
        doc.push_str(&format!(" <!ENTITY lol{i} \"{}\">\n", format!("&{prev};").repeat(10)));
    }
    let idoc = orders_text().replace("<BELNR>4500012345</BELNR>", "<BELNR>&lol9;</BELNR>");
    doc.push_str("]>\n");
    doc.push_str(idoc.split_once("?>").unwrap().1);
    app.post_xml(ACME_PROD, doc).await.expect_problem(400, "DOCTYPE");
    nothing_stored_then_valid_is_accepted(&app).await;
}

async fn external_entities_are_400(backend: Backend) {
    let app = TestApp::new(backend).await;
    let body = orders_text().replace("<BELNR>4500012345</BELNR>", "<BELNR>&xxe;</BELNR>");
    let (decl, rest) = body.split_once("?>").unwrap();
    let with_dtd =
        format!("{decl}?>\n<!DOCTYPE ORDERS05 [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>{rest}");
    app.post_xml(ACME_PROD, with_dtd).await.expect_problem(400, "DOCTYPE");
    let external_dtd = format!("{decl}?>\n<!DOCTYPE ORDERS05 SYSTEM \"http://127.0.0.1:9/x.dtd\">{rest}");
    app.post_xml(ACME_PROD, external_dtd).await.expect_problem(400, "DOCTYPE");
    // The reference alone, without any DTD, is an undefined entity.
    app.post_xml(ACME_PROD, body).await.expect_problem(400, "undefined entity &xxe;");
    nothing_stored_then_valid_is_accepted(&app).await;
}

async fn body_over_limit_is_413(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().with(|c| c.max_body_bytes = 4096)).await;
    let text = orders_text();
    let padded = text.replace("</ORDERS05>", &format!("{}</ORDERS05>", " ".repeat(4096)));
    assert!(padded.len() > 4096);
    // Streamed without Content-Length: refused while reading.
    let res = app.post_xml(ACME_PROD, padded.clone()).await;
    res.expect_problem(413, "4096");
    // Declared by Content-Length: refused before reading.
    let request = Request::builder()
        .method(Method::POST)
        .uri(RECEIVE)
        .header(header::AUTHORIZATION, bearer(ACME_PROD))
        .header(header::CONTENT_TYPE, "application/xml")
        .header(header::CONTENT_LENGTH, padded.len())
        .body(Body::from(padded))
        .unwrap();
    app.send(request).await.expect_problem(413, "limit");
    nothing_stored_then_valid_is_accepted(&app).await;
    // A body of exactly the limit is not over it.
    let exact = fixture("orders05-utf16.xml");
    assert_eq!(exact.len(), 4096);
    let res = app.post_xml_with(ACME_PROD, exact, &[("x-message-type", "NOKEYS")]).await;
    accepted(&res);
}

async fn image_content_type_is_415(backend: Backend) {
    let app = TestApp::new(backend).await;
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    let res = app.post_receive(Some(&bearer(ACME_PROD)), Some("image/png"), png, &[]).await;
    res.expect_problem(415, "image/png");
    // An XML body under a wrong type is refused too: the type is not ignored.
    let res =
        app.post_receive(Some(&bearer(ACME_PROD)), Some("image/png"), fixture("orders05.xml"), &[]).await;
    res.expect_problem(415, "image/png");
    // A generic type with a body that is neither XML nor JSON.
    let res =
        app.post_receive(Some(&bearer(ACME_PROD)), Some("application/octet-stream"), "hello", &[]).await;
    res.expect(415);
    nothing_stored_then_valid_is_accepted(&app).await;
}

async fn idoc_without_control_record_is_422(backend: Backend) {
    let app = TestApp::new(backend).await;
    let text = orders_text();
    let start = text.find("<EDI_DC40").unwrap();
    let end = text.find("</EDI_DC40>").unwrap() + "</EDI_DC40>".len();
    let without = format!("{}{}", &text[..start], &text[end..]);
    app.post_xml(ACME_PROD, without).await.expect_problem(422, "EDI_DC40");
    // In a packet, the bad IDoc refuses the whole packet: nothing is half-stored.
    let good = idoc_element(&fixture("ordchg05.xml"));
    let bad = idoc_element(b"<IDOC BEGIN=\"1\"><E1EDK01><BELNR>1</BELNR></E1EDK01></IDOC>");
    let packet = format!("<ORDERS05>{good}{bad}</ORDERS05>");
    app.post_xml(ACME_PROD, packet).await.expect_problem(422, "IDoc 2 of 2");
    nothing_stored_then_valid_is_accepted(&app).await;
}

async fn plain_json_without_message_type_is_422(backend: Backend) {
    let app = TestApp::new(backend).await;
    let res = app.post_json(ACME_PROD, r#"{"order":{"id":"A-1"},"docnum":"77"}"#, &[]).await;
    res.expect_problem(422, "X-Message-Type");
    nothing_stored_then_valid_is_accepted(&app).await;
}

async fn bad_message_type_header_is_400(backend: Backend) {
    let app = TestApp::new(backend).await;
    let res = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("x-message-type", "   ")]).await;
    res.expect_problem(400, "message type");
    let long = "T".repeat(101);
    let res = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("x-message-type", &long)]).await;
    res.expect_problem(400, "message type");
    nothing_stored_then_valid_is_accepted(&app).await;
}
