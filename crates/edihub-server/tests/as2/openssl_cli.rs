//! The `openssl cms` command as a second independent implementation:
//! it verifies and decrypts what edihub signs and encrypts, and edihub
//! verifies and decrypts what it signs and encrypts (streamed BER too).

use std::path::Path;
use std::process::Command;

use chrono::Utc;
use edihub_server::as2::As2Error;
use edihub_server::as2::cms::{self, EncryptionAlgorithm};
use edihub_server::as2::error::AlgorithmUse;
use edihub_server::as2::mic::MicAlgorithm;

use crate::support::{Identity, TempDir};

const CONTENT: &[u8] = b"Content-Type: application/EDIFACT\r\nContent-Transfer-Encoding: binary\r\n\r\nUNB+UNOA:2+SENDER+RECEIVER+240101:1200+1'\r\n";

fn openssl(args: &[&str], dir: &Path) -> std::process::Output {
    let out = Command::new("openssl").args(args).current_dir(dir).output().expect("the openssl command runs");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn openssl_verifies_edihubs_signatures() {
    let us = Identity::new("edihub.test");
    let dir = TempDir::new("cli-verify");
    dir.write("content", CONTENT);
    dir.write("cert.pem", &us.cert_pem());
    for algorithm in MicAlgorithm::ALL {
        let der = cms::sign(CONTENT, &us.private_key(), &us.certificate(), algorithm).unwrap();
        dir.write("sig.der", &der);
        let out = openssl(
            &[
                "cms", "-verify", "-binary", "-inform", "DER", "-in", "sig.der", "-content", "content",
                "-CAfile", "cert.pem", "-purpose", "any", "-out", "verified",
            ],
            dir.path(),
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("Verification successful"), "{algorithm}");
        assert_eq!(std::fs::read(dir.path().join("verified")).unwrap(), CONTENT);
        let printed = openssl(&["cms", "-cmsout", "-print", "-inform", "DER", "-in", "sig.der"], dir.path());
        let digest = match algorithm {
            MicAlgorithm::Sha1 => "sha1",
            MicAlgorithm::Sha256 => "sha256",
            MicAlgorithm::Sha384 => "sha384",
            MicAlgorithm::Sha512 => "sha512",
        };
        assert!(
            String::from_utf8_lossy(&printed.stdout).contains(&format!("algorithm: {digest} ")),
            "{algorithm}"
        );
    }
}

#[test]
fn openssl_decrypts_what_edihub_encrypts() {
    let them = Identity::new("partner.test");
    let dir = TempDir::new("cli-decrypt");
    dir.write("key.pem", &them.key_pem());
    dir.write("cert.pem", &them.cert_pem());
    for algorithm in EncryptionAlgorithm::ALL {
        let der = cms::encrypt(CONTENT, &them.certificate(), algorithm, Utc::now()).unwrap();
        dir.write("env.der", &der);
        openssl(
            &[
                "cms", "-decrypt", "-binary", "-inform", "DER", "-in", "env.der", "-inkey", "key.pem",
                "-recip", "cert.pem", "-out", "plain",
            ],
            dir.path(),
        );
        assert_eq!(std::fs::read(dir.path().join("plain")).unwrap(), CONTENT, "{algorithm}");
    }
}

#[test]
fn edihub_verifies_and_decrypts_what_openssl_makes() {
    let (them, us) = (Identity::new("partner.test"), Identity::new("edihub.test"));
    let dir = TempDir::new("cli-make");
    dir.write("content", CONTENT);
    dir.write("them.key", &them.key_pem());
    dir.write("them.pem", &them.cert_pem());
    dir.write("us.pem", &us.cert_pem());
    for (md, algorithm) in
        [("sha1", MicAlgorithm::Sha1), ("sha384", MicAlgorithm::Sha384), ("sha512", MicAlgorithm::Sha512)]
    {
        openssl(
            &[
                "cms", "-sign", "-binary", "-md", md, "-outform", "DER", "-in", "content", "-signer",
                "them.pem", "-inkey", "them.key", "-out", "sig.der",
            ],
            dir.path(),
        );
        let der = std::fs::read(dir.path().join("sig.der")).unwrap();
        let check = cms::verify(CONTENT, &der, &them.certificate(), Utc::now()).unwrap();
        assert_eq!(check.algorithm, algorithm);
        // The digest the signature carries is the content's: it becomes the MIC.
        let digest = openssl::hash::hash(algorithm.digest(), CONTENT).unwrap();
        assert_eq!(check.content_digest.as_deref(), Some(&*digest), "{md}");
        let err = cms::verify(b"other content", &der, &them.certificate(), Utc::now()).unwrap_err();
        assert!(matches!(err, As2Error::Integrity(_)), "{err}");
        let err = cms::verify(CONTENT, &der, &us.certificate(), Utc::now()).unwrap_err();
        assert!(matches!(err, As2Error::Authentication(_)), "{err}");
    }
    // Some AS2 products send BER with indefinite lengths (OpenSSL's
    // `-stream` makes that for encryption below; a detached signature is
    // rewritten here, as the outermost length made indefinite).
    let ber = indefinite(&std::fs::read(dir.path().join("sig.der")).unwrap());
    assert_eq!(
        cms::verify(CONTENT, &ber, &them.certificate(), Utc::now()).unwrap().algorithm,
        MicAlgorithm::Sha512
    );
    let err = cms::verify(b"other content", &ber, &them.certificate(), Utc::now()).unwrap_err();
    assert!(matches!(err, As2Error::Integrity(_)), "{err}");
    // -stream writes indefinite-length BER, as some AS2 products send.
    for (cipher, algorithm) in
        [("-aes-192-cbc", EncryptionAlgorithm::Aes192Cbc), ("-des3", EncryptionAlgorithm::TripleDesCbc)]
    {
        openssl(
            &[
                "cms", "-encrypt", "-binary", cipher, "-stream", "-outform", "DER", "-in", "content", "-out",
                "env.der", "us.pem",
            ],
            dir.path(),
        );
        let der = std::fs::read(dir.path().join("env.der")).unwrap();
        let (plain, used) = cms::decrypt(&der, &us.private_key(), &us.certificate()).unwrap();
        assert_eq!((plain.as_slice(), used), (CONTENT, algorithm));
    }
}

/// DER `der` (a SEQUENCE) with its outermost length made indefinite: BER.
fn indefinite(der: &[u8]) -> Vec<u8> {
    assert_eq!(der[0], 0x30, "a SEQUENCE");
    let header = match der[1] {
        n if n < 0x80 => 2,
        n => 2 + usize::from(n & 0x7f),
    };
    [&[0x30, 0x80][..], &der[header..], &[0, 0]].concat()
}

#[test]
fn unsupported_algorithms_from_openssl_are_named() {
    let (them, us) = (Identity::new("partner.test"), Identity::new("edihub.test"));
    let dir = TempDir::new("cli-unsupported");
    dir.write("content", CONTENT);
    dir.write("them.key", &them.key_pem());
    dir.write("them.pem", &them.cert_pem());
    dir.write("us.pem", &us.cert_pem());
    openssl(
        &[
            "cms", "-sign", "-binary", "-md", "md5", "-outform", "DER", "-in", "content", "-signer",
            "them.pem", "-inkey", "them.key", "-out", "md5.der",
        ],
        dir.path(),
    );
    let der = std::fs::read(dir.path().join("md5.der")).unwrap();
    let err = cms::verify(CONTENT, &der, &them.certificate(), Utc::now()).unwrap_err();
    assert_eq!(
        err,
        As2Error::UnsupportedAlgorithm {
            used: AlgorithmUse::Signature,
            name: "MD5 (1.2.840.113549.2.5)".into()
        }
    );
    assert_eq!(err.disposition().to_string(), "processed/Error: authentication-failed");
    openssl(
        &[
            "cms",
            "-encrypt",
            "-binary",
            "-aes-256-gcm",
            "-outform",
            "DER",
            "-in",
            "content",
            "-out",
            "gcm.der",
            "us.pem",
        ],
        dir.path(),
    );
    let der = std::fs::read(dir.path().join("gcm.der")).unwrap();
    let err = cms::decrypt(&der, &us.private_key(), &us.certificate()).unwrap_err();
    assert!(matches!(&err, As2Error::UnsupportedAlgorithm { used: AlgorithmUse::Encryption, .. }), "{err}");
    assert_eq!(err.disposition().to_string(), "processed/Error: decryption-failed");
}
