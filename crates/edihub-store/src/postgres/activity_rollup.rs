//! PostgreSQL's hourly rollup of the overview's counts (see
//! [`crate::activity_rollup`]).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::activity_rollup::{Rolled, RollupSql, StateRow, rolled};
use crate::{DUPLICATE_BLOCKED, INTERCHANGE_DUPLICATE_BLOCKED, Result, SIGNATURE_REJECTED};

/// Adds the counts of the hour `[$3, $4)` per (tenant, environment,
/// message type, what): messages accepted, duplicates blocked (actions
/// `$1` and `$5`: a message, an interchange) per detector, signatures refused (action `$2`, each event
/// carrying a `count`).
const ROLL_UP_HOUR: &str = "INSERT INTO activity_hours (hour, tenant_id, environment_id, message_type, what, count) \
    SELECT $3, tenant_id, environment_id, message_type, what, count FROM (\
    SELECT tenant_id, environment_id, message_type, 'accepted' AS what, COUNT(*) AS count FROM messages \
        WHERE received_at >= $3 AND received_at < $4 GROUP BY tenant_id, environment_id, message_type \
    UNION ALL SELECT COALESCE(tenant_id, ''), COALESCE(environment_id, ''), COALESCE(message_type, ''), \
        COALESCE(detected_by, ''), COUNT(*) FROM audit_events \
        WHERE action IN ($1, $5) AND occurred_at >= $3 AND occurred_at < $4 \
        GROUP BY tenant_id, environment_id, message_type, detected_by \
    UNION ALL SELECT COALESCE(tenant_id, ''), COALESCE(environment_id, ''), '', $2, \
        CAST(COALESCE(SUM(CAST(details->>'count' AS BIGINT)), 0) AS BIGINT) FROM audit_events \
        WHERE action = $2 AND occurred_at >= $3 AND occurred_at < $4 GROUP BY tenant_id, environment_id\
    ) AS c WHERE true ON CONFLICT DO NOTHING";

/// The hours the rollup holds (`None`: none yet).
pub(crate) async fn rollup_state(conn: &mut PgConnection) -> Result<Option<Rolled>> {
    let state = "SELECT rolled_from, rolled_until FROM activity_rollup WHERE id = 1";
    let row: StateRow = sqlx::query_as(state).fetch_one(&mut *conn).await?;
    Ok(rolled(row))
}

/// A roll-up's statements (see [`crate::activity_rollup::roll_up`]).
impl RollupSql for PgConnection {
    /// The `UPDATE` takes the state row's lock, so a concurrent roll-up
    /// waits and then sees the range this one left.
    async fn lock_state(&mut self) -> Result<Option<Rolled>> {
        let lock = "UPDATE activity_rollup SET id = id WHERE id = 1 RETURNING rolled_from, rolled_until";
        Ok(rolled(sqlx::query_as(lock).fetch_one(&mut *self).await?))
    }

    async fn trim(&mut self, from: DateTime<Utc>) -> Result<()> {
        sqlx::query("DELETE FROM activity_hours WHERE hour < $1").bind(from).execute(&mut *self).await?;
        Ok(())
    }

    async fn add_hour(&mut self, hour: DateTime<Utc>, next: DateTime<Utc>) -> Result<()> {
        sqlx::query(ROLL_UP_HOUR)
            .bind(DUPLICATE_BLOCKED)
            .bind(SIGNATURE_REJECTED)
            .bind(hour)
            .bind(next)
            .bind(INTERCHANGE_DUPLICATE_BLOCKED)
            .execute(&mut *self)
            .await?;
        Ok(())
    }

    async fn set_state(&mut self, from: DateTime<Utc>, until: DateTime<Utc>) -> Result<()> {
        let set = "UPDATE activity_rollup SET rolled_from = $1, rolled_until = $2 WHERE id = 1";
        sqlx::query(set).bind(from).bind(until).execute(&mut *self).await?;
        Ok(())
    }
}
