//! SQLite's pull feed page (see [`crate::feed`]).

use sqlx::{Sqlite, SqliteConnection};

use crate::Result;
use crate::feed::{FeedPage, FeedQuery, FeedSql};

/// One page of the pull feed: every committed row is final (the one writer numbers
/// rows in commit order). The inner select examines at most `$7` rows in
/// (key, id) order along `messages_feed`; of those, the ones of the type
/// asked for and the last one examined come back, at most `$6`. A body's
/// size is read without reading the body (SQLite takes a BLOB's length
/// from its record header).
pub(crate) async fn feed_page(conn: &mut SqliteConnection, query: &FeedQuery<'_>) -> Result<FeedPage> {
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
    <Sqlite as FeedSql>::feed_page(conn, page, query).await
}
