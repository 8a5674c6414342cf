//! Bad AS2 input: each answered (a failure MDN with its RFC 4130 modifier,
//! or an HTTP problem when the request is not AS2 at all) and nothing
//! stored, neither a message nor the AS2 message's row.

use edihub_server::as2::compress;
use edihub_server::as2::mime::Headers;
use edihub_server::as2::partner::Security;

use super::*;

/// The headers of `message` with `name` set to `value` (`None`: removed).
fn with_header(headers: &Headers, name: &str, value: Option<&str>) -> Headers {
    let mut out: Headers = headers
        .iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case(name))
        .map(|(n, v)| (n, v.to_string()))
        .collect();
    if let Some(v) = value {
        out.push(name, v);
    }
    out
}

/// A signed message whose payload was changed on the way: the signature
/// is the partner's, the content is not what it signed.
async fn tampered_body_fails_the_integrity_check(backend: Backend) {
    let hub = As2Hub::start(backend).await;
    let message = Sender::partner(SIGNED).message(&x12(10));
    let text = String::from_utf8(message.body.clone()).expect("a signed, unencrypted message is text");
    assert!(text.contains("PO-10"));
    let tampered = text.replace("PO-10", "PO-99").into_bytes();
    let answer = hub.post(&message.headers, tampered).await;
    assert_eq!(answer.failure(), "integrity-check-failed");
    hub.assert_nothing_stored("tampered body").await;
}

/// Signed with a key that is not the partner's: authentication failed;
/// encrypted to a certificate that is not ours: decryption failed.
async fn wrong_certificates_fail(backend: Backend) {
    let hub = As2Hub::start(backend).await;
    let i = ids();
    let impostor = Sender::new("PARTNER", &i.stranger, &i.us, SIGNED).message(&x12(11));
    assert_eq!(hub.send(&impostor).await.failure(), "authentication-failed");
    let misdirected = Sender::new("PARTNER", &i.them, &i.stranger, SIGNED_ENCRYPTED).message(&x12(12));
    assert_eq!(hub.send(&misdirected).await.failure(), "decryption-failed");
    hub.assert_nothing_stored("wrong certificates").await;
}

/// A partner whose configured certificate expired: its signatures are not
/// its word any more.
async fn expired_certificate_fails_authentication(backend: Backend) {
    let hub = As2Hub::start(backend).await;
    let i = ids();
    let message = Sender::new("EXPIRED", &i.expired, &i.us, SIGNED).message(&x12(13));
    assert_eq!(hub.send(&message).await.failure(), "authentication-failed");
    hub.assert_nothing_stored("expired certificate").await;
}

/// Not AS2 at all, or not for us: an HTTP problem, no MDN.
async fn requests_that_are_not_as2_get_http_errors(backend: Backend) {
    let hub = As2Hub::start(backend).await;
    let message = Sender::partner(SIGNED).message(&x12(14));
    for missing in ["AS2-From", "AS2-To", "Message-ID"] {
        let answer = hub.post(&with_header(&message.headers, missing, None), message.body.clone()).await;
        let detail = answer.problem(400);
        assert!(detail.contains(missing) && detail.contains("not an AS2 message"), "{detail}");
    }
    let unknown_to =
        hub.post(&with_header(&message.headers, "AS2-To", Some("NOBODY")), message.body.clone()).await;
    assert!(unknown_to.problem(404).contains("AS2-To `NOBODY`"));
    let unknown_from =
        hub.post(&with_header(&message.headers, "AS2-From", Some("STRANGER")), message.body.clone()).await;
    assert!(unknown_from.problem(403).contains("AS2-From `STRANGER`"));
    hub.assert_nothing_stored("not AS2").await;
}

/// A multipart/signed body without its boundary, and a payload that is no
/// document edihub reads: unexpected-processing-error.
async fn malformed_messages_fail_processing(backend: Backend) {
    let hub = As2Hub::start(backend).await;
    let message = Sender::partner(SIGNED).message(&x12(15));
    let broken = hub.post(&message.headers, b"--nowhere\r\n\r\nnot MIME at all".to_vec()).await;
    assert_eq!(broken.failure(), "unexpected-processing-error");
    let not_edi = Sender::partner(SIGNED).message(b"Dear partner, here is no interchange.");
    assert_eq!(hub.send(&not_edi).await.failure(), "unexpected-processing-error");
    hub.assert_nothing_stored("malformed").await;
}

/// A small CompressedData that inflates far past the body limit: refused
/// within the bound (decompression-failed).
async fn decompression_bomb_is_bounded(backend: Backend) {
    let hub = As2Hub::start(backend).await;
    let message =
        Sender::partner(Security { signed: false, encrypted: false, compressed: true }).message(&x12(16));
    let mut inner = b"Content-Type: application/edi-x12\r\n\r\n".to_vec();
    inner.resize(inner.len() + 16 * BODY_LIMIT, b'A');
    let bomb = compress::compress(&inner).unwrap();
    assert!(bomb.len() < BODY_LIMIT / 4, "the bomb is small: {}", bomb.len());
    let answer = hub.post(&message.headers, bomb).await;
    assert_eq!(answer.failure(), "decompression-failed");
    hub.assert_nothing_stored("decompression bomb").await;
}

/// A body over `max_body_bytes`: 413 from its Content-Length, before it is
/// read. Sent through the router in-process: over TCP the server answers
/// and closes while the client is still writing, and the client may see
/// the closed connection before the answer.
async fn body_over_the_limit_is_refused(backend: Backend) {
    let hub = As2Hub::start(backend).await;
    let message = Sender::partner(SIGNED).message(&x12(17));
    let mut request = axum::http::Request::builder().method("POST").uri("/as2");
    for (name, value) in message.headers.iter() {
        request = request.header(name, value);
    }
    let body = vec![b'x'; BODY_LIMIT + 1];
    let request = request.header("content-length", body.len()).body(axum::body::Body::from(body)).unwrap();
    let answer = hub.app.send(request).await;
    answer.expect_problem(413, "larger than the limit");
    hub.assert_nothing_stored("body over the limit").await;
}

backend_tests!(
    tampered_body_fails_the_integrity_check,
    wrong_certificates_fail,
    expired_certificate_fails_authentication,
    requests_that_are_not_as2_get_http_errors,
    malformed_messages_fail_processing,
    decompression_bomb_is_bounded,
    body_over_the_limit_is_refused,
);
