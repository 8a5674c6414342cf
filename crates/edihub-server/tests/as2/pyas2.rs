//! pyas2lib as the partner, both ways, over every combination of signed /
//! encrypted / compressed, every cipher and every digest.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use base64::Engine;
use chrono::Utc;
use edihub_server::as2::cms::EncryptionAlgorithm;
use edihub_server::as2::headers::Envelope;
use edihub_server::as2::inbound;
use edihub_server::as2::mic::{Mic, MicAlgorithm};
use edihub_server::as2::mime::{Headers, canonical_crlf};
use edihub_server::as2::outbound::{self, Payload};
use edihub_server::as2::partner::Security;
use edihub_server::as2::receipt::ReceivedMdn;
use serde_json::{Value, json};

use crate::support::{Identity, TempDir, partner, station};

/// An X12 interchange with LF segment ends, as many partners send them.
const X12: &[u8] = b"ISA*00*          *00*          *ZZ*PARTNER        *ZZ*EDIHUB         *240101*1200*U*00401*000000001*0*P*>~\nGS*PO*PARTNER*EDIHUB*20240101*1200*1*X*004010~\nST*850*0001~\nBEG*00*SA*PO-1**20240101~\nSE*3*0001~\nGE*1*1~\nIEA*1*000000001~\n";

/// One combination, named for the files and the report.
#[derive(Clone)]
struct Case {
    name: String,
    security: Security,
    encryption: EncryptionAlgorithm,
    digest: MicAlgorithm,
}

fn pyas2_enc(e: EncryptionAlgorithm) -> &'static str {
    match e {
        EncryptionAlgorithm::Aes128Cbc => "aes_128_cbc",
        EncryptionAlgorithm::Aes192Cbc => "aes_192_cbc",
        EncryptionAlgorithm::Aes256Cbc => "aes_256_cbc",
        EncryptionAlgorithm::TripleDesCbc => "tripledes_192_cbc",
    }
}

fn pyas2_digest(d: MicAlgorithm) -> &'static str {
    match d {
        MicAlgorithm::Sha1 => "sha1",
        MicAlgorithm::Sha256 => "sha256",
        MicAlgorithm::Sha384 => "sha384",
        MicAlgorithm::Sha512 => "sha512",
    }
}

/// Every combination: the ciphers only when encrypted, the digests only when signed.
fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for bits in 0..8u8 {
        let security =
            Security { signed: bits & 1 != 0, encrypted: bits & 2 != 0, compressed: bits & 4 != 0 };
        let ciphers: &[EncryptionAlgorithm] =
            if security.encrypted { &EncryptionAlgorithm::ALL } else { &[EncryptionAlgorithm::Aes256Cbc] };
        let digests: &[MicAlgorithm] =
            if security.signed { &MicAlgorithm::ALL } else { &[MicAlgorithm::Sha256] };
        for &encryption in ciphers {
            for &digest in digests {
                let name = format!(
                    "s{}e{}c{}-{}-{}",
                    u8::from(security.signed),
                    u8::from(security.encrypted),
                    u8::from(security.compressed),
                    encryption.name(),
                    digest.name()
                );
                cases.push(Case { name, security, encryption, digest });
            }
        }
    }
    cases
}

/// The directory both sides share: keys, certificates, the cases.
fn setup(us: &Identity, them: &Identity, cases: &[Case]) -> TempDir {
    let dir = TempDir::new("pyas2");
    dir.write("partner.pem", &[them.key_pem(), them.cert_pem()].concat());
    dir.write("edihub.pem", &us.cert_pem());
    dir.write("payload", X12);
    let list: Vec<Value> = cases
        .iter()
        .map(|c| {
            json!({
                "name": c.name, "sign": c.security.signed, "encrypt": c.security.encrypted,
                "compress": c.security.compressed, "enc_alg": pyas2_enc(c.encryption),
                "digest_alg": pyas2_digest(c.digest),
            })
        })
        .collect();
    dir.write("cases.json", serde_json::to_string(&list).unwrap().as_bytes());
    dir
}

/// Runs the pyas2lib helper; a missing pyas2lib fails with the reason.
fn helper(command: &str, dir: &Path) -> BTreeMap<String, Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/as2/pyas2_partner.py");
    let out = Command::new("python3").arg(script).arg(command).arg(dir).output().expect("python3 runs");
    assert!(
        out.status.success(),
        "pyas2_partner.py {command} failed (is pyas2lib installed? `make test` installs it):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the helper prints JSON")
}

fn read_http(dir: &Path, stem: &str) -> (Headers, Vec<u8>) {
    let pairs: Vec<(String, String)> =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{stem}.headers.json"))).unwrap()).unwrap();
    (pairs.into_iter().collect(), std::fs::read(dir.join(format!("{stem}.body"))).unwrap())
}

fn write_http(dir: &TempDir, stem: &str, headers: &Headers, body: &[u8]) {
    let pairs: Vec<(&str, &str)> = headers.iter().collect();
    dir.write(&format!("{stem}.headers.json"), serde_json::to_string(&pairs).unwrap().as_bytes());
    dir.write(&format!("{stem}.body"), body);
}

#[test]
fn edihub_opens_what_pyas2lib_sends_and_pyas2lib_verifies_the_mdn() {
    let (us, them) = (Identity::new("edihub.test"), Identity::new("partner.test"));
    let cases = cases();
    let dir = setup(&us, &them, &cases);
    let built = helper("build", dir.path());
    let station = station(&us);
    for case in &cases {
        let expected = &built[&case.name];
        let (headers, body) = read_http(dir.path(), &format!("{}.msg", case.name));
        let envelope = Envelope::read(&headers).unwrap();
        assert_eq!(envelope.message_id.as_str(), expected["message_id"].as_str().unwrap());
        let request = envelope.receipt.as_ref().expect("pyas2lib asks for an MDN");
        let mic_asked = request.options.mic_algorithm().unwrap();
        let profile = partner(&them, case.security, case.digest, case.encryption);
        let opened = inbound::open(&headers, &body, &station, &profile, mic_asked, 1 << 20, Utc::now());
        let opened_ok = opened.as_ref().unwrap_or_else(|e| panic!("{}: {e}", case.name));
        // pyas2lib sends a text payload in canonical form (CRLF line ends);
        // for signed messages the MIC below proves the bytes exact.
        assert_eq!(canonical_crlf(&opened_ok.payload), canonical_crlf(X12), "{}", case.name);
        assert_eq!(opened_ok.encryption, case.security.encrypted.then_some(case.encryption), "{}", case.name);
        assert_eq!(opened_ok.signature, case.security.signed.then_some(case.digest), "{}", case.name);
        assert_eq!(opened_ok.compressed, case.security.compressed, "{}", case.name);
        // pyas2lib computes a MIC for signed messages only; it must be ours.
        if let Some(theirs) = expected["mic"].as_str() {
            assert_eq!(opened_ok.mic.base64(), theirs, "{}", case.name);
        }
        let mdn = inbound::receipt(&envelope, &opened, &station, &profile).unwrap().unwrap();
        write_http(&dir, &format!("{}.mdn", case.name), &mdn.headers, &mdn.body);
        let sent = json!({"message_id": envelope.message_id.as_str(), "mic": expected["mic"]});
        dir.write(&format!("{}.sent.json", case.name), sent.to_string().as_bytes());
    }
    let verdicts = helper("verify-mdns", dir.path());
    for case in &cases {
        assert_eq!(
            verdicts[&case.name],
            json!(["processed", null]),
            "{}: pyas2lib on edihub's MDN",
            case.name
        );
    }
}

#[test]
fn pyas2lib_opens_what_edihub_sends_and_edihub_verifies_its_mdn() {
    let (us, them) = (Identity::new("edihub.test"), Identity::new("partner.test"));
    let cases = cases();
    let dir = setup(&us, &them, &cases);
    let station = station(&us);
    let payload =
        Payload { bytes: X12, content_type: "application/edi-x12", filename: Some("po.x12"), subject: "PO" };
    let mut sent = BTreeMap::new();
    for case in &cases {
        let profile = partner(&them, case.security, case.digest, case.encryption);
        let message = outbound::build(&payload, &station, &profile, Utc::now()).unwrap();
        write_http(&dir, &format!("{}.msg", case.name), &message.headers, &message.body);
        sent.insert(case.name.clone(), (message.sent, profile));
    }
    let parsed = helper("parse", dir.path());
    for case in &cases {
        let result = &parsed[&case.name];
        assert_eq!(result["status"], "processed", "{}: pyas2lib says {}", case.name, result["error"]);
        let payload =
            base64::engine::general_purpose::STANDARD.decode(result["payload"].as_str().unwrap()).unwrap();
        assert_eq!(payload, X12, "{}", case.name);
        assert_eq!(result["signed"], case.security.signed, "{}", case.name);
        assert_eq!(result["encrypted"], case.security.encrypted, "{}", case.name);
        assert_eq!(result["compressed"], case.security.compressed, "{}", case.name);
        let (sent, profile) = &sent[&case.name];
        if case.security.signed {
            let theirs =
                Mic::parse(&format!("{}, {}", result["mic"].as_str().unwrap(), case.digest.name())).unwrap();
            assert_eq!(&theirs, &sent.mic, "{}: pyas2lib's MIC", case.name);
        }
        let (headers, body) = read_http(dir.path(), &format!("{}.pymdn", case.name));
        let mdn =
            ReceivedMdn::read(headers.get("Content-Type").unwrap(), &body, &profile.certificate, Utc::now())
                .unwrap_or_else(|e| panic!("{}: pyas2lib's MDN: {e}", case.name));
        assert!(mdn.signed.is_some(), "{}: a signed MDN was asked for", case.name);
        assert_eq!(mdn.confirms(sent), Ok(()), "{}", case.name);
    }
}

#[test]
fn a_tampered_pyas2lib_message_is_refused_with_its_disposition() {
    let (us, them) = (Identity::new("edihub.test"), Identity::new("partner.test"));
    let signed = Security { signed: true, encrypted: false, compressed: false };
    let case = Case {
        name: "tampered".into(),
        security: signed,
        encryption: EncryptionAlgorithm::Aes256Cbc,
        digest: MicAlgorithm::Sha256,
    };
    let dir = setup(&us, &them, std::slice::from_ref(&case));
    helper("build", dir.path());
    let (headers, body) = read_http(dir.path(), "tampered.msg");
    let text = String::from_utf8(body).unwrap();
    let tampered = text.replacen("BEG*00*SA*PO-1", "BEG*00*SA*PO-9", 1);
    assert_ne!(text, tampered);
    let profile = partner(&them, signed, MicAlgorithm::Sha256, EncryptionAlgorithm::Aes256Cbc);
    let err =
        inbound::open(&headers, tampered.as_bytes(), &station(&us), &profile, None, 1 << 20, Utc::now())
            .unwrap_err();
    assert_eq!(err.disposition().to_string(), "processed/Error: integrity-check-failed", "{err}");
    // The same message checked against another partner certificate.
    let stranger = Identity::new("stranger.test");
    let impostor = partner(&stranger, signed, MicAlgorithm::Sha256, EncryptionAlgorithm::Aes256Cbc);
    let err = inbound::open(&headers, text.as_bytes(), &station(&us), &impostor, None, 1 << 20, Utc::now())
        .unwrap_err();
    assert_eq!(err.disposition().to_string(), "processed/Error: authentication-failed", "{err}");
}

#[test]
fn pyas2lib_refuses_a_tampered_edihub_mdn() {
    let (us, them) = (Identity::new("edihub.test"), Identity::new("partner.test"));
    let signed = Security { signed: true, encrypted: true, compressed: false };
    let case = Case {
        name: "mdn".into(),
        security: signed,
        encryption: EncryptionAlgorithm::Aes128Cbc,
        digest: MicAlgorithm::Sha384,
    };
    let dir = setup(&us, &them, std::slice::from_ref(&case));
    let built = helper("build", dir.path());
    let (headers, body) = read_http(dir.path(), "mdn.msg");
    let envelope = Envelope::read(&headers).unwrap();
    let profile = partner(&them, signed, MicAlgorithm::Sha384, EncryptionAlgorithm::Aes128Cbc);
    let station = station(&us);
    let opened = inbound::open(&headers, &body, &station, &profile, None, 1 << 20, Utc::now());
    let mdn = inbound::receipt(&envelope, &opened, &station, &profile).unwrap().unwrap();
    let text = String::from_utf8(mdn.body.clone()).unwrap();
    let tampered = text.replacen("Reporting-UA: edihub", "Reporting-UA: edihuB", 1);
    assert_ne!(text, tampered);
    write_http(&dir, "mdn.mdn", &mdn.headers, tampered.as_bytes());
    let sent = json!({"message_id": envelope.message_id.as_str(), "mic": built["mdn"]["mic"]});
    dir.write("mdn.sent.json", sent.to_string().as_bytes());
    let verdict = &helper("verify-mdns", dir.path())["mdn"];
    assert_eq!(verdict[0], "failed/Failure", "pyas2lib accepted a tampered MDN: {verdict}");
}
