//! PostgreSQL's delivery leases: the claims of due deliveries and of a
//! `fifo` line's head, and the depth of every destination's queue (see
//! [`crate::outbox`]).
//!
//! Replicas claim concurrently, so the claims lock what they lease: due
//! deliveries with `FOR UPDATE SKIP LOCKED` (a row another replica is
//! leasing is passed over), a line's head with a plain `FOR UPDATE` (a
//! concurrent claim waits, then finds it leased). Each claim selects in a
//! materialized CTE, evaluated once: as `x IN (SELECT … LIMIT n FOR
//! UPDATE)` the planner may rescan the subquery and lease more rows than
//! the limit. The update finds the locked rows by `message_id = ANY (…)`,
//! one index probe per partition: as a join (`UPDATE … FROM due`) the
//! generic plan guesses thousands of due rows and hashes every delivery of
//! every partition.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::partitions::first_id_at;
use crate::{ClaimedDelivery, DeliveryQueue, Result};

/// Leases up to `limit` of `destination`'s due deliveries until
/// `lease_until`, oldest due first.
pub(crate) async fn claim_deliveries(
    conn: &mut PgConnection,
    destination: &str,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<ClaimedDelivery>> {
    let claim = "WITH due AS MATERIALIZED (SELECT message_id FROM deliveries \
        WHERE destination_id = $1 AND status = 'pending' AND next_attempt_at <= $2 \
        AND (lease_until IS NULL OR lease_until <= $2) ORDER BY next_attempt_at LIMIT $4 \
        FOR UPDATE SKIP LOCKED) \
        UPDATE deliveries d SET lease_until = $3 \
        WHERE d.destination_id = $1 AND d.message_id = ANY (ARRAY (SELECT message_id FROM due)) \
        RETURNING d.message_id, d.destination_id, d.attempts, d.lease_until, d.created_at";
    Ok(sqlx::query_as(claim)
        .bind(destination)
        .bind(now)
        .bind(lease_until)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?)
}

/// As [`claim_deliveries`], among the deliveries of messages stored since
/// the start of `since`'s UTC day. The day's first message id is written
/// into the statement as a constant, so PostgreSQL prunes at planning and
/// its cached plan reads (and locks) only the partitions from that day on;
/// a bound passed as a parameter prunes only at execution, after a generic
/// plan has locked every partition and its indexes. The text, and so the
/// cached plan, changes once a day.
pub(crate) async fn claim_recent_deliveries(
    conn: &mut PgConnection,
    destination: &str,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<ClaimedDelivery>> {
    let day = since.date_naive().and_time(chrono::NaiveTime::MIN).and_utc();
    let since = first_id_at(day);
    let claim = format!(
        "WITH due AS MATERIALIZED (SELECT message_id FROM deliveries \
        WHERE destination_id = $1 AND status = 'pending' AND next_attempt_at <= $2 \
        AND (lease_until IS NULL OR lease_until <= $2) AND message_id >= '{since}'::uuid \
        ORDER BY next_attempt_at LIMIT $4 FOR UPDATE SKIP LOCKED) \
        UPDATE deliveries d SET lease_until = $3 \
        WHERE d.destination_id = $1 AND d.message_id >= '{since}'::uuid \
        AND d.message_id = ANY (ARRAY (SELECT message_id FROM due)) \
        RETURNING d.message_id, d.destination_id, d.attempts, d.lease_until, d.created_at"
    );
    Ok(sqlx::query_as(sqlx::AssertSqlSafe(claim))
        .bind(destination)
        .bind(now)
        .bind(lease_until)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?)
}

/// Leases the head of a `fifo` destination's line if it is pending, due
/// and not leased (see `outbox/queue.rs`).
pub(crate) async fn claim_line_head(
    conn: &mut PgConnection,
    destination: &str,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Option<ClaimedDelivery>> {
    let claim = "WITH head AS MATERIALIZED (SELECT message_id, destination_id FROM deliveries \
        WHERE destination_id = $1 AND status IN ('pending', 'failed') \
        ORDER BY created_at, message_id LIMIT 1 FOR UPDATE) \
        UPDATE deliveries d SET lease_until = $3 FROM head \
        WHERE d.message_id = head.message_id AND d.destination_id = head.destination_id \
        AND d.status = 'pending' AND d.next_attempt_at <= $2 \
        AND (d.lease_until IS NULL OR d.lease_until <= $2) \
        RETURNING d.message_id, d.destination_id, d.attempts, d.lease_until, d.created_at";
    Ok(sqlx::query_as(claim).bind(destination).bind(now).bind(lease_until).fetch_optional(&mut *conn).await?)
}

/// Every destination with pending deliveries, by id: how many, and when the
/// oldest was created. Served by `deliveries_due` (partial on `status =
/// 'pending'`), one pass over the pending rows.
pub(crate) async fn delivery_queues(conn: &mut PgConnection) -> Result<Vec<DeliveryQueue>> {
    let queues = "SELECT destination_id, COUNT(*) AS depth, MIN(created_at) AS oldest FROM deliveries \
        WHERE status = 'pending' GROUP BY destination_id ORDER BY destination_id";
    Ok(sqlx::query_as(queues).fetch_all(&mut *conn).await?)
}
