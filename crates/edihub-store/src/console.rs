//! Aggregates for the admin console's overview: what arrived, what was
//! accepted, what was blocked and how, per (tenant, environment, message
//! type), and the same over time for its chart. Written once for both
//! backends (expanded inside `impl_sql_store!`, like [`crate::admin_sql`]).
//!
//! Accepted messages are counted from `messages` (by `received_at`), blocked
//! duplicates and refused signatures from `audit_events` (by `occurred_at`),
//! so every count uses an index on time and none reads a payload.

use chrono::{DateTime, Utc};
use serde::Serialize;

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
pub(crate) const ACTIVITY: &str = "SELECT tenant_id, environment_id, message_type, 'accepted' AS what, \
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
pub(crate) const SERIES_HEAD: &str = "WITH b (bucket, lo, hi) AS (";

/// The tail of the series query; the duplicate action is bound after it.
pub(crate) const SERIES_TAIL: &str = ") SELECT b.bucket AS bucket, \
    (SELECT COUNT(*) FROM messages m WHERE m.received_at >= b.lo AND m.received_at < b.hi) AS accepted, \
    (SELECT COUNT(*) FROM audit_events a WHERE a.action = ";

/// Closes [`SERIES_TAIL`].
pub(crate) const SERIES_END: &str = " AND a.occurred_at >= b.lo AND a.occurred_at < b.hi) AS duplicates \
    FROM b ORDER BY b.bucket";

/// Expands to the inherent `db_activity*` methods of `$ty` (pool of `$db`).
macro_rules! console_methods {
    ($ty:ty, $db:ty) => {
        impl $ty {
            pub(crate) async fn db_activity(
                &self,
                since: chrono::DateTime<chrono::Utc>,
            ) -> $crate::Result<Vec<$crate::ActivityCount>> {
                Ok(sqlx::query_as($crate::console::ACTIVITY)
                    .bind(since)
                    .bind($crate::DUPLICATE_BLOCKED)
                    .bind($crate::console::SIGNATURE_REJECTED)
                    .fetch_all(&self.pool)
                    .await?)
            }

            pub(crate) async fn db_activity_series(
                &self,
                bounds: &[chrono::DateTime<chrono::Utc>],
            ) -> $crate::Result<Vec<$crate::ActivityPoint>> {
                if bounds.len() < 2 {
                    return Ok(Vec::new());
                }
                let mut q = sqlx::QueryBuilder::<$db>::new($crate::console::SERIES_HEAD);
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
                q.push($crate::console::SERIES_TAIL);
                q.push_bind($crate::DUPLICATE_BLOCKED);
                q.push($crate::console::SERIES_END);
                Ok(q.build_query_as().fetch_all(&self.pool).await?)
            }
        }
    };
}

pub(crate) use console_methods;

/// `count` intervals of `step` ending at `end`: the `count + 1` bounds a
/// series is asked for, oldest first.
pub fn series_bounds(end: DateTime<Utc>, step: chrono::Duration, count: i32) -> Vec<DateTime<Utc>> {
    (0..=count).rev().map(|i| end - step * i).collect()
}
