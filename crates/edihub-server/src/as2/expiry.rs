//! When a certificate needs attention: an AS2 link breaks the day a
//! certificate on either side expires (signatures stop verifying, partners
//! refuse to encrypt to it), and exchanging a new one with a partner takes
//! days, so the console and the admin API warn [`WARN_DAYS`] ahead.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::keys::Certificate;

/// How many days before its end a certificate is flagged.
pub const WARN_DAYS: i64 = 30;

/// A certificate's validity as the console shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Validity {
    /// Its subject.
    pub subject: String,
    /// The end of its validity.
    pub not_after: DateTime<Utc>,
    /// Whole days from now to `not_after` (negative once expired).
    pub days_left: i64,
    /// `valid`, `expiring` (within [`WARN_DAYS`]) or `expired`.
    pub state: &'static str,
}

impl Validity {
    /// The validity of `certificate` at `now`.
    pub fn of(certificate: &Certificate, now: DateTime<Utc>) -> Validity {
        let not_after = certificate.not_after();
        let days_left = (not_after - now).num_days();
        let state = if not_after <= now {
            "expired"
        } else if days_left < WARN_DAYS {
            "expiring"
        } else {
            "valid"
        };
        Validity { subject: certificate.subject().to_string(), not_after, days_left, state }
    }
}
