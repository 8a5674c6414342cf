//! Aggregates for the admin console's overview: what arrived, what was
//! accepted, what was blocked and how, per (tenant, environment, message
//! type), and the same over time for its chart. Written once for both
//! backends ([`ConsoleSql`]).
//!
//! Accepted messages are counted from `messages` (by `received_at`), blocked
//! duplicates and refused signatures from `audit_events` (by `occurred_at`),
//! so every count uses an index on time and none reads a payload.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};

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

/// Counts since `$1`; `$2` is the duplicate action, `$3` the signature one.
const ACTIVITY: &str = "SELECT tenant_id, environment_id, message_type, 'accepted' AS what, \
    COUNT(*) AS count FROM messages WHERE received_at >= $1 \
    GROUP BY tenant_id, environment_id, message_type \
    UNION ALL SELECT COALESCE(tenant_id, ''), COALESCE(environment_id, ''), COALESCE(message_type, ''), \
    COALESCE(detected_by, ''), COUNT(*) FROM audit_events WHERE action = $2 AND occurred_at >= $1 \
    GROUP BY tenant_id, environment_id, message_type, detected_by \
    UNION ALL SELECT COALESCE(tenant_id, ''), COALESCE(environment_id, ''), '', $3, \
    CAST(SUM(CAST(details->>'count' AS BIGINT)) AS BIGINT) FROM audit_events \
    WHERE action = $3 AND occurred_at >= $1 GROUP BY tenant_id, environment_id \
    ORDER BY 1, 2, 3, 4";

/// The head of the series query: a `VALUES` list of (index, from, to) follows.
const SERIES_HEAD: &str = "WITH b (bucket, lo, hi) AS (";

/// The tail of the series query; the duplicate action is bound after it.
const SERIES_TAIL: &str = ") SELECT b.bucket AS bucket, \
    (SELECT COUNT(*) FROM messages m WHERE m.received_at >= b.lo AND m.received_at < b.hi) AS accepted, \
    (SELECT COUNT(*) FROM audit_events a WHERE a.action = ";

/// Closes [`SERIES_TAIL`].
const SERIES_END: &str = " AND a.occurred_at >= b.lo AND a.occurred_at < b.hi) AS duplicates \
    FROM b ORDER BY b.bucket";

/// The overview's statements.
pub(crate) trait ConsoleSql: sqlx::Database {
    /// Counts since `since` (see [`crate::Store::activity`]).
    fn activity(
        conn: &mut Self::Connection,
        since: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<ActivityCount>>> + Send;
    /// One point per interval between consecutive `bounds`.
    fn activity_series(
        conn: &mut Self::Connection,
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
    async fn activity(conn: &mut DB::Connection, since: DateTime<Utc>) -> Result<Vec<ActivityCount>> {
        Ok(sqlx::query_as(ACTIVITY)
            .bind(since)
            .bind(DUPLICATE_BLOCKED)
            .bind(SIGNATURE_REJECTED)
            .fetch_all(&mut *conn)
            .await?)
    }

    async fn activity_series(
        conn: &mut DB::Connection,
        bounds: &[DateTime<Utc>],
    ) -> Result<Vec<ActivityPoint>> {
        if bounds.len() < 2 {
            return Ok(Vec::new());
        }
        let mut q = QueryBuilder::<DB>::new(SERIES_HEAD);
        q.push("VALUES ");
        let mut rows = q.separated(", ");
        for (i, pair) in bounds.windows(2).enumerate() {
            rows.push("(");
            rows.push_bind_unseparated(i64::try_from(i).unwrap_or(i64::MAX));
            rows.push_unseparated(", ");
            rows.push_bind_unseparated(pair[0]);
            rows.push_unseparated(", ");
            rows.push_bind_unseparated(pair[1]);
            rows.push_unseparated(")");
        }
        q.push(SERIES_TAIL);
        q.push_bind(DUPLICATE_BLOCKED);
        q.push(SERIES_END);
        Ok(q.build_query_as().fetch_all(&mut *conn).await?)
    }
}

/// `count` intervals of `step` ending at `end`: the `count + 1` bounds a
/// series is asked for, oldest first.
pub fn series_bounds(end: DateTime<Utc>, step: chrono::Duration, count: i32) -> Vec<DateTime<Utc>> {
    (0..=count).rev().map(|i| end - step * i).collect()
}
