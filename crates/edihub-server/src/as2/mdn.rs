//! MDNs, the receipts of AS2 (RFC 3798 as profiled by RFC 4130 §7): what a
//! disposition says, and building the MDN edihub answers a message with.
//!
//! An MDN is a `multipart/report; report-type=disposition-notification`
//! with a human-readable text part and a `message/disposition-notification`
//! part holding `Reporting-UA`, `Original-Recipient`, `Final-Recipient`,
//! `Original-Message-ID`, `Received-Content-MIC` and `Disposition`. When
//! the sender asks for a signed receipt the report is wrapped in
//! `multipart/signed` with our key.

use super::error::As2Error;
use super::id::{As2Id, MessageId};
use super::keys::{Certificate, PrivateKey};
use super::mic::{Mic, MicAlgorithm};
use super::mime::{self, Headers};
use super::signed;

/// The `Reporting-UA` of edihub's MDNs.
pub const REPORTING_UA: &str = "edihub";

/// A processing error an MDN reports (RFC 4130 §7.4.3, RFC 5402 §4):
/// `processed/Error: <modifier>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorModifier {
    /// The signature is not the partner's.
    AuthenticationFailed,
    /// The compressed content could not be decompressed.
    DecompressionFailed,
    /// The encrypted content could not be decrypted.
    DecryptionFailed,
    /// The message lacks a signature or encryption the partner must use.
    InsufficientMessageSecurity,
    /// The content does not match its signature.
    IntegrityCheckFailed,
    /// Anything else.
    UnexpectedProcessingError,
}

impl ErrorModifier {
    /// The modifier's text.
    pub fn text(self) -> &'static str {
        match self {
            ErrorModifier::AuthenticationFailed => "authentication-failed",
            ErrorModifier::DecompressionFailed => "decompression-failed",
            ErrorModifier::DecryptionFailed => "decryption-failed",
            ErrorModifier::InsufficientMessageSecurity => "insufficient-message-security",
            ErrorModifier::IntegrityCheckFailed => "integrity-check-failed",
            ErrorModifier::UnexpectedProcessingError => "unexpected-processing-error",
        }
    }
}

/// A failure of the MDN request itself (RFC 4130 §7.5.3): `failed/Failure: <text>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureModifier {
    /// A required signed-receipt protocol edihub lacks.
    UnsupportedFormat,
    /// A required MIC algorithm edihub lacks.
    UnsupportedMicAlgorithms,
}

impl FailureModifier {
    /// The modifier's text.
    pub fn text(self) -> &'static str {
        match self {
            FailureModifier::UnsupportedFormat => "unsupported format",
            FailureModifier::UnsupportedMicAlgorithms => "unsupported MIC-algorithms",
        }
    }
}

/// The kind of a disposition modifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModifierKind {
    /// `Error`: processed, with an error; nothing was accepted.
    Error,
    /// `Warning`: processed, accepted with a remark.
    Warning,
    /// `Failure`: the MDN request could not be honoured.
    Failure,
}

/// What an MDN says happened to a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disposition {
    /// `processed` (true) or `failed` (false; any other type reads as not processed).
    pub processed: bool,
    /// The modifier, with its text (`authentication-failed`, …).
    pub modifier: Option<(ModifierKind, String)>,
}

impl Disposition {
    /// `processed`: the message was received and accepted.
    pub fn processed() -> Self {
        Self { processed: true, modifier: None }
    }

    /// `processed/Error: <modifier>`.
    pub fn error(modifier: ErrorModifier) -> Self {
        Self { processed: true, modifier: Some((ModifierKind::Error, modifier.text().to_string())) }
    }

    /// `failed/Failure: <modifier>`.
    pub fn failed(modifier: FailureModifier) -> Self {
        Self { processed: false, modifier: Some((ModifierKind::Failure, modifier.text().to_string())) }
    }

    /// Whether the message was accepted: processed, with no modifier or a warning.
    pub fn is_positive(&self) -> bool {
        self.processed && matches!(self.modifier, None | Some((ModifierKind::Warning, _)))
    }

    /// Reads a `Disposition` field value
    /// (`automatic-action/MDN-sent-automatically; processed/Error: decryption-failed`).
    pub fn parse(value: &str) -> Result<Self, As2Error> {
        let (_mode, disposition) = value
            .split_once(';')
            .ok_or_else(|| As2Error::malformed(format!("Disposition `{value}` has no `;`")))?;
        let disposition = disposition.trim();
        let (kind, modifier) = match disposition.split_once('/') {
            Some((kind, modifier)) => (kind.trim(), Some(modifier.trim())),
            None => (disposition, None),
        };
        let processed = kind.eq_ignore_ascii_case("processed");
        let modifier = modifier.map(|m| {
            let (level, text) = m.split_once(':').unwrap_or((m, ""));
            let level = match level.trim().to_ascii_lowercase().as_str() {
                "warning" => ModifierKind::Warning,
                "failure" => ModifierKind::Failure,
                _ => ModifierKind::Error,
            };
            (level, text.trim().to_string())
        });
        Ok(Self { processed, modifier })
    }
}

impl std::fmt::Display for Disposition {
    /// `processed`, `processed/Error: <text>`, `failed/Failure: <text>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.processed { "processed" } else { "failed" })?;
        if let Some((kind, text)) = &self.modifier {
            let kind = match kind {
                ModifierKind::Error => "Error",
                ModifierKind::Warning => "Warning",
                ModifierKind::Failure => "Failure",
            };
            write!(f, "/{kind}")?;
            if !text.is_empty() {
                write!(f, ": {text}")?;
            }
        }
        Ok(())
    }
}

/// What an MDN reports about one received message.
#[derive(Debug, Clone)]
pub struct Report {
    /// The station that received it (its `AS2-To`).
    pub recipient: As2Id,
    /// Its `Message-ID`.
    pub original_message_id: MessageId,
    /// What happened to it.
    pub disposition: Disposition,
    /// The MIC of what was received (positive dispositions).
    pub mic: Option<Mic>,
}

/// Who signs an MDN, and with which digest.
#[derive(Debug, Clone, Copy)]
pub struct Signer<'a> {
    /// Our private key.
    pub key: &'a PrivateKey,
    /// Our certificate.
    pub certificate: &'a Certificate,
    /// The digest.
    pub algorithm: MicAlgorithm,
}

/// An MDN ready to send: HTTP headers and body.
#[derive(Debug, Clone)]
pub struct Mdn {
    /// The HTTP headers (AS2 headers, `Message-ID`, `Content-Type`, …).
    pub headers: Headers,
    /// The body.
    pub body: Vec<u8>,
    /// Its own Message-ID.
    pub message_id: MessageId,
}

/// Builds the MDN for `report`, from our station `from` to partner `to`,
/// signed when `signer` is given.
pub fn build(report: &Report, from: &As2Id, to: &As2Id, signer: Option<Signer<'_>>) -> Result<Mdn, As2Error> {
    let (report_type, report_body) = report_entity(report);
    let (content_type, body) = match signer {
        None => (report_type, report_body),
        Some(s) => {
            let headers: Headers = [("Content-Type", report_type)].into_iter().collect();
            let entity = mime::write_entity(&headers, &report_body);
            signed::write(&entity, s.key, s.certificate, s.algorithm)?
        }
    };
    let message_id = MessageId::generate(&domain_of(from));
    let headers: Headers = [
        ("AS2-Version", "1.2".to_string()),
        ("AS2-From", from.header_value()),
        ("AS2-To", to.header_value()),
        ("Message-ID", message_id.header_value()),
        ("Date", chrono::Utc::now().to_rfc2822()),
        ("MIME-Version", "1.0".to_string()),
        ("Content-Type", content_type),
    ]
    .into_iter()
    .collect();
    Ok(Mdn { headers, body, message_id })
}

/// The `multipart/report` Content-Type and body of `report`.
fn report_entity(report: &Report) -> (String, Vec<u8>) {
    let text = if report.disposition.is_positive() {
        format!(
            "The AS2 message {} was received by {} and processed.\r\n\
             This receipt confirms receipt and decoding, not the acceptance of its business content.\r\n",
            report.original_message_id.header_value(),
            report.recipient
        )
    } else {
        format!(
            "The AS2 message {} was received by {} but could not be processed: {}.\r\n\
             The disposition-notification part has the details.\r\n",
            report.original_message_id.header_value(),
            report.recipient,
            report.disposition
        )
    };
    let text_headers: Headers =
        [("Content-Type", "text/plain; charset=us-ascii"), ("Content-Transfer-Encoding", "7bit")]
            .into_iter()
            .collect();
    let recipient = report.recipient.header_value();
    let mut fields = format!(
        "Reporting-UA: {REPORTING_UA}\r\nOriginal-Recipient: rfc822; {recipient}\r\n\
         Final-Recipient: rfc822; {recipient}\r\nOriginal-Message-ID: {}\r\n",
        report.original_message_id.header_value()
    );
    if let Some(mic) = &report.mic {
        fields.push_str(&format!("Received-Content-MIC: {mic}\r\n"));
    }
    fields.push_str(&format!(
        "Disposition: automatic-action/MDN-sent-automatically; {}\r\n",
        report.disposition
    ));
    let notification_headers: Headers =
        [("Content-Type", "message/disposition-notification"), ("Content-Transfer-Encoding", "7bit")]
            .into_iter()
            .collect();
    let boundary = mime::new_boundary();
    let body = mime::write_multipart(
        &boundary,
        &[
            &mime::write_entity(&text_headers, text.as_bytes()),
            &mime::write_entity(&notification_headers, fields.as_bytes()),
        ],
    );
    (format!("multipart/report; report-type=disposition-notification; boundary=\"{boundary}\""), body)
}

/// A domain for generated Message-IDs: the AS2 id's letters and digits.
pub(crate) fn domain_of(id: &As2Id) -> String {
    let domain: String =
        id.as_str().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.').collect();
    if domain.is_empty() { "edihub".to_string() } else { format!("{}.edihub", domain.to_ascii_lowercase()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispositions_read_and_write() {
        let cases = [
            ("automatic-action/MDN-sent-automatically; processed", Disposition::processed()),
            (
                "automatic-action/MDN-sent-automatically; processed/Error: decryption-failed",
                Disposition::error(ErrorModifier::DecryptionFailed),
            ),
            (
                "automatic-action/MDN-sent-automatically; failed/Failure: unsupported MIC-algorithms",
                Disposition::failed(FailureModifier::UnsupportedMicAlgorithms),
            ),
        ];
        for (text, disposition) in cases {
            assert_eq!(Disposition::parse(text).unwrap(), disposition);
            assert_eq!(format!("automatic-action/MDN-sent-automatically; {disposition}"), text);
        }
        let warned =
            Disposition::parse("manual-action/MDN-sent-manually; processed/warning: duplicate-document")
                .unwrap();
        assert!(warned.is_positive());
        assert!(!Disposition::error(ErrorModifier::AuthenticationFailed).is_positive());
        assert!(!Disposition::parse("a/b; failed").unwrap().is_positive());
        assert!(Disposition::parse("processed").is_err());
    }
}
