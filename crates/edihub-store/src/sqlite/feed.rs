//! SQLite's pull feed: its page, and the messages and bodies it and the
//! deliveries read (see [`crate::feed`]).

use bytes::Bytes;
use sqlx::SqliteConnection;
use uuid::Uuid;

use crate::Result;
use crate::feed::{FeedPosition, FeedQuery, FeedRow, FeedSql, StoredMessage, StoredRow};

/// A feed page's statements (see [`crate::feed::feed_page`]).
impl FeedSql for SqliteConnection {
    /// Every committed row is final (the one writer numbers rows in
    /// commit order). The inner select examines at most `$7` rows in
    /// (key, id) order along `messages_feed`; of those, the ones of the type
    /// asked for and the last one examined come back, at most `$6`. A body's
    /// size is read without reading the body (SQLite takes a BLOB's length
    /// from its record header).
    async fn page_rows(
        &mut self,
        query: &FeedQuery<'_>,
        after: FeedPosition,
        scan: i64,
    ) -> Result<Vec<FeedRow>> {
        let page = "SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, \
            sender, fingerprint, fingerprint_basis, fingerprint_expires_at, fingerprint_active, idempotency_key, \
            provider_event_id, packet_index, content_type, received_at, feed_major, payload_message_id, \
            body_bytes, wanted, n = examined AS last_examined, examined FROM (SELECT s.*, \
            row_number() OVER (ORDER BY feed_major, id) AS n, count(*) OVER () AS examined FROM (\
            SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, \
            sender, key_fingerprint AS fingerprint, fingerprint_basis, fingerprint_expires_at, \
            (fingerprint IS NOT NULL) AS fingerprint_active, idempotency_key, provider_event_id, \
            packet_index, content_type, received_at, feed_seq AS feed_major, payload_message_id, \
            CASE WHEN payload_message_id IS NULL THEN octet_length(payload) END AS body_bytes, \
            ($5 IS NULL OR message_type = $5) AS wanted FROM messages \
            WHERE tenant_id = $1 AND environment_id = $2 AND (feed_seq, id) > ($3, $4) \
            ORDER BY feed_seq, id LIMIT $7) AS s) AS t \
            WHERE wanted OR n = examined ORDER BY feed_major, id LIMIT $6";
        Ok(sqlx::query_as(page)
            .bind(&query.scope.tenant_id)
            .bind(&query.scope.environment_id)
            .bind(after.major)
            .bind(after.id)
            .bind(query.message_type)
            .bind(query.limit.saturating_add(1))
            .bind(scan)
            .fetch_all(&mut *self)
            .await?)
    }

    async fn body_sizes(&mut self, ids: &[Uuid]) -> Result<Vec<(Uuid, i64)>> {
        let sizes = "SELECT id, CAST(octet_length(payload) AS BIGINT) FROM messages \
            WHERE id IN (SELECT unhex(value) FROM json_each($1))";
        Ok(sqlx::query_as(sizes).bind(id_list(ids)).fetch_all(&mut *self).await?)
    }
}

/// Messages with the id of each one's body row (and the body, if its own),
/// in no particular order; an id not stored is left out.
pub(crate) async fn stored_messages(conn: &mut SqliteConnection, ids: &[Uuid]) -> Result<Vec<StoredMessage>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let stored = "SELECT m.id, m.tenant_id, m.environment_id, m.message_type, m.mestyp, m.docnum, \
        m.sender, m.key_fingerprint AS fingerprint, m.fingerprint_basis, m.fingerprint_expires_at, \
        (m.fingerprint IS NOT NULL) AS fingerprint_active, m.idempotency_key, m.provider_event_id, \
        m.packet_index, m.content_type, m.received_at, m.payload_message_id, \
        CASE WHEN m.payload_message_id IS NULL THEN m.payload END AS own_payload \
        FROM messages m WHERE m.id IN (SELECT unhex(value) FROM json_each($1))";
    let rows: Vec<StoredRow> = sqlx::query_as(stored).bind(id_list(ids)).fetch_all(&mut *conn).await?;
    Ok(rows.into_iter().map(StoredRow::into_stored).collect())
}

/// The body held by message `body_id`; `None` if it is gone (purged).
pub(crate) async fn message_body(conn: &mut SqliteConnection, body_id: Uuid) -> Result<Option<Bytes>> {
    let body: Option<(Vec<u8>,)> = sqlx::query_as("SELECT payload FROM messages WHERE id = $1")
        .bind(body_id)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(body.map(|(b,)| Bytes::from(b)))
}

/// The bodies held by the messages `ids`, in no particular order; a purged
/// one is left out.
pub(crate) async fn message_bodies(conn: &mut SqliteConnection, ids: &[Uuid]) -> Result<Vec<(Uuid, Bytes)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let bodies = "SELECT id, payload FROM messages WHERE id IN (SELECT unhex(value) FROM json_each($1))";
    let rows: Vec<(Uuid, Vec<u8>)> = sqlx::query_as(bodies).bind(id_list(ids)).fetch_all(&mut *conn).await?;
    Ok(rows.into_iter().map(|(id, body)| (id, Bytes::from(body))).collect())
}

/// The key of feed cursors (one row, made by a migration).
pub(crate) async fn feed_cursor_key(conn: &mut SqliteConnection) -> Result<Vec<u8>> {
    let (key,): (Vec<u8>,) =
        sqlx::query_as("SELECT key FROM feed_cursor_key WHERE id = 1").fetch_one(&mut *conn).await?;
    Ok(key)
}

/// `ids` as a JSON array of hex text, which `unhex` turns back into the
/// stored blobs.
fn id_list(ids: &[Uuid]) -> String {
    serde_json::Value::from(ids.iter().map(|id| id.simple().to_string()).collect::<Vec<_>>()).to_string()
}
