//! SQLite's delivery leases: the claims of due deliveries and of a `fifo`
//! line's head, and the depth of every destination's queue (see
//! [`crate::outbox`]). SQLite's one writer runs the claims
//! one at a time, so a plain `UPDATE` of the selected rows leases each
//! delivery once.

use chrono::{DateTime, Utc};
use sqlx::SqliteConnection;
use uuid::Uuid;

use super::messages;
use crate::outbox::verdicts::{self, VerdictSql};
use crate::outbox::{ReportedDelivery, redelivered, replay_event};

use crate::partitions::first_id_at;
use crate::{ClaimedDelivery, DeliveryQueue, DeliveryReport, FinishedAttempt, ReplayFilter, Result};

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

/// A message's deliveries with their attempts, by destination.
pub(crate) async fn deliveries_of(
    conn: &mut SqliteConnection,
    message_id: Uuid,
) -> Result<Vec<DeliveryReport>> {
    let of_message = format!(
        "SELECT {} FROM deliveries WHERE message_id = $1 ORDER BY destination_id",
        ReportedDelivery::COLUMNS
    );
    let attempts_of = "SELECT attempted_at, status_code, latency_ms, error, response_prefix \
        FROM delivery_attempts WHERE message_id = $1 AND destination_id = $2 ORDER BY id";
    let rows: Vec<ReportedDelivery> =
        sqlx::query_as(sqlx::AssertSqlSafe(of_message)).bind(message_id).fetch_all(&mut *conn).await?;
    let mut reports = Vec::with_capacity(rows.len());
    for delivery in rows {
        let logged = sqlx::query_as(attempts_of)
            .bind(message_id)
            .bind(delivery.destination_id())
            .fetch_all(&mut *conn)
            .await?;
        reports.push(delivery.report(logged));
    }
    Ok(reports)
}

/// Makes a message's deliveries (or its one to `destination`) due at
/// `now`, each audited `delivery.replayed`; returns the destinations
/// queued. A lease in force is kept, so a running attempt is never doubled
/// (its verdict then decides, and a replay may need repeating).
pub(crate) async fn redeliver(
    conn: &mut SqliteConnection,
    message_id: Uuid,
    destination: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Vec<String>> {
    let redeliver = "UPDATE deliveries SET status = 'pending', next_attempt_at = $2, updated_at = $2 \
        WHERE message_id = $1 AND ($3 IS NULL OR destination_id = $3) RETURNING destination_id";
    let queued: Vec<(String,)> =
        sqlx::query_as(redeliver).bind(message_id).bind(now).bind(destination).fetch_all(&mut *conn).await?;
    let queued: Vec<String> = queued.into_iter().map(|(d,)| d).collect();
    if queued.is_empty() {
        return Ok(queued);
    }
    let message = messages::get_message(conn, message_id).await?;
    let events: Vec<_> = queued.iter().map(|d| (now, redelivered(message_id, message.as_ref(), d))).collect();
    super::audit::insert_audits(conn, &events).await?;
    Ok(queued)
}

/// Makes the deliveries `filter` selects due at `now` (a lease in force
/// is kept, as by [`redeliver`]); audited as one `delivery.replayed` event
/// with the filter and the count.
pub(crate) async fn replay_deliveries(
    conn: &mut SqliteConnection,
    filter: &ReplayFilter,
    now: DateTime<Utc>,
) -> Result<u64> {
    let replay = "UPDATE deliveries SET status = 'pending', next_attempt_at = $1, updated_at = $1 \
        WHERE ($2 IS NULL OR destination_id = $2) AND ($3 IS NULL OR status = $3) \
        AND message_id IN (SELECT id FROM messages WHERE ($4 IS NULL OR message_type = $4) \
        AND ($5 IS NULL OR received_at >= $5) AND ($6 IS NULL OR received_at < $6))";
    let queued = sqlx::query(replay)
        .bind(now)
        .bind(&filter.destination)
        .bind(&filter.status)
        .bind(&filter.message_type)
        .bind(filter.since)
        .bind(filter.until)
        .execute(&mut *conn)
        .await?
        .rows_affected();
    super::audit::insert_audits(conn, &[(now, replay_event(filter, queued))]).await?;
    Ok(queued)
}

/// A batch of verdicts (see [`crate::outbox::verdicts`]), in the caller's
/// transaction.
impl VerdictSql for SqliteConnection {
    /// Logs the attempts of `done`, a statement each (SQLite runs them in
    /// process, inside the caller's transaction).
    async fn insert_attempts(&mut self, done: &[&FinishedAttempt]) -> Result<()> {
        let conn = self;
        let insert = "INSERT INTO delivery_attempts \
            (message_id, destination_id, attempted_at, status_code, latency_ms, error, response_prefix) \
            VALUES ($1, $2, $3, $4, $5, $6, $7)";
        for d in done {
            let a = &d.attempt;
            sqlx::query(insert)
                .bind(d.message_id)
                .bind(&d.destination_id)
                .bind(a.attempted_at)
                .bind(a.status_code)
                .bind(a.latency_ms)
                .bind(&a.error)
                .bind(&a.response_prefix)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    /// The update of a round's deliveries, a statement each, clearing each
    /// lease with its verdict (a retry moves the due time) and keeping a
    /// first attempt that delivered in the row's `first_*` columns; returns (message,
    /// destination, attempts) of each one whose lease was still the attempt's.
    async fn finish(
        &mut self,
        round: &verdicts::Round<'_>,
        now: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, String, i32)>> {
        let conn = self;
        let finish = "UPDATE deliveries SET attempts = attempts + 1, status = $3, \
            next_attempt_at = COALESCE($4, next_attempt_at), lease_until = NULL, \
            last_status_code = $5, last_error = $6, updated_at = $8, \
            first_attempted_at = CASE WHEN attempts = 0 AND $3 = 'delivered' THEN $9 ELSE first_attempted_at END, \
            first_status_code = CASE WHEN attempts = 0 AND $3 = 'delivered' THEN $5 ELSE first_status_code END, \
            first_latency_ms = CASE WHEN attempts = 0 AND $3 = 'delivered' THEN $10 ELSE first_latency_ms END, \
            first_response_prefix = CASE WHEN attempts = 0 AND $3 = 'delivered' THEN $11 \
            ELSE first_response_prefix END \
            WHERE message_id = $1 AND destination_id = $2 AND lease_until = $7 \
            RETURNING message_id, destination_id, attempts";
        let mut finished = Vec::with_capacity(round.len());
        for (_, d) in round {
            let (status, next) = verdicts::status_of(d.verdict);
            let applied: Option<(Uuid, String, i32)> = sqlx::query_as(finish)
                .bind(d.message_id)
                .bind(&d.destination_id)
                .bind(status)
                .bind(next)
                .bind(d.attempt.status_code)
                .bind(&d.attempt.error)
                .bind(d.lease_until)
                .bind(now)
                .bind(d.attempt.attempted_at)
                .bind(d.attempt.latency_ms)
                .bind(&d.attempt.response_prefix)
                .fetch_optional(&mut *conn)
                .await?;
            finished.extend(applied);
        }
        Ok(finished)
    }

    async fn audit_failed(
        &mut self,
        message_id: Uuid,
        details: serde_json::Value,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let message = messages::get_message(self, message_id).await?;
        let event = verdicts::failed_event(message_id, message.as_ref(), details);
        super::audit::insert_audits(self, &[(now, event)]).await
    }
}
