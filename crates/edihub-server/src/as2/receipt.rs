//! A partner's MDN for a message edihub sent: reading it (its signature
//! checked against the partner's certificate) and deciding whether it
//! confirms the message: the right Message-ID, a positive disposition, and
//! the MIC of what was sent.

use chrono::{DateTime, Utc};

use super::error::As2Error;
use super::id::MessageId;
use super::keys::Certificate;
use super::mdn::Disposition;
use super::mic::{Mic, MicAlgorithm};
use super::mime::{self, ContentType};
use super::signed;

/// An MDN as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedMdn {
    /// The Message-ID it answers.
    pub original_message_id: MessageId,
    /// What the partner says happened.
    pub disposition: Disposition,
    /// The MIC it reports.
    pub mic: Option<Mic>,
    /// The digest of its signature, verified with the partner's
    /// certificate; `None` when it is unsigned.
    pub signed: Option<MicAlgorithm>,
    /// Its `Reporting-UA`.
    pub reporting_ua: Option<String>,
}

/// What edihub remembers of a message it sent, to judge its MDN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentMessage {
    /// Its Message-ID.
    pub message_id: MessageId,
    /// The MIC the partner should report.
    pub mic: Mic,
    /// Whether it was signed (then the MDN must carry the MIC).
    pub signed: bool,
    /// Whether a signed MDN was asked for (then an unsigned one is refused).
    pub receipt_signed: bool,
}

/// Why an MDN does not confirm a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unconfirmed {
    /// It answers another message.
    #[error("the MDN answers message {got}, not {expected}")]
    OtherMessage {
        /// Ours.
        expected: MessageId,
        /// The MDN's.
        got: MessageId,
    },
    /// A signed MDN was asked for and this one is not signed.
    #[error("the MDN is not signed, and a signed one was asked for")]
    Unsigned,
    /// The partner did not accept the message.
    #[error("the partner answered {0}")]
    Negative(Disposition),
    /// The MIC is absent though the message was signed.
    #[error("the MDN reports no MIC for a signed message")]
    NoMic,
    /// The MIC is not the one of what was sent.
    #[error("the MDN's MIC {got} is not the MIC of what was sent ({expected})")]
    MicMismatch {
        /// Ours.
        expected: Mic,
        /// The MDN's.
        got: Mic,
    },
}

impl ReceivedMdn {
    /// Reads an MDN: Content-Type `content_type` and `body` (from the HTTP
    /// answer or an asynchronous POST). A signed one must be `partner`'s.
    pub fn read(
        content_type: &str,
        body: &[u8],
        partner: &Certificate,
        now: DateTime<Utc>,
    ) -> Result<Self, As2Error> {
        let outer = ContentType::parse(content_type)?;
        let (report_type, report_body, signed): (ContentType, Vec<u8>, _) = if outer.is("multipart/signed") {
            let verified = signed::read(&outer, body, partner, now)?;
            let entity = mime::parse_entity(&verified.content)?;
            (entity.content_type()?, entity.decoded_body()?.into_owned(), Some(verified.signature.algorithm))
        } else {
            (outer, body.to_vec(), None)
        };
        if !report_type.is("multipart/report") {
            return Err(As2Error::malformed(format!(
                "an MDN is multipart/report, not {}",
                report_type.mime()
            )));
        }
        let boundary = report_type
            .param("boundary")
            .ok_or_else(|| As2Error::malformed("multipart/report has no boundary parameter"))?;
        let parts = mime::split_multipart(&report_body, boundary)?;
        let notification = parts
            .iter()
            .map(|p| mime::parse_entity(p))
            .find(|p| {
                p.as_ref()
                    .is_ok_and(|e| e.content_type().is_ok_and(|t| t.is("message/disposition-notification")))
            })
            .ok_or_else(|| As2Error::malformed("the MDN has no message/disposition-notification part"))??;
        let fields = mime::parse_fields(&notification.decoded_body()?)?;
        let original = fields
            .get("Original-Message-ID")
            .ok_or_else(|| As2Error::malformed("the MDN has no Original-Message-ID"))?;
        let disposition =
            fields.get("Disposition").ok_or_else(|| As2Error::malformed("the MDN has no Disposition"))?;
        Ok(Self {
            original_message_id: MessageId::from_header(original)?,
            disposition: Disposition::parse(disposition)?,
            mic: fields.get("Received-Content-MIC").map(Mic::parse).transpose()?,
            signed,
            reporting_ua: fields.get("Reporting-UA").map(str::to_string),
        })
    }

    /// Whether this MDN confirms `sent`: the same Message-ID, signed when
    /// asked, a positive disposition, and the MIC of what was sent (which a
    /// signed message's MDN must report; an unsigned one's may omit it).
    pub fn confirms(&self, sent: &SentMessage) -> Result<(), Unconfirmed> {
        if self.original_message_id != sent.message_id {
            return Err(Unconfirmed::OtherMessage {
                expected: sent.message_id.clone(),
                got: self.original_message_id.clone(),
            });
        }
        if sent.receipt_signed && self.signed.is_none() {
            return Err(Unconfirmed::Unsigned);
        }
        if !self.disposition.is_positive() {
            return Err(Unconfirmed::Negative(self.disposition.clone()));
        }
        match &self.mic {
            None if sent.signed => Err(Unconfirmed::NoMic),
            None => Ok(()),
            Some(mic) if mic == &sent.mic => Ok(()),
            Some(mic) => Err(Unconfirmed::MicMismatch { expected: sent.mic.clone(), got: mic.clone() }),
        }
    }
}
