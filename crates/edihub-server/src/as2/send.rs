//! Sending one AS2 message to a partner over HTTP and judging the answer:
//! what `edihub as2 send` does to test a partner link before real traffic
//! flows over it.
//!
//! A message counts as delivered only on a positive MDN whose MIC is the
//! MIC of what was sent (RFC 4130 §7.3.1): an HTTP 200 alone says only that
//! the partner's server read the request. With an asynchronous MDN the HTTP
//! answer carries none, so the outcome is [`SendOutcome::AwaitingMdn`] and
//! the receipt arrives later at the station's `async_mdn_url`.

use std::time::Duration;

use chrono::Utc;

use super::error::As2Error;
use super::outbound::{self, OutboundMessage, Payload};
use super::partner::{MdnMode, PartnerProfile, Station};
use super::receipt::{ReceivedMdn, SentMessage, Unconfirmed};
use crate::delivery::describe;

/// The most of a partner's non-MDN answer kept for the report.
const DETAIL_BYTES: usize = 500;

/// What became of a message sent.
#[derive(Debug)]
pub enum SendOutcome {
    /// A positive MDN with the MIC of what was sent.
    Confirmed(ReceivedMdn),
    /// An MDN that does not confirm the message (negative, another MIC,
    /// unsigned where a signed one was asked for, another Message-ID).
    Unconfirmed(ReceivedMdn, Unconfirmed),
    /// The partner accepted the request and will post the MDN later.
    AwaitingMdn {
        /// The HTTP status it answered.
        status: u16,
    },
    /// An answer that is not an MDN (an HTTP error page, an unreadable
    /// MDN): its status and the start of its body or the reason.
    NotAnMdn {
        /// The HTTP status.
        status: u16,
        /// What was wrong, for the report.
        detail: String,
    },
    /// No answer: the connection failed or timed out.
    NoAnswer(String),
}

impl SendOutcome {
    /// Whether the partner confirmed the message.
    pub fn is_confirmed(&self) -> bool {
        matches!(self, SendOutcome::Confirmed(_))
    }
}

/// A message sent and what came of it.
#[derive(Debug)]
pub struct Sent {
    /// What the MDN is judged against: Message-ID and MIC.
    pub message: SentMessage,
    /// The HTTP status the partner answered, if it answered.
    pub status: Option<u16>,
    /// The outcome.
    pub outcome: SendOutcome,
}

/// Builds the message carrying `payload` to `partner` and posts it to the
/// partner's URL. Fails only when the message cannot be built (no URL, a
/// payload label with a line break, a cryptographic failure); everything
/// the partner answers, or fails to, is an outcome.
pub async fn send(
    client: &reqwest::Client,
    payload: &Payload<'_>,
    station: &Station,
    partner: &PartnerProfile,
    timeout: Duration,
) -> Result<Sent, As2Error> {
    let url = partner
        .url
        .as_deref()
        .ok_or_else(|| As2Error::Processing(format!("partner {} has no url to send to", partner.as2_id)))?;
    let built = outbound::build(payload, station, partner, Utc::now())?;
    Ok(post(client, url, built, partner, timeout).await)
}

/// Posts a built message to `url` and judges the answer against what was sent.
pub async fn post(
    client: &reqwest::Client,
    url: &str,
    built: OutboundMessage,
    partner: &PartnerProfile,
    timeout: Duration,
) -> Sent {
    let mut request = client.post(url).timeout(timeout).body(built.body);
    for (name, value) in built.headers.iter() {
        request = request.header(name, value);
    }
    let (status, outcome) = match request.send().await {
        Err(e) => (None, SendOutcome::NoAnswer(describe(e))),
        Ok(response) => {
            let status = response.status().as_u16();
            (Some(status), judge(response, partner, &built.sent).await)
        }
    };
    Sent { message: built.sent, status, outcome }
}

/// The outcome of the partner's HTTP answer.
async fn judge(response: reqwest::Response, partner: &PartnerProfile, sent: &SentMessage) -> SendOutcome {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = match response.bytes().await {
        Ok(body) => body,
        Err(e) => return SendOutcome::NoAnswer(format!("reading the answer: {}", describe(e))),
    };
    if partner.mdn_mode == MdnMode::Async && body.is_empty() && (200..300).contains(&status) {
        return SendOutcome::AwaitingMdn { status };
    }
    let Some(content_type) = content_type.filter(|_| !body.is_empty()) else {
        return SendOutcome::NotAnMdn { status, detail: "the answer carries no MDN".into() };
    };
    match ReceivedMdn::read(&content_type, &body, &partner.certificate, Utc::now()) {
        Ok(mdn) => match mdn.confirms(sent) {
            Ok(()) => SendOutcome::Confirmed(mdn),
            Err(reason) => SendOutcome::Unconfirmed(mdn, reason),
        },
        Err(e) => {
            SendOutcome::NotAnMdn { status, detail: format!("{e}; the answer began: {}", excerpt(&body)) }
        }
    }
}

/// The start of a body as text, for a report.
fn excerpt(body: &[u8]) -> String {
    let cut = &body[..body.len().min(DETAIL_BYTES)];
    String::from_utf8_lossy(cut).replace(['\r', '\n'], " ")
}
