//! MDNs, the receipts of AS2 (RFC 3798 as profiled by RFC 4130 §7): what a
//! disposition says, and building the MDN edihub answers a message with.
//!
//! An MDN is a `multipart/report; report-type=disposition-notification`
//! with a human-readable text part and a `message/disposition-notification`
//! part holding `Reporting-UA`, `Original-Recipient`, `Final-Recipient`,
//! `Original-Message-ID`, `Received-Content-MIC` and `Disposition`. When
//! the sender asks for a signed receipt the report is wrapped in
//! `multipart/signed` with our key.

pub use super::disposition::{Disposition, ErrorModifier, FailureModifier, ModifierKind};
use super::error::As2Error;
use super::id::{As2Id, MessageId};
use super::keys::{Certificate, PrivateKey};
use super::mic::{Mic, MicAlgorithm};
use super::mime::{self, Headers};
use super::signed;

/// The `Reporting-UA` of edihub's MDNs.
pub const REPORTING_UA: &str = "edihub";

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
