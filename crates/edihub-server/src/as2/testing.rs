//! Throwaway keys, certificates, stations and partners for the unit tests,
//! generated at test time (nothing private is committed).

use std::sync::OnceLock;

use chrono::{Duration, Utc};
use openssl::asn1::{Asn1Integer, Asn1Time};
use openssl::bn::BigNum;
use openssl::hash::MessageDigest;
use openssl::pkey::PKey;
use openssl::rsa::Rsa;
use openssl::x509::{X509, X509NameBuilder};

use super::cms::EncryptionAlgorithm;
use super::id::As2Id;
use super::keys::{Certificate, PrivateKey};
use super::mic::MicAlgorithm;
use super::partner::{MdnMode, PartnerProfile, Security, Station};

/// A fresh RSA key and a self-signed certificate for `cn`, valid from
/// `from_days` to `to_days` days from now.
pub fn identity_valid(cn: &str, from_days: i64, to_days: i64) -> (PrivateKey, Certificate) {
    let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", cn).unwrap();
    let name = name.build();
    let mut builder = X509::builder().unwrap();
    builder.set_version(2).unwrap();
    let serial = BigNum::from_u32(rand_serial()).unwrap();
    builder.set_serial_number(&Asn1Integer::from_bn(&serial).unwrap()).unwrap();
    builder.set_subject_name(&name).unwrap();
    builder.set_issuer_name(&name).unwrap();
    builder.set_pubkey(&key).unwrap();
    let at = |days: i64| Asn1Time::from_unix((Utc::now() + Duration::days(days)).timestamp()).unwrap();
    builder.set_not_before(&at(from_days)).unwrap();
    builder.set_not_after(&at(to_days)).unwrap();
    builder.sign(&key, MessageDigest::sha256()).unwrap();
    (PrivateKey::from_pkey(key).unwrap(), Certificate::from_x509(builder.build()).unwrap())
}

fn rand_serial() -> u32 {
    let mut bytes = [0u8; 4];
    openssl::rand::rand_bytes(&mut bytes).unwrap();
    u32::from_le_bytes(bytes) | 1
}

/// Identities shared by the tests (RSA key generation takes a while):
/// our station's, the partner's, and a stranger's.
pub fn shared() -> &'static [(PrivateKey, Certificate); 3] {
    static SHARED: OnceLock<[(PrivateKey, Certificate); 3]> = OnceLock::new();
    SHARED.get_or_init(|| {
        [
            identity_valid("edihub.test", -1, 365),
            identity_valid("partner.test", -1, 365),
            identity_valid("stranger.test", -1, 365),
        ]
    })
}

/// Our station `EDIHUB` in acme/prod.
pub fn station() -> Station {
    let (key, certificate) = shared()[0].clone();
    Station {
        as2_id: As2Id::new("EDIHUB").unwrap(),
        tenant: "acme".into(),
        environment: "prod".into(),
        key,
        certificate,
        async_mdn_url: Some("https://edihub.test/as2".into()),
    }
}

/// The partner `PARTNER` of `EDIHUB`, with `security`.
pub fn partner(security: Security) -> PartnerProfile {
    PartnerProfile {
        as2_id: As2Id::new("PARTNER").unwrap(),
        station: As2Id::new("EDIHUB").unwrap(),
        certificate: shared()[1].1.clone(),
        security,
        mic_algorithm: MicAlgorithm::Sha256,
        encryption: EncryptionAlgorithm::Aes256Cbc,
        mdn_mode: MdnMode::Sync,
        mdn_signed: true,
        url: Some("https://partner.test/as2".into()),
    }
}

/// The partner's view: itself as a station, edihub as its partner.
pub fn mirrored(security: Security) -> (Station, PartnerProfile) {
    let (key, certificate) = shared()[1].clone();
    let station = Station {
        as2_id: As2Id::new("PARTNER").unwrap(),
        tenant: "partner".into(),
        environment: "prod".into(),
        key,
        certificate,
        async_mdn_url: None,
    };
    let mut edihub = partner(security);
    edihub.as2_id = As2Id::new("EDIHUB").unwrap();
    edihub.station = As2Id::new("PARTNER").unwrap();
    edihub.certificate = shared()[0].1.clone();
    (station, edihub)
}

/// Every protection.
pub const FULL: Security = Security { signed: true, encrypted: true, compressed: true };
