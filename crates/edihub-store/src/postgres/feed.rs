//! PostgreSQL's pull feed page (see [`crate::feed`]): what a running transaction
//! can still precede is left for a later page.

use sqlx::{PgConnection, Postgres};

use crate::Result;
use crate::feed::{FeedPage, FeedQuery, FeedSql};

/// One page of the pull feed: rows whose transaction is older than the snapshot's
/// `xmin` (all such transactions have ended), in (transaction, id) order,
/// along the `messages_feed` index. The inner select examines at most `$7`
/// of them; of those, the ones of the type asked for and the last one
/// examined come back, at most `$6`. `$3` travels as a bigint (sqlx has no
/// `xid8` type); transaction ids stay far below 2^63. `octet_length` of a
/// stored body reads its size from the TOAST pointer, not the body.
pub(crate) async fn feed_page(conn: &mut PgConnection, query: &FeedQuery<'_>) -> Result<FeedPage> {
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
    <Postgres as FeedSql>::feed_page(conn, page, query).await
}
