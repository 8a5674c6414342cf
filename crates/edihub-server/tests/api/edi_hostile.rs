//! Interchanges too big for the committed corpus (`fixtures/bad/`, under
//! 1 MB a file): a 10 MB single segment in each syntax, unterminated (400)
//! or inside a message whose count disagrees (422). Each gets its clear
//! error and stores nothing; asked for an acknowledgement, the refusal is
//! acknowledged from the readable header without echoing the segment.

use crate::support::*;

backend_tests!(ten_megabyte_segments_are_refused_and_store_nothing);

const TEN_MB: usize = 10 * 1024 * 1024;

async fn post(app: &TestApp, media: &str, query: &str, body: String) -> TestResponse {
    let mut request = receive_request(Some(&bearer(ACME_PROD)), Some(media), body.into_bytes(), &[]);
    *request.uri_mut() = format!("{RECEIVE}{query}").parse().expect("uri");
    app.send(request).await
}

async fn ten_megabyte_segments_are_refused_and_store_nothing(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().with(|c| c.max_body_bytes = 12 * 1024 * 1024)).await;
    let huge = "A".repeat(TEN_MB);
    let isa = "ISA*00*          *00*          *ZZ*BIG            *ZZ*ACME           *240301*1200*U*00401*000000001*0*P*>~";
    let x12_open = format!("{isa}GS*PO*BIG*ACME*20240301*1200*1*X*004010~ST*850*0001~BEG*00*NE*{huge}");
    let x12_counted = format!("{x12_open}~SE*9*0001~GE*1*1~IEA*1*000000001~");
    let unb = "UNB+UNOC:3+BIG:14+ACME:14+240301:1200+IC1'UNH+1+ORDERS:D:96A:UN'";
    let edi_open = format!("{unb}FTX+AAI+++{huge}");
    let edi_counted = format!("{edi_open}'UNT+9+1'UNZ+1+IC1'");
    let x12 = "application/EDI-X12";
    let edifact = "application/EDIFACT";
    post(&app, x12, "", x12_open.clone()).await.expect_problem(400, "segment 4 (BEG) is not terminated");
    post(&app, x12, "", x12_counted.clone()).await.expect_problem(422, "SE01 of transaction set 0001 says 9");
    post(&app, edifact, "", edi_open.clone()).await.expect_problem(400, "segment 3 (FTX) is not terminated");
    post(&app, edifact, "", edi_counted.clone()).await.expect_problem(422, "UNT 0074 of message 1 says 9");
    // With an acknowledgement asked for: the refusal's, small, with the same status.
    let cases = [
        (x12, "?ack=997", x12_open, 400, "*R*023~"),
        (x12, "?ack=999", x12_counted, 422, "IK5*R*4~"),
        (edifact, "?ack=contrl", edi_open, 400, "+4+13'"),
        (edifact, "?ack=contrl", edi_counted, 422, "+4+29'UCS+3'UCD+29+1'"),
    ];
    for (media, query, body, status, wanted) in cases {
        let res = post(&app, media, query, body).await;
        res.expect(status);
        assert_eq!(res.header("content-type"), Some(media));
        assert!(res.body.len() < 1024, "the acknowledgement is small: {} bytes", res.body.len());
        assert!(res.text().contains(wanted), "{wanted}: {}", res.text());
    }
    assert_eq!(app.count_prod().await, 0);
}
