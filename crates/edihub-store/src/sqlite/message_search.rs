//! SQLite's message search (see [`crate::message_search`]).
//!
//! Every filter is a parameter that may be null (`$n IS NULL OR …`). SQLite
//! plans a statement once, whatever its values, so the time range and the
//! page bound are written as ranges with a null bound replaced by one no
//! timestamp passes (`''` below all, `'9999'` above all: timestamps are
//! RFC 3339 text): `messages_received_at` then seeks to the page bound
//! whatever the filters. The other filters are checked on the rows walked,
//! except in a docnum or fingerprint lookup within one tenant environment:
//! it has statements of its own that lead with the lookup's index
//! (`messages_docnum`, `messages_key_fingerprint`), so it reads only the
//! messages it names however many others there are.

use chrono::{DateTime, Utc};
use sqlx::SqliteConnection;
use sqlx::query::QueryAs;
use sqlx::sqlite::SqliteArguments;
use uuid::Uuid;

use crate::message_search::{SearchSql, before, docnums, listed};
use crate::model::key_value_pattern;
use crate::{MessageMeta, MessageQuery, Result};

/// Messages matching every filter, newest first, read from the table: for
/// a docnum or fingerprint lookup, or no filter checked row by row. List
/// filters are JSON arrays of text.
const MATCHING: &str = "SELECT m.id, m.tenant_id, m.environment_id, m.message_type, m.mestyp, \
    m.docnum, m.sender, m.key_fingerprint AS fingerprint, m.fingerprint_basis, m.fingerprint_expires_at, \
    (m.fingerprint IS NOT NULL) AS fingerprint_active, \
    m.idempotency_key, m.provider_event_id, m.packet_index, m.content_type, m.received_at \
    FROM messages m \
    WHERE m.received_at >= COALESCE($1, '') AND m.received_at < COALESCE($2, '9999') \
    AND m.received_at <= COALESCE($3, '9999') \
    AND ($3 IS NULL OR m.received_at < $3 OR (m.received_at = $3 AND m.id < $4)) \
    AND ($5 IS NULL OR m.tenant_id = $5) \
    AND ($6 IS NULL OR m.environment_id = $6) \
    AND ($7 IS NULL OR m.key_fingerprint = $7) \
    AND ($8 IS NULL OR m.idempotency_key = $8) \
    AND ($9 IS NULL OR m.message_type = $9) \
    AND ($10 IS NULL OR m.sender = $10) \
    AND ($11 IS NULL OR m.tenant_id IN (SELECT value FROM json_each($11))) \
    AND ($12 IS NULL OR m.environment_id IN (SELECT value FROM json_each($12))) \
    AND ($13 IS NULL OR m.docnum IN (SELECT value FROM json_each($13))) \
    AND ($14 IS NULL OR CAST(m.key_values AS TEXT) LIKE $14 ESCAPE '\\') \
    ORDER BY m.received_at DESC, m.id DESC LIMIT $15";

/// [`MATCHING`] for a docnum lookup within one tenant environment, read
/// through `messages_docnum`.
const BY_DOCNUM: &str = "SELECT m.id, m.tenant_id, m.environment_id, m.message_type, m.mestyp, \
    m.docnum, m.sender, m.key_fingerprint AS fingerprint, m.fingerprint_basis, m.fingerprint_expires_at, \
    (m.fingerprint IS NOT NULL) AS fingerprint_active, \
    m.idempotency_key, m.provider_event_id, m.packet_index, m.content_type, m.received_at \
    FROM messages m INDEXED BY messages_docnum \
    WHERE m.tenant_id = $5 AND m.environment_id = $6 AND m.docnum IN (SELECT value FROM json_each($13)) \
    AND m.received_at >= COALESCE($1, '') AND m.received_at < COALESCE($2, '9999') \
    AND m.received_at <= COALESCE($3, '9999') \
    AND ($3 IS NULL OR m.received_at < $3 OR (m.received_at = $3 AND m.id < $4)) \
    AND ($7 IS NULL OR m.key_fingerprint = $7) \
    AND ($8 IS NULL OR m.idempotency_key = $8) \
    AND ($9 IS NULL OR m.message_type = $9) \
    AND ($10 IS NULL OR m.sender = $10) \
    AND ($11 IS NULL OR m.tenant_id IN (SELECT value FROM json_each($11))) \
    AND ($12 IS NULL OR m.environment_id IN (SELECT value FROM json_each($12))) \
    AND ($14 IS NULL OR CAST(m.key_values AS TEXT) LIKE $14 ESCAPE '\\') \
    ORDER BY m.received_at DESC, m.id DESC LIMIT $15";

/// [`MATCHING`] for a fingerprint lookup within one tenant environment,
/// read through `messages_key_fingerprint`.
const BY_FINGERPRINT: &str = "SELECT m.id, m.tenant_id, m.environment_id, m.message_type, m.mestyp, \
    m.docnum, m.sender, m.key_fingerprint AS fingerprint, m.fingerprint_basis, m.fingerprint_expires_at, \
    (m.fingerprint IS NOT NULL) AS fingerprint_active, \
    m.idempotency_key, m.provider_event_id, m.packet_index, m.content_type, m.received_at \
    FROM messages m INDEXED BY messages_key_fingerprint \
    WHERE m.tenant_id = $5 AND m.environment_id = $6 AND m.key_fingerprint = $7 \
    AND m.received_at >= COALESCE($1, '') AND m.received_at < COALESCE($2, '9999') \
    AND m.received_at <= COALESCE($3, '9999') \
    AND ($3 IS NULL OR m.received_at < $3 OR (m.received_at = $3 AND m.id < $4)) \
    AND ($8 IS NULL OR m.idempotency_key = $8) \
    AND ($9 IS NULL OR m.message_type = $9) \
    AND ($10 IS NULL OR m.sender = $10) \
    AND ($11 IS NULL OR m.tenant_id IN (SELECT value FROM json_each($11))) \
    AND ($12 IS NULL OR m.environment_id IN (SELECT value FROM json_each($12))) \
    AND ($13 IS NULL OR m.docnum IN (SELECT value FROM json_each($13))) \
    AND ($14 IS NULL OR CAST(m.key_values AS TEXT) LIKE $14 ESCAPE '\\') \
    ORDER BY m.received_at DESC, m.id DESC LIMIT $15";

/// Messages matching every filter among the newest `$16` messages of the
/// time range (see [`MessageQuery::scan`]), newest first.
const SCANNED: &str = "SELECT m.id, m.tenant_id, m.environment_id, m.message_type, m.mestyp, \
    m.docnum, m.sender, m.key_fingerprint AS fingerprint, m.fingerprint_basis, m.fingerprint_expires_at, \
    (m.fingerprint IS NOT NULL) AS fingerprint_active, \
    m.idempotency_key, m.provider_event_id, m.packet_index, m.content_type, m.received_at \
    FROM (SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, sender, key_fingerprint, \
        fingerprint_basis, fingerprint_expires_at, idempotency_key, provider_event_id, packet_index, \
        content_type, received_at, key_values, fingerprint FROM messages \
        WHERE received_at >= COALESCE($1, '') AND received_at < COALESCE($2, '9999') \
        AND received_at <= COALESCE($3, '9999') \
        AND ($3 IS NULL OR received_at < $3 OR (received_at = $3 AND id < $4)) \
        ORDER BY received_at DESC, id DESC LIMIT $16) m \
    WHERE ($5 IS NULL OR m.tenant_id = $5) \
    AND ($6 IS NULL OR m.environment_id = $6) \
    AND ($7 IS NULL OR m.key_fingerprint = $7) \
    AND ($8 IS NULL OR m.idempotency_key = $8) \
    AND ($9 IS NULL OR m.message_type = $9) \
    AND ($10 IS NULL OR m.sender = $10) \
    AND ($11 IS NULL OR m.tenant_id IN (SELECT value FROM json_each($11))) \
    AND ($12 IS NULL OR m.environment_id IN (SELECT value FROM json_each($12))) \
    AND ($13 IS NULL OR m.docnum IN (SELECT value FROM json_each($13))) \
    AND ($14 IS NULL OR CAST(m.key_values AS TEXT) LIKE $14 ESCAPE '\\') \
    ORDER BY m.received_at DESC, m.id DESC LIMIT $15";

/// The last message a scan of `$5` messages examined (at offset `$5 - 1`)
/// and the one after it.
const SCAN_EDGE: &str = "SELECT received_at, id FROM messages \
    WHERE received_at >= COALESCE($1, '') AND received_at < COALESCE($2, '9999') \
    AND received_at <= COALESCE($3, '9999') \
    AND ($3 IS NULL OR received_at < $3 OR (received_at = $3 AND id < $4)) \
    ORDER BY received_at DESC, id DESC LIMIT 2 OFFSET $5 - 1";

/// A search's statements (see [`crate::message_search::find_messages`]).
impl SearchSql for SqliteConnection {
    async fn matching(&mut self, f: &MessageQuery) -> Result<Vec<MessageMeta>> {
        let scoped = f.tenant.is_some() && f.environment.is_some();
        let statement = if scoped && docnums(f).is_some() {
            BY_DOCNUM
        } else if scoped && f.fingerprint.is_some() {
            BY_FINGERPRINT
        } else {
            MATCHING
        };
        Ok(bind_filters(sqlx::query_as(statement), f).fetch_all(&mut *self).await?)
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
            .fetch_all(&mut *self)
            .await?)
    }
}

/// Binds `$1` to `$15` of [`MATCHING`], [`BY_DOCNUM`], [`BY_FINGERPRINT`] and [`SCANNED`].
fn bind_filters<'q>(
    q: QueryAs<'q, sqlx::Sqlite, MessageMeta, SqliteArguments>,
    f: &'q MessageQuery,
) -> QueryAs<'q, sqlx::Sqlite, MessageMeta, SqliteArguments> {
    let (at, id) = before(f);
    let json = |values: Option<&[String]>| values.map(|v| serde_json::Value::from(v).to_string());
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
        .bind(json(listed(&f.tenants)))
        .bind(json(listed(&f.environments)))
        .bind(json(docnums(f).as_deref()))
        .bind(f.key_value.as_deref().map(key_value_pattern))
        .bind(f.limit)
}
