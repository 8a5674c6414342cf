//! A keyed batch of the group insert as one autocommit statement, a
//! data-modifying CTE (see `crate::ingest::group`): it claims the keys,
//! each with the answer of a new message, and inserts the claimed
//! requests' messages with their fingerprint claims and outbox rows,
//! together or not at all. That saves the transaction's `BEGIN`, second
//! statement and `COMMIT` round trips.

use sqlx::{Postgres, QueryBuilder};
use uuid::Uuid;

use super::insert::push_row;
use super::keys::push_claim;
use crate::Result;
use crate::ingest::keys::Claim;
use crate::ingest::statements::Row;
use crate::session::Sessions;

/// Claims `keys` (each the key of the row at its index) and inserts the
/// messages of the claimed ones; returns the ids inserted, which name the
/// claimed keys (each key's expected answer points to its message).
///
/// `k` claims each key unless a claim of its message's fingerprint is
/// visible: such a request is left to its own transaction, which settles
/// the duplicate, so the claim insert fails only when a claim commits while
/// the statement runs. The fingerprint claims `f` are inserted without
/// `ON CONFLICT`: a claim committed meanwhile, or a second row of one
/// fingerprint, fails the whole statement, and nothing of it is kept. `v`
/// is read twice and so inlined (see `insert::insert_messages`).
pub(crate) async fn claim_and_insert(
    sessions: &Sessions<Postgres>,
    keys: &[Claim<'_>],
    rows: &[Row<'_>],
) -> Result<Vec<Uuid>> {
    let mut q = QueryBuilder::<Postgres>::new(
        "WITH k AS (INSERT INTO idempotency_keys \
        (tenant_id, environment_id, kind, key, request_sha256, status_code, response_body, created_at, \
         answer, message_id) SELECT c.tenant_id, c.environment_id, c.kind, c.key, c.request_sha256, \
         c.status_code, c.response_body, c.created_at, c.answer, c.message_id FROM (",
    );
    q.push_values(keys.iter().zip(rows), |mut b, (c, r)| {
        push_claim(&mut b, c);
        b.push_bind(&r.message.fingerprint);
    });
    q.push(
        ") AS c (tenant_id, environment_id, kind, key, request_sha256, \
        status_code, response_body, created_at, answer, message_id, fingerprint) \
        WHERE c.fingerprint IS NULL OR NOT EXISTS (SELECT 1 FROM message_claims m \
        WHERE m.tenant_id = c.tenant_id AND m.environment_id = c.environment_id \
        AND m.fingerprint = c.fingerprint) \
        ON CONFLICT (tenant_id, environment_id, kind, key) DO NOTHING RETURNING message_id), \
        v (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, fingerprint, \
        key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
        provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) \
        AS NOT MATERIALIZED (",
    );
    q.push_values(rows, |mut b, r| push_row(&mut b, r));
    q.push(
        "), f AS (INSERT INTO message_claims \
        (tenant_id, environment_id, fingerprint, message_id, expires_at, message_type, mestyp, docnum, \
        received_at) SELECT tenant_id, environment_id, fingerprint, id, fingerprint_expires_at, \
        message_type, mestyp, docnum, received_at FROM v \
        WHERE fingerprint IS NOT NULL AND id IN (SELECT message_id FROM k)), \
        m AS (INSERT INTO messages (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, \
        key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
        provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) \
        SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, sender, \
        key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
        provider_event_id, packet_index, content_type, payload, received_at, payload_message_id \
        FROM v WHERE id IN (SELECT message_id FROM k) \
        RETURNING id, tenant_id, environment_id, message_type, received_at)\
        , o AS (INSERT INTO deliveries \
        (message_id, destination_id, status, attempts, next_attempt_at, created_at, updated_at) \
        SELECT m.id, d.id, 'pending', 0, m.received_at, m.received_at, m.received_at FROM m \
        JOIN destinations d ON d.tenant_id = m.tenant_id AND d.environment_id = m.environment_id \
        WHERE d.enabled AND (d.message_types IS NULL OR d.message_types ? m.message_type)) \
        SELECT id FROM m",
    );
    let mut session = sessions.session().await?;
    let ids: Vec<(Uuid,)> = q.build_query_as().fetch_all(&mut *session).await?;
    let ids = session.done(ids).await?;
    Ok(ids.into_iter().map(|(id,)| id).collect())
}
