//! The overview's hourly rollup: the counts of [`crate::Store::activity`]
//! for each closed hour, kept in `activity_hours`, so a week is at most
//! [`HORIZON_HOURS`] small rows per (tenant, environment, message type)
//! instead of every message of the week (BENCHMARKS.md, "Console pages").
//!
//! Nothing is written on the ingest path: [`crate::Store::roll_up_activity`]
//! is called by the overview before it reads, and adds the hours that have
//! settled since the last call (one hour a call in steady state; the whole
//! horizon on the first call).
//!
//! Each backend writes the statements (`postgres/activity_rollup.rs`,
//! `sqlite/activity_rollup.rs`); which hours a roll-up adds and trims is
//! decided here ([`RollUp`]).
//!
//! - **Settled hours only.** `received_at` (and a duplicate's
//!   `occurred_at`) is the request's time, taken before its transaction
//!   begins, so a row may commit after its hour has ended. The caller passes
//!   `settled`, a time before which every request has committed or rolled
//!   back (the server: now minus its request timeout and a margin); an hour
//!   is rolled up only once it ended before `settled`. Later hours, and the
//!   part of a queried range that is not whole hours, are counted directly
//!   through the time indexes ([`Rolled::split`]).
//! - **Replicas take turns.** A roll-up locks the one row of
//!   `activity_rollup` (an `UPDATE`), re-reads the rolled range under the
//!   lock and adds only what is still missing; its rows are inserted with
//!   `ON CONFLICT DO NOTHING`, and a settled hour's counts are the same
//!   whoever computes them.
//! - **Contiguous.** `activity_rollup` holds the range `[rolled_from,
//!   rolled_until)`; every hour in it is in `activity_hours` (an hour with
//!   nothing in it has no rows). Reads use the rollup only inside it.
//! - **Bounded.** Hours older than [`HORIZON_HOURS`] before `settled` are
//!   deleted by the roll-up itself. Retention of messages and audit events
//!   does not change a rolled-up hour: it counts what arrived.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};

use crate::Result;

/// How many hours the rollup keeps before the last settled one: the
/// overview's 7 days and one more day, so a week read never reaches its
/// edge while a roll-up trims it.
pub(crate) const HORIZON_HOURS: i64 = 192;

/// The start of the hour `t` is in.
pub(crate) fn floor_hour(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(TimeDelta::hours(1)).unwrap_or(t)
}

/// `t` if it starts an hour, else the start of the next hour.
pub(crate) fn ceil_hour(t: DateTime<Utc>) -> DateTime<Utc> {
    let floor = floor_hour(t);
    if floor == t { t } else { floor + TimeDelta::hours(1) }
}

/// The whole hours the rollup holds, `[from, until)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rolled {
    /// The first hour held.
    pub from: DateTime<Utc>,
    /// The end of the last hour held.
    pub until: DateTime<Utc>,
}

impl Rolled {
    /// The part of `[lo, hi)` (no end when `hi` is `None`) the rollup
    /// answers: `(a, z)` with `lo <= a <= z` (and `z <= hi`), whole hours
    /// it holds; `[lo, a)` and `[z, hi)` are counted directly. `a == z ==
    /// lo` when it answers none of it.
    pub(crate) fn split(
        rolled: Option<Self>,
        lo: DateTime<Utc>,
        hi: Option<DateTime<Utc>>,
    ) -> (DateTime<Utc>, DateTime<Utc>) {
        let Some(r) = rolled else { return (lo, lo) };
        let a = ceil_hour(lo).max(r.from);
        let z = hi.map_or(r.until, |hi| floor_hour(hi).min(r.until));
        if a < z { (a, z) } else { (lo, lo) }
    }
}

/// What a roll-up ending at `end` does, given the hours `held`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RollUp {
    /// The first hour kept: older hours are deleted.
    pub from: DateTime<Utc>,
    /// The first hour to add; every hour from it up to `end` is added.
    pub start: DateTime<Utc>,
    /// The end of the last hour to add.
    pub end: DateTime<Utc>,
}

impl RollUp {
    /// The roll-up of the hours ending at or before `end` (a whole hour)
    /// that the rollup `held` lacks, within the horizon; `None` when it
    /// lacks none. A range that ended before the horizon is dropped whole:
    /// the hours in between were never rolled up.
    pub(crate) fn plan(held: Option<Rolled>, end: DateTime<Utc>) -> Option<Self> {
        let keep = end - TimeDelta::hours(HORIZON_HOURS);
        let held = held.filter(|r| r.until >= keep);
        let start = held.map_or(keep, |r| r.until);
        let from = held.map_or(keep, |r| r.from.max(keep));
        (start < end).then_some(RollUp { from, start, end })
    }

    /// The hours to add, oldest first: each hour's start and end.
    pub(crate) fn hours(&self) -> impl Iterator<Item = (DateTime<Utc>, DateTime<Utc>)> + use<> {
        let (start, end) = (self.start, self.end);
        std::iter::successors(Some(start), |h| Some(*h + TimeDelta::hours(1)))
            .take_while(move |h| *h < end)
            .map(|h| (h, h + TimeDelta::hours(1)))
    }
}

/// The statements of a roll-up, each backend's, in a write transaction.
pub(crate) trait RollupSql {
    /// Takes the rollup's lock (its one state row) and returns the hours
    /// it holds.
    fn lock_state(&mut self) -> impl Future<Output = Result<Option<Rolled>>> + Send;
    /// Deletes the hours before `from`.
    fn trim(&mut self, from: DateTime<Utc>) -> impl Future<Output = Result<()>> + Send;
    /// Adds the counts of the hour `[hour, next)`.
    fn add_hour(
        &mut self,
        hour: DateTime<Utc>,
        next: DateTime<Utc>,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Records that the rollup holds `[from, until)`.
    fn set_state(
        &mut self,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// In a write transaction `conn`: rolls up every hour ending at or before
/// `end` (a whole hour) that is not yet, within the horizon, and trims
/// older hours; returns how many hours it added.
pub(crate) async fn roll_up<C: RollupSql + Send>(conn: &mut C, end: DateTime<Utc>) -> Result<u64> {
    let held = conn.lock_state().await?;
    let Some(plan) = RollUp::plan(held, end) else { return Ok(0) };
    conn.trim(plan.from).await?;
    let mut hours = 0;
    for (hour, next) in plan.hours() {
        conn.add_hour(hour, next).await?;
        hours += 1;
    }
    conn.set_state(plan.from, plan.end).await?;
    Ok(hours)
}

/// Whether the rollup `held` already holds every hour ending at or before
/// `end`: most calls find so, and take no lock and write nothing.
pub(crate) fn holds(held: Option<Rolled>, end: DateTime<Utc>) -> bool {
    held.is_some_and(|r| r.until >= end)
}

/// The rollup's state row as read: `rolled_from`, `rolled_until`.
pub(crate) type StateRow = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// The hours a state row says the rollup holds.
pub(crate) fn rolled((from, until): StateRow) -> Option<Rolled> {
    Some(Rolled { from: from?, until: until? })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn hours_round_down_and_up() {
        assert_eq!(floor_hour(at("2026-11-30T10:59:59.999999Z")), at("2026-11-30T10:00:00Z"));
        assert_eq!(ceil_hour(at("2026-11-30T10:00:00.000001Z")), at("2026-11-30T11:00:00Z"));
        assert_eq!(ceil_hour(at("2026-11-30T10:00:00Z")), at("2026-11-30T10:00:00Z"));
    }

    #[test]
    fn split_keeps_whole_rolled_hours_only() {
        let r = Some(Rolled { from: at("2026-11-30T02:00:00Z"), until: at("2026-11-30T10:00:00Z") });
        // A range starting mid-hour: its first part is counted directly.
        assert_eq!(
            Rolled::split(r, at("2026-11-30T03:30:00Z"), None),
            (at("2026-11-30T04:00:00Z"), at("2026-11-30T10:00:00Z"))
        );
        // Starting before the rollup: up to its first hour directly.
        assert_eq!(
            Rolled::split(r, at("2026-11-30T00:10:00Z"), Some(at("2026-11-30T05:20:00Z"))),
            (at("2026-11-30T02:00:00Z"), at("2026-11-30T05:00:00Z"))
        );
        // Less than a whole rolled hour, after the rollup, or no rollup: all directly.
        let lo = at("2026-11-30T04:10:00Z");
        assert_eq!(Rolled::split(r, lo, Some(at("2026-11-30T04:50:00Z"))), (lo, lo));
        assert_eq!(
            Rolled::split(r, at("2026-11-30T10:00:00Z"), None),
            (at("2026-11-30T10:00:00Z"), at("2026-11-30T10:00:00Z"))
        );
        assert_eq!(Rolled::split(None, lo, None), (lo, lo));
    }
}
