//! An `as2` destination: each delivery is the message's bytes as received
//! (as `raw` sends them), sent to a trading partner over AS2 with the
//! partner's profile (signed, encrypted, compressed) from the station of
//! the destination's tenant environment.
//!
//! An HTTP 200 says only that the partner's server read the request, so an
//! attempt counts as delivered only when the MDN in the answer is positive
//! and reports the MIC of what was sent; a negative MDN, another MIC, an
//! unsigned MDN where a signed one was asked for, or an answer without an
//! MDN is a failed attempt, retried on the usual schedule. The
//! configuration admits only partners that answer synchronously.

use std::time::Duration;

use chrono::Utc;

use super::bodies::Outgoing;
use crate::as2::id::As2Id;
use crate::as2::outbound::{self, Payload};
use crate::as2::partner::{PartnerProfile, Station};
use crate::as2::send::{SendOutcome, post};
use crate::config::DestinationConfig;
use crate::state::AppState;

/// The station sending and the partner receiving.
#[derive(Debug, Clone)]
pub(crate) struct As2Target {
    station: Station,
    partner: PartnerProfile,
}

/// What one AS2 attempt came to, for the attempt log.
pub(crate) struct As2Attempt {
    /// The HTTP status, when the partner answered.
    pub status: Option<u16>,
    /// The MDN confirms the message: positive, with the MIC of what was sent.
    pub confirmed: bool,
    /// Why it does not count as delivered; `None` when confirmed.
    pub error: Option<String>,
    /// What the MDN said, for the attempt log.
    pub text: Option<String>,
    /// The message cannot be sent at all (no attempt can succeed).
    pub gone: bool,
}

impl As2Target {
    /// The target of `def`: its `as2_partner` among the partners of a
    /// station of its tenant environment (the configuration checks it; an
    /// admin change is checked the same way).
    pub fn of(def: &DestinationConfig, state: &AppState) -> Result<As2Target, String> {
        let name = def.as2_partner.as_deref().ok_or("an as2 destination needs as2_partner")?;
        let id = As2Id::new(name).map_err(|r| format!("as2_partner: {r}"))?;
        let of_environment = |p: &&PartnerProfile| {
            state
                .as2
                .station(&p.station)
                .is_some_and(|s| s.tenant == def.tenant && s.environment == def.environment)
        };
        let partner =
            state.as2.partners().filter(of_environment).find(|p| p.as2_id == id).ok_or_else(|| {
                format!("no AS2 partner `{id}` of a station of {}/{}", def.tenant, def.environment)
            })?;
        let station = state.as2.station(&partner.station).ok_or("the partner's station is gone")?;
        Ok(As2Target { station: station.clone(), partner: partner.clone() })
    }

    /// Sends `m` to `url` and judges the partner's MDN.
    pub async fn attempt(
        &self,
        client: &reqwest::Client,
        url: &str,
        m: &Outgoing,
        timeout: Duration,
    ) -> As2Attempt {
        let content_type = m.meta.content_type.as_deref().unwrap_or("application/octet-stream");
        let subject = format!("{} {}", m.meta.message_type, m.meta.id);
        let payload = Payload { bytes: &m.body.bytes, content_type, filename: None, subject: &subject };
        let built = match outbound::build(&payload, &self.station, &self.partner, Utc::now()) {
            Ok(built) => built,
            Err(e) => {
                let error = Some(format!("not sent: cannot be written as AS2: {e}"));
                return As2Attempt { status: None, confirmed: false, error, text: None, gone: true };
            }
        };
        let sent = post(client, url, built, &self.partner, timeout).await;
        let message_id = &sent.message.message_id;
        let confirmed = sent.outcome.is_confirmed();
        let (error, text) = match sent.outcome {
            SendOutcome::Confirmed(mdn) => {
                (None, Some(format!("MDN {} for {message_id}, MIC {}", mdn.disposition, sent.message.mic)))
            }
            SendOutcome::Unconfirmed(mdn, reason) => (
                Some(format!("MDN does not confirm {message_id}: {reason}")),
                Some(mdn.disposition.to_string()),
            ),
            SendOutcome::NotAnMdn { detail, .. } => {
                (Some(format!("no MDN for {message_id}: {detail}")), None)
            }
            SendOutcome::NoAnswer(reason) => (Some(reason), None),
            // `AwaitingMdn`, which only a partner that answers
            // asynchronously gives, and the configuration admits none here.
            _ => (Some(format!("no MDN in the answer to {message_id}")), None),
        };
        As2Attempt { status: sent.status, confirmed, error, text, gone: false }
    }
}
