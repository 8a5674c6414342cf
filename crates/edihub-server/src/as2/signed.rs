//! `multipart/signed` (RFC 1847, RFC 5751 §3.5): an entity and its detached
//! PKCS #7 signature, the form AS2 messages and MDNs are signed in.
//!
//! The signature covers the first part exactly as it was sent. Some
//! senders sign the canonical CRLF form of content they transmit with bare
//! LFs; when the bytes as received do not match, the canonical form is
//! tried once, and whichever verified is what the MIC covers.

use std::borrow::Cow;

use chrono::{DateTime, Utc};

use super::cms;
use super::error::As2Error;
use super::keys::{Certificate, PrivateKey};
use super::mic::MicAlgorithm;
use super::mime::{self, ContentType, Headers};

/// The signed part of a verified `multipart/signed` body.
#[derive(Debug)]
pub struct Verified<'a> {
    /// The signed entity, headers and body, as the signature covers it.
    pub content: Cow<'a, [u8]>,
    /// The signature's digest algorithm.
    pub algorithm: MicAlgorithm,
}

/// Splits a `multipart/signed` body and checks its signature against
/// `partner`'s certificate.
pub fn read<'a>(
    content_type: &ContentType,
    body: &'a [u8],
    partner: &Certificate,
    now: DateTime<Utc>,
) -> Result<Verified<'a>, As2Error> {
    let protocol = content_type.param("protocol").unwrap_or_default().to_ascii_lowercase();
    if protocol != "application/pkcs7-signature" && protocol != "application/x-pkcs7-signature" {
        return Err(As2Error::malformed(format!(
            "multipart/signed protocol `{protocol}` is not application/pkcs7-signature"
        )));
    }
    let boundary = content_type
        .param("boundary")
        .ok_or_else(|| As2Error::malformed("multipart/signed has no boundary parameter"))?;
    let parts = mime::split_multipart(body, boundary)?;
    let [signed, signature] = parts.as_slice() else {
        return Err(As2Error::malformed(format!("multipart/signed has {} parts, not two", parts.len())));
    };
    let signature = mime::parse_entity(signature)?;
    let signature_type = signature.content_type()?;
    if !matches!(signature_type.mime(), "application/pkcs7-signature" | "application/x-pkcs7-signature") {
        return Err(As2Error::malformed(format!(
            "the second part of multipart/signed is {}, not application/pkcs7-signature",
            signature_type.mime()
        )));
    }
    let der = signature.decoded_body()?;
    match cms::verify(signed, &der, partner, now) {
        Ok(algorithm) => Ok(Verified { content: Cow::Borrowed(signed), algorithm }),
        Err(As2Error::Integrity(first)) => match mime::canonical_crlf(signed) {
            Cow::Owned(canonical) => {
                let algorithm =
                    cms::verify(&canonical, &der, partner, now).map_err(|_| As2Error::Integrity(first))?;
                Ok(Verified { content: Cow::Owned(canonical), algorithm })
            }
            Cow::Borrowed(_) => Err(As2Error::Integrity(first)),
        },
        Err(other) => Err(other),
    }
}

/// `entity` signed by `key`: the `multipart/signed` Content-Type and body.
pub fn write(
    entity: &[u8],
    key: &PrivateKey,
    certificate: &Certificate,
    algorithm: MicAlgorithm,
) -> Result<(String, Vec<u8>), As2Error> {
    let der = cms::sign(entity, key, certificate, algorithm)?;
    let headers: Headers = [
        ("Content-Type", "application/pkcs7-signature; name=smime.p7s; smime-type=signed-data"),
        ("Content-Transfer-Encoding", "base64"),
        ("Content-Disposition", "attachment; filename=smime.p7s"),
    ]
    .into_iter()
    .collect();
    let signature = mime::write_entity(&headers, &mime::base64_lines(&der));
    let boundary = mime::new_boundary();
    let content_type = format!(
        "multipart/signed; protocol=\"application/pkcs7-signature\"; micalg={}; boundary=\"{boundary}\"",
        algorithm.name()
    );
    Ok((content_type, mime::write_multipart(&boundary, &[entity, &signature])))
}
