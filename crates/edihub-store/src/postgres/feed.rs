//! PostgreSQL's pull feed: its page, where what a running transaction can
//! still precede is left for a later page, and the messages and bodies it
//! and the deliveries read (see [`crate::feed`]).

use bytes::Bytes;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::Result;
use crate::feed::{FeedPosition, FeedQuery, FeedRow, FeedSql, StoredMessage, StoredRow};

/// A feed page's statements (see [`crate::feed::feed_page`]).
impl FeedSql for PgConnection {
    /// One page of the pull feed: rows whose transaction is older than the snapshot's
    /// `xmin` (all such transactions have ended), in (transaction, id) order,
    /// along the `messages_feed` index. The inner select examines at most `$7`
    /// of them; of those, the ones of the type asked for and the last one
    /// examined come back, at most `$6`. `$3` travels as a bigint (sqlx has no
    /// `xid8` type); transaction ids stay far below 2^63. `octet_length` of a
    /// stored body reads its size from the TOAST pointer, not the body.
    async fn page_rows(
        &mut self,
        query: &FeedQuery<'_>,
        after: FeedPosition,
        scan: i64,
    ) -> Result<Vec<FeedRow>> {
        let page = "SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, \
            sender, fingerprint, fingerprint_basis, fingerprint_expires_at, \
            EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = t.id) AS fingerprint_active, \
            idempotency_key, provider_event_id, packet_index, content_type, received_at, feed_major, \
            payload_message_id, body_bytes, wanted, n = examined AS last_examined, examined FROM (SELECT s.*, \
            row_number() OVER (ORDER BY feed_xid, id) AS n, count(*) OVER () AS examined FROM (\
            SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, \
            sender, key_fingerprint AS fingerprint, fingerprint_basis, fingerprint_expires_at, \
            idempotency_key, provider_event_id, packet_index, content_type, received_at, feed_xid, \
            feed_xid::text::bigint AS feed_major, payload_message_id, \
            CASE WHEN payload_message_id IS NULL THEN octet_length(payload)::bigint END AS body_bytes, \
            ($5::text IS NULL OR message_type = $5) AS wanted FROM messages \
            WHERE tenant_id = $1 AND environment_id = $2 AND (feed_xid, id) > ($3::bigint::text::xid8, $4) \
            AND feed_xid < pg_snapshot_xmin(pg_current_snapshot()) \
            ORDER BY feed_xid, id LIMIT $7) AS s) AS t \
            WHERE wanted OR n = examined ORDER BY feed_xid, id LIMIT $6";
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
        let sizes = "SELECT id, CAST(octet_length(payload) AS BIGINT) FROM messages WHERE id = ANY($1)";
        Ok(sqlx::query_as(sizes).bind(ids).persistent(false).fetch_all(&mut *self).await?)
    }
}

/// Messages with the id of each one's body row (and the body, if its own),
/// in no particular order; an id not stored is left out.
/// Not kept prepared, so planned with the ids known: a prepared plan
/// would cover every partition.
pub(crate) async fn stored_messages(conn: &mut PgConnection, ids: &[Uuid]) -> Result<Vec<StoredMessage>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let stored = "SELECT m.id, m.tenant_id, m.environment_id, m.message_type, m.mestyp, m.docnum, \
        m.sender, m.key_fingerprint AS fingerprint, m.fingerprint_basis, m.fingerprint_expires_at, \
        EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = m.id) AS fingerprint_active, m.idempotency_key, m.provider_event_id, \
        m.packet_index, m.content_type, m.received_at, m.payload_message_id, \
        CASE WHEN m.payload_message_id IS NULL THEN m.payload END AS own_payload \
        FROM messages m WHERE m.id = ANY($1)";
    let rows: Vec<StoredRow> =
        sqlx::query_as(stored).bind(ids).persistent(false).fetch_all(&mut *conn).await?;
    Ok(rows.into_iter().map(StoredRow::into_stored).collect())
}

/// The body held by message `body_id`; `None` if it is gone (purged).
pub(crate) async fn message_body(conn: &mut PgConnection, body_id: Uuid) -> Result<Option<Bytes>> {
    let body: Option<(Vec<u8>,)> = sqlx::query_as("SELECT payload FROM messages WHERE id = $1")
        .bind(body_id)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(body.map(|(b,)| Bytes::from(b)))
}

/// The bodies held by the messages `ids`, in no particular order; a purged
/// one is left out.
pub(crate) async fn message_bodies(conn: &mut PgConnection, ids: &[Uuid]) -> Result<Vec<(Uuid, Bytes)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let bodies = "SELECT id, payload FROM messages WHERE id = ANY($1)";
    let rows: Vec<(Uuid, Vec<u8>)> =
        sqlx::query_as(bodies).bind(ids).persistent(false).fetch_all(&mut *conn).await?;
    Ok(rows.into_iter().map(|(id, body)| (id, Bytes::from(body))).collect())
}

/// The key of feed cursors (one row, made by a migration).
pub(crate) async fn feed_cursor_key(conn: &mut PgConnection) -> Result<Vec<u8>> {
    let (key,): (Vec<u8>,) =
        sqlx::query_as("SELECT key FROM feed_cursor_key WHERE id = 1").fetch_one(&mut *conn).await?;
    Ok(key)
}
