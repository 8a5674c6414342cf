//! Building an AS2 message to a partner from a payload and the partner's
//! profile: the payload entity, compressed, then signed, then encrypted
//! (each when the profile says so; the order RFC 5402 §3 recommends), and
//! the AS2 headers asking for the MDN the profile wants.
//!
//! The result keeps what judging the MDN needs ([`SentMessage`]): the
//! Message-ID and the MIC the partner must report.

use chrono::{DateTime, Utc};

use super::cms;
use super::compress;
use super::error::As2Error;
use super::headers::DispositionOptions;
use super::id::MessageId;
use super::mdn::domain_of;
use super::mic::Mic;
use super::mime::{self, ContentType, Headers};
use super::partner::{MdnMode, PartnerProfile, Station};
use super::receipt::SentMessage;
use super::signed;

/// What to send.
#[derive(Debug, Clone)]
pub struct Payload<'a> {
    /// The bytes.
    pub bytes: &'a [u8],
    /// Their Content-Type, e.g. `application/edi-x12`.
    pub content_type: &'a str,
    /// A file name for the Content-Disposition, when there is one.
    pub filename: Option<&'a str>,
    /// The `Subject` header.
    pub subject: &'a str,
}

/// A message ready to POST: HTTP headers and body.
#[derive(Debug, Clone)]
pub struct OutboundMessage {
    /// The HTTP headers: AS2 headers, `Message-ID`, `Content-Type`, …
    pub headers: Headers,
    /// The HTTP body.
    pub body: Vec<u8>,
    /// What the MDN is judged against.
    pub sent: SentMessage,
}

/// The outermost entity built so far: its Content-Type, transfer encoding and body.
struct Part {
    content_type: String,
    transfer_encoding: Option<&'static str>,
    disposition: Option<String>,
    body: Vec<u8>,
}

impl Part {
    fn entity(&self) -> Vec<u8> {
        mime::write_entity(&self.headers(), &self.body)
    }

    fn headers(&self) -> Headers {
        let mut headers = Headers::new();
        headers.push("Content-Type", self.content_type.clone());
        if let Some(encoding) = self.transfer_encoding {
            headers.push("Content-Transfer-Encoding", encoding);
        }
        if let Some(disposition) = &self.disposition {
            headers.push("Content-Disposition", disposition.clone());
        }
        headers
    }

    fn smime(smime_type: &str, name: &str, der: Vec<u8>) -> Self {
        Part {
            content_type: format!("application/pkcs7-mime; smime-type={smime_type}; name={name}"),
            transfer_encoding: Some("binary"),
            disposition: Some(format!("attachment; filename={name}")),
            body: der,
        }
    }
}

/// Builds the message carrying `payload` from `station` to `partner`.
pub fn build(
    payload: &Payload<'_>,
    station: &Station,
    partner: &PartnerProfile,
    now: DateTime<Utc>,
) -> Result<OutboundMessage, As2Error> {
    let mut part = payload_part(payload)?;
    let security = partner.security;
    let algorithm = partner.mic_algorithm;
    // Unsigned: the MIC is over what the receiver ends with, the payload
    // entity when it unwraps anything, the body when it unwraps nothing.
    let mut mic = if security.encrypted || security.compressed {
        Mic::compute(algorithm, &part.entity())?
    } else {
        Mic::compute(algorithm, &part.body)?
    };
    if security.compressed {
        part = Part::smime("compressed-data", "smime.p7z", compress::compress(&part.entity())?);
    }
    if security.signed {
        let entity = part.entity();
        mic = Mic::compute(algorithm, &entity)?;
        let (content_type, body) = signed::write(&entity, &station.key, &station.certificate, algorithm)?;
        part = Part { content_type, transfer_encoding: None, disposition: None, body };
    }
    if security.encrypted {
        let der = cms::encrypt(&part.entity(), &partner.certificate, partner.encryption, now)?;
        part = Part::smime("enveloped-data", "smime.p7m", der);
    }
    let message_id = MessageId::generate(&domain_of(&station.as2_id));
    let headers = http_headers(payload, station, partner, &message_id, part.headers())?;
    let sent = SentMessage { message_id, mic, signed: security.signed, receipt_signed: partner.mdn_signed };
    Ok(OutboundMessage { headers, body: part.body, sent })
}

/// The payload as an entity, its labels checked so none can inject a header.
fn payload_part(payload: &Payload<'_>) -> Result<Part, As2Error> {
    let single_line = |what: &str, value: &str| {
        if value.contains(['\r', '\n']) {
            Err(As2Error::Processing(format!("the {what} holds a line break")))
        } else {
            Ok(())
        }
    };
    single_line("Content-Type", payload.content_type)?;
    single_line("Subject", payload.subject)?;
    ContentType::parse(payload.content_type)?;
    let disposition = match payload.filename {
        Some(name) => {
            single_line("file name", name)?;
            let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
            Some(format!("attachment; filename=\"{escaped}\""))
        }
        None => None,
    };
    Ok(Part {
        content_type: payload.content_type.to_string(),
        transfer_encoding: Some("binary"),
        disposition,
        body: payload.bytes.to_vec(),
    })
}

/// The HTTP headers: the AS2 headers, then the outermost entity's.
fn http_headers(
    payload: &Payload<'_>,
    station: &Station,
    partner: &PartnerProfile,
    message_id: &MessageId,
    entity_headers: Headers,
) -> Result<Headers, As2Error> {
    let mut headers: Headers = [
        ("AS2-Version", "1.2".to_string()),
        ("AS2-From", station.as2_id.header_value()),
        ("AS2-To", partner.as2_id.header_value()),
        ("Message-ID", message_id.header_value()),
        ("Subject", payload.subject.to_string()),
        ("Date", chrono::Utc::now().to_rfc2822()),
        ("MIME-Version", "1.0".to_string()),
        ("Disposition-Notification-To", station.as2_id.header_value()),
    ]
    .into_iter()
    .collect();
    if partner.mdn_signed {
        headers.push(
            "Disposition-Notification-Options",
            DispositionOptions::signed_receipt(partner.mic_algorithm),
        );
    }
    if partner.mdn_mode == MdnMode::Async {
        let url = station.async_mdn_url.as_deref().ok_or_else(|| {
            As2Error::Processing(format!(
                "station {} has no async_mdn_url for an asynchronous MDN",
                station.as2_id
            ))
        })?;
        headers.push("Receipt-Delivery-Option", url);
    }
    for (name, value) in entity_headers.iter() {
        headers.push(name, value);
    }
    Ok(headers)
}
