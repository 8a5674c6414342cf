//! PostgreSQL's audit log: the insert every audited change and the ingest
//! share, and the log's query (see [`crate::audit`]).
//!
//! Every filter is a parameter that may be null (`$n IS NULL OR …`), and
//! the statement is not kept prepared: PostgreSQL plans it with its values
//! known, drops the filters that are null and reads the index of the rest
//! (`audit_events_action`, `_fingerprint`, `_scope`, `_message_id`).

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{PgConnection, Postgres, QueryBuilder};

use crate::{AuditEvent, AuditFilter, NewAuditEvent, Result};

/// Audit events matching every filter, newest first.
const AUDIT: &str = "SELECT id, occurred_at, action, tenant_id, environment_id, message_type, fingerprint, \
    idempotency_key, detected_by, message_id, details FROM audit_events \
    WHERE ($1::text IS NULL OR action = $1) \
    AND ($2::text IS NULL OR tenant_id = $2) \
    AND ($3::text IS NULL OR environment_id = $3) \
    AND ($4::text IS NULL OR message_type = $4) \
    AND ($5::text IS NULL OR fingerprint = $5) \
    AND ($6::uuid IS NULL OR message_id = $6) \
    AND ($7::timestamptz IS NULL OR occurred_at >= $7) \
    AND ($8::timestamptz IS NULL OR occurred_at < $8) \
    AND ($9::bigint IS NULL OR id < $9) \
    ORDER BY id DESC LIMIT $10";

/// Audit events matching `f`, newest first.
pub(crate) async fn list_audit(conn: &mut PgConnection, f: &AuditFilter) -> Result<Vec<AuditEvent>> {
    Ok(sqlx::query_as(AUDIT)
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
        .persistent(false)
        .fetch_all(&mut *conn)
        .await?)
}

/// Appends `events`, each with its time, in one statement (the ingest's
/// duplicates and repeats, and every audited change, in the caller's
/// transaction or session).
pub(crate) async fn insert_audits(
    conn: &mut PgConnection,
    events: &[(DateTime<Utc>, NewAuditEvent)],
) -> Result<()> {
    let mut q = QueryBuilder::<Postgres>::new(
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
