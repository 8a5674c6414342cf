//! SQLite's delivery leases: the claims of due deliveries and of a `fifo`
//! line's head, and the depth of every destination's queue (see
//! [`crate::outbox`]). SQLite's one writer runs the claims
//! one at a time, so a plain `UPDATE` of the selected rows leases each
//! delivery once.

use chrono::{DateTime, Utc};
use sqlx::SqliteConnection;

use crate::partitions::first_id_at;
use crate::{ClaimedDelivery, DeliveryQueue, Result};

/// Leases up to `limit` of `destination`'s due deliveries until
/// `lease_until`, oldest due first.
pub(crate) async fn claim_deliveries(
    conn: &mut SqliteConnection,
    destination: &str,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<ClaimedDelivery>> {
    let claim = "UPDATE deliveries SET lease_until = $3 \
        WHERE (message_id, destination_id) IN (SELECT message_id, destination_id FROM deliveries \
        WHERE destination_id = $1 AND status = 'pending' AND next_attempt_at <= $2 \
        AND (lease_until IS NULL OR lease_until <= $2) ORDER BY next_attempt_at LIMIT $4) \
        RETURNING message_id, destination_id, attempts, lease_until, created_at";
    Ok(sqlx::query_as(claim)
        .bind(destination)
        .bind(now)
        .bind(lease_until)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?)
}

/// As [`claim_deliveries`], among the deliveries of messages stored since
/// the start of `since`'s UTC day: message ids (16 bytes, in time order)
/// from the day's first on.
pub(crate) async fn claim_recent_deliveries(
    conn: &mut SqliteConnection,
    destination: &str,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<ClaimedDelivery>> {
    let day = since.date_naive().and_time(chrono::NaiveTime::MIN).and_utc();
    let claim = "UPDATE deliveries SET lease_until = $3 \
        WHERE (message_id, destination_id) IN (SELECT message_id, destination_id FROM deliveries \
        WHERE destination_id = $1 AND status = 'pending' AND next_attempt_at <= $2 \
        AND (lease_until IS NULL OR lease_until <= $2) AND message_id >= $5 \
        ORDER BY next_attempt_at LIMIT $4) \
        RETURNING message_id, destination_id, attempts, lease_until, created_at";
    Ok(sqlx::query_as(claim)
        .bind(destination)
        .bind(now)
        .bind(lease_until)
        .bind(limit)
        .bind(first_id_at(day))
        .fetch_all(&mut *conn)
        .await?)
}

/// Leases the head of a `fifo` destination's line if it is pending, due
/// and not leased (see `outbox/queue.rs`).
pub(crate) async fn claim_line_head(
    conn: &mut SqliteConnection,
    destination: &str,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Option<ClaimedDelivery>> {
    let claim = "UPDATE deliveries SET lease_until = $3 \
        WHERE (message_id, destination_id) IN (SELECT message_id, destination_id FROM deliveries \
        WHERE destination_id = $1 AND status IN ('pending', 'failed') \
        ORDER BY created_at, message_id LIMIT 1) \
        AND status = 'pending' AND next_attempt_at <= $2 \
        AND (lease_until IS NULL OR lease_until <= $2) \
        RETURNING message_id, destination_id, attempts, lease_until, created_at";
    Ok(sqlx::query_as(claim).bind(destination).bind(now).bind(lease_until).fetch_optional(&mut *conn).await?)
}

/// Every destination with pending deliveries, by id: how many, and when the
/// oldest was created. Served by `deliveries_due` (partial on `status =
/// 'pending'`), one pass over the pending rows.
pub(crate) async fn delivery_queues(conn: &mut SqliteConnection) -> Result<Vec<DeliveryQueue>> {
    let queues = "SELECT destination_id, COUNT(*) AS depth, MIN(created_at) AS oldest FROM deliveries \
        WHERE status = 'pending' GROUP BY destination_id ORDER BY destination_id";
    Ok(sqlx::query_as(queues).fetch_all(&mut *conn).await?)
}
