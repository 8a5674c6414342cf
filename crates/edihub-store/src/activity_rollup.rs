//! The overview's hourly rollup: the counts of [`crate::Store::activity`]
//! for each closed hour, kept in `activity_hours`, so a week is at most
//! [`HORIZON_HOURS`] small rows per (tenant, environment, message type)
//! instead of every message of the week (233,000 heap rows and 0.7 s at
//! 1 million messages).
//!
//! Nothing is written on the ingest path: [`crate::Store::roll_up_activity`]
//! is called by the overview before it reads, and adds the hours that have
//! settled since the last call (one hour a call in steady state; the whole
//! horizon on the first call).
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
use sqlx::{AssertSqlSafe, Encode, Executor, FromRow, IntoArguments, Type};

use crate::console::{ACCEPTED, SIGNATURE_REJECTED};
use crate::{DUPLICATE_BLOCKED, Result};

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

/// The counts of what happened in a time range, per (tenant, environment,
/// message type, what): the same four columns and `count` as the rollup's
/// rows. `when` is the range, with `{t}` for the time column; `$1` is the
/// duplicate action, `$2` the signature one. Built from this crate's
/// constants only (never from input), hence `AssertSqlSafe` where it runs.
pub(crate) fn direct_counts(when: &str) -> String {
    let m = when.replace("{t}", "received_at");
    let a = when.replace("{t}", "occurred_at");
    format!(
        "SELECT tenant_id, environment_id, message_type, '{ACCEPTED}' AS what, COUNT(*) AS count \
         FROM messages WHERE {m} GROUP BY tenant_id, environment_id, message_type \
         UNION ALL SELECT COALESCE(tenant_id, ''), COALESCE(environment_id, ''), \
         COALESCE(message_type, ''), COALESCE(detected_by, ''), COUNT(*) FROM audit_events \
         WHERE action = $1 AND {a} GROUP BY tenant_id, environment_id, message_type, detected_by \
         UNION ALL SELECT COALESCE(tenant_id, ''), COALESCE(environment_id, ''), '', $2, \
         CAST(COALESCE(SUM(CAST(details->>'count' AS BIGINT)), 0) AS BIGINT) FROM audit_events \
         WHERE action = $2 AND {a} GROUP BY tenant_id, environment_id"
    )
}

const STATE: &str = "SELECT rolled_from, rolled_until FROM activity_rollup WHERE id = 1";
/// Takes the row's lock (PostgreSQL waits for another roll-up's commit and
/// then returns the range it left; SQLite's `BEGIN IMMEDIATE` already holds
/// the write lock).
const LOCK_STATE: &str =
    "UPDATE activity_rollup SET id = id WHERE id = 1 RETURNING rolled_from, rolled_until";
const SET_STATE: &str = "UPDATE activity_rollup SET rolled_from = $1, rolled_until = $2 WHERE id = 1";
const TRIM: &str = "DELETE FROM activity_hours WHERE hour < $1";

/// Rolls up the hour `[$3, $4)`.
fn roll_up_hour() -> String {
    format!(
        "INSERT INTO activity_hours (hour, tenant_id, environment_id, message_type, what, count) \
         SELECT $3, tenant_id, environment_id, message_type, what, count FROM ({}) AS c \
         WHERE true ON CONFLICT DO NOTHING",
        direct_counts("{t} >= $3 AND {t} < $4")
    )
}

type StateRow = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);

fn rolled((from, until): StateRow) -> Option<Rolled> {
    Some(Rolled { from: from?, until: until? })
}

/// The rollup's statements.
pub(crate) trait RollupSql: sqlx::Database {
    /// The hours the rollup holds (`None`: none yet).
    fn rollup_state(conn: &mut Self::Connection) -> impl Future<Output = Result<Option<Rolled>>> + Send;
    /// In a write transaction: rolls up every hour ending at or before
    /// `end` (a whole hour) that is not yet, within the horizon, and trims
    /// older hours; returns how many hours it added.
    fn roll_up(conn: &mut Self::Connection, end: DateTime<Utc>) -> impl Future<Output = Result<u64>> + Send;
}

impl<DB> RollupSql for DB
where
    DB: sqlx::Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> &'e str: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'r> StateRow: FromRow<'r, DB::Row>,
{
    async fn rollup_state(conn: &mut DB::Connection) -> Result<Option<Rolled>> {
        let row: StateRow = sqlx::query_as(STATE).fetch_one(&mut *conn).await?;
        Ok(rolled(row))
    }

    async fn roll_up(conn: &mut DB::Connection, end: DateTime<Utc>) -> Result<u64> {
        let held = rolled(sqlx::query_as(LOCK_STATE).fetch_one(&mut *conn).await?);
        let keep = end - TimeDelta::hours(HORIZON_HOURS);
        // A range that ended before the horizon is dropped whole: the
        // hours in between were never rolled up.
        let held = held.filter(|r| r.until >= keep);
        let start = held.map_or(keep, |r| r.until);
        if start >= end {
            return Ok(0);
        }
        let from = held.map_or(keep, |r| r.from.max(keep));
        sqlx::query(TRIM).bind(from).execute(&mut *conn).await?;
        let insert = roll_up_hour();
        let mut hour = start;
        let mut hours = 0;
        while hour < end {
            let next = hour + TimeDelta::hours(1);
            sqlx::query(AssertSqlSafe(insert.as_str()))
                .bind(DUPLICATE_BLOCKED)
                .bind(SIGNATURE_REJECTED)
                .bind(hour)
                .bind(next)
                .execute(&mut *conn)
                .await?;
            hour = next;
            hours += 1;
        }
        sqlx::query(SET_STATE).bind(from).bind(end).execute(&mut *conn).await?;
        Ok(hours)
    }
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
