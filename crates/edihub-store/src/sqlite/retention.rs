//! SQLite's retention statements (see [`crate::retention`]): each deletes
//! (or releases) one batch and returns how many rows it changed.

use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use crate::retention::push_event_id_selection;
use crate::{KeyPurge, Result, RetentionStep};

/// One batch of `step` (see [`crate::Store::retention_step`]). Each
/// statement is planned with its values known: a run comes once an
/// interval, and a generic plan's guess for `received_at < $1` would read
/// whole partitions.
pub(crate) async fn retention_step(
    conn: &mut SqliteConnection,
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

/// Releases up to `batch` claims whose window ended by `now`: clears the
/// messages' `fingerprint` column.
async fn release_fingerprints(conn: &mut SqliteConnection, now: DateTime<Utc>, batch: i64) -> Result<u64> {
    let release = "UPDATE messages SET fingerprint = NULL WHERE id IN \
        (SELECT id FROM messages WHERE fingerprint IS NOT NULL AND fingerprint_expires_at <= $1 LIMIT $2)";
    let done = sqlx::query(release).bind(now).bind(batch).persistent(false).execute(&mut *conn).await?;
    Ok(done.rows_affected())
}

/// Deletes up to `batch` messages received before `cutoff`, never one
/// whose claim still blocks at `now` nor one whose body a packet sibling
/// still points to, in one statement; returns how many it deleted.
async fn purge_messages(
    conn: &mut SqliteConnection,
    cutoff: DateTime<Utc>,
    now: DateTime<Utc>,
    batch: i64,
) -> Result<u64> {
    let purge = "DELETE FROM messages WHERE id IN (SELECT m.id FROM messages m WHERE m.received_at < $1 \
        AND (m.fingerprint IS NULL OR m.fingerprint_expires_at <= $2) \
        AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.payload_message_id = m.id) LIMIT $3)";
    let done = sqlx::query(purge).bind(cutoff).bind(now).bind(batch).execute(&mut *conn).await?;
    Ok(done.rows_affected())
}

/// Deletes up to `batch` request keys created before `cutoff`.
async fn purge_all_keys(conn: &mut SqliteConnection, cutoff: DateTime<Utc>, batch: i64) -> Result<u64> {
    let purge = "DELETE FROM idempotency_keys WHERE (tenant_id, environment_id, kind, key) IN \
        (SELECT tenant_id, environment_id, kind, key FROM idempotency_keys WHERE created_at < $1 LIMIT $2)";
    let done = sqlx::query(purge).bind(cutoff).bind(batch).persistent(false).execute(&mut *conn).await?;
    Ok(done.rows_affected())
}

/// Deletes up to `batch` audit events that occurred before `cutoff`. The
/// outer `occurred_at < $1` repeats the inner one so that PostgreSQL plans
/// the delete over the audit partitions before the cutoff only.
async fn purge_audit(conn: &mut SqliteConnection, cutoff: DateTime<Utc>, batch: i64) -> Result<u64> {
    let purge = "DELETE FROM audit_events WHERE occurred_at < $1 AND id IN \
        (SELECT id FROM audit_events WHERE occurred_at < $1 LIMIT $2)";
    let done = sqlx::query(purge).bind(cutoff).bind(batch).persistent(false).execute(&mut *conn).await?;
    Ok(done.rows_affected())
}

/// One batch of the request keys `which` names (see
/// [`crate::Store::purge_keys`]).
pub(crate) async fn purge_keys(
    conn: &mut SqliteConnection,
    which: KeyPurge<'_>,
    cutoff: DateTime<Utc>,
    batch: i64,
) -> Result<u64> {
    let mut q = QueryBuilder::<Sqlite>::new(
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
