//! S/MIME's cryptography (RFC 5751, CMS per RFC 5652): detached signatures
//! (SignedData) and encryption (EnvelopedData), through OpenSSL.
//!
//! - Verifying ([`verify`]) and decrypting ([`decrypt`]) are OpenSSL's
//!   `CMS_verify` and `CMS_decrypt`. A signature is checked against the
//!   partner's configured certificate only: the certificates a message
//!   carries are ignored (`NOINTERN`), the configured one is the trust
//!   anchor (partners use self-signed and CA-issued certificates alike, so
//!   the anchor is the pinned certificate itself, with no purpose check),
//!   and it must be valid now.
//! - Encrypting ([`encrypt`]) is `CMS_encrypt` (RSA key transport).
//! - Signing ([`sign`]): OpenSSL's `CMS_sign` always digests with the
//!   key's default (SHA-256) and the `openssl` crate exposes no
//!   `CMS_add1_signer` to choose another, but a partner's MIC algorithm
//!   must be the signature's digest. So the SignedData structure is
//!   assembled from RustCrypto's `cms` types (the same attributes OpenSSL
//!   writes: content type, signing time, message digest), and its digest
//!   and RSA signature are OpenSSL's. Every signature made here is checked
//!   by OpenSSL, by the `openssl cms` command and by pyas2lib in the tests.
//!
//! Inputs may be BER (some AS2 products stream indefinite lengths); OpenSSL
//! reads them and writes them back as DER before the `cms` types look at
//! their algorithms.

use ::cms::cert::x509::Certificate as CertificateAsn1;
use ::cms::cert::x509::attr::Attribute;
use ::cms::cert::x509::spki::AlgorithmIdentifierOwned;
use ::cms::cert::x509::time::Time;
use ::cms::cert::{CertificateChoices, IssuerAndSerialNumber};
use ::cms::content_info::{CmsVersion, ContentInfo};
use ::cms::enveloped_data::EnvelopedData;
use ::cms::signed_data::{
    CertificateSet, EncapsulatedContentInfo, SignedData, SignerIdentifier, SignerInfo, SignerInfos,
};
use std::borrow::Cow;

use chrono::{DateTime, Utc};
use der::asn1::{Any, Null, ObjectIdentifier, OctetString, SetOfVec, UtcTime};
use der::{Decode, Encode};
use openssl::cms::{CMSOptions, CmsContentInfo};
use openssl::error::ErrorStack;
use openssl::stack::Stack;
use openssl::symm::Cipher;
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::verify::{X509VerifyFlags, X509VerifyParam};
use openssl::x509::{X509, X509PurposeId};

use super::error::{AlgorithmUse, As2Error};
use super::keys::{Certificate, PrivateKey};
use super::mic::MicAlgorithm;

/// id-data (RFC 5652 §4).
pub(crate) const ID_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.1");
/// id-signedData (RFC 5652 §5.1).
const ID_SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
/// id-envelopedData (RFC 5652 §6.1).
const ID_ENVELOPED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.3");
/// id-ct-authEnvelopedData (RFC 5083): AES-GCM, which AS2 partners do not use.
const ID_AUTH_ENVELOPED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.23");
/// The signed attributes (RFC 5652 §11).
const ID_CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const ID_MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const ID_SIGNING_TIME: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.5");
/// rsaEncryption, the signature algorithm OpenSSL writes for RSA PKCS #1 v1.5.
const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");

/// A content encryption algorithm of EnvelopedData.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EncryptionAlgorithm {
    /// AES-128 in CBC mode.
    Aes128Cbc,
    /// AES-192 in CBC mode.
    Aes192Cbc,
    /// AES-256 in CBC mode, the default.
    Aes256Cbc,
    /// Triple DES (DES-EDE3) in CBC mode, for old partners.
    TripleDesCbc,
}

impl EncryptionAlgorithm {
    /// Every supported algorithm.
    pub const ALL: [EncryptionAlgorithm; 4] = [
        EncryptionAlgorithm::Aes128Cbc,
        EncryptionAlgorithm::Aes192Cbc,
        EncryptionAlgorithm::Aes256Cbc,
        EncryptionAlgorithm::TripleDesCbc,
    ];

    /// The algorithm named `name` (`aes-128-cbc`, `aes-192-cbc`,
    /// `aes-256-cbc`, `3des-cbc`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Its configuration name.
    pub fn name(self) -> &'static str {
        match self {
            EncryptionAlgorithm::Aes128Cbc => "aes-128-cbc",
            EncryptionAlgorithm::Aes192Cbc => "aes-192-cbc",
            EncryptionAlgorithm::Aes256Cbc => "aes-256-cbc",
            EncryptionAlgorithm::TripleDesCbc => "3des-cbc",
        }
    }

    fn cipher(self) -> Cipher {
        match self {
            EncryptionAlgorithm::Aes128Cbc => Cipher::aes_128_cbc(),
            EncryptionAlgorithm::Aes192Cbc => Cipher::aes_192_cbc(),
            EncryptionAlgorithm::Aes256Cbc => Cipher::aes_256_cbc(),
            EncryptionAlgorithm::TripleDesCbc => Cipher::des_ede3_cbc(),
        }
    }

    fn oid(self) -> &'static str {
        match self {
            EncryptionAlgorithm::Aes128Cbc => "2.16.840.1.101.3.4.1.2",
            EncryptionAlgorithm::Aes192Cbc => "2.16.840.1.101.3.4.1.22",
            EncryptionAlgorithm::Aes256Cbc => "2.16.840.1.101.3.4.1.42",
            EncryptionAlgorithm::TripleDesCbc => "1.2.840.113549.3.7",
        }
    }

    /// The algorithm with object identifier `oid`, or the error naming it.
    fn from_oid(oid: &str) -> Result<Self, As2Error> {
        Self::ALL.into_iter().find(|a| a.oid() == oid).ok_or_else(|| {
            let known = match oid {
                "1.2.840.113549.3.2" => Some("RC2-CBC"),
                "1.3.14.3.2.7" => Some("DES-CBC"),
                "1.2.840.113549.3.4" => Some("RC4"),
                "1.2.392.200011.61.1.1.1.2" => Some("Camellia-128-CBC"),
                "1.2.392.200011.61.1.1.1.4" => Some("Camellia-256-CBC"),
                _ => None,
            };
            As2Error::UnsupportedAlgorithm {
                used: AlgorithmUse::Encryption,
                name: known.map_or_else(|| oid.to_string(), |n| format!("{n} ({oid})")),
            }
        })
    }
}

impl std::fmt::Display for EncryptionAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `input` (BER or DER ContentInfo) re-encoded as DER by OpenSSL.
pub(crate) fn to_der(input: &[u8]) -> Result<Vec<u8>, ErrorStack> {
    CmsContentInfo::from_der(input)?.to_der()
}

/// What `read` makes of `input`, with the DER it read: `input` itself
/// when it is DER, else OpenSSL's DER re-encoding of it (some AS2 products
/// stream BER, which RustCrypto's `der` does not read). Most partners send
/// DER, which then skips OpenSSL's parse and re-encoding; an input `read`
/// refuses is read again as OpenSSL re-encodes it, so its error is the
/// same either way. `not_cms` words the error of an input OpenSSL cannot
/// read either.
fn read_der<T>(
    input: &[u8],
    read: impl Fn(&[u8]) -> Result<T, As2Error>,
    not_cms: impl FnOnce(String) -> As2Error,
) -> Result<(T, Cow<'_, [u8]>), As2Error> {
    if let Ok(value) = read(input) {
        return Ok((value, Cow::Borrowed(input)));
    }
    let der = to_der(input).map_err(|e| not_cms(reasons(&e)))?;
    Ok((read(&der)?, Cow::Owned(der)))
}

/// The reasons of an OpenSSL error stack, for messages (never key material).
fn reasons(e: &ErrorStack) -> String {
    let texts: Vec<String> = e
        .errors()
        .iter()
        .map(|e| match (e.reason(), e.data()) {
            (Some(r), Some(d)) => format!("{r} ({d})"),
            (Some(r), None) => r.to_string(),
            (None, _) => "unknown error".to_string(),
        })
        .collect();
    if texts.is_empty() { "unknown error".to_string() } else { texts.join("; ") }
}

/// A detached SignedData over `content`, signed by `key` (whose certificate
/// `certificate` it carries) with digest `algorithm`, as DER.
pub fn sign(
    content: &[u8],
    key: &PrivateKey,
    certificate: &Certificate,
    algorithm: MicAlgorithm,
) -> Result<Vec<u8>, As2Error> {
    let failed =
        |what: &str, e: &dyn std::fmt::Display| As2Error::Processing(format!("signing: {what}: {e}"));
    let cert_der = certificate.x509().to_der().map_err(|e| failed("certificate", &reasons(&e)))?;
    let cert = CertificateAsn1::from_der(&cert_der).map_err(|e| failed("certificate", &e))?;
    let digest =
        openssl::hash::hash(algorithm.digest(), content).map_err(|e| failed("digest", &reasons(&e)))?;
    let signed_attrs = signed_attributes(&digest).map_err(|e| failed("attributes", &e))?;
    let to_sign = signed_attrs.to_der().map_err(|e| failed("attributes", &e))?;
    let mut signer = openssl::sign::Signer::new(algorithm.digest(), key.pkey())
        .map_err(|e| failed("signer", &reasons(&e)))?;
    signer.update(&to_sign).map_err(|e| failed("signature", &reasons(&e)))?;
    let signature = signer.sign_to_vec().map_err(|e| failed("signature", &reasons(&e)))?;
    let digest_alg =
        AlgorithmIdentifierOwned { oid: ObjectIdentifier::new_unwrap(algorithm.oid()), parameters: None };
    let build = || -> der::Result<Vec<u8>> {
        let signer_info = SignerInfo {
            version: CmsVersion::V1,
            sid: SignerIdentifier::IssuerAndSerialNumber(IssuerAndSerialNumber {
                issuer: cert.tbs_certificate.issuer.clone(),
                serial_number: cert.tbs_certificate.serial_number.clone(),
            }),
            digest_alg: digest_alg.clone(),
            signed_attrs: Some(signed_attrs),
            signature_algorithm: AlgorithmIdentifierOwned {
                oid: RSA_ENCRYPTION,
                parameters: Some(Any::encode_from(&Null)?),
            },
            signature: OctetString::new(signature)?,
            unsigned_attrs: None,
        };
        let signed_data = SignedData {
            version: CmsVersion::V1,
            digest_algorithms: SetOfVec::try_from(vec![digest_alg])?,
            encap_content_info: EncapsulatedContentInfo { econtent_type: ID_DATA, econtent: None },
            certificates: Some(CertificateSet::try_from(vec![CertificateChoices::Certificate(cert)])?),
            crls: None,
            signer_infos: SignerInfos(SetOfVec::try_from(vec![signer_info])?),
        };
        ContentInfo { content_type: ID_SIGNED_DATA, content: Any::encode_from(&signed_data)? }.to_der()
    };
    build().map_err(|e| failed("encoding", &e))
}

/// Content type, signing time and message digest, as OpenSSL signs them.
fn signed_attributes(digest: &[u8]) -> der::Result<SetOfVec<Attribute>> {
    let now = UtcTime::from_system_time(std::time::SystemTime::now())?;
    let attribute = |oid, value: Any| -> der::Result<Attribute> {
        Ok(Attribute { oid, values: SetOfVec::try_from(vec![value])? })
    };
    SetOfVec::try_from(vec![
        attribute(ID_CONTENT_TYPE, Any::encode_from(&ID_DATA)?)?,
        attribute(ID_SIGNING_TIME, Any::encode_from(&Time::UtcTime(now))?)?,
        attribute(ID_MESSAGE_DIGEST, Any::encode_from(&OctetString::new(digest)?)?)?,
    ])
}

/// A signature found good: its digest algorithm and the content's digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedSignature {
    /// The signer's digest algorithm.
    pub algorithm: MicAlgorithm,
    /// The content's digest by `algorithm`, as the signer signed it (its
    /// messageDigest attribute, which the check compared with the content);
    /// `None` for a signature without signed attributes.
    pub content_digest: Option<Vec<u8>>,
}

/// Checks that `signature` (a detached SignedData) is `partner`'s over
/// `content`, and returns its digest algorithm and the content's digest.
///
/// A signature by another key, a broken signature or an expired
/// certificate is [`As2Error::Authentication`]; a content that does not
/// match the signed digest is [`As2Error::Integrity`].
pub fn verify(
    content: &[u8],
    signature: &[u8],
    partner: &Certificate,
    now: DateTime<Utc>,
) -> Result<CheckedSignature, As2Error> {
    partner.check_valid_at(now)?;
    let (Stripped { der, algorithm, content_digest }, _) =
        read_der(signature, signature_without_certificates, |e| {
            As2Error::Authentication(format!("the signature is not CMS SignedData ({e})"))
        })?;
    let mut cms = CmsContentInfo::from_der(&der)
        .map_err(|e| As2Error::Authentication(format!("the signature does not read: {}", reasons(&e))))?;
    let pinned = |e: ErrorStack| As2Error::Processing(format!("trust store: {}", reasons(&e)));
    let mut certs = Stack::<X509>::new().map_err(pinned)?;
    certs.push(partner.x509().clone()).map_err(pinned)?;
    let mut param = X509VerifyParam::new().map_err(pinned)?;
    param.set_flags(X509VerifyFlags::PARTIAL_CHAIN).map_err(pinned)?;
    param.set_purpose(X509PurposeId::ANY).map_err(pinned)?;
    param.set_time(now.timestamp());
    let mut store = X509StoreBuilder::new().map_err(pinned)?;
    store.add_cert(partner.x509().clone()).map_err(pinned)?;
    store.set_param(&param).map_err(pinned)?;
    let store = store.build();
    let flags = CMSOptions::NOINTERN | CMSOptions::BINARY;
    match cms.verify(Some(&certs), Some(&store), Some(content), None, flags) {
        Ok(()) => Ok(CheckedSignature { algorithm, content_digest }),
        Err(e) if e.errors().iter().any(|e| e.reason() == Some("content verify error")) => Err(
            As2Error::Integrity(format!("the content does not match the signed digest ({})", reasons(&e))),
        ),
        Err(e) => Err(As2Error::Authentication(format!(
            "the signature is not {}'s ({})",
            partner.subject(),
            reasons(&e)
        ))),
    }
}

/// A detached SignedData without the certificates it carries.
struct Stripped {
    /// The SignedData as DER, its certificates left out.
    der: Vec<u8>,
    /// The digest algorithm of its one signer.
    algorithm: MicAlgorithm,
    /// The content's digest its signer signed (see [`CheckedSignature`]).
    content_digest: Option<Vec<u8>>,
}

/// A detached SignedData (DER) as DER without the certificates it carries,
/// with its one signer's digest algorithm and signed content digest.
///
/// The carried certificates play no part in the check (`NOINTERN`: the
/// partner's configured certificate is the signer's), and they are
/// outside what is signed, but OpenSSL 3 decodes each one's public key
/// through its provider decoders whenever it parses the structure, which
/// costs more than the signature check itself.
fn signature_without_certificates(der: &[u8]) -> Result<Stripped, As2Error> {
    let unreadable = |e: der::Error| As2Error::Authentication(format!("the signature does not read: {e}"));
    let info = ContentInfo::from_der(der).map_err(unreadable)?;
    if info.content_type != ID_SIGNED_DATA {
        return Err(As2Error::Authentication(format!(
            "the signature is {} content, not SignedData",
            info.content_type
        )));
    }
    let mut signed: SignedData = info.content.decode_as().map_err(unreadable)?;
    if signed.encap_content_info.econtent.is_some() {
        return Err(As2Error::Authentication(
            "the signature encapsulates its content; AS2 signatures are detached".into(),
        ));
    }
    let signers = signed.signer_infos.0.as_slice();
    let [signer] = signers else {
        return Err(As2Error::Authentication(format!(
            "the signature has {} signers, not one",
            signers.len()
        )));
    };
    let algorithm = MicAlgorithm::from_oid(&signer.digest_alg.oid.to_string())?;
    let content_digest = signed_digest(signer);
    signed.certificates = None;
    let der = Any::encode_from(&signed)
        .and_then(|content| ContentInfo { content_type: ID_SIGNED_DATA, content }.to_der())
        .map_err(unreadable)?;
    Ok(Stripped { der, algorithm, content_digest })
}

/// The messageDigest attribute `signer` signed, if it signed attributes.
/// OpenSSL's check compares it with the content's digest, so a signature
/// found good says the content's digest without computing it again.
fn signed_digest(signer: &SignerInfo) -> Option<Vec<u8>> {
    let attribute = signer.signed_attrs.as_ref()?.iter().find(|a| a.oid == ID_MESSAGE_DIGEST)?;
    let [value] = attribute.values.as_slice() else { return None };
    value.decode_as::<OctetString>().ok().map(|digest| digest.as_bytes().to_vec())
}

/// `content` encrypted to `partner` with `algorithm`, as DER EnvelopedData.
pub fn encrypt(
    content: &[u8],
    partner: &Certificate,
    algorithm: EncryptionAlgorithm,
    now: DateTime<Utc>,
) -> Result<Vec<u8>, As2Error> {
    partner.check_valid_at(now)?;
    let failed = |e: ErrorStack| As2Error::Processing(format!("encrypting: {}", reasons(&e)));
    let mut certs = Stack::<X509>::new().map_err(failed)?;
    certs.push(partner.x509().clone()).map_err(failed)?;
    CmsContentInfo::encrypt(&certs, content, algorithm.cipher(), CMSOptions::BINARY)
        .and_then(|cms| cms.to_der())
        .map_err(failed)
}

/// The content of EnvelopedData `input` (BER or DER) decrypted with our
/// `key` and `certificate`, and the algorithm it was encrypted with.
pub fn decrypt(
    input: &[u8],
    key: &PrivateKey,
    certificate: &Certificate,
) -> Result<(Vec<u8>, EncryptionAlgorithm), As2Error> {
    let (algorithm, der) = read_der(input, envelope_algorithm, |e| {
        As2Error::Decryption(format!("the pkcs7-mime body is not CMS ({e})"))
    })?;
    let cms = CmsContentInfo::from_der(&der)
        .map_err(|e| As2Error::Decryption(format!("the EnvelopedData does not read: {}", reasons(&e))))?;
    let content = cms.decrypt(key.pkey(), certificate.x509()).map_err(|e| {
        As2Error::Decryption(format!(
            "not decryptable with the key of {} ({})",
            certificate.subject(),
            reasons(&e)
        ))
    })?;
    Ok((content, algorithm))
}

/// The content encryption algorithm of an EnvelopedData.
fn envelope_algorithm(der: &[u8]) -> Result<EncryptionAlgorithm, As2Error> {
    let unreadable = |e: der::Error| As2Error::Decryption(format!("the EnvelopedData does not read: {e}"));
    let info = ContentInfo::from_der(der).map_err(unreadable)?;
    if info.content_type == ID_AUTH_ENVELOPED_DATA {
        return Err(As2Error::UnsupportedAlgorithm {
            used: AlgorithmUse::Encryption,
            name: "AuthEnvelopedData (AES-GCM)".into(),
        });
    }
    if info.content_type != ID_ENVELOPED_DATA {
        return Err(As2Error::Decryption(format!(
            "the pkcs7-mime body is {} content, not EnvelopedData",
            info.content_type
        )));
    }
    let enveloped: EnvelopedData = info.content.decode_as().map_err(unreadable)?;
    EncryptionAlgorithm::from_oid(&enveloped.encrypted_content.content_enc_alg.oid.to_string())
}

#[cfg(test)]
#[path = "cms_tests.rs"]
mod tests;
