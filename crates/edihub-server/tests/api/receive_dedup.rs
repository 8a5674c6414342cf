//! Receiving and fingerprint deduplication over HTTP: a new IDoc is 202, a
//! repeat is 200 naming the original; the same IDoc in every accepted syntax
//! and encoding is one message; re-issued orders are caught by key fields;
//! order changes, other senders' DOCNUMs and documents without any key never
//! collide; the window releases a fingerprint; every real IDoc fixture is
//! accepted once and blocked the second time.

use crate::support::*;

backend_tests!(
    new_then_duplicate_names_the_original,
    same_idoc_in_every_syntax_and_encoding_is_one_message,
    reissued_order_is_a_duplicate_by_key_fields,
    order_change_is_not_a_duplicate_of_the_order,
    same_docnum_from_another_system_is_not_a_duplicate,
    documents_without_any_key_never_collide,
    unconfigured_type_falls_back_to_docnum,
    plain_json_dedups_on_jsonpath_key,
    window_expiry_admits_a_new_original,
    extension_type_only_when_configured,
    real_idocs_are_accepted_once,
);

async fn new_then_duplicate_names_the_original(backend: Backend) {
    let app = TestApp::new(backend).await;
    let first = app.post_xml(ACME_PROD, fixture("orders05.xml")).await;
    let body = accepted(&first);
    assert_eq!(body["message_type"], "ORDERS05");
    assert_eq!(body["mestyp"], "ORDERS");
    assert_eq!(body["docnum"], "0000000000004711");
    assert_eq!(body["deduplicated"], true);
    let id = body["id"].as_str().unwrap().to_string();
    let stored = app.state.store.get_message(id.parse().unwrap()).await.unwrap().expect("stored");
    assert_eq!(stored.payload, fixture("orders05.xml"), "raw payload kept as received");
    assert_eq!(stored.fingerprint.as_deref(), body["fingerprint"].as_str());
    assert_eq!(stored.docnum.as_deref(), Some("0000000000004711"));
    assert_eq!((stored.tenant_id.as_str(), stored.environment_id.as_str()), ("acme", "prod"));
    let answered = chrono::DateTime::parse_from_rfc3339(body["received_at"].as_str().unwrap()).unwrap();
    assert_eq!(answered, stored.received_at, "the answer shows the stored time");
    assert_eq!(app.count_prod().await, 1);

    let again = app.post_xml(ACME_PROD, fixture("orders05.xml")).await;
    let dup = duplicate_of(&again, &id);
    assert!(!again.replayed(), "a fingerprint duplicate is not a key replay");
    assert_eq!(dup["detected_by"], "fingerprint");
    assert_eq!(dup["fingerprint"], body["fingerprint"]);
    assert_eq!(dup["received_at"], body["received_at"], "describes the existing message");
    assert_eq!(app.count_prod().await, 1);
}

async fn same_idoc_in_every_syntax_and_encoding_is_one_message(backend: Backend) {
    let app = TestApp::new(backend).await;
    let first = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let id = first["id"].as_str().unwrap();
    let utf16le = fixture("orders05-utf16.xml");
    let utf16be: Vec<u8> = utf16le.chunks_exact(2).flat_map(|u| [u[1], u[0]]).collect();
    let latin1 = fixture("orders05-latin1.xml");
    let at = latin1.windows(10).position(|w| w == b"ISO-8859-1").expect("declared ISO-8859-1");
    let cp1252 = [&latin1[..at], b"windows-1252", &latin1[at + 10..]].concat();
    let bom_utf8 = [&b"\xEF\xBB\xBF"[..], &fixture("orders05.xml")].concat();
    let soap12 = format!(
        "<env:Envelope xmlns:env=\"http://www.w3.org/2003/05/soap-envelope\"><env:Body>\
         <ORDERS05 xmlns=\"urn:sap-com:document:sap:idoc:soap:messages\">{}</ORDERS05></env:Body></env:Envelope>",
        idoc_element(&fixture("orders05.xml"))
    );
    let variants: Vec<(&str, Option<&str>, Vec<u8>)> = vec![
        ("JSON", Some("application/json"), fixture("orders05.json")),
        ("SOAP 1.1", Some("text/xml; charset=utf-8"), fixture("orders05-soap.xml")),
        ("SOAP 1.2", Some("application/soap+xml; charset=utf-8"), soap12.into_bytes()),
        ("ISO-8859-1", Some("application/xml"), latin1.clone()),
        ("windows-1252", Some("application/xml"), cp1252),
        // The XML declaration wins over a generic charset parameter.
        ("ISO-8859-1 under charset=utf-8", Some("text/xml; charset=utf-8"), latin1),
        ("UTF-16LE", Some("application/xml"), utf16le.clone()),
        ("UTF-16BE", Some("application/xml"), utf16be),
        ("UTF-8 with BOM", Some("application/xml"), bom_utf8),
        ("sniffed XML", Some("application/octet-stream"), fixture("orders05.xml")),
        ("sniffed JSON, no Content-Type", None, fixture("orders05.json")),
        ("sniffed UTF-16", Some("text/plain"), utf16le),
    ];
    let n = variants.len();
    for (name, content_type, body) in variants {
        let res = app.post_receive(Some(&bearer(ACME_PROD)), content_type, body, &[]).await;
        assert_eq!(res.status.as_u16(), 200, "{name}: {}", res.text());
        let dup = duplicate_of(&res, id);
        assert_eq!(dup["fingerprint"], first["fingerprint"], "{name}: same fingerprint");
        assert_eq!(dup["detected_by"], "fingerprint", "{name}");
    }
    assert_eq!(app.count_prod().await, 1);
    let events = app.audit_events("action=message.duplicate_blocked").await;
    assert_eq!(events.len(), n);
    assert!(events.iter().all(|e| e["original_message_id"] == id));
}

async fn reissued_order_is_a_duplicate_by_key_fields(backend: Backend) {
    let app = TestApp::new(backend).await;
    let first = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let res = app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await;
    let dup = duplicate_of(&res, first["id"].as_str().unwrap());
    // The body describes the existing message, with its DOCNUM, not the new one.
    assert_eq!(dup["docnum"], "0000000000004711");
    assert_eq!(app.count_prod().await, 1);
    let events = app.audit_events(&format!("fingerprint={}", first["fingerprint"].as_str().unwrap())).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["details"]["docnum"], "0000000000004712", "the blocked IDoc's number is audited");
}

async fn order_change_is_not_a_duplicate_of_the_order(backend: Backend) {
    let app = TestApp::new(backend).await;
    let order = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let change = accepted(&app.post_xml(ACME_PROD, fixture("ordchg05.xml")).await);
    assert_eq!(change["message_type"], "ORDERS05");
    assert_eq!(change["mestyp"], "ORDCHG");
    assert_ne!(change["fingerprint"], order["fingerprint"]);
    assert_eq!(app.count_prod().await, 2);
    // And the change itself is deduplicated.
    duplicate_of(&app.post_xml(ACME_PROD, fixture("ordchg05.xml")).await, change["id"].as_str().unwrap());
    assert_eq!(app.count_prod().await, 2);
}

async fn same_docnum_from_another_system_is_not_a_duplicate(backend: Backend) {
    let app = TestApp::new(backend).await;
    let no_keys = [("x-message-type", "NOKEYS")];
    let q01 = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &no_keys).await);
    assert_eq!(q01["message_type"], "NOKEYS");
    let p01 = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05-other-system.xml"), &no_keys).await);
    assert_eq!(p01["docnum"], q01["docnum"], "same DOCNUM");
    assert_ne!(p01["fingerprint"], q01["fingerprint"]);
    assert_eq!(app.count_prod().await, 2);
    // Without an explicit type the IDoc is an ORDERS05 (key fields): another type, a new message.
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    // DOCNUM dedup still works within one sender (type named by ?message_type=).
    let mut by_query =
        receive_request(Some(&bearer(ACME_PROD)), Some("application/xml"), fixture("orders05.xml"), &[]);
    *by_query.uri_mut() = format!("{RECEIVE}?message_type=NOKEYS").parse().unwrap();
    duplicate_of(&app.send(by_query).await, q01["id"].as_str().unwrap());
    assert_eq!(app.count_prod().await, 3);
}

async fn documents_without_any_key_never_collide(backend: Backend) {
    let app = TestApp::new(backend).await;
    let absent = [("x-message-type", "ABSENTKEY")];
    // No configured key field present: the fingerprint falls back to DOCNUM+sender.
    let a = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &absent).await);
    let b = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05-other-system.xml"), &absent).await);
    assert_ne!(a["fingerprint"], b["fingerprint"]);
    assert_eq!(app.count_prod().await, 2);

    // Neither a key field nor a DOCNUM: stored without a fingerprint, twice.
    let text = String::from_utf8(fixture("orders05.xml")).unwrap();
    let no_docnum = text.replace("<DOCNUM>0000000000004711</DOCNUM>", "");
    for _ in 0..2 {
        let res = app.post_xml_with(ACME_PROD, no_docnum.clone(), &absent).await;
        let body = accepted(&res);
        assert_eq!(body["deduplicated"], false, "{body}");
        assert!(body["fingerprint"].is_null());
        assert!(body["docnum"].is_null());
        assert!(body["warning"].as_str().is_some_and(|w| w.contains("not deduplicated")), "{body}");
    }
    // Plain JSON without key or docnum behaves the same.
    for _ in 0..2 {
        let res = app.post_json(ACME_PROD, r#"{"note":"hello"}"#, &[("x-message-type", "free.note")]).await;
        assert_eq!(accepted(&res)["deduplicated"], false);
    }
    assert_eq!(app.count_prod().await, 6);
    assert!(app.audit_events("action=message.duplicate_blocked").await.is_empty());
}

async fn unconfigured_type_falls_back_to_docnum(backend: Backend) {
    let app = TestApp::new(backend).await;
    let t = [("x-message-type", "partner.invoice")];
    let first = accepted(&app.post_json(ACME_PROD, r#"{"docnum":"INV-9","amount":1}"#, &t).await);
    assert_eq!(first["deduplicated"], true);
    // Same number, other content: the number is all an unconfigured type has.
    let res = app.post_json(ACME_PROD, r#"{"amount":2,"docnum":"INV-9"}"#, &t).await;
    duplicate_of(&res, first["id"].as_str().unwrap());
    accepted(&app.post_json(ACME_PROD, r#"{"docnum":"INV-10","amount":1}"#, &t).await);
    assert_eq!(app.count_prod().await, 2);
}

async fn plain_json_dedups_on_jsonpath_key(backend: Backend) {
    let app = TestApp::new(backend).await;
    let t = [("x-message-type", "shop.order")];
    let first =
        accepted(&app.post_json(ACME_PROD, r#"{"order":{"id":"A-1","total":10},"sent":"t1"}"#, &t).await);
    assert_eq!(first["message_type"], "shop.order");
    // Same order id, other volatile content and key order: a duplicate.
    let res = app.post_json(ACME_PROD, r#"{"sent":"t2","order":{"total":10,"id":" A-1 "}}"#, &t).await;
    duplicate_of(&res, first["id"].as_str().unwrap());
    accepted(&app.post_json(ACME_PROD, r#"{"order":{"id":"A-2"}}"#, &t).await);
    assert_eq!(app.count_prod().await, 2);
}

async fn window_expiry_admits_a_new_original(backend: Backend) {
    let app = TestApp::new(backend).await;
    let win = [("x-message-type", "WIN2S")];
    let first = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &win).await);
    let first_id = first["id"].as_str().unwrap();
    duplicate_of(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &win).await, first_id);
    assert_eq!(app.count_prod().await, 1);

    tokio::time::sleep(std::time::Duration::from_millis(2600)).await;
    let second = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &win).await);
    let second_id = second["id"].as_str().unwrap();
    assert_ne!(second_id, first_id);
    assert_eq!(second["fingerprint"], first["fingerprint"]);
    assert_eq!(app.count_prod().await, 2);
    // The new message is now the original.
    duplicate_of(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &win).await, second_id);
    // The week-long ORDERS05 window is untouched by all this.
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    assert_eq!(app.count_prod().await, 3);
}

async fn extension_type_only_when_configured(backend: Backend) {
    let config =
        TestConfig::new().message_type("ZORDERS05", |t| t.duplicate_key_fields = strings(["E1EDK01.BELNR"]));
    let app = TestApp::start(backend, config).await;
    let text = String::from_utf8(fixture("orders05.xml")).unwrap();
    let with_ext = |ext: &str| {
        text.replace(
            "<IDOCTYP>ORDERS05</IDOCTYP>",
            &format!("<IDOCTYP>ORDERS05</IDOCTYP><CIMTYP>{ext}</CIMTYP>"),
        )
    };
    let z = accepted(&app.post_xml(ACME_PROD, with_ext("ZORDERS05")).await);
    assert_eq!(z["message_type"], "ZORDERS05");
    // An unconfigured extension is read as its basic type.
    let basic_type = accepted(&app.post_xml(ACME_PROD, with_ext("ZUNKNOWN")).await);
    assert_eq!(basic_type["message_type"], "ORDERS05");
    // …and is the same message as the plain ORDERS05.
    duplicate_of(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await, basic_type["id"].as_str().unwrap());
    // The explicit header wins over both.
    let res = app.post_xml_with(ACME_PROD, with_ext("ZORDERS05"), &[("x-message-type", "NOKEYS")]).await;
    assert_eq!(accepted(&res)["message_type"], "NOKEYS");
    assert_eq!(app.count_prod().await, 3);
}

/// Rules for the real IDocs (the demo config's, plus one for LOIWCS03, which has no DOCNUM).
fn real_types() -> TestConfig {
    TestConfig::new()
        .message_type("INVOIC02", |t| {
            t.duplicate_key_fields = strings(["E1EDK02[QUALF=009].BELNR", "E1EDK01.BELNR"])
        })
        .message_type("DELVRY07", |t| t.duplicate_key_fields = strings(["E1EDL20.VBELN"]))
        .message_type("MATMAS05", |t| t.duplicate_key_fields = strings(["E1MARAM"]))
        .message_type("LOIWCS03", |t| t.duplicate_key_fields = strings(["E1CRHDL.OBJID"]))
}

async fn real_idocs_are_accepted_once(backend: Backend) {
    let cases = [
        ("balsapjco_Avon.xml", "DELVRY03"),
        ("sapabh_O2C-UNEDIFACT-D10B_03-Invoice_INVOIC02.xml", "INVOIC02"),
        ("sapabh_O2C-UNEDIFACT-D96A_01b-SalesOrderResponse_ORDERS05-ORDRSP.xml", "ORDERS05"),
        ("sapabh_O2C-UNEDIFACT-D96A_02-DeliveryNotification_DELVRY07-DESADV.xml", "DELVRY07"),
        ("sapabh_O2C-UNEDIFACT-D96A_03-Invoice_INVOIC02.xml", "INVOIC02"),
        ("sapb2bex_ordrsp-idoc.xml", "ORDERS05"),
        ("sapdm_LOIPRO05.xml", "LOIPRO05"),
        ("sapdm_LOIPRO05_Original.xml", "LOIPRO05"),
        ("sapdm_LOIWCS03.xml", "LOIWCS03"),
        ("sapdm_R1CH01007_RAW_MAT_IDOC.xml", "MATMAS05"),
        ("sapdm_S1SP02677_FINISHED_MAT_IDOC.xml", "MATMAS05"),
    ];
    let listed = std::fs::read_dir(fixtures_dir().join("real"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "xml"))
        .count();
    assert_eq!(listed, cases.len(), "every real fixture is covered");
    for (file, message_type) in cases {
        // A fresh database per file: the two invoices share DOCNUM and BELNR.
        let app = TestApp::start(backend, real_types()).await;
        let body = fixture(&format!("real/{file}"));
        let first = app.post_xml(ACME_PROD, body.clone()).await;
        assert_eq!(first.status.as_u16(), 202, "{file}: {}", first.text());
        let json = accepted(&first);
        assert_eq!(json["message_type"], message_type, "{file}");
        assert_eq!(json["deduplicated"], true, "{file}: {json}");
        let again = app.post_xml(ACME_PROD, body).await;
        assert_eq!(again.status.as_u16(), 200, "{file}: {}", again.text());
        duplicate_of(&again, json["id"].as_str().unwrap());
        assert_eq!(app.count_prod().await, 1, "{file}");
    }
}
