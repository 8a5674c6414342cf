//! Throwaway identities (RSA keys, self-signed certificates) written as PEM
//! files, and the station and partner profiles both sides use.

use std::path::{Path, PathBuf};

use chrono::{Duration, Utc};
use edihub_server::as2::cms::EncryptionAlgorithm;
use edihub_server::as2::id::As2Id;
use edihub_server::as2::keys::{Certificate, PrivateKey};
use edihub_server::as2::mic::MicAlgorithm;
use edihub_server::as2::partner::{MdnMode, PartnerProfile, Security, Station};
use openssl::asn1::{Asn1Integer, Asn1Time};
use openssl::bn::BigNum;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::extension::{BasicConstraints, KeyUsage};
use openssl::x509::{X509, X509NameBuilder};

/// A key and its self-signed certificate, also as PEM.
pub struct Identity {
    pub key: PKey<Private>,
    pub cert: X509,
}

impl Identity {
    pub fn new(cn: &str) -> Self {
        let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
        let mut name = X509NameBuilder::new().unwrap();
        name.append_entry_by_text("CN", cn).unwrap();
        let name = name.build();
        let mut b = X509::builder().unwrap();
        b.set_version(2).unwrap();
        let mut serial = [0u8; 8];
        openssl::rand::rand_bytes(&mut serial).unwrap();
        b.set_serial_number(&Asn1Integer::from_bn(&BigNum::from_slice(&serial).unwrap()).unwrap()).unwrap();
        b.set_subject_name(&name).unwrap();
        b.set_issuer_name(&name).unwrap();
        b.set_pubkey(&key).unwrap();
        let at = |d: i64| Asn1Time::from_unix((Utc::now() + Duration::days(d)).timestamp()).unwrap();
        b.set_not_before(&at(-1)).unwrap();
        b.set_not_after(&at(365)).unwrap();
        b.append_extension(BasicConstraints::new().critical().ca().build().unwrap()).unwrap();
        let usage = KeyUsage::new().digital_signature().key_encipherment().key_cert_sign().build().unwrap();
        b.append_extension(usage).unwrap();
        b.sign(&key, MessageDigest::sha256()).unwrap();
        Self { key, cert: b.build() }
    }

    pub fn key_pem(&self) -> Vec<u8> {
        self.key.private_key_to_pem_pkcs8().unwrap()
    }

    pub fn cert_pem(&self) -> Vec<u8> {
        self.cert.to_pem().unwrap()
    }

    pub fn private_key(&self) -> PrivateKey {
        PrivateKey::from_pem(&self.key_pem()).unwrap()
    }

    pub fn certificate(&self) -> Certificate {
        Certificate::from_pem(&self.cert_pem()).unwrap()
    }
}

/// A temporary directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("edihub-as2-{label}-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// edihub's station `EDIHUB`.
pub fn station(us: &Identity) -> Station {
    Station {
        as2_id: As2Id::new("EDIHUB").unwrap(),
        tenant: "acme".into(),
        environment: "prod".into(),
        key: us.private_key(),
        certificate: us.certificate(),
        async_mdn_url: Some("http://127.0.0.1:1/as2".into()),
    }
}

/// The partner `PARTNER` of `EDIHUB`.
pub fn partner(
    them: &Identity,
    security: Security,
    mic: MicAlgorithm,
    enc: EncryptionAlgorithm,
) -> PartnerProfile {
    PartnerProfile {
        as2_id: As2Id::new("PARTNER").unwrap(),
        station: As2Id::new("EDIHUB").unwrap(),
        certificate: them.certificate(),
        security,
        mic_algorithm: mic,
        encryption: enc,
        mdn_mode: MdnMode::Sync,
        mdn_signed: true,
        url: None,
    }
}
