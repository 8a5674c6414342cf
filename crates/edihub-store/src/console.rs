//! Aggregates for the admin console's overview: what arrived, what was
//! accepted, what was blocked and how, per (tenant, environment, message
//! type), and the same over time for its chart. Written once for both
//! backends ([`ConsoleSql`]).
//!
//! Accepted messages are counted from `messages` (by `received_at`), blocked
//! duplicates and refused signatures from `audit_events` (by `occurred_at`):
//! the whole hours the rollup holds from `activity_hours` (see
//! [`crate::activity_rollup`]), the rest directly, through the indexes on
//! time, so no count reads a week of rows and none reads a payload.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{AssertSqlSafe, Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};

use crate::activity_rollup::{Rolled, ceil_hour, direct_counts};
use crate::{DUPLICATE_BLOCKED, Result};

/// What an [`ActivityCount`] counts.
pub const ACCEPTED: &str = "accepted";
/// The audit action of refused webhook signatures (written by the server,
/// one event per interval carrying a `count`).
pub const SIGNATURE_REJECTED: &str = "webhook.signature_rejected";

/// One count of the overview: `what` is `accepted`, a duplicate detector
/// (`idempotency_key`, `fingerprint`, `provider_event_id`) or
/// `webhook.signature_rejected`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct ActivityCount {
    /// Tenant id (empty when the event named none).
    pub tenant_id: String,
    /// Environment id (empty when the event named none).
    pub environment_id: String,
    /// Message type (empty for signature refusals, which have none).
    pub message_type: String,
    /// What was counted.
    pub what: String,
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

/// Counts since `$3`: directly in `[$3, $4)` and from `$5` on, from the
/// rollup in `[$4, $5)` (see [`Rolled::split`]).
fn activity_sql() -> String {
    format!(
        "SELECT tenant_id, environment_id, message_type, what, CAST(SUM(count) AS BIGINT) AS count FROM \
         ({} UNION ALL {} UNION ALL SELECT tenant_id, environment_id, message_type, what, count \
         FROM activity_hours WHERE hour >= $4 AND hour < $5) AS c \
         GROUP BY tenant_id, environment_id, message_type, what ORDER BY 1, 2, 3, 4",
        direct_counts("{t} >= $3 AND {t} < $4"),
        direct_counts("{t} >= $5")
    )
}

/// The head of the series query: a `VALUES` list of (index, lo, a, z, hi)
/// follows, each interval `[lo, hi)` split as by [`Rolled::split`].
const SERIES_HEAD: &str = "WITH b (bucket, lo, a, z, hi) AS (";

/// The series query after the `VALUES` list, in pieces between its binds:
/// the duplicate action, the duplicate action, the signature action.
const SERIES_TAIL: [&str; 4] = [
    ") SELECT b.bucket AS bucket, CAST(\
     (SELECT COUNT(*) FROM messages m WHERE m.received_at >= b.lo AND m.received_at < b.a) \
     + (SELECT COUNT(*) FROM messages m WHERE m.received_at >= b.z AND m.received_at < b.hi) \
     + (SELECT COALESCE(SUM(h.count), 0) FROM activity_hours h \
        WHERE h.hour >= b.a AND h.hour < b.z AND h.what = 'accepted') AS BIGINT) AS accepted, CAST(\
     (SELECT COUNT(*) FROM audit_events e WHERE e.action = ",
    " AND e.occurred_at >= b.lo AND e.occurred_at < b.a) \
     + (SELECT COUNT(*) FROM audit_events e WHERE e.action = ",
    " AND e.occurred_at >= b.z AND e.occurred_at < b.hi) \
     + (SELECT COALESCE(SUM(h.count), 0) FROM activity_hours h \
        WHERE h.hour >= b.a AND h.hour < b.z AND h.what <> 'accepted' AND h.what <> ",
    ") AS BIGINT) AS duplicates FROM b ORDER BY b.bucket",
];

/// The overview's statements.
pub(crate) trait ConsoleSql: sqlx::Database {
    /// Counts since `since` (see [`crate::Store::activity`]), from the
    /// rollup where it holds the hours.
    fn activity(
        conn: &mut Self::Connection,
        rolled: Option<Rolled>,
        since: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<ActivityCount>>> + Send;
    /// One point per interval between consecutive `bounds`, from the rollup
    /// where it holds the hours.
    fn activity_series(
        conn: &mut Self::Connection,
        rolled: Option<Rolled>,
        bounds: &[DateTime<Utc>],
    ) -> impl Future<Output = Result<Vec<ActivityPoint>>> + Send;
}

impl<DB> ConsoleSql for DB
where
    DB: sqlx::Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> &'e str: Encode<'e, DB> + Type<DB>,
    for<'e> i64: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'r> ActivityCount: FromRow<'r, DB::Row>,
    for<'r> ActivityPoint: FromRow<'r, DB::Row>,
{
    async fn activity(
        conn: &mut DB::Connection,
        rolled: Option<Rolled>,
        since: DateTime<Utc>,
    ) -> Result<Vec<ActivityCount>> {
        let (a, z) = Rolled::split(rolled, since, None);
        let sql = activity_sql();
        Ok(sqlx::query_as(AssertSqlSafe(sql.as_str()))
            .bind(DUPLICATE_BLOCKED)
            .bind(SIGNATURE_REJECTED)
            .bind(since)
            .bind(a)
            .bind(z)
            .fetch_all(&mut *conn)
            .await?)
    }

    async fn activity_series(
        conn: &mut DB::Connection,
        rolled: Option<Rolled>,
        bounds: &[DateTime<Utc>],
    ) -> Result<Vec<ActivityPoint>> {
        if bounds.len() < 2 {
            return Ok(Vec::new());
        }
        let mut q = QueryBuilder::<DB>::new(SERIES_HEAD);
        q.push("VALUES ");
        let mut rows = q.separated(", ");
        for (i, pair) in bounds.windows(2).enumerate() {
            let (lo, hi) = (pair[0], pair[1]);
            let (a, z) = Rolled::split(rolled, lo, Some(hi));
            rows.push("(");
            rows.push_bind_unseparated(i64::try_from(i).unwrap_or(i64::MAX));
            for t in [lo, a, z, hi] {
                rows.push_unseparated(", ");
                rows.push_bind_unseparated(t);
            }
            rows.push_unseparated(")");
        }
        let [first, second, third, last] = SERIES_TAIL;
        q.push(first).push_bind(DUPLICATE_BLOCKED);
        q.push(second).push_bind(DUPLICATE_BLOCKED);
        q.push(third).push_bind(SIGNATURE_REJECTED);
        q.push(last);
        Ok(q.build_query_as().fetch_all(&mut *conn).await?)
    }
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
