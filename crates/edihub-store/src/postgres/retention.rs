//! PostgreSQL's retention statements (see [`crate::retention`]): each deletes
//! (or releases) one batch and returns how many rows it changed.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

use crate::retention::push_event_id_selection;
use crate::{KeyPurge, Result, RetentionStep};

/// One batch of `step` (see [`crate::Store::retention_step`]). Each
/// statement is planned with its values known: a run comes once an
/// interval, and a generic plan's guess for `received_at < $1` would read
/// whole partitions.
pub(crate) async fn retention_step(
    conn: &mut PgConnection,
    step: RetentionStep,
    cutoff: DateTime<Utc>,
    now: DateTime<Utc>,
    batch: i64,
) -> Result<u64> {
    match step {
        RetentionStep::ReleaseFingerprints => release_fingerprints(conn, now, batch).await,
        RetentionStep::PurgeMessages => purge_messages(conn, cutoff, now, batch).await,
        RetentionStep::PurgeKeys => purge_all_keys(conn, cutoff, batch).await,
        RetentionStep::PurgeAudit => purge_audit(conn, cutoff, batch).await,
        RetentionStep::PurgeAs2Messages => super::as2::purge(conn, cutoff, batch).await,
        RetentionStep::PurgeSapStatus => super::sap_status::purge(conn, cutoff, batch).await,
    }
}

/// Releases up to `batch` claims whose window ended by `now`: deletes
/// their `message_claims` rows, oldest first, so the `expires_at` index is
/// read even while a young claims table has no statistics (PostgreSQL's
/// default guess for it reads the whole table).
async fn release_fingerprints(conn: &mut PgConnection, now: DateTime<Utc>, batch: i64) -> Result<u64> {
    let release = "DELETE FROM message_claims WHERE (tenant_id, environment_id, fingerprint) IN \
        (SELECT tenant_id, environment_id, fingerprint FROM message_claims WHERE expires_at <= $1 \
        ORDER BY expires_at LIMIT $2)";
    let done = sqlx::query(release).bind(now).bind(batch).persistent(false).execute(&mut *conn).await?;
    Ok(done.rows_affected())
}

/// Deletes up to `batch` messages received before `cutoff`, never one
/// whose claim still blocks at `now` nor one whose body a packet sibling
/// still points to; returns how many it deleted.
///
/// `messages` is partitioned by its id's time, and a `DELETE … WHERE id IN
/// (SELECT … LIMIT n)` would be planned (and its executor started) over
/// every partition of the retention period each time, although a run
/// usually finds nothing left once the expired partitions are dropped. So
/// this first selects the batch's ids (one read of each partition's
/// `received_at` index), oldest first so that index is read whatever the
/// statistics say; when there are none, that is all; otherwise it deletes
/// exactly those ids, a statement PostgreSQL prunes to the partitions that
/// hold them. The delete checks the conditions again, so a row that
/// changed between the two statements is left for the next run; the
/// delete trigger takes an expired claim left on a purged message. `OFFSET
/// 0` keeps each `NOT EXISTS` a probe per candidate instead of a join that
/// reads its whole table. Both are unnamed statements, planned with their
/// values known.
async fn purge_messages(
    conn: &mut PgConnection,
    cutoff: DateTime<Utc>,
    now: DateTime<Utc>,
    batch: i64,
) -> Result<u64> {
    let candidates = "SELECT m.id FROM messages m WHERE m.received_at < $1 \
        AND NOT EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = m.id AND c.expires_at > $2 OFFSET 0) \
        AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.payload_message_id = m.id OFFSET 0) \
        ORDER BY m.received_at LIMIT $3";
    let ids: Vec<Uuid> = sqlx::query_scalar(candidates)
        .bind(cutoff)
        .bind(now)
        .bind(batch)
        .persistent(false)
        .fetch_all(&mut *conn)
        .await?;
    if ids.is_empty() {
        return Ok(0);
    }
    let delete = "DELETE FROM messages m WHERE m.id = ANY($1) AND m.received_at < $2 \
        AND NOT EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = m.id AND c.expires_at > $3 OFFSET 0) \
        AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.payload_message_id = m.id OFFSET 0)";
    let done =
        sqlx::query(delete).bind(&ids).bind(cutoff).bind(now).persistent(false).execute(&mut *conn).await?;
    Ok(done.rows_affected())
}

/// Deletes up to `batch` request keys created before `cutoff`.
async fn purge_all_keys(conn: &mut PgConnection, cutoff: DateTime<Utc>, batch: i64) -> Result<u64> {
    let purge = "DELETE FROM idempotency_keys WHERE (tenant_id, environment_id, kind, key) IN \
        (SELECT tenant_id, environment_id, kind, key FROM idempotency_keys WHERE created_at < $1 LIMIT $2)";
    let done = sqlx::query(purge).bind(cutoff).bind(batch).persistent(false).execute(&mut *conn).await?;
    Ok(done.rows_affected())
}

/// Deletes up to `batch` audit events that occurred before `cutoff`. The
/// outer `occurred_at < $1` repeats the inner one so that PostgreSQL plans
/// the delete over the audit partitions before the cutoff only.
async fn purge_audit(conn: &mut PgConnection, cutoff: DateTime<Utc>, batch: i64) -> Result<u64> {
    let purge = "DELETE FROM audit_events WHERE occurred_at < $1 AND id IN \
        (SELECT id FROM audit_events WHERE occurred_at < $1 LIMIT $2)";
    let done = sqlx::query(purge).bind(cutoff).bind(batch).persistent(false).execute(&mut *conn).await?;
    Ok(done.rows_affected())
}

/// One batch of the request keys `which` names (see
/// [`crate::Store::purge_keys`]).
pub(crate) async fn purge_keys(
    conn: &mut PgConnection,
    which: KeyPurge<'_>,
    cutoff: DateTime<Utc>,
    batch: i64,
) -> Result<u64> {
    let mut q = QueryBuilder::<Postgres>::new(
        "DELETE FROM idempotency_keys WHERE (tenant_id, environment_id, kind, key) IN \
        (SELECT tenant_id, environment_id, kind, key FROM idempotency_keys WHERE created_at < ",
    );
    q.push_bind(cutoff);
    if !push_event_id_selection(&mut q, which) {
        return Ok(0);
    }
    q.push(" LIMIT ").push_bind(batch).push(")");
    Ok(q.build().execute(&mut *conn).await?.rows_affected())
}
