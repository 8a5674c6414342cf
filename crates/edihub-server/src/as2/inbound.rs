//! Opening an AS2 message a partner sent: from the HTTP Content-Type and
//! body to the payload, undoing each protection once in whatever order the
//! partner applied it (encryption, compression, signature), then checking
//! that the partner used what its profile requires.
//!
//! The result says what was done (decrypted with which algorithm,
//! decompressed, signature verified with which digest and certificate) and
//! carries the MIC for the MDN. A failure is an [`As2Error`], whose
//! disposition the MDN reports.

use std::borrow::Cow;

use chrono::{DateTime, Utc};

use super::cms::{self, EncryptionAlgorithm};
use super::compress;
use super::error::As2Error;
use super::headers::{Envelope, ReceiptRequest};
use super::mdn::{self, Disposition, Mdn, Report, Signer};
use super::mic::{Mic, MicAlgorithm};
use super::mime::{self, ContentType, Headers};
use super::partner::{PartnerProfile, Station};
use super::signed;

/// A received message, opened.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The payload (an X12 or EDIFACT interchange, an XML document, …).
    pub payload: Vec<u8>,
    /// The payload's Content-Type as the partner labelled it.
    pub content_type: String,
    /// The file name of its Content-Disposition, when given.
    pub filename: Option<String>,
    /// The algorithm it was encrypted with, when it was.
    pub encryption: Option<EncryptionAlgorithm>,
    /// Whether it was compressed.
    pub compressed: bool,
    /// The digest of its verified signature, when signed; the signer is
    /// the partner's configured certificate.
    pub signature: Option<MicAlgorithm>,
    /// The MIC for the MDN (RFC 4130 §7.3.1).
    pub mic: Mic,
}

/// One layer while unwrapping: an entity (or the HTTP body) and its type.
struct Layer<'a> {
    content_type: ContentType,
    headers: Headers,
    /// The entity's bytes, or the HTTP body for the outermost layer.
    bytes: Cow<'a, [u8]>,
    body_start: usize,
}

impl<'a> Layer<'a> {
    fn entity(bytes: Vec<u8>) -> Result<Layer<'static>, As2Error> {
        let entity = mime::parse_entity(&bytes)?;
        let (content_type, headers) = (entity.content_type()?, entity.headers.clone());
        let body_start = bytes.len() - entity.body.len();
        Ok(Layer { content_type, headers, bytes: Cow::Owned(bytes), body_start })
    }

    fn body(&self) -> Result<Cow<'_, [u8]>, As2Error> {
        mime::decode_transfer(self.headers.get("Content-Transfer-Encoding"), &self.bytes[self.body_start..])
    }
}

/// What a layer is.
enum Kind {
    Enveloped,
    Compressed,
    Signed,
    Payload,
}

fn kind_of(layer: &Layer<'_>) -> Result<Kind, As2Error> {
    let ct = &layer.content_type;
    if ct.is("multipart/signed") {
        return Ok(Kind::Signed);
    }
    if !matches!(ct.mime(), "application/pkcs7-mime" | "application/x-pkcs7-mime") {
        return Ok(Kind::Payload);
    }
    match ct.param("smime-type").map(str::to_ascii_lowercase).as_deref() {
        Some("enveloped-data") => Ok(Kind::Enveloped),
        Some("compressed-data") => Ok(Kind::Compressed),
        Some(other) => Err(As2Error::malformed(format!(
            "application/pkcs7-mime with smime-type {other} is not an AS2 layer (enveloped-data or compressed-data)"
        ))),
        // Without smime-type, RFC 3274's file name tells compression apart.
        None if ct.param("name").is_some_and(|n| n.eq_ignore_ascii_case("smime.p7z")) => Ok(Kind::Compressed),
        None => Ok(Kind::Enveloped),
    }
}

/// What has been undone so far.
#[derive(Default)]
struct Unwrapped {
    encryption: Option<EncryptionAlgorithm>,
    compressed: bool,
    /// The signature's digest and the MIC over the signed entity.
    signature: Option<(MicAlgorithm, Mic)>,
}

/// Opens a message to `station` from `partner`: HTTP headers `http`
/// (Content-Type, Content-Transfer-Encoding) and `body`. `mic_asked` is the
/// MIC algorithm of the sender's receipt request; decompressed content is
/// refused past `max_content_bytes`.
pub fn open(
    http: &Headers,
    body: &[u8],
    station: &Station,
    partner: &PartnerProfile,
    mic_asked: Option<MicAlgorithm>,
    max_content_bytes: usize,
    now: DateTime<Utc>,
) -> Result<Opened, As2Error> {
    let content_type =
        http.get("Content-Type").ok_or_else(|| As2Error::malformed("the Content-Type header is missing"))?;
    let mut layer = Layer {
        content_type: ContentType::parse(content_type)?,
        headers: ["Content-Type", "Content-Transfer-Encoding", "Content-Disposition"]
            .into_iter()
            .filter_map(|name| Some((name, http.get(name)?)))
            .collect(),
        bytes: Cow::Borrowed(body),
        body_start: 0,
    };
    let mut done = Unwrapped::default();
    // Each protection is undone at most once, so a fourth layer is the payload or an error.
    for _ in 0..4 {
        layer = match kind_of(&layer)? {
            Kind::Payload => return finish(layer, done, partner, mic_asked),
            Kind::Enveloped if done.encryption.is_none() => {
                let (content, algorithm) = cms::decrypt(&layer.body()?, &station.key, &station.certificate)?;
                done.encryption = Some(algorithm);
                Layer::entity(content)?
            }
            Kind::Compressed if !done.compressed => {
                let content = compress::decompress(&layer.body()?, max_content_bytes)?;
                done.compressed = true;
                Layer::entity(content)?
            }
            Kind::Signed if done.signature.is_none() => {
                let body = layer.body()?;
                let verified = signed::read(&layer.content_type, &body, &partner.certificate, now)?;
                // The MIC covers the signed entity as verified; taken
                // here, so the entity is kept once, as the next layer.
                let mic = verified.mic(mic_asked.unwrap_or(verified.signature.algorithm))?;
                done.signature = Some((verified.signature.algorithm, mic));
                Layer::entity(verified.content.into_owned())?
            }
            _ => return Err(As2Error::malformed("the message applies the same protection twice")),
        };
    }
    Err(As2Error::malformed("the message has more layers than encryption, compression and a signature"))
}

/// The payload of the innermost layer, once the partner's required
/// security is confirmed, and the MIC.
fn finish(
    layer: Layer<'_>,
    done: Unwrapped,
    partner: &PartnerProfile,
    mic_asked: Option<MicAlgorithm>,
) -> Result<Opened, As2Error> {
    let required = partner.security;
    let missing = [
        (required.signed && done.signature.is_none(), "signed"),
        (required.encrypted && done.encryption.is_none(), "encrypted"),
        (required.compressed && !done.compressed, "compressed"),
    ];
    if let Some((_, what)) = missing.iter().find(|(lacking, _)| *lacking) {
        return Err(As2Error::InsufficientSecurity(format!(
            "partner {} must send {what} messages; this one is not {what}",
            partner.as2_id
        )));
    }
    // Signed: the signed entity's, computed when it was verified. Unsigned:
    // the innermost entity with its headers, or for a plain message the
    // HTTP body (the outermost layer).
    let mic = match &done.signature {
        Some((_, mic)) => mic.clone(),
        None => Mic::compute(mic_asked.unwrap_or(partner.mic_algorithm), &layer.bytes)?,
    };
    let filename = layer
        .headers
        .get("Content-Disposition")
        .and_then(|d| ContentType::parse(&format!("x/{d}")).ok())
        .and_then(|d| d.param("filename").map(str::to_string));
    Ok(Opened {
        payload: layer.body()?.into_owned(),
        content_type: layer.headers.get("Content-Type").unwrap_or(layer.content_type.mime()).to_string(),
        filename,
        encryption: done.encryption,
        compressed: done.compressed,
        signature: done.signature.map(|(a, _)| a),
        mic,
    })
}

/// The MDN answering a message with `envelope` (from `partner` to
/// `station`) whose opening gave `outcome`; `None` when the sender asked
/// for none. A failure MDN carries no MIC. It is signed when the sender
/// asked for a signed receipt.
pub fn receipt(
    envelope: &Envelope,
    outcome: &Result<Opened, As2Error>,
    station: &Station,
    partner: &PartnerProfile,
) -> Result<Option<Mdn>, As2Error> {
    let Some(request) = &envelope.receipt else { return Ok(None) };
    let (disposition, mic) = match (outcome, request_failure(request)) {
        (_, Some(failure)) => (failure.disposition(), None),
        (Ok(opened), None) => (Disposition::processed(), Some(opened.mic.clone())),
        (Err(e), None) => (e.disposition(), None),
    };
    let signer = match request.options.wants_signed() {
        Ok(true) => Some(Signer {
            key: &station.key,
            certificate: &station.certificate,
            algorithm: request.options.mic_algorithm().ok().flatten().unwrap_or(partner.mic_algorithm),
        }),
        _ => None,
    };
    let report = Report {
        recipient: station.as2_id.clone(),
        original_message_id: envelope.message_id.clone(),
        disposition,
        mic,
    };
    mdn::build(&report, &station.as2_id, &envelope.from, signer).map(Some)
}

/// A failure of the receipt request itself (a required protocol or MIC
/// algorithm edihub lacks).
fn request_failure(request: &ReceiptRequest) -> Option<As2Error> {
    request.options.wants_signed().err().or_else(|| request.options.mic_algorithm().err())
}
