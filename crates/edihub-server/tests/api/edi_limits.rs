//! The shape limits of EDIFACT and X12 segments, on both backends: at
//! most 99 elements per segment, 99 components per element and 999
//! repetitions per element (docs/edi.md, "Limits"). An interchange over
//! one is refused with 422 naming the segment and element, nothing of it
//! stored; a sender that asked for an acknowledgement gets the refusal's
//! (a TA1 with note 024, a CONTRL rejecting the interchange). The largest
//! shapes within the limits are stored. The memory such a body takes is
//! measured against the real binary (`crates/edihub/tests/faults`,
//! `f12_edi_shapes`). An interchange of more messages than
//! `max_idocs_per_packet` is refused (413) at the first message over.

use crate::support::*;

backend_tests!(
    segments_over_the_limits_are_refused_and_acknowledged,
    interchanges_over_max_idocs_per_packet_stop_at_the_first_message_over
);

const X12: &str = "application/EDI-X12";
const EDIFACT: &str = "application/EDIFACT";

fn x12(ctrl: u32, body: &str) -> String {
    format!(
        "ISA*00*          *00*          *ZZ*SHAPES         *ZZ*ACME           *240301*1200*^*00501*{ctrl:09}*0*P*>~\
         GS*PO*SHAPES*ACME*20240301*1200*{ctrl}*X*005010~ST*850*0001~BEG*00*SA*PO-{ctrl}**20240301~{body}~\
         SE*4*0001~GE*1*{ctrl}~IEA*1*{ctrl:09}~"
    )
}

fn edifact(ctrl: u32, body: &str) -> String {
    format!(
        "UNA:+.? 'UNB+UNOC:3+SHAPES:ZZ+ACME:ZZ+240301:1200+IC{ctrl}'UNH+M1+ORDERS:D:96A:UN'\
         BGM+220+PO-{ctrl}+9'{body}'UNT+4+M1'UNZ+1+IC{ctrl}'"
    )
}

async fn post(app: &TestApp, media: &str, query: &str, body: String) -> TestResponse {
    let mut request = receive_request(Some(&bearer(ACME_PROD)), Some(media), body.into_bytes(), &[]);
    *request.uri_mut() = format!("{RECEIVE}{query}").parse().expect("uri");
    app.send(request).await
}

async fn segments_over_the_limits_are_refused_and_acknowledged(backend: Backend) {
    let app = TestApp::new(backend).await;
    let components = |n: usize, sep: &str| vec!["C"; n].join(sep);
    let cases = [
        (X12, x12(1, &format!("REF{}", "*R".repeat(100))), "segment 5 (REF) has more than 99 elements"),
        (
            X12,
            x12(2, &format!("REF*ZZ*{}", components(100, ">"))),
            "segment 5 (REF) has more than 99 components in element 2",
        ),
        (X12, x12(3, &format!("REF*{}", components(1000, "^"))), "more than 999 repetitions of element 1"),
        (
            EDIFACT,
            edifact(4, &format!("FTX{}", "+F".repeat(100))),
            "segment 4 (FTX) has more than 99 elements",
        ),
        (
            EDIFACT,
            edifact(5, &format!("RFF+{}", components(100, ":"))),
            "segment 4 (RFF) has more than 99 components in element 1",
        ),
    ];
    for (media, body, detail) in cases {
        let problem = post(&app, media, "", body.clone()).await.expect_problem(422, detail);
        assert!(problem.contains("at most 99 elements"), "the limits are named: {problem}");
        assert!(problem.len() < 400, "the error does not echo the segment: {problem}");
        let query = if media == X12 { "?ack=997" } else { "?ack=contrl" };
        let res = post(&app, media, query, body).await;
        res.expect(422);
        assert_eq!(res.header("content-type"), Some(media), "{detail}: {}", res.text());
        let mark = if media == X12 { "*R*024~" } else { "+4+18'" };
        assert!(res.text().contains(mark), "{detail}: {}", res.text());
    }
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    assert!(app.audit_events("").await.is_empty(), "nothing audited");
    // The largest shapes within the limits are stored.
    let within = [
        (X12, x12(11, &format!("REF{}", "*R".repeat(99)))),
        (X12, x12(12, &format!("REF*ZZ*{}", components(99, ">")))),
        (X12, x12(13, &format!("REF*{}", components(999, "^")))),
        (EDIFACT, edifact(14, &format!("RFF+{}", components(99, ":")))),
    ];
    for (media, body) in within {
        accepted_interchange(&post(&app, media, "", body).await);
    }
    assert_eq!(app.count_prod().await, 4);
}

/// An X12 interchange of `sets` transaction sets whose set `bad` (if any)
/// declares a wrong SE01.
fn x12_sets(ctrl: u32, sets: usize, bad: Option<usize>) -> String {
    let mut s = format!(
        "ISA*00*          *00*          *ZZ*SETS           *ZZ*ACME           *240301*1200*^*00501*{ctrl:09}*0*P*>~\
         GS*PO*SETS*ACME*20240301*1200*{ctrl}*X*005010~"
    );
    for i in 1..=sets {
        let count = if Some(i) == bad { 9 } else { 3 };
        s.push_str(&format!("ST*850*{i:04}~BEG*00*SA*PO-{ctrl}-{i}**20240301~SE*{count}*{i:04}~"));
    }
    s + &format!("GE*{sets}*{ctrl}~IEA*1*{ctrl:09}~")
}

/// An EDIFACT interchange of `messages` messages whose message `bad` (if
/// any) declares a wrong UNT count.
fn edifact_messages(ctrl: u32, messages: usize, bad: Option<usize>) -> String {
    let mut s = format!("UNB+UNOC:3+SETS:ZZ+ACME:ZZ+240301:1200+IC{ctrl}'");
    for i in 1..=messages {
        let count = if Some(i) == bad { 9 } else { 3 };
        s.push_str(&format!("UNH+M{i}+ORDERS:D:96A:UN'BGM+220+PO-{ctrl}-{i}+9'UNT+{count}+M{i}'"));
    }
    s + &format!("UNZ+{messages}+IC{ctrl}'")
}

/// Over `max_idocs_per_packet` (10 here), an interchange is refused with
/// 413 naming the limit, with or without an acknowledgement asked for, and
/// nothing of it stored: its walk stops at message 11, so a body whose
/// twelfth message is broken is refused as too large, not for that
/// message (which a limit of 12 reaches). At the limit it is stored.
async fn interchanges_over_max_idocs_per_packet_stop_at_the_first_message_over(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().with(|c| c.max_idocs_per_packet = 10)).await;
    let limit = "the request holds more than max_idocs_per_packet (10) messages";
    let cases = [
        (X12, "?ack=999", x12_sets(1, 12, Some(12)), x12_sets(2, 10, None)),
        (EDIFACT, "?ack=contrl", edifact_messages(3, 12, Some(12)), edifact_messages(4, 10, None)),
    ];
    for (media, ack, over, _) in &cases {
        post(&app, media, "", over.clone()).await.expect_problem(413, limit);
        post(&app, media, ack, over.clone()).await.expect_problem(413, limit);
    }
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    assert!(app.audit_events("").await.is_empty(), "nothing audited");
    for (media, _, _, at_the_limit) in &cases {
        accepted_interchange(&post(&app, media, "", at_the_limit.clone()).await);
    }
    assert_eq!(app.count_prod().await, 20);

    let app = TestApp::start(backend, TestConfig::new().with(|c| c.max_idocs_per_packet = 12)).await;
    for (media, _, over, _) in &cases {
        let detail = if *media == X12 { "SE01 of transaction set 0012 says 9 segments" } else { "UNT" };
        post(&app, media, "", over.clone()).await.expect_problem(422, detail);
    }
    assert_eq!(app.count_prod().await, 0);
}
