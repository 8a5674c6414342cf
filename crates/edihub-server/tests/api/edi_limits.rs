//! The shape limits of EDIFACT and X12 segments, on both backends: at
//! most 99 elements per segment, 99 components per element and 999
//! repetitions per element (docs/edi.md, "Limits"). An interchange over
//! one is refused with 422 naming the segment and element, nothing of it
//! stored; a sender that asked for an acknowledgement gets the refusal's
//! (a TA1 with note 024, a CONTRL rejecting the interchange). The largest
//! shapes within the limits are stored. The memory such a body takes is
//! measured against the real binary (`crates/edihub/tests/faults`,
//! `f12_edi_shapes`).

use crate::support::*;

backend_tests!(segments_over_the_limits_are_refused_and_acknowledged);

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
