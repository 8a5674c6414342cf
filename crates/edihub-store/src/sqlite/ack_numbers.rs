//! SQLite's acknowledgement control numbers (see [`crate::ack_numbers`]).

use sqlx::SqliteConnection;

use crate::{Result, Scope};

/// The next acknowledgement number of `partner` in `scope`: 1, 2, 3, ….
/// One upsert that returns the value it took: inserts 2 (and answers 1)
/// for a new partner, else moves `next_value` on by one and answers the
/// old value.
pub(crate) async fn next_ack_number(
    conn: &mut SqliteConnection,
    scope: &Scope,
    partner: &str,
) -> Result<i64> {
    let (value,): (i64,) = sqlx::query_as(
        "INSERT INTO ack_counters (tenant_id, environment_id, partner, next_value) VALUES ($1, $2, $3, 2) \
        ON CONFLICT (tenant_id, environment_id, partner) DO UPDATE SET next_value = ack_counters.next_value + 1 \
        RETURNING next_value - 1",
    )
    .bind(&scope.tenant_id)
    .bind(&scope.environment_id)
    .bind(partner)
    .fetch_one(&mut *conn)
    .await?;
    Ok(value)
}
