//! SQLite's audit log: the insert every audited change and the ingest
//! share, and the log's query (see [`crate::audit`]).
//!
//! Every filter is a parameter that may be null (`$n IS NULL OR …`). SQLite
//! plans a statement once, whatever its values, so the events of one
//! message, which the message page asks for, have a statement of their own
//! on `audit_events_message_id`; the others walk the log newest first from
//! the cursor and check each filter on the rows walked.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use crate::{AuditEvent, AuditFilter, NewAuditEvent, Result};

/// Audit events matching every filter, newest first.
const AUDIT: &str = "SELECT id, occurred_at, action, tenant_id, environment_id, message_type, fingerprint, \
    idempotency_key, detected_by, message_id, details FROM audit_events \
    WHERE id < COALESCE($9, 9223372036854775807) \
    AND ($1 IS NULL OR action = $1) \
    AND ($2 IS NULL OR tenant_id = $2) \
    AND ($3 IS NULL OR environment_id = $3) \
    AND ($4 IS NULL OR message_type = $4) \
    AND ($5 IS NULL OR fingerprint = $5) \
    AND ($7 IS NULL OR occurred_at >= $7) \
    AND ($8 IS NULL OR occurred_at < $8) \
    AND ($6 IS NULL OR message_id = $6) \
    ORDER BY id DESC LIMIT $10";

/// The events of message `$6` matching every other filter, newest first.
const AUDIT_OF_MESSAGE: &str = "SELECT id, occurred_at, action, tenant_id, environment_id, message_type, fingerprint, \
    idempotency_key, detected_by, message_id, details FROM audit_events \
    WHERE message_id = $6 AND id < COALESCE($9, 9223372036854775807) \
    AND ($1 IS NULL OR action = $1) \
    AND ($2 IS NULL OR tenant_id = $2) \
    AND ($3 IS NULL OR environment_id = $3) \
    AND ($4 IS NULL OR message_type = $4) \
    AND ($5 IS NULL OR fingerprint = $5) \
    AND ($7 IS NULL OR occurred_at >= $7) \
    AND ($8 IS NULL OR occurred_at < $8) \
    ORDER BY id DESC LIMIT $10";

/// Audit events matching `f`, newest first.
pub(crate) async fn list_audit(conn: &mut SqliteConnection, f: &AuditFilter) -> Result<Vec<AuditEvent>> {
    let statement = if f.message_id.is_some() { AUDIT_OF_MESSAGE } else { AUDIT };
    Ok(sqlx::query_as(statement)
        .bind(&f.action)
        .bind(&f.tenant)
        .bind(&f.environment)
        .bind(&f.message_type)
        .bind(&f.fingerprint)
        .bind(f.message_id)
        .bind(f.since)
        .bind(f.until)
        .bind(f.cursor)
        .bind(f.limit)
        .fetch_all(&mut *conn)
        .await?)
}

/// Appends `events`, each with its time, in one statement (the ingest's
/// duplicates and repeats, and every audited change, in the caller's
/// transaction or session).
pub(crate) async fn insert_audits(
    conn: &mut SqliteConnection,
    events: &[(DateTime<Utc>, NewAuditEvent)],
) -> Result<()> {
    let mut q = QueryBuilder::<Sqlite>::new(
        "INSERT INTO audit_events \
        (occurred_at, action, tenant_id, environment_id, message_type, fingerprint, \
         idempotency_key, detected_by, message_id, details) ",
    );
    q.push_values(events, |mut b, (at, e)| {
        b.push_bind(*at)
            .push_bind(&e.action)
            .push_bind(&e.tenant_id)
            .push_bind(&e.environment_id)
            .push_bind(&e.message_type)
            .push_bind(&e.fingerprint)
            .push_bind(&e.idempotency_key)
            .push_bind(&e.detected_by)
            .push_bind(e.message_id)
            .push_bind(Json(e.stored_details().as_ref()));
    });
    q.build().execute(&mut *conn).await?;
    Ok(())
}
