//! Packets (several `<IDOC>` under one root): one message per IDoc, each
//! deduplicated on its own; the answer is `{"messages":[…]}` in packet order,
//! 202 when any IDoc was new and 200 when all were duplicates.

use crate::support::*;

backend_tests!(
    packet_of_three_then_repeat,
    mixed_packet_reports_each_idoc_in_order,
    packet_key_replays_whole_answer,
    same_idoc_twice_in_one_packet,
    json_packet_dedups_against_xml,
    large_packet_in_chunks_then_resent,
    packet_over_the_limit_is_413_and_stores_nothing,
    large_packet_over_the_limit_stops_at_the_first_idoc_over,
);

/// A packet of `n` minimal ORDERS05 IDocs, order numbers `{tag}-0…`.
pub(crate) fn minimal_packet(tag: &str, n: usize) -> String {
    let idocs: String = (0..n)
        .map(|i| {
            format!(
                "<IDOC BEGIN=\"1\"><EDI_DC40 SEGMENT=\"1\"><IDOCTYP>ORDERS05</IDOCTYP><MESTYP>ORDERS</MESTYP>\
                 <DOCNUM>{}</DOCNUM><SNDPRN>Q01CLNT100</SNDPRN></EDI_DC40>\
                 <E1EDK01 SEGMENT=\"1\"><BELNR>{tag}-{i}</BELNR></E1EDK01></IDOC>",
                7_000_000 + i
            )
        })
        .collect();
    format!("<ORDERS05>{idocs}</ORDERS05>")
}

async fn packet_of_three_then_repeat(backend: Backend) {
    let app = TestApp::new(backend).await;
    let first = app.post_xml(ACME_PROD, fixture("packet-3.xml")).await;
    first.expect(202);
    let body = first.json();
    let messages = body["messages"].as_array().expect("messages array");
    assert_eq!(messages.len(), 3);
    let mut ids = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        ids.push(assert_outcome(m, "accepted"));
        assert_eq!(m["docnum"], format!("000000000000480{}", i + 1), "packet order");
        assert_eq!(m["message_type"], "ORDERS05");
    }
    assert_eq!(app.count_prod().await, 3);
    for (i, id) in ids.iter().enumerate() {
        let row = app.state.store.get_message(id.parse().unwrap()).await.unwrap().expect("stored");
        assert_eq!(row.packet_index, i as i32);
    }

    let again = app.post_xml(ACME_PROD, fixture("packet-3.xml")).await;
    again.expect(200);
    let body = again.json();
    let messages = body["messages"].as_array().expect("messages array");
    assert_eq!(messages.len(), 3);
    for (m, id) in messages.iter().zip(&ids) {
        assert_outcome(m, "duplicate");
        assert_eq!(&m["id"], id);
        assert_eq!(m["detected_by"], "fingerprint");
    }
    assert_eq!(app.count_prod().await, 3);
    assert_eq!(app.audit_events("action=message.duplicate_blocked").await.len(), 3);
}

async fn mixed_packet_reports_each_idoc_in_order(backend: Backend) {
    let app = TestApp::new(backend).await;
    let order = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let packet = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ORDERS05>{}{}</ORDERS05>",
        idoc_element(&fixture("ordchg05.xml")),
        idoc_element(&fixture("orders05.xml")),
    );
    let res = app.post_xml(ACME_PROD, packet).await;
    res.expect(202);
    let body = res.json();
    let messages = body["messages"].as_array().expect("messages array");
    assert_eq!(messages.len(), 2);
    assert_outcome(&messages[0], "accepted");
    assert_eq!(messages[0]["mestyp"], "ORDCHG");
    assert_outcome(&messages[1], "duplicate");
    assert_eq!(messages[1]["id"], order["id"]);
    assert_eq!(app.count_prod().await, 2);
    let events = app.audit_events("action=message.duplicate_blocked").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["details"]["packet_index"], 1);
    assert_eq!(events[0]["original_message_id"], order["id"]);
}

async fn packet_key_replays_whole_answer(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "packet-key")];
    let first = app.post_xml_with(ACME_PROD, fixture("packet-3.xml"), &key).await;
    first.expect(202);
    let again = app.post_xml_with(ACME_PROD, fixture("packet-3.xml"), &key).await;
    again.expect(200);
    assert!(again.replayed());
    assert_eq!(again.body, first.body, "the 202 packet answer, replayed as is");
    assert_eq!(app.count_prod().await, 3);
}

async fn same_idoc_twice_in_one_packet(backend: Backend) {
    let app = TestApp::new(backend).await;
    let a = idoc_element(&fixture("orders05.xml"));
    let res = app.post_xml(ACME_PROD, format!("<ORDERS05>{a}{a}</ORDERS05>")).await;
    res.expect(202);
    let body = res.json();
    let first = assert_outcome(&body["messages"][0], "accepted");
    assert_outcome(&body["messages"][1], "duplicate");
    assert_eq!(body["messages"][1]["id"], first.as_str());
    assert_eq!(app.count_prod().await, 1);
}

async fn json_packet_dedups_against_xml(backend: Backend) {
    let app = TestApp::new(backend).await;
    let order = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let json: serde_json::Value = serde_json::from_slice(&fixture("orders05.json")).unwrap();
    let known = json["ORDERS05"]["IDOC"].clone();
    let mut other = known.clone();
    other["EDI_DC40"]["DOCNUM"] = "0000000000009001".into();
    other["E1EDK01"]["BELNR"] = "4500090001".into();
    let packet = serde_json::json!({ "ORDERS05": { "IDOC": [other, known] } });
    let res = app.post_json(ACME_PROD, serde_json::to_vec(&packet).unwrap(), &[]).await;
    res.expect(202);
    let body = res.json();
    assert_outcome(&body["messages"][0], "accepted");
    assert_eq!(body["messages"][0]["docnum"], "0000000000009001");
    assert_outcome(&body["messages"][1], "duplicate");
    assert_eq!(body["messages"][1]["id"], order["id"]);
    assert_eq!(app.count_prod().await, 2);
}

/// A packet larger than one commit chunk (256 IDocs) while small senders
/// keep sending: every IDoc stored once in order, the small messages
/// stored too, and the re-send answered 200 with every IDoc a duplicate of
/// the first send, audited once each.
async fn large_packet_in_chunks_then_resent(backend: Backend) {
    let app = TestApp::new(backend).await;
    let n = 600;
    let packet = minimal_packet("LP", n);
    let small = |i: usize| {
        let xml = String::from_utf8(fixture("orders05.xml")).unwrap();
        xml.replace("4500012345", &format!("SMALL-{i}"))
    };
    let (first, smalls) = tokio::join!(app.post_xml(ACME_PROD, packet.clone()), async {
        let mut statuses = Vec::new();
        for i in 0..5 {
            statuses.push(app.post_xml(ACME_PROD, small(i)).await.status);
        }
        statuses
    });
    first.expect(202);
    assert!(smalls.iter().all(|s| *s == 202), "small senders are served: {smalls:?}");
    let body = first.json();
    let messages = body["messages"].as_array().expect("messages array");
    assert_eq!(messages.len(), n);
    let ids: Vec<String> = messages.iter().map(|m| assert_outcome(m, "accepted")).collect();
    assert_eq!(messages[n - 1]["docnum"], (7_000_000 + n - 1).to_string(), "packet order");
    assert_eq!(app.count_prod().await, (n + 5) as i64);

    let again = app.post_xml(ACME_PROD, packet).await;
    again.expect(200);
    let body = again.json();
    for (m, id) in body["messages"].as_array().expect("messages array").iter().zip(&ids) {
        assert_outcome(m, "duplicate");
        assert_eq!(&m["id"], id);
    }
    assert_eq!(app.count_prod().await, (n + 5) as i64);
    let filter = edihub_store::AuditFilter {
        action: Some(edihub_store::DUPLICATE_BLOCKED.into()),
        limit: 10_000,
        ..Default::default()
    };
    assert_eq!(app.state.store.list_audit(&filter).await.unwrap().len(), n, "one event per blocked IDoc");
}

/// More IDocs than `max_idocs_per_packet`: 413 naming the limit, nothing
/// of the packet stored; a packet at the limit is accepted.
async fn packet_over_the_limit_is_413_and_stores_nothing(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().with(|c| c.max_idocs_per_packet = 10)).await;
    let res = app.post_xml(ACME_PROD, minimal_packet("OL", 11)).await;
    res.expect_problem(413, "the request holds more than max_idocs_per_packet (10) messages (IDocs, or an interchange's messages)");
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    assert!(app.audit_events("").await.is_empty());
    app.post_xml(ACME_PROD, minimal_packet("OL", 10)).await.expect(202);
    assert_eq!(app.count_prod().await, 10);
}

/// Over `max_idocs_per_packet` (10 here), a packet of a megabyte or more is
/// refused with 413 at its eleventh IDoc, before the rest are read: a
/// twelfth IDoc that is not well-formed is never reached, while a limit of
/// 12 reaches it and refuses the packet for it (400). Nothing is stored
/// either way; the same packet well-formed is stored at a limit of 12.
async fn large_packet_over_the_limit_stops_at_the_first_idoc_over(backend: Backend) {
    // Each IDoc padded to about 100 KB, so the body is read as a large one.
    let pad = format!("</BELNR>{}", " ".repeat(100_000));
    let packet = minimal_packet("LP", 12).replace("</BELNR>", &pad);
    assert!(packet.len() > 1024 * 1024);
    let at = packet.rfind("</BELNR>").expect("the packet has order numbers");
    let broken = format!("{}</BELNX>{}", &packet[..at], &packet[at + "</BELNR>".len()..]);
    let app = TestApp::start(backend, TestConfig::new().with(|c| c.max_idocs_per_packet = 10)).await;
    let res = app.post_xml(ACME_PROD, broken.clone()).await;
    res.expect_problem(413, "the request holds more than max_idocs_per_packet (10) messages");
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    assert!(app.audit_events("").await.is_empty());
    let app = TestApp::start(backend, TestConfig::new().with(|c| c.max_idocs_per_packet = 12)).await;
    app.post_xml(ACME_PROD, broken).await.expect_problem(400, "found </BELNX>");
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    app.post_xml(ACME_PROD, packet).await.expect(202);
    assert_eq!(app.count_prod().await, 12);
}
