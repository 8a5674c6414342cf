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
use uuid::Uuid;

use super::messages;
use crate::outbox::verdicts::{self, VerdictSql};
use crate::outbox::{ReportedDelivery, redelivered, replay_event};

use crate::partitions::first_id_at;
use crate::{ClaimedDelivery, DeliveryQueue, DeliveryReport, FinishedAttempt, ReplayFilter, Result};

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

/// A message's deliveries with their attempts, by destination.
pub(crate) async fn deliveries_of(conn: &mut PgConnection, message_id: Uuid) -> Result<Vec<DeliveryReport>> {
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
    conn: &mut PgConnection,
    message_id: Uuid,
    destination: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Vec<String>> {
    let redeliver = "UPDATE deliveries SET status = 'pending', next_attempt_at = $2, updated_at = $2 \
        WHERE message_id = $1 AND ($3::text IS NULL OR destination_id = $3) RETURNING destination_id";
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
    conn: &mut PgConnection,
    filter: &ReplayFilter,
    now: DateTime<Utc>,
) -> Result<u64> {
    let replay = "UPDATE deliveries SET status = 'pending', next_attempt_at = $1, updated_at = $1 \
        WHERE ($2::text IS NULL OR destination_id = $2) AND ($3::text IS NULL OR status = $3) \
        AND message_id IN (SELECT id FROM messages WHERE ($4::text IS NULL OR message_type = $4) \
        AND ($5::timestamptz IS NULL OR received_at >= $5) AND ($6::timestamptz IS NULL OR received_at < $6))";
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
impl VerdictSql for PgConnection {
    /// Logs the attempts of `done`, one statement for the batch.
    async fn insert_attempts(&mut self, done: &[&FinishedAttempt]) -> Result<()> {
        let conn = self;
        let insert = "INSERT INTO delivery_attempts \
            (message_id, destination_id, attempted_at, status_code, latency_ms, error, response_prefix) \
            SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::int4[], $5::int8[], \
            $6::text[], $7::text[])";
        let column =
            |f: fn(&FinishedAttempt) -> Option<String>| done.iter().map(|d| f(d)).collect::<Vec<_>>();
        sqlx::query(insert)
            .bind(done.iter().map(|d| d.message_id).collect::<Vec<_>>())
            .bind(done.iter().map(|d| d.destination_id.clone()).collect::<Vec<_>>())
            .bind(done.iter().map(|d| d.attempt.attempted_at).collect::<Vec<_>>())
            .bind(done.iter().map(|d| d.attempt.status_code).collect::<Vec<_>>())
            .bind(done.iter().map(|d| d.attempt.latency_ms).collect::<Vec<_>>())
            .bind(column(|d| d.attempt.error.clone()))
            .bind(column(|d| d.attempt.response_prefix.clone()))
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// The update of a round's deliveries, clearing each lease with its
    /// verdict (a retry moves the due time) and keeping a first attempt
    /// that delivered in the row's `first_*` columns; returns (message,
    /// destination, attempts) of each one whose lease was still the
    /// attempt's. Not kept prepared: planned with the message ids known, it
    /// reads only their partitions. Sequential scans are off for the rest
    /// of the transaction: without column statistics (a new day's
    /// partition until autovacuum first analyzes it) the planner takes
    /// `message_id = ANY($1)` to match a third of the rows and would scan
    /// the whole partition for every batch; so the plan reads the primary
    /// key with statistics or without (docs/scale.md, "Partitioning").
    async fn finish(
        &mut self,
        round: &verdicts::Round<'_>,
        now: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, String, i32)>> {
        let conn = self;
        sqlx::raw_sql("SET LOCAL enable_seqscan = off").execute(&mut *conn).await?;
        let finish = "WITH v (message_id, destination_id, status, next_attempt_at, last_status_code, \
            last_error, lease_until, attempted_at, latency_ms, response_prefix) AS (SELECT * FROM \
            unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[], $5::int4[], $6::text[], \
            $7::timestamptz[], $9::timestamptz[], $10::int8[], $11::text[])) \
            UPDATE deliveries SET attempts = deliveries.attempts + 1, status = v.status, \
            next_attempt_at = COALESCE(v.next_attempt_at, deliveries.next_attempt_at), lease_until = NULL, \
            last_status_code = v.last_status_code, last_error = v.last_error, updated_at = $8, \
            first_attempted_at = CASE WHEN deliveries.attempts = 0 AND v.status = 'delivered' \
            THEN v.attempted_at ELSE deliveries.first_attempted_at END, \
            first_status_code = CASE WHEN deliveries.attempts = 0 AND v.status = 'delivered' \
            THEN v.last_status_code ELSE deliveries.first_status_code END, \
            first_latency_ms = CASE WHEN deliveries.attempts = 0 AND v.status = 'delivered' \
            THEN v.latency_ms ELSE deliveries.first_latency_ms END, \
            first_response_prefix = CASE WHEN deliveries.attempts = 0 AND v.status = 'delivered' \
            THEN v.response_prefix ELSE deliveries.first_response_prefix END \
            FROM v WHERE deliveries.message_id = v.message_id \
            AND deliveries.destination_id = v.destination_id AND deliveries.lease_until = v.lease_until \
            AND deliveries.message_id = ANY($1) \
            RETURNING deliveries.message_id, deliveries.destination_id, deliveries.attempts";
        let status: Vec<_> = round.iter().map(|(_, d)| verdicts::status_of(d.verdict)).collect();
        Ok(sqlx::query_as(finish)
            .bind(round.iter().map(|(_, d)| d.message_id).collect::<Vec<_>>())
            .bind(round.iter().map(|(_, d)| d.destination_id.clone()).collect::<Vec<_>>())
            .bind(status.iter().map(|(s, _)| *s).collect::<Vec<_>>())
            .bind(status.iter().map(|(_, next)| *next).collect::<Vec<_>>())
            .bind(round.iter().map(|(_, d)| d.attempt.status_code).collect::<Vec<_>>())
            .bind(round.iter().map(|(_, d)| d.attempt.error.clone()).collect::<Vec<_>>())
            .bind(round.iter().map(|(_, d)| d.lease_until).collect::<Vec<_>>())
            .bind(now)
            .bind(round.iter().map(|(_, d)| d.attempt.attempted_at).collect::<Vec<_>>())
            .bind(round.iter().map(|(_, d)| d.attempt.latency_ms).collect::<Vec<_>>())
            .bind(round.iter().map(|(_, d)| d.attempt.response_prefix.clone()).collect::<Vec<_>>())
            .persistent(false)
            .fetch_all(&mut *conn)
            .await?)
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
