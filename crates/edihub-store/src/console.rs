//! Aggregates for the admin console's overview: what arrived, what was
//! accepted, what was blocked and how, per (tenant, environment, message
//! type), and the same over time for its chart. Each backend writes the
//! statements (`postgres/console.rs`, `sqlite/console.rs`); how a range
//! splits between the rollup and direct counts is decided here.
//!
//! Accepted messages are counted from `messages` (by `received_at`), blocked
//! duplicates and refused signatures from `audit_events` (by `occurred_at`):
//! the whole hours the rollup holds from `activity_hours` (see
//! [`crate::activity_rollup`]), the rest directly, through the indexes on
//! time, so no count reads a week of rows and none reads a payload.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::DetectedBy;
use crate::activity_rollup::{Rolled, ceil_hour};

/// The `what` of the accepted messages' counts.
pub const ACCEPTED: &str = "accepted";
/// The audit action of refused webhook signatures (written by the server,
/// one event per interval carrying a `count`).
pub const SIGNATURE_REJECTED: &str = "webhook.signature_rejected";

/// What an [`ActivityCount`] counts. A blocked duplicate is counted by its
/// detector: a message repeated by fingerprint, key or provider event id
/// (`message.duplicate_blocked`) and a repeated EDIFACT/X12 interchange
/// (`interchange.duplicate_blocked`, one per interchange) alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// Messages accepted (stored new).
    Accepted,
    /// Duplicates blocked, by how they were recognised.
    Duplicate(DetectedBy),
    /// Webhook signatures refused.
    SignaturesRefused,
}

impl Counted {
    /// The name the statements write and the rollup keeps.
    pub fn as_str(self) -> &'static str {
        match self {
            Counted::Accepted => ACCEPTED,
            Counted::Duplicate(by) => by.as_str(),
            Counted::SignaturesRefused => SIGNATURE_REJECTED,
        }
    }
}

impl TryFrom<String> for Counted {
    type Error = String;

    fn try_from(name: String) -> std::result::Result<Self, String> {
        match name.as_str() {
            ACCEPTED => Ok(Counted::Accepted),
            SIGNATURE_REJECTED => Ok(Counted::SignaturesRefused),
            other => DetectedBy::from_name(other)
                .map(Counted::Duplicate)
                .ok_or_else(|| format!("an overview count of unknown kind {other:?}")),
        }
    }
}

impl Serialize for Counted {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One count of the overview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct ActivityCount {
    /// Tenant id (empty when the event named none).
    pub tenant_id: String,
    /// Environment id (empty when the event named none).
    pub environment_id: String,
    /// Message type (empty for signature refusals, which have none).
    pub message_type: String,
    /// What was counted.
    #[sqlx(try_from = "String")]
    pub what: Counted,
    /// How many.
    pub count: i64,
}

/// Messages accepted and duplicates blocked in one interval of a series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct ActivityPoint {
    /// Index of the interval: from `bounds[i]` (inclusive) to `bounds[i + 1]`.
    pub bucket: i64,
    /// Messages accepted in it.
    pub accepted: i64,
    /// Duplicates blocked in it, however detected.
    pub duplicates: i64,
}

/// One interval of a series, split as by [`Rolled::split`]: counted
/// directly in `[lo, a)` and `[z, hi)`, from the rollup in `[a, z)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interval {
    /// Its index among the series' intervals.
    pub bucket: i64,
    /// Its start.
    pub lo: DateTime<Utc>,
    /// The start of the part the rollup answers.
    pub a: DateTime<Utc>,
    /// The end of the part the rollup answers.
    pub z: DateTime<Utc>,
    /// Its end.
    pub hi: DateTime<Utc>,
}

/// The intervals between consecutive `bounds`, oldest first, each split
/// between direct counts and the rollup `rolled`.
pub(crate) fn series_intervals(rolled: Option<Rolled>, bounds: &[DateTime<Utc>]) -> Vec<Interval> {
    bounds
        .windows(2)
        .enumerate()
        .map(|(i, pair)| {
            let (lo, hi) = (pair[0], pair[1]);
            let (a, z) = Rolled::split(rolled, lo, Some(hi));
            Interval { bucket: i64::try_from(i).unwrap_or(i64::MAX), lo, a, z, hi }
        })
        .collect()
}

/// `count` intervals of `step` ending at `end`: the `count + 1` bounds a
/// series is asked for, oldest first.
pub fn series_bounds(end: DateTime<Utc>, step: chrono::Duration, count: i32) -> Vec<DateTime<Utc>> {
    (0..=count).rev().map(|i| end - step * i).collect()
}

/// The bounds of the overview's chart: `hours` intervals ending at `now`,
/// each a clock hour (the last one up to `now`), so every closed one is
/// read from the rollup.
pub fn hourly_bounds(now: DateTime<Utc>, hours: i32) -> Vec<DateTime<Utc>> {
    let top = ceil_hour(now);
    let mut bounds: Vec<_> = (1..=hours).rev().map(|i| top - chrono::Duration::hours(i.into())).collect();
    bounds.push(now);
    bounds
}
