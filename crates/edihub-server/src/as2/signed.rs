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
use super::mic::{Mic, MicAlgorithm};
use super::mime::{self, ContentType, Headers};

/// The signed part of a verified `multipart/signed` body.
#[derive(Debug)]
pub struct Verified<'a> {
    /// The signed entity, headers and body, as the signature covers it.
    pub content: Cow<'a, [u8]>,
    /// The signature as checked over `content`: its digest algorithm and
    /// `content`'s digest.
    pub signature: cms::CheckedSignature,
}

impl Verified<'_> {
    /// The MIC of the signed entity with `algorithm`: the digest the
    /// verified signature carries when it is by `algorithm`, else computed.
    pub fn mic(&self, algorithm: MicAlgorithm) -> Result<Mic, As2Error> {
        match &self.signature.content_digest {
            Some(digest) if algorithm == self.signature.algorithm => {
                Ok(Mic { algorithm, digest: digest.clone() })
            }
            _ => Mic::compute(algorithm, &self.content),
        }
    }
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
        Ok(signature) => Ok(Verified { content: Cow::Borrowed(signed), signature }),
        Err(As2Error::Integrity(first)) => match mime::canonical_crlf(signed) {
            Cow::Owned(canonical) => {
                let signature =
                    cms::verify(&canonical, &der, partner, now).map_err(|_| As2Error::Integrity(first))?;
                Ok(Verified { content: Cow::Owned(canonical), signature })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::as2::testing::shared;

    const ENTITY: &[u8] = b"Content-Type: application/edi-x12\r\n\r\nISA*00*          *00*~\r\n";

    #[test]
    fn the_mic_is_the_signed_digest_or_computed_for_another_algorithm() {
        let [(key, cert), _, _] = shared();
        let (content_type, body) = write(ENTITY, key, cert, MicAlgorithm::Sha256).unwrap();
        let verified = read(&ContentType::parse(&content_type).unwrap(), &body, cert, Utc::now()).unwrap();
        assert_eq!(verified.content, ENTITY);
        for algorithm in MicAlgorithm::ALL {
            assert_eq!(
                verified.mic(algorithm).unwrap(),
                Mic::compute(algorithm, ENTITY).unwrap(),
                "{algorithm}"
            );
        }
        // By the signature's algorithm the MIC is the digest it carries,
        // not a second digest of the content; by another, it is computed.
        let carried = Verified {
            content: verified.content.clone(),
            signature: cms::CheckedSignature {
                algorithm: MicAlgorithm::Sha256,
                content_digest: Some(b"carried".to_vec()),
            },
        };
        assert_eq!(carried.mic(MicAlgorithm::Sha256).unwrap().digest, b"carried");
        assert_eq!(
            carried.mic(MicAlgorithm::Sha512).unwrap(),
            Mic::compute(MicAlgorithm::Sha512, ENTITY).unwrap()
        );
    }
}
