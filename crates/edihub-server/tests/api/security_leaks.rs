//! Security review: no internal error text in any response, also when the
//! database is gone, and the audit HTML page escapes everything a sender
//! controls.

use std::collections::BTreeSet;

use crate::security::{assert_no_leak, request};
use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::json;

backend_tests!(
    no_internal_error_text_when_the_database_is_gone,
    no_internal_error_text_in_client_errors,
    audit_html_escapes_everything_a_sender_controls,
);

async fn no_internal_error_text_when_the_database_is_gone(backend: Backend) {
    let app = TestApp::new(backend).await;
    let id =
        accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await)["id"].as_str().unwrap().to_string();
    app.state.store.close().await;
    let admin = bearer(ADMIN_TOKEN);
    let mut cases: Vec<(String, TestResponse)> = Vec::new();
    cases.push(("receive".into(), app.post_xml(ACME_PROD, fixture("orders05-other-system.xml")).await));
    cases.push((
        "receive with a key".into(),
        app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("idempotency-key", "k-down")]).await,
    ));
    cases.push((
        "plain JSON".into(),
        app.post_json(ACME_PROD, r#"{"docnum":"1","order":{"id":"x"}}"#, &[("x-message-type", "shop.order")])
            .await,
    ));
    for path in [
        format!("/admin/messages/{id}"),
        format!("/admin/messages/{id}/payload"),
        "/admin/messages?docnum=0000000000004711".to_string(),
        "/admin/audit".to_string(),
        "/admin/message-types".to_string(),
        "/admin/integrations".to_string(),
        "/readyz".to_string(),
    ] {
        cases.push((path.clone(), app.get(&path, Some(&admin)).await));
    }
    let html = Request::builder()
        .uri("/admin/audit")
        .header(header::AUTHORIZATION, &admin)
        .header(header::ACCEPT, "text/html")
        .body(Body::empty())
        .unwrap();
    cases.push(("audit HTML".into(), app.send(html).await));
    let put = request(
        &Method::PUT,
        "/admin/message-types/ORDERS05",
        Some(&admin),
        Some(&json!({"duplicate_key_fields":["E1EDK01.BELNR"]})),
    );
    cases.push(("PUT message type".into(), app.send(put).await));
    for (what, res) in &cases {
        assert_eq!(res.status.as_u16(), 503, "{what}: {}", res.text());
        assert_eq!(res.header("content-type"), Some(PROBLEM_JSON), "{what}");
        assert!(res.header("retry-after").is_some(), "{what}: no Retry-After");
        assert_no_leak(what, res);
    }
    // Liveness and metrics do not need the database.
    app.get("/healthz", None).await.expect(200);
    app.get("/metrics", None).await.expect(200);
}

async fn no_internal_error_text_in_client_errors(backend: Backend) {
    let app = TestApp::new(backend).await;
    let admin = bearer(ADMIN_TOKEN);
    let xml = Some("application/xml");
    let auth = Some(bearer(ACME_PROD));
    let nested_json = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let long_key = "k".repeat(201);
    type Case<'a> = (&'a str, Option<&'a str>, Vec<u8>, Vec<(&'a str, &'a str)>);
    let bodies: Vec<Case> = vec![
        ("truncated XML", xml, b"<ORDERS05><IDOC BEGIN=\"1\"><EDI_DC40>".to_vec(), vec![]),
        ("DOCTYPE", xml, b"<!DOCTYPE x [<!ENTITY a \"b\">]><ORDERS05/>".to_vec(), vec![]),
        (
            "invalid UTF-8",
            xml,
            b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><ORDERS05>\xff\xfe</ORDERS05>".to_vec(),
            vec![],
        ),
        (
            "unknown encoding",
            xml,
            b"<?xml version=\"1.0\" encoding=\"EBCDIC-XYZ\"?><ORDERS05/>".to_vec(),
            vec![],
        ),
        (
            "no control record",
            xml,
            b"<ORDERS05><IDOC BEGIN=\"1\"><E1EDK01/></IDOC></ORDERS05>".to_vec(),
            vec![],
        ),
        ("bad JSON", Some("application/json"), b"{\"a\":".to_vec(), vec![]),
        ("deep JSON", Some("application/json"), nested_json.into_bytes(), vec![]),
        ("JSON without type", Some("application/json"), b"{\"docnum\":\"1\"}".to_vec(), vec![]),
        ("unsupported type", Some("image/png"), b"\x89PNG".to_vec(), vec![]),
        ("bad key", xml, fixture("orders05.xml"), vec![("idempotency-key", "")]),
        ("long key", xml, fixture("orders05.xml"), vec![("idempotency-key", long_key.as_str())]),
        ("bad message type", xml, fixture("orders05.xml"), vec![("x-message-type", "a b")]),
    ];
    for (what, ct, body, headers) in bodies {
        let res = app.post_receive(auth.as_deref(), ct, body, &headers).await;
        assert!(res.status.is_client_error(), "{what}: {} {}", res.status, res.text());
        assert_eq!(res.header("content-type"), Some(PROBLEM_JSON), "{what}");
        assert_no_leak(what, &res);
    }
    for (what, uri) in [
        ("bad id", "/admin/messages/%3Cscript%3E"),
        ("unknown id", "/admin/messages/00000000-0000-0000-0000-000000000000"),
        ("no filter", "/admin/messages"),
        ("bad limit", "/admin/messages?docnum=1&limit=0"),
        ("bad cursor", "/admin/audit?cursor=abc"),
        ("bad since", "/admin/audit?since=yesterday"),
        ("bad query", "/admin/audit?limit=%FF"),
        ("no route", "/admin/nothing"),
        ("unknown integration", "/api/webhook/nope"),
    ] {
        let res = app.get(uri, Some(&admin)).await;
        assert!(res.status.is_client_error(), "{what}: {} {}", res.status, res.text());
        assert_eq!(res.header("content-type"), Some(PROBLEM_JSON), "{what}: {}", res.text());
        assert_no_leak(what, &res);
    }
    for (what, body) in [
        ("bad JSON", "{"),
        ("unknown field", r#"{"nope":1}"#),
        ("bad window", r#"{"duplicate_window":"-1s"}"#),
    ] {
        let req = Request::builder()
            .method(Method::PUT)
            .uri("/admin/message-types/ORDERS05")
            .header(header::AUTHORIZATION, &admin)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .unwrap();
        let res = app.send(req).await;
        assert!(res.status.is_client_error(), "PUT {what}: {} {}", res.status, res.text());
        assert_eq!(res.header("content-type"), Some(PROBLEM_JSON), "PUT {what}");
        assert_no_leak(what, &res);
    }
}

/// Tag names in an HTML text (lower-cased), `!doctype` included.
fn tag_names(html: &str) -> BTreeSet<String> {
    html.split('<')
        .skip(1)
        .filter_map(|rest| {
            let name: String = rest
                .trim_start_matches('/')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '!')
                .collect();
            (!name.is_empty()).then(|| name.to_lowercase())
        })
        .collect()
}

async fn audit_html_escapes_everything_a_sender_controls(backend: Backend) {
    let app = TestApp::new(backend).await;
    // XML-escaped in the IDoc, so the parsed values carry the raw markup.
    let hostile_belnr = "&lt;script&gt;alert(1)&lt;/script&gt;";
    let hostile_po = "&quot;&gt;&lt;img src=x onerror=alert(2)&gt;";
    let xml = String::from_utf8(fixture("orders05.xml"))
        .unwrap()
        .replace(
            "<BELNR>4500012345</BELNR>\n    </E1EDK01>",
            &format!("<BELNR>{hostile_belnr}</BELNR>\n    </E1EDK01>"),
        )
        .replace("<BELNR>PO-77881</BELNR>", &format!("<BELNR>{hostile_po}</BELNR>"))
        .replace("<DOCNUM>0000000000004711</DOCNUM>", "<DOCNUM>&lt;b onmouseover=alert(3)&gt;4711</DOCNUM>");
    assert!(xml.contains(hostile_belnr) && xml.contains(hostile_po), "fixture layout changed");
    let key = "<script>alert(4)</script>";
    let original = accepted(&app.post_xml_with(ACME_PROD, xml.clone(), &[("idempotency-key", key)]).await);
    // Blocked by the key (audit keeps the key) and by the fingerprint (audit keeps docnum and key values).
    app.post_xml_with(ACME_PROD, xml.clone(), &[("idempotency-key", key)]).await.expect(200);
    duplicate_of(&app.post_xml(ACME_PROD, xml.clone()).await, original["id"].as_str().unwrap());
    // A message type chosen by the sender cannot carry markup (refused, not
    // stored); key values of plain JSON can.
    let json_body = r#"{"docnum":"9","order":{"id":"<iframe src=javascript:alert(6)>"}}"#;
    let evil_type = [("x-message-type", "<svg/onload=alert(5)>")];
    app.post_json(ACME_PROD, json_body, &evil_type).await.expect_problem(400, "X-Message-Type");
    accepted(&app.post_json(ACME_PROD, json_body, &[("x-message-type", "shop.order")]).await);
    app.post_json(ACME_PROD, json_body, &[("x-message-type", "shop.order")]).await.expect(200);
    assert!(app.audit_events("").await.len() >= 3);

    // Filter values are reflected into the form: hostile ones too.
    let filters = "message_type=%22%3E%3Cscript%3Ealert(7)%3C%2Fscript%3E&action=%3Cimg%20src%3Dx%3E";
    for query in ["limit=500", "limit=1", filters] {
        let res = app
            .send(
                Request::builder()
                    .uri(format!("/admin/audit?{query}"))
                    .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
                    .header(header::ACCEPT, "text/html,application/xhtml+xml")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        res.expect(200);
        assert!(res.header("content-type").is_some_and(|c| c.starts_with("text/html")));
        let page = res.text();
        let allowed: BTreeSet<String> = [
            "!doctype", "html", "head", "meta", "title", "style", "body", "h1", "form", "label", "input",
            "button", "p", "table", "thead", "tbody", "tr", "th", "td", "code", "a", "span",
            // The console layout: navigation and the details column's lists.
            "nav", "main", "div", "ul", "li",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let tags = tag_names(&page);
        assert!(
            tags.is_subset(&allowed),
            "{query}: unexpected tags {:?}",
            tags.difference(&allowed).collect::<Vec<_>>()
        );
        for raw in ["<script", "<img", "<svg", "<iframe", "<b "] {
            assert!(!page.contains(raw), "{query}: raw {raw:?} in the page");
        }
        // Attribute values stay closed: each input has exactly its three quoted attributes.
        for input in page.split("<input").skip(1) {
            let tag = &input[..input.find('>').expect("closed input")];
            assert_eq!(tag.matches('"').count(), 6, "{query}: attribute injection in <input{tag}>");
        }
        if query == "limit=500" {
            assert!(
                page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
                "the key values are shown, escaped"
            );
            assert!(
                page.contains("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"),
                "the PO number is shown, escaped"
            );
            assert!(
                page.contains("&lt;iframe src=javascript:alert(6)&gt;"),
                "JSON key values are shown, escaped"
            );
            assert!(page.contains("&lt;b onmouseover=alert(3)&gt;4711"), "the docnum is shown, escaped");
        }
        if query == filters {
            assert!(
                page.contains("&quot;&gt;&lt;script&gt;alert(7)&lt;/script&gt;"),
                "the filter is echoed, escaped"
            );
        }
    }
}
