//! PostgreSQL's message search (see [`crate::message_search`]).
//!
//! Every filter is a parameter that may be null (`$n IS NULL OR …`), and
//! the statements are not kept prepared: PostgreSQL plans each one with its
//! values known, drops the filters that are null and seeks the index the
//! rest allow (`messages_docnum`, `messages_key_fingerprint`,
//! `messages_received_at` from the page bound).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;
use uuid::Uuid;

use crate::message_search::{SearchSql, before, docnums, listed};
use crate::{MessageMeta, MessageQuery, Result};

/// Messages matching every filter, newest first, read from the table: for
/// a docnum or fingerprint lookup, or no filter checked row by row.
const MATCHING: &str = "SELECT m.id, m.tenant_id, m.environment_id, m.message_type, m.mestyp, \
    m.docnum, m.sender, m.key_fingerprint AS fingerprint, m.fingerprint_basis, m.fingerprint_expires_at, \
    EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = m.id) AS fingerprint_active, \
    m.idempotency_key, m.provider_event_id, m.packet_index, m.content_type, m.received_at \
    FROM messages m \
    WHERE ($1::timestamptz IS NULL OR m.received_at >= $1) \
    AND ($2::timestamptz IS NULL OR m.received_at < $2) \
    AND ($3::timestamptz IS NULL OR (m.received_at <= $3 \
        AND (m.received_at < $3 OR (m.received_at = $3 AND m.id < $4)))) \
    AND ($5::text IS NULL OR m.tenant_id = $5) \
    AND ($6::text IS NULL OR m.environment_id = $6) \
    AND ($7::text IS NULL OR m.key_fingerprint = $7) \
    AND ($8::text IS NULL OR m.idempotency_key = $8) \
    AND ($9::text IS NULL OR m.message_type = $9) \
    AND ($10::text IS NULL OR m.sender = $10) \
    AND ($11::text[] IS NULL OR m.tenant_id = ANY($11)) \
    AND ($12::text[] IS NULL OR m.environment_id = ANY($12)) \
    AND ($13::text[] IS NULL OR m.docnum = ANY($13)) \
    AND ($14::jsonb IS NULL OR m.key_values @> $14) \
    ORDER BY m.received_at DESC, m.id DESC LIMIT $15";

/// Messages matching every filter among the newest `$16` messages of the
/// time range (see [`MessageQuery::scan`]), newest first.
const SCANNED: &str = "SELECT m.id, m.tenant_id, m.environment_id, m.message_type, m.mestyp, \
    m.docnum, m.sender, m.key_fingerprint AS fingerprint, m.fingerprint_basis, m.fingerprint_expires_at, \
    EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = m.id) AS fingerprint_active, \
    m.idempotency_key, m.provider_event_id, m.packet_index, m.content_type, m.received_at \
    FROM (SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, sender, key_fingerprint, \
        fingerprint_basis, fingerprint_expires_at, idempotency_key, provider_event_id, packet_index, \
        content_type, received_at, key_values FROM messages \
        WHERE ($1::timestamptz IS NULL OR received_at >= $1) \
        AND ($2::timestamptz IS NULL OR received_at < $2) \
        AND ($3::timestamptz IS NULL OR (received_at <= $3 \
            AND (received_at < $3 OR (received_at = $3 AND id < $4)))) \
        ORDER BY received_at DESC, id DESC LIMIT $16) m \
    WHERE ($5::text IS NULL OR m.tenant_id = $5) \
    AND ($6::text IS NULL OR m.environment_id = $6) \
    AND ($7::text IS NULL OR m.key_fingerprint = $7) \
    AND ($8::text IS NULL OR m.idempotency_key = $8) \
    AND ($9::text IS NULL OR m.message_type = $9) \
    AND ($10::text IS NULL OR m.sender = $10) \
    AND ($11::text[] IS NULL OR m.tenant_id = ANY($11)) \
    AND ($12::text[] IS NULL OR m.environment_id = ANY($12)) \
    AND ($13::text[] IS NULL OR m.docnum = ANY($13)) \
    AND ($14::jsonb IS NULL OR m.key_values @> $14) \
    ORDER BY m.received_at DESC, m.id DESC LIMIT $15";

/// The last message a scan of `$5` messages examined (at offset `$5 - 1`)
/// and the one after it.
const SCAN_EDGE: &str = "SELECT received_at, id FROM messages \
    WHERE ($1::timestamptz IS NULL OR received_at >= $1) \
    AND ($2::timestamptz IS NULL OR received_at < $2) \
    AND ($3::timestamptz IS NULL OR (received_at <= $3 \
        AND (received_at < $3 OR (received_at = $3 AND id < $4)))) \
    ORDER BY received_at DESC, id DESC LIMIT 2 OFFSET $5 - 1";

/// A search's statements (see [`crate::message_search::find_messages`]).
impl SearchSql for PgConnection {
    async fn matching(&mut self, f: &MessageQuery) -> Result<Vec<MessageMeta>> {
        Ok(bind_filters(sqlx::query_as(MATCHING), f).fetch_all(&mut *self).await?)
    }

    async fn scanned(&mut self, f: &MessageQuery, scan: i64) -> Result<Vec<MessageMeta>> {
        Ok(bind_filters(sqlx::query_as(SCANNED), f).bind(scan).fetch_all(&mut *self).await?)
    }

    async fn scan_edge(&mut self, f: &MessageQuery, scan: i64) -> Result<Vec<(DateTime<Utc>, Uuid)>> {
        let (at, id) = before(f);
        Ok(sqlx::query_as(SCAN_EDGE)
            .bind(f.since)
            .bind(f.until)
            .bind(at)
            .bind(id)
            .bind(scan)
            .persistent(false)
            .fetch_all(&mut *self)
            .await?)
    }
}

/// Binds `$1` to `$15` of [`MATCHING`] and [`SCANNED`]; not kept prepared.
fn bind_filters<'q>(
    q: QueryAs<'q, sqlx::Postgres, MessageMeta, PgArguments>,
    f: &'q MessageQuery,
) -> QueryAs<'q, sqlx::Postgres, MessageMeta, PgArguments> {
    let (at, id) = before(f);
    let key_value = f.key_value.as_ref().map(|v| sqlx::types::Json(serde_json::json!([{ "values": [v] }])));
    q.bind(f.since)
        .bind(f.until)
        .bind(at)
        .bind(id)
        .bind(&f.tenant)
        .bind(&f.environment)
        .bind(&f.fingerprint)
        .bind(&f.idempotency_key)
        .bind(&f.message_type)
        .bind(&f.sender)
        .bind(listed(&f.tenants))
        .bind(listed(&f.environments))
        .bind(docnums(f))
        .bind(key_value)
        .bind(f.limit)
        .persistent(false)
}
