//! SQLite's counts for the console's overview (see [`crate::console`]).

use chrono::{DateTime, Utc};
use sqlx::SqliteConnection;

use crate::activity_rollup::Rolled;
use crate::console::series_intervals;
use crate::{
    ActivityCount, ActivityPoint, DUPLICATE_BLOCKED, INTERCHANGE_DUPLICATE_BLOCKED, Result,
    SIGNATURE_REJECTED,
};

/// Counts since `$3` per (tenant, environment, message type, what):
/// directly in `[$3, $4)` and from `$5` on, from the rollup in `[$4, $5)`
/// (see [`Rolled::split`]). Messages accepted, duplicates blocked (actions
/// `$1` and `$6`: a message, an interchange) per detector, signatures refused (action `$2`, each event
/// carrying a `count`).
const ACTIVITY: &str = "SELECT tenant_id, environment_id, message_type, what, CAST(SUM(count) AS BIGINT) AS count FROM (\
    SELECT tenant_id, environment_id, message_type, 'accepted' AS what, COUNT(*) AS count FROM messages \
        WHERE received_at >= $3 AND received_at < $4 GROUP BY tenant_id, environment_id, message_type \
    UNION ALL SELECT COALESCE(tenant_id, ''), COALESCE(environment_id, ''), COALESCE(message_type, ''), \
        COALESCE(detected_by, ''), COUNT(*) FROM audit_events \
        WHERE action IN ($1, $6) AND occurred_at >= $3 AND occurred_at < $4 \
        GROUP BY tenant_id, environment_id, message_type, detected_by \
    UNION ALL SELECT COALESCE(tenant_id, ''), COALESCE(environment_id, ''), '', $2, \
        CAST(COALESCE(SUM(CAST(details->>'count' AS BIGINT)), 0) AS BIGINT) FROM audit_events \
        WHERE action = $2 AND occurred_at >= $3 AND occurred_at < $4 GROUP BY tenant_id, environment_id \
    UNION ALL SELECT tenant_id, environment_id, message_type, 'accepted', COUNT(*) FROM messages \
        WHERE received_at >= $5 GROUP BY tenant_id, environment_id, message_type \
    UNION ALL SELECT COALESCE(tenant_id, ''), COALESCE(environment_id, ''), COALESCE(message_type, ''), \
        COALESCE(detected_by, ''), COUNT(*) FROM audit_events WHERE action IN ($1, $6) AND occurred_at >= $5 \
        GROUP BY tenant_id, environment_id, message_type, detected_by \
    UNION ALL SELECT COALESCE(tenant_id, ''), COALESCE(environment_id, ''), '', $2, \
        CAST(COALESCE(SUM(CAST(details->>'count' AS BIGINT)), 0) AS BIGINT) FROM audit_events \
        WHERE action = $2 AND occurred_at >= $5 GROUP BY tenant_id, environment_id \
    UNION ALL SELECT tenant_id, environment_id, message_type, what, count FROM activity_hours \
        WHERE hour >= $4 AND hour < $5) AS c \
    GROUP BY tenant_id, environment_id, message_type, what ORDER BY 1, 2, 3, 4";

/// Counts since `since` (see [`crate::Store::activity`]), from the rollup
/// `rolled` where it holds the hours.
pub(crate) async fn activity(
    conn: &mut SqliteConnection,
    rolled: Option<Rolled>,
    since: DateTime<Utc>,
) -> Result<Vec<ActivityCount>> {
    let (a, z) = Rolled::split(rolled, since, None);
    Ok(sqlx::query_as(ACTIVITY)
        .bind(DUPLICATE_BLOCKED)
        .bind(SIGNATURE_REJECTED)
        .bind(since)
        .bind(a)
        .bind(z)
        .bind(INTERCHANGE_DUPLICATE_BLOCKED)
        .fetch_all(&mut *conn)
        .await?)
}

/// Messages accepted and duplicates blocked (actions `$1` and `$8`; the rollup's
/// other rows but signatures, action `$2`) in the interval `$3` (bucket,
/// then lo, a, z, hi as `$4` to `$7`: see [`crate::console::Interval`]).
const SERIES_POINT: &str = "SELECT $3 AS bucket, CAST(\
    (SELECT COUNT(*) FROM messages m WHERE m.received_at >= $4 AND m.received_at < $5) \
    + (SELECT COUNT(*) FROM messages m WHERE m.received_at >= $6 AND m.received_at < $7) \
    + (SELECT COALESCE(SUM(h.count), 0) FROM activity_hours h \
        WHERE h.hour >= $5 AND h.hour < $6 AND h.what = 'accepted') AS BIGINT) AS accepted, CAST(\
    (SELECT COUNT(*) FROM audit_events e WHERE e.action IN ($1, $8) AND e.occurred_at >= $4 AND e.occurred_at < $5) \
    + (SELECT COUNT(*) FROM audit_events e WHERE e.action IN ($1, $8) AND e.occurred_at >= $6 AND e.occurred_at < $7) \
    + (SELECT COALESCE(SUM(h.count), 0) FROM activity_hours h \
        WHERE h.hour >= $5 AND h.hour < $6 AND h.what <> 'accepted' AND h.what <> $2) AS BIGINT) AS duplicates";

/// One point per interval between consecutive `bounds`, from the rollup
/// `rolled` where it holds the hours: a statement per interval, which
/// costs no round trip in process.
pub(crate) async fn activity_series(
    conn: &mut SqliteConnection,
    rolled: Option<Rolled>,
    bounds: &[DateTime<Utc>],
) -> Result<Vec<ActivityPoint>> {
    let mut points = Vec::with_capacity(bounds.len());
    for i in series_intervals(rolled, bounds) {
        points.push(
            sqlx::query_as(SERIES_POINT)
                .bind(DUPLICATE_BLOCKED)
                .bind(SIGNATURE_REJECTED)
                .bind(i.bucket)
                .bind(i.lo)
                .bind(i.a)
                .bind(i.z)
                .bind(i.hi)
                .bind(INTERCHANGE_DUPLICATE_BLOCKED)
                .fetch_one(&mut *conn)
                .await?,
        );
    }
    Ok(points)
}
