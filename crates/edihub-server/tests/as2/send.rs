//! `as2::send` against pyas2lib over real HTTP: pyas2lib's server
//! (`pyas2_receiver.py`) opens what edihub posts and answers with its MDN,
//! which edihub judges. A confirmed send is the payload pyas2lib read, byte
//! for byte, and an MDN with the MIC edihub computed; a partner that cannot
//! verify edihub's signature answers a negative MDN, which never counts as
//! delivered.

use std::time::Duration;

use edihub_server::as2::cms::EncryptionAlgorithm;
use edihub_server::as2::mdn::Disposition;
use edihub_server::as2::mic::MicAlgorithm;
use edihub_server::as2::outbound::Payload;
use edihub_server::as2::partner::{MdnMode, PartnerProfile, Security};
use edihub_server::as2::partner_server::PartnerServer;
use edihub_server::as2::receipt::Unconfirmed;
use edihub_server::as2::send::{SendOutcome, send};
use edihub_server::delivery::{AddressPolicy, client};

use crate::support::{Identity, partner, station};

const X12: &[u8] = b"ISA*00*          *00*          *ZZ*EDIHUB         *ZZ*PARTNER        *240101*1200*U*00401*000000007*0*P*>~\r\nGS*PO*EDIHUB*PARTNER*20240101*1200*7*X*004010~\r\nST*850*0001~\r\nBEG*00*SA*PO-7**20240101~\r\nSE*3*0001~\r\nGE*1*7~\r\nIEA*1*000000007~\r\n";

/// pyas2lib's AS2 server, verifying edihub's signatures with `edihub_cert`.
fn receiver(them: &Identity, edihub_cert: &Identity, security: Security) -> PartnerServer {
    PartnerServer::start(&[them.key_pem(), them.cert_pem()].concat(), &edihub_cert.cert_pem(), security)
}

fn profile(them: &Identity, security: Security, url: &str) -> PartnerProfile {
    PartnerProfile {
        url: Some(url.to_string()),
        ..partner(them, security, MicAlgorithm::Sha256, EncryptionAlgorithm::Aes256Cbc)
    }
}

fn payload() -> Payload<'static> {
    Payload { bytes: X12, content_type: "application/edi-x12", filename: Some("po.x12"), subject: "PO 7" }
}

/// The deliveries' client, admitting loopback (the receiver runs here).
fn http() -> reqwest::Client {
    client(AddressPolicy { allow_private: true }).unwrap()
}

const FULL: Security = Security { signed: true, encrypted: true, compressed: true };

#[tokio::test]
async fn a_send_is_confirmed_by_pyas2lib_with_the_mic_of_what_was_sent() {
    let (us, them) = (Identity::new("edihub.test"), Identity::new("partner.test"));
    let client = http();
    for security in [FULL, Security { signed: true, encrypted: false, compressed: false }] {
        let receiver = receiver(&them, &us, security);
        let partner = profile(&them, security, &receiver.url);
        let sent = send(&client, &payload(), &station(&us), &partner, Duration::from_secs(30)).await.unwrap();
        let SendOutcome::Confirmed(mdn) = &sent.outcome else {
            panic!("{security:?}: not confirmed: {:?}", sent.outcome)
        };
        assert_eq!(mdn.original_message_id, sent.message.message_id);
        assert_eq!(mdn.mic.as_ref(), Some(&sent.message.mic), "the MDN reports the MIC edihub computed");
        assert!(mdn.signed.is_some(), "a signed MDN was asked for and verified");
        let (report, read) = (receiver.report(1).expect("a report"), receiver.payload(1));
        assert_eq!(report["status"], "processed", "{report}");
        assert_eq!(report["message_id"].as_str(), Some(sent.message.message_id.as_str()));
        assert_eq!(read.as_deref(), Some(X12), "pyas2lib read the payload byte for byte");
    }
}

#[tokio::test]
async fn a_partner_that_cannot_verify_the_signature_answers_a_negative_mdn() {
    let (us, them, stranger) =
        (Identity::new("edihub.test"), Identity::new("partner.test"), Identity::new("stranger.test"));
    // The partner holds another certificate for edihub: our signature is not the one it expects.
    let receiver = receiver(&them, &stranger, FULL);
    let partner = profile(&them, FULL, &receiver.url);
    let sent = send(&http(), &payload(), &station(&us), &partner, Duration::from_secs(30)).await.unwrap();
    match &sent.outcome {
        SendOutcome::Unconfirmed(mdn, Unconfirmed::Negative(d)) => {
            assert!(!d.is_positive());
            assert_eq!(mdn.original_message_id, sent.message.message_id);
            assert_ne!(d, &Disposition::processed(), "{d}");
        }
        other => panic!("expected a negative MDN, got {other:?}"),
    }
    let (report, read) = (receiver.report(1).expect("a report"), receiver.payload(1));
    assert_ne!(report["status"], "processed", "{report}");
    assert!(read.is_none(), "pyas2lib kept no payload it could not verify");
}

#[tokio::test]
async fn an_async_mdn_is_awaited_and_no_answer_is_reported() {
    let (us, them) = (Identity::new("edihub.test"), Identity::new("partner.test"));
    let receiver = receiver(&them, &us, FULL);
    let partner = PartnerProfile { mdn_mode: MdnMode::Async, ..profile(&them, FULL, &receiver.url) };
    let sent = send(&http(), &payload(), &station(&us), &partner, Duration::from_secs(30)).await.unwrap();
    assert!(matches!(sent.outcome, SendOutcome::AwaitingMdn { status: 200 }), "{:?}", sent.outcome);
    assert!(!sent.outcome.is_confirmed());
    assert_eq!(receiver.report(1).expect("a report")["status"], "processed");

    // Nobody listening: no answer, and no confirmation.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let nobody = profile(&them, FULL, &format!("http://127.0.0.1:{closed}/as2"));
    let sent = send(&http(), &payload(), &station(&us), &nobody, Duration::from_secs(5)).await.unwrap();
    assert!(matches!(sent.outcome, SendOutcome::NoAnswer(_)), "{:?}", sent.outcome);
}

#[tokio::test]
async fn a_partner_without_a_url_is_an_error_before_anything_is_sent() {
    let (us, them) = (Identity::new("edihub.test"), Identity::new("partner.test"));
    let partner = partner(&them, FULL, MicAlgorithm::Sha256, EncryptionAlgorithm::Aes256Cbc);
    let err = send(&http(), &payload(), &station(&us), &partner, Duration::from_secs(5)).await.unwrap_err();
    assert!(err.to_string().contains("PARTNER has no url"), "{err}");
}
