//! The keyed batch as one statement (PostgreSQL): its text and its
//! answer. [`super::key_statements::KeySql::claim_and_insert`] sends it: a
//! chain of CTEs that claims the batch's keys and inserts the claimed
//! requests' messages (and their outbox rows), together or not at all, and
//! answers with the ids it inserted and the state of the keys it found
//! claimed before, so a key's repeat is settled without reading it again.

use sqlx::FromRow;
use uuid::Uuid;

use super::key_statements::KeyState;
use crate::Result;

/// What [`super::key_statements::KeySql::claim_and_insert`] did: the messages it inserted (each
/// names the key claimed for it) and the state of the keys it found
/// claimed before.
#[derive(Debug, Default)]
pub(crate) struct ClaimedBatch {
    /// The ids of the messages inserted.
    pub(crate) ids: Vec<Uuid>,
    /// Keys of the list claimed before the statement, as it saw them.
    pub(crate) states: Vec<KeyState>,
}

/// One row of [`CLAIM_AND_INSERT_ANSWER`]: an inserted id, or a key's state.
#[derive(Debug, FromRow)]
pub(crate) struct ClaimAnswer {
    inserted: Option<Uuid>,
    tenant_id: Option<String>,
    environment_id: Option<String>,
    kind: Option<String>,
    key: Option<String>,
    request_sha256: Option<String>,
    status_code: Option<i32>,
    response_body: Option<String>,
    answer: Option<String>,
    message_id: Option<Uuid>,
}

impl ClaimedBatch {
    pub(crate) fn from_answer(rows: Vec<ClaimAnswer>) -> Result<ClaimedBatch> {
        let mut batch = ClaimedBatch::default();
        for r in rows {
            if let Some(id) = r.inserted {
                batch.ids.push(id);
                continue;
            }
            let incomplete = || crate::StoreError::Invariant("key state row without its columns".into());
            batch.states.push(KeyState {
                tenant_id: r.tenant_id.ok_or_else(incomplete)?,
                environment_id: r.environment_id.ok_or_else(incomplete)?,
                kind: r.kind.ok_or_else(incomplete)?,
                key: r.key.ok_or_else(incomplete)?,
                request_sha256: r.request_sha256.ok_or_else(incomplete)?,
                status_code: r.status_code.ok_or_else(incomplete)?,
                response_body: r.response_body.ok_or_else(incomplete)?,
                answer: r.answer,
                message_id: r.message_id,
                message_type: None,
                fingerprint: None,
            });
        }
        Ok(batch)
    }
}

/// The claims of [`super::key_statements::KeySql::claim_and_insert`], its first CTE: their
/// `VALUES`, each with its message's fingerprint, read twice (the claim,
/// then the answer) and so inlined.
pub(super) const CLAIM_AND_INSERT_KEYS: &str = "WITH kv (tenant_id, environment_id, kind, key, request_sha256, \
    status_code, response_body, created_at, answer, message_id, fingerprint) AS NOT MATERIALIZED (";
/// The key claim: each key claimed unless a claim of its message's
/// fingerprint is visible. Such a request is left to its own transaction,
/// which settles the duplicate; so the statement's claim insert fails only
/// when a claim commits while it runs. It returns the message each claimed
/// key expects; then the rows' `VALUES` open, read twice and so inlined
/// (see `ClaimSql::INSERT_HEAD` for PostgreSQL).
pub(super) const CLAIM_AND_INSERT_KEYS_TAIL: &str = "), k AS (INSERT INTO idempotency_keys \
    (tenant_id, environment_id, kind, key, request_sha256, status_code, response_body, created_at, \
     answer, message_id) SELECT c.tenant_id, c.environment_id, c.kind, c.key, c.request_sha256, \
     c.status_code, c.response_body, c.created_at, c.answer, c.message_id FROM kv c \
    WHERE c.fingerprint IS NULL OR NOT EXISTS (SELECT 1 FROM message_claims m \
    WHERE m.tenant_id = c.tenant_id AND m.environment_id = c.environment_id \
    AND m.fingerprint = c.fingerprint) \
    ON CONFLICT (tenant_id, environment_id, kind, key) DO NOTHING RETURNING message_id), \
    v (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, fingerprint, \
    key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
    provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) \
    AS NOT MATERIALIZED (";
/// Ends [`super::key_statements::KeySql::claim_and_insert`]: the claimed rows' fingerprint
/// claims, inserted without `ON CONFLICT` (a claim committed meanwhile, or
/// a second row of one fingerprint, fails the statement), and their
/// messages as the CTE `m` that `ClaimSql::OUTBOX_TAIL` and
/// [`CLAIM_AND_INSERT_ANSWER`] follow.
pub(super) const CLAIM_AND_INSERT_TAIL: &str = "), f AS (INSERT INTO message_claims \
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
    RETURNING id, tenant_id, environment_id, message_type, received_at)";
/// Ends [`super::key_statements::KeySql::claim_and_insert`]: the ids it inserted (rows of
/// [`ClaimAnswer`] with only `inserted`), then the state of every key it
/// did not claim as the statement's snapshot shows it (a key claimed
/// before the statement began), which saves the repeats their
/// [`super::key_statements::KeySql::key_states`] round trip. A key claimed while the statement
/// ran, or earlier in the same list, is not among them.
pub(super) const CLAIM_AND_INSERT_ANSWER: &str = " SELECT id AS inserted, NULL::text AS tenant_id, \
    NULL::text AS environment_id, NULL::text AS kind, NULL::text AS key, NULL::text AS request_sha256, \
    NULL::int4 AS status_code, NULL::text AS response_body, NULL::text AS answer, \
    NULL::uuid AS message_id FROM m UNION ALL \
    SELECT NULL::uuid, i.tenant_id, i.environment_id, i.kind, i.key, i.request_sha256, i.status_code, \
    i.response_body, i.answer, i.message_id FROM kv JOIN idempotency_keys i \
    ON i.tenant_id = kv.tenant_id AND i.environment_id = kv.environment_id AND i.kind = kv.kind \
    AND i.key = kv.key WHERE NOT EXISTS (SELECT 1 FROM k WHERE k.message_id = kv.message_id)";
