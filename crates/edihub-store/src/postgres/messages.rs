//! PostgreSQL's lookups of stored messages (see [`crate::queries`]).

use sqlx::PgConnection;

use uuid::Uuid;

use crate::{MessageRow, Result, Scope};

/// How many messages an environment holds.
pub(crate) async fn count_messages(conn: &mut PgConnection, scope: &Scope) -> Result<i64> {
    let count = "SELECT COUNT(*) FROM messages WHERE tenant_id = $1 AND environment_id = $2";
    let (n,): (i64,) = sqlx::query_as(count)
        .bind(&scope.tenant_id)
        .bind(&scope.environment_id)
        .fetch_one(&mut *conn)
        .await?;
    Ok(n)
}

/// A full message by id; a packet's messages share the body stored with
/// the first.
pub(crate) async fn get_message(conn: &mut PgConnection, id: Uuid) -> Result<Option<MessageRow>> {
    let message = "SELECT m.id, m.tenant_id, m.environment_id, m.message_type, m.mestyp, m.docnum, \
        m.sender, m.key_fingerprint AS fingerprint, m.fingerprint_basis, m.fingerprint_expires_at, \
        EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = m.id) AS fingerprint_active, \
        m.key_values, m.idempotency_key, m.provider_event_id, m.packet_index, m.content_type, \
        COALESCE(h.payload, m.payload) AS payload, m.received_at \
        FROM messages m LEFT JOIN messages h ON h.id = m.payload_message_id WHERE m.id = $1";
    Ok(sqlx::query_as(message).bind(id).fetch_optional(&mut *conn).await?)
}
