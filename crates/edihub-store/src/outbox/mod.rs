//! The transactional outbox: one `deliveries` row per (message,
//! destination), and the attempts made to deliver it.
//!
//! The rows are written by the statement that inserts the message, for
//! every enabled destination of the message's environment whose filter
//! admits its type: on SQLite by a row trigger on `messages` (migration
//! 0008), on PostgreSQL by the insert statement itself, a CTE over its
//! `RETURNING` (`ClaimSql::OUTBOX_TAIL`; migration 0013 says why not a
//! trigger). Every insert path (group insert, one transaction, packet
//! chunks) goes through that statement, so no committed message ever lacks
//! its pending deliveries, and a duplicate, which inserts no message row,
//! gets none.
//! Another trigger deletes a message's deliveries and attempts when
//! retention purges the message.
//!
//! Workers claim due rows with a lease ([`crate::Store::claim_deliveries`],
//! one statement per backend: `FOR UPDATE SKIP LOCKED` on PostgreSQL, a
//! plain `UPDATE` on SQLite, whose single writer already serialises it), run
//! the attempt outside any transaction, then record it and the verdict
//! together, many attempts in one transaction ([`crate::Store::finish_deliveries`],
//! `verdicts.rs`). A worker that dies leaves
//! its lease, which expires, and the row is claimed again. A destination
//! with `ordering = "fifo"` claims only the head of its line instead
//! (`queue.rs`, which also measures each destination's queue).

mod model;
mod queue;
mod verdicts;

pub use model::*;
pub use queue::DeliveryQueue;

use chrono::{DateTime, Utc};
use sqlx::{Encode, Executor, FromRow, IntoArguments, Type};
use uuid::Uuid;

use crate::audit::DELIVERY_REPLAYED;
use crate::ingest::statements::IngestSql;
use crate::queries::QuerySql;
use crate::{NewAuditEvent, Result};

const OF_MESSAGE: &str = "SELECT message_id, destination_id, status, attempts, next_attempt_at, \
    lease_until, last_status_code, last_error, created_at, updated_at FROM deliveries \
    WHERE message_id = $1 ORDER BY destination_id";
const ATTEMPTS_OF: &str = "SELECT attempted_at, status_code, latency_ms, error, response_prefix \
    FROM delivery_attempts WHERE message_id = $1 AND destination_id = $2 ORDER BY id";
/// Due again now; a lease in force is kept, so a running attempt is never
/// doubled (its verdict then decides, and a replay may need repeating).
const REDELIVER: &str = "UPDATE deliveries SET status = 'pending', next_attempt_at = $2, updated_at = $2 \
    WHERE message_id = $1 AND ($3 IS NULL OR destination_id = $3) RETURNING destination_id";

/// Due again now, by filter; a lease in force is kept (see `REDELIVER`).
const REPLAY: &str = "UPDATE deliveries SET status = 'pending', next_attempt_at = $1, updated_at = $1 \
    WHERE ($2 IS NULL OR destination_id = $2) AND ($3 IS NULL OR status = $3) \
    AND message_id IN (SELECT id FROM messages WHERE ($4 IS NULL OR message_type = $4) \
    AND ($5 IS NULL OR received_at >= $5) AND ($6 IS NULL OR received_at < $6))";

/// The outbox's statements (the lease claims differ per backend: each
/// backend's `outbox.rs`).
pub(crate) trait OutboxSql: IngestSql + QuerySql {
    /// Records attempts and their verdicts (see `verdicts.rs`); a delivery
    /// failed for good is audited. Returns what became of each.
    fn finish_deliveries(
        conn: &mut Self::Connection,
        done: &[FinishedAttempt],
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<Recorded>>> + Send;
    /// A message's deliveries with their attempts.
    fn deliveries_of(
        conn: &mut Self::Connection,
        message_id: Uuid,
    ) -> impl Future<Output = Result<Vec<DeliveryReport>>> + Send;
    /// Makes a message's deliveries (or its one to `destination`) due now,
    /// audited `delivery.replayed`; returns the destinations queued.
    fn redeliver(
        conn: &mut Self::Connection,
        message_id: Uuid,
        destination: Option<&str>,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<String>>> + Send;
    /// Makes the deliveries `filter` selects due now; audited as one
    /// `delivery.replayed` event with the filter and the count.
    fn replay_deliveries(
        conn: &mut Self::Connection,
        filter: &ReplayFilter,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64>> + Send;
}

impl<DB> OutboxSql for DB
where
    DB: IngestSql + QuerySql + sqlx::database::HasStatementCache,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> Option<String>: Encode<'e, DB> + Type<DB>,
    for<'e> &'e str: Encode<'e, DB> + Type<DB>,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'e> i64: Encode<'e, DB> + Type<DB>,
    for<'e> Option<i32>: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'e> Option<DateTime<Utc>>: Encode<'e, DB> + Type<DB>,
    for<'r> (String,): FromRow<'r, DB::Row>,
    for<'r> (Uuid, String, i32): FromRow<'r, DB::Row>,
    for<'r> DeliveryRow: FromRow<'r, DB::Row>,
    for<'r> AttemptRow: FromRow<'r, DB::Row>,
    for<'r> ClaimedDelivery: FromRow<'r, DB::Row>,
    DB::QueryResult: crate::retention::RowsAffected,
{
    async fn finish_deliveries(
        conn: &mut DB::Connection,
        done: &[FinishedAttempt],
        now: DateTime<Utc>,
    ) -> Result<Vec<Recorded>> {
        verdicts::record::<DB>(conn, done, now).await
    }

    async fn deliveries_of(conn: &mut DB::Connection, message_id: Uuid) -> Result<Vec<DeliveryReport>> {
        let rows: Vec<DeliveryRow> =
            sqlx::query_as(OF_MESSAGE).bind(message_id).fetch_all(&mut *conn).await?;
        let mut reports = Vec::with_capacity(rows.len());
        for delivery in rows {
            let attempt_log = sqlx::query_as(ATTEMPTS_OF)
                .bind(message_id)
                .bind(&delivery.destination_id)
                .fetch_all(&mut *conn)
                .await?;
            reports.push(DeliveryReport { delivery, attempt_log });
        }
        Ok(reports)
    }

    async fn redeliver(
        conn: &mut DB::Connection,
        message_id: Uuid,
        destination: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>> {
        let queued: Vec<(String,)> = sqlx::query_as(REDELIVER)
            .bind(message_id)
            .bind(now)
            .bind(destination.map(str::to_string))
            .fetch_all(&mut *conn)
            .await?;
        let queued: Vec<String> = queued.into_iter().map(|(d,)| d).collect();
        for destination in &queued {
            let details = serde_json::json!({ "destination": destination });
            audit_delivery::<DB>(conn, DELIVERY_REPLAYED, message_id, details, now).await?;
        }
        Ok(queued)
    }

    async fn replay_deliveries(
        conn: &mut DB::Connection,
        filter: &ReplayFilter,
        now: DateTime<Utc>,
    ) -> Result<u64> {
        use crate::retention::RowsAffected;
        let done = sqlx::query(REPLAY)
            .bind(now)
            .bind(filter.destination.clone())
            .bind(filter.status.clone())
            .bind(filter.message_type.clone())
            .bind(filter.since)
            .bind(filter.until)
            .execute(&mut *conn)
            .await?;
        let queued = done.rows();
        let event = NewAuditEvent {
            action: DELIVERY_REPLAYED.into(),
            message_type: filter.message_type.clone(),
            details: serde_json::json!({ "filter": filter, "queued": queued }),
            ..Default::default()
        };
        DB::insert_audits(conn, &[(now, event)]).await?;
        Ok(queued)
    }
}

/// Audits a delivery event under the message's tenant, environment and type.
async fn audit_delivery<DB: IngestSql + QuerySql>(
    conn: &mut DB::Connection,
    action: &str,
    message_id: Uuid,
    details: serde_json::Value,
    now: DateTime<Utc>,
) -> Result<()> {
    let message = DB::get_message(conn, message_id).await?;
    let event = NewAuditEvent {
        action: action.into(),
        tenant_id: message.as_ref().map(|m| m.tenant_id.clone()),
        environment_id: message.as_ref().map(|m| m.environment_id.clone()),
        message_type: message.as_ref().map(|m| m.message_type.clone()),
        message_id: Some(message_id),
        details,
        ..Default::default()
    };
    DB::insert_audits(conn, &[(now, event)]).await
}
