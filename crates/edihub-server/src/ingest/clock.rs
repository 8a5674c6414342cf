//! The time of a request's messages, at the precision the databases keep.

use chrono::{DateTime, Utc};

/// Now, at the microsecond precision both databases keep, so the time in a
/// response equals the time stored.
pub fn now() -> DateTime<Utc> {
    let t = Utc::now();
    DateTime::from_timestamp_micros(t.timestamp_micros()).unwrap_or(t)
}
