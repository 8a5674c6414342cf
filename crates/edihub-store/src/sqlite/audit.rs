//! SQLite's audit log query (see [`crate::audit`]).
//!
//! Every filter is a parameter that may be null (`$n IS NULL OR …`). SQLite
//! plans a statement once, whatever its values, so the events of one
//! message, which the message page asks for, have a statement of their own
//! on `audit_events_message_id`; the others walk the log newest first from
//! the cursor and check each filter on the rows walked.

use sqlx::SqliteConnection;

use crate::{AuditEvent, AuditFilter, Result};

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
