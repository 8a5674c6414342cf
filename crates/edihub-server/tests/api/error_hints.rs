//! Errors that tell a newcomer what to do: a form-encoded body (curl's `-d`
//! without a Content-Type) gets 415 with the way to send a document; an XML
//! body labelled JSON gets 400 saying it looks like XML; an address already
//! in use is named. Refused bodies store and audit nothing.

use crate::support::*;

backend_tests!(a_form_body_is_415_with_how_to_send_it, xml_labelled_json_is_400_saying_so);

async fn nothing_stored(app: &TestApp) {
    assert_eq!(app.count_prod().await, 0, "nothing stored");
    assert!(app.audit_events("").await.is_empty(), "nothing audited");
}

async fn a_form_body_is_415_with_how_to_send_it(backend: Backend) {
    let app = TestApp::new(backend).await;
    let form = Some("application/x-www-form-urlencoded");
    let res = app.post_receive(Some(&bearer(ACME_PROD)), form, r#"{"id":"ord-2"}"#, &[]).await;
    let detail = res.expect_problem(415, "unsupported content type application/x-www-form-urlencoded");
    assert!(detail.contains("--data-binary @FILE -H 'Content-Type: application/xml'"), "{detail}");
    nothing_stored(&app).await;
}

async fn xml_labelled_json_is_400_saying_so(backend: Backend) {
    let app = TestApp::new(backend).await;
    let res = app
        .post_receive(Some(&bearer(ACME_PROD)), Some("application/json"), fixture("orders05.xml"), &[])
        .await;
    let detail = res.expect_problem(400, "invalid JSON");
    assert!(
        detail.contains("the body looks like XML: send it with Content-Type: application/xml"),
        "{detail}"
    );
    // Broken JSON that is not XML gets no such hint.
    let res = app.post_receive(Some(&bearer(ACME_PROD)), Some("application/json"), r#"{"id":"#, &[]).await;
    let detail = res.expect_problem(400, "invalid JSON");
    assert!(!detail.contains("XML"), "{detail}");
    nothing_stored(&app).await;
}

#[tokio::test]
async fn an_address_in_use_is_named() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let err = edihub_server::serve::bind(&addr).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    assert!(err.to_string().starts_with(&format!("cannot listen on {addr}: ")), "{err}");
}
