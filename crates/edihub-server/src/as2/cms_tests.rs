//! Signatures and encryption through OpenSSL: every digest and cipher, and
//! each way a signature or envelope is refused.

use chrono::Utc;
use openssl::cms::{CMSOptions, CmsContentInfo};
use openssl::stack::Stack;
use openssl::symm::Cipher;

use super::*;
use crate::as2::mdn::ErrorModifier;
use crate::as2::testing::{identity_valid, shared};

const CONTENT: &[u8] =
    b"Content-Type: application/edi-x12\r\n\r\nISA*00*          *00*          *ZZ*A*ZZ*B~\r\n";

#[test]
fn signatures_verify_with_every_digest() {
    let [(key, cert), _, _] = shared();
    for algorithm in MicAlgorithm::ALL {
        let der = sign(CONTENT, key, cert, algorithm).unwrap();
        let check = verify(CONTENT, &der, cert, Utc::now()).unwrap();
        assert_eq!(check.algorithm, algorithm);
        let digest = openssl::hash::hash(algorithm.digest(), CONTENT).unwrap();
        assert_eq!(check.content_digest.as_deref(), Some(&*digest), "{algorithm}");
    }
}

#[test]
fn a_signature_without_signed_attributes_verifies_without_a_digest() {
    let [(key, cert), _, _] = shared();
    let flags = CMSOptions::DETACHED | CMSOptions::BINARY | CMSOptions::NOATTR;
    let der = CmsContentInfo::sign(Some(cert.x509()), Some(key.pkey()), None, Some(CONTENT), flags)
        .and_then(|cms| cms.to_der())
        .unwrap();
    let check = verify(CONTENT, &der, cert, Utc::now()).unwrap();
    assert_eq!(check, CheckedSignature { algorithm: MicAlgorithm::Sha256, content_digest: None });
    let mut tampered = CONTENT.to_vec();
    tampered[40] ^= 1;
    assert!(verify(&tampered, &der, cert, Utc::now()).is_err());
}

#[test]
fn a_tampered_content_fails_the_integrity_check() {
    let [(key, cert), _, _] = shared();
    let der = sign(CONTENT, key, cert, MicAlgorithm::Sha256).unwrap();
    let mut tampered = CONTENT.to_vec();
    tampered[40] ^= 1;
    let err = verify(&tampered, &der, cert, Utc::now()).unwrap_err();
    assert!(matches!(&err, As2Error::Integrity(t) if t.contains("content verify error")), "{err}");
    assert_eq!(err.disposition(), crate::as2::mdn::Disposition::error(ErrorModifier::IntegrityCheckFailed));
}

#[test]
fn another_signer_or_a_broken_signature_fails_authentication() {
    let [(key, cert), (_, partner), (stranger_key, stranger)] = shared();
    let by_stranger = sign(CONTENT, stranger_key, stranger, MicAlgorithm::Sha256).unwrap();
    let err = verify(CONTENT, &by_stranger, partner, Utc::now()).unwrap_err();
    assert!(
        matches!(&err, As2Error::Authentication(t) if t.contains("signer certificate not found")),
        "{err}"
    );
    // The stranger's certificate inside the signature is ignored (NOINTERN).
    let mut broken = sign(CONTENT, key, cert, MicAlgorithm::Sha256).unwrap();
    let n = broken.len();
    broken[n - 10] ^= 0x55;
    let err = verify(CONTENT, &broken, cert, Utc::now()).unwrap_err();
    assert!(matches!(err, As2Error::Authentication(_)), "{err}");
    assert!(matches!(verify(CONTENT, b"\x30\x03junk", cert, Utc::now()), Err(As2Error::Authentication(_))));
}

#[test]
fn an_expired_certificate_fails_authentication() {
    let (key, cert) = identity_valid("expired.test", -30, -1);
    let der = sign(CONTENT, &key, &cert, MicAlgorithm::Sha256).unwrap();
    let err = verify(CONTENT, &der, &cert, Utc::now()).unwrap_err();
    assert!(matches!(&err, As2Error::Authentication(t) if t.contains("expired on")), "{err}");
    assert_eq!(err.disposition().to_string(), "processed/Error: authentication-failed");
    // Valid when it was made: the same signature verifies at a time within its validity.
    assert!(verify(CONTENT, &der, &cert, Utc::now() - chrono::Duration::days(2)).is_ok());
}

#[test]
fn envelopes_decrypt_with_every_cipher() {
    let [(key, cert), _, _] = shared();
    for algorithm in EncryptionAlgorithm::ALL {
        let der = encrypt(CONTENT, cert, algorithm, Utc::now()).unwrap();
        let (plain, used) = decrypt(&der, key, cert).unwrap();
        assert_eq!((plain.as_slice(), used), (CONTENT, algorithm));
    }
}

#[test]
fn an_envelope_for_someone_else_fails_decryption() {
    let [(key, cert), _, (_, stranger)] = shared();
    let der = encrypt(CONTENT, stranger, EncryptionAlgorithm::Aes128Cbc, Utc::now()).unwrap();
    let err = decrypt(&der, key, cert).unwrap_err();
    assert!(matches!(err, As2Error::Decryption(_)), "{err}");
    assert!(matches!(decrypt(b"not cms", key, cert), Err(As2Error::Decryption(_))));
    // Signed data is not an envelope.
    let signed = sign(CONTENT, key, cert, MicAlgorithm::Sha256).unwrap();
    assert!(
        matches!(decrypt(&signed, key, cert), Err(As2Error::Decryption(t)) if t.contains("not EnvelopedData"))
    );
}

#[test]
fn an_unsupported_cipher_is_named() {
    let [(key, cert), _, _] = shared();
    let mut certs = Stack::new().unwrap();
    certs.push(cert.x509().clone()).unwrap();
    let der = CmsContentInfo::encrypt(&certs, CONTENT, Cipher::camellia_128_cbc(), CMSOptions::BINARY)
        .unwrap()
        .to_der()
        .unwrap();
    let err = decrypt(&der, key, cert).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported content encryption algorithm: Camellia-128-CBC (1.2.392.200011.61.1.1.1.2)"
    );
    assert_eq!(err.disposition().to_string(), "processed/Error: decryption-failed");
}

#[test]
fn nothing_is_encrypted_to_an_expired_certificate() {
    let (_, cert) = identity_valid("expired.test", -30, -1);
    let err = encrypt(CONTENT, &cert, EncryptionAlgorithm::Aes256Cbc, Utc::now()).unwrap_err();
    assert!(matches!(err, As2Error::Authentication(t) if t.contains("expired")));
}

#[test]
fn a_private_key_never_prints() {
    let [(key, cert), _, _] = shared();
    let printed = format!("{key:?} {cert:?}");
    assert_eq!(format!("{key:?}"), "PrivateKey(RSA, 2048 bits)");
    assert!(printed.contains("CN=edihub.test"), "{printed}");
    let pem = key.pkey().private_key_to_pem_pkcs8().unwrap();
    let body = String::from_utf8(pem).unwrap();
    let line = body.lines().nth(2).unwrap();
    assert!(!printed.contains(line));
}
