//! edihub to edihub: every combination of protections built by `outbound`,
//! opened by `inbound`, answered by an MDN that `receipt` reads and judges.

use chrono::Utc;

use super::headers::Envelope;
use super::inbound;
use super::mdn::Disposition;
use super::mime::{self, Headers};
use super::outbound::{self, Payload};
use super::partner::Security;
use super::receipt::{ReceivedMdn, Unconfirmed};
use super::testing::{FULL, mirrored, partner, station};
use super::*;

const X12: &[u8] = b"ISA*00*          *00*          *ZZ*PARTNER        *ZZ*EDIHUB         *240101*1200*U*00401*000000001*0*P*>~\nGS*PO*A*B*20240101*1200*1*X*004010~\n";

fn payload() -> Payload<'static> {
    Payload { bytes: X12, content_type: "application/edi-x12", filename: Some("po 1.x12"), subject: "PO 1" }
}

fn every_security() -> Vec<Security> {
    (0..8u8)
        .map(|bits| Security { signed: bits & 1 != 0, encrypted: bits & 2 != 0, compressed: bits & 4 != 0 })
        .collect()
}

/// The partner (mirrored) sends; edihub opens.
fn send(security: Security) -> (outbound::OutboundMessage, Result<inbound::Opened, As2Error>, Envelope) {
    let (their_station, us_at_theirs) = mirrored(security);
    let message = outbound::build(&payload(), &their_station, &us_at_theirs, Utc::now()).unwrap();
    let envelope = Envelope::read(&message.headers).unwrap();
    let mic_asked = envelope.receipt.as_ref().and_then(|r| r.options.mic_algorithm().unwrap());
    let opened = inbound::open(
        &message.headers,
        &message.body,
        &station(),
        &partner(security),
        mic_asked,
        1 << 20,
        Utc::now(),
    );
    (message, opened, envelope)
}

#[test]
fn every_combination_opens_with_its_mic() {
    for security in every_security() {
        let (message, opened, _) = send(security);
        let opened = opened.unwrap_or_else(|e| panic!("{security:?}: {e}"));
        assert_eq!(opened.payload, X12, "{security:?}");
        assert_eq!(opened.content_type, "application/edi-x12");
        assert_eq!(opened.filename.as_deref(), Some("po 1.x12"));
        assert_eq!(opened.signature.is_some(), security.signed);
        assert_eq!(opened.encryption.is_some(), security.encrypted);
        assert_eq!(opened.compressed, security.compressed);
        assert_eq!(opened.mic, message.sent.mic, "{security:?}");
    }
}

#[test]
fn the_mdn_confirms_what_was_sent() {
    for security in every_security() {
        let (message, opened, envelope) = send(security);
        let mdn = inbound::receipt(&envelope, &opened, &station(), &partner(security)).unwrap().unwrap();
        assert_eq!(mdn.headers.get("AS2-From"), Some("EDIHUB"));
        assert_eq!(mdn.headers.get("AS2-To"), Some("PARTNER"));
        let (_, us_at_theirs) = mirrored(security);
        let read = ReceivedMdn::read(
            mdn.headers.get("Content-Type").unwrap(),
            &mdn.body,
            &us_at_theirs.certificate,
            Utc::now(),
        )
        .unwrap();
        assert_eq!(read.signed, Some(mic::MicAlgorithm::Sha256));
        assert_eq!(read.reporting_ua.as_deref(), Some("edihub"));
        assert_eq!(read.confirms(&message.sent), Ok(()), "{security:?}");
    }
}

#[test]
fn a_failure_mdn_reports_the_disposition_and_no_mic() {
    let (message, _, envelope) = send(FULL);
    let mut impostor = partner(FULL);
    impostor.certificate = testing::shared()[2].1.clone();
    let opened =
        inbound::open(&message.headers, &message.body, &station(), &impostor, None, 1 << 20, Utc::now());
    assert!(matches!(opened, Err(As2Error::Authentication(_))), "{opened:?}");
    let mdn = inbound::receipt(&envelope, &opened, &station(), &partner(FULL)).unwrap().unwrap();
    let (_, us) = mirrored(FULL);
    let read =
        ReceivedMdn::read(mdn.headers.get("Content-Type").unwrap(), &mdn.body, &us.certificate, Utc::now())
            .unwrap();
    assert_eq!(read.disposition.to_string(), "processed/Error: authentication-failed");
    assert_eq!(read.mic, None);
    assert_eq!(read.confirms(&message.sent), Err(Unconfirmed::Negative(read.disposition.clone())));
}

#[test]
fn a_tampered_signed_body_fails_its_integrity_check() {
    let security = Security { signed: true, encrypted: false, compressed: false };
    let (message, _, _) = send(security);
    let text = String::from_utf8(message.body.clone()).unwrap();
    let tampered = text.replacen("GS*PO*A*B", "GS*PO*A*C", 1);
    assert_ne!(text, tampered);
    let err = inbound::open(
        &message.headers,
        tampered.as_bytes(),
        &station(),
        &partner(security),
        None,
        1 << 20,
        Utc::now(),
    )
    .unwrap_err();
    assert!(matches!(err, As2Error::Integrity(_)), "{err}");
}

#[test]
fn missing_protections_are_insufficient_security() {
    let plain = Security { signed: false, encrypted: false, compressed: false };
    let (their_station, us_at_theirs) = mirrored(plain);
    let message = outbound::build(&payload(), &their_station, &us_at_theirs, Utc::now()).unwrap();
    for (required, what) in [
        (Security { signed: true, ..plain }, "signed"),
        (Security { encrypted: true, ..plain }, "encrypted"),
        (Security { compressed: true, ..plain }, "compressed"),
    ] {
        let err = inbound::open(
            &message.headers,
            &message.body,
            &station(),
            &partner(required),
            None,
            1 << 20,
            Utc::now(),
        )
        .unwrap_err();
        assert_eq!(
            err,
            As2Error::InsufficientSecurity(format!(
                "partner PARTNER must send {what} messages; this one is not {what}"
            ))
        );
        assert_eq!(err.disposition().to_string(), "processed/Error: insufficient-message-security");
    }
}

#[test]
fn a_message_from_another_key_fails_authentication() {
    let security = Security { signed: true, encrypted: true, compressed: false };
    let (message, _, _) = send(security);
    let mut impostor = partner(security);
    impostor.certificate = testing::shared()[2].1.clone();
    let err =
        inbound::open(&message.headers, &message.body, &station(), &impostor, None, 1 << 20, Utc::now())
            .unwrap_err();
    assert!(matches!(err, As2Error::Authentication(_)), "{err}");
}

#[test]
fn a_compressed_bomb_is_refused_at_the_limit() {
    let security = Security { signed: false, encrypted: false, compressed: true };
    let (their_station, us_at_theirs) = mirrored(security);
    let zeros = vec![b'0'; 8 * 1024 * 1024];
    let bomb = Payload { bytes: &zeros, ..payload() };
    let message = outbound::build(&bomb, &their_station, &us_at_theirs, Utc::now()).unwrap();
    assert!(message.body.len() < 64 * 1024);
    let err = inbound::open(
        &message.headers,
        &message.body,
        &station(),
        &partner(security),
        None,
        1 << 20,
        Utc::now(),
    )
    .unwrap_err();
    assert_eq!(err.disposition().to_string(), "processed/Error: decompression-failed");
}

#[test]
fn malformed_mime_is_refused() {
    let security = Security { signed: true, encrypted: false, compressed: false };
    let http: Headers =
        [("Content-Type", "multipart/signed; protocol=\"application/pkcs7-signature\"; boundary=\"b\"")]
            .into_iter()
            .collect();
    let cases: [&[u8]; 3] = [
        b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n",
        b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--\r\n",
        b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b\r\nContent-Type: text/plain\r\n\r\nsig\r\n--b--",
    ];
    for body in cases {
        let err = inbound::open(&http, body, &station(), &partner(security), None, 1 << 20, Utc::now())
            .unwrap_err();
        assert!(matches!(err, As2Error::Malformed(_)), "{err}");
        assert_eq!(err.disposition().to_string(), "processed/Error: unexpected-processing-error");
    }
    let no_type = Headers::new();
    assert!(matches!(
        inbound::open(&no_type, b"x", &station(), &partner(security), None, 1 << 20, Utc::now()),
        Err(As2Error::Malformed(t)) if t.contains("Content-Type")
    ));
}

#[test]
fn a_required_unsupported_mic_algorithm_gets_a_failed_mdn() {
    let security = Security { signed: false, encrypted: false, compressed: false };
    let (message, opened, _) = send(security);
    let mut headers = message.headers.clone();
    headers.push("X-Unused", "1");
    let mut fields: Vec<(String, String)> =
        headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    for (name, value) in fields.iter_mut() {
        if name == "Disposition-Notification-Options" {
            *value = "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=required, md5"
                .into();
        }
    }
    let envelope = Envelope::read(&fields.into_iter().collect()).unwrap();
    let mdn = inbound::receipt(&envelope, &opened, &station(), &partner(security)).unwrap().unwrap();
    let (_, us) = mirrored(security);
    let read =
        ReceivedMdn::read(mdn.headers.get("Content-Type").unwrap(), &mdn.body, &us.certificate, Utc::now())
            .unwrap();
    assert_eq!(read.disposition, Disposition::failed(mdn::FailureModifier::UnsupportedMicAlgorithms));
}

#[test]
fn an_mdn_is_judged_against_what_was_sent() {
    let (message, opened, envelope) = send(FULL);
    let mdn = inbound::receipt(&envelope, &opened, &station(), &partner(FULL)).unwrap().unwrap();
    let (_, us) = mirrored(FULL);
    let ct = mdn.headers.get("Content-Type").unwrap();
    let read = ReceivedMdn::read(ct, &mdn.body, &us.certificate, Utc::now()).unwrap();
    let mut other = message.sent.clone();
    other.mic = mic::Mic::compute(mic::MicAlgorithm::Sha256, b"other").unwrap();
    assert!(matches!(read.confirms(&other), Err(Unconfirmed::MicMismatch { .. })));
    let mut other = message.sent.clone();
    other.message_id = id::MessageId::new("else@x").unwrap();
    assert!(matches!(read.confirms(&other), Err(Unconfirmed::OtherMessage { .. })));
    let mut no_mic = read.clone();
    no_mic.mic = None;
    assert_eq!(no_mic.confirms(&message.sent), Err(Unconfirmed::NoMic));
    let mut unsigned = read.clone();
    unsigned.signed = None;
    assert_eq!(unsigned.confirms(&message.sent), Err(Unconfirmed::Unsigned));
    // A signed MDN from someone else does not read.
    let stranger = &testing::shared()[2].1;
    assert!(matches!(
        ReceivedMdn::read(ct, &mdn.body, stranger, Utc::now()),
        Err(As2Error::Authentication(_))
    ));
    // Its parts are canonical CRLF MIME.
    assert!(!mime::canonical_crlf(&mdn.body).is_empty());
}
