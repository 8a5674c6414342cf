//! The SQL both backends run, written once.
//!
//! Every statement here is portable between PostgreSQL and SQLite: `$n`
//! placeholders, `ON CONFLICT … DO NOTHING RETURNING`, partial unique indexes.
//! The column types differ per backend (UUID vs BLOB, TIMESTAMPTZ vs TEXT, JSONB
//! vs TEXT) but sqlx maps the same Rust types onto both, so the statements and
//! the Rust code that drives them ([`crate::ingest`]) are shared.

/// Claims a request key; returns a row only for the first claimant.
pub(crate) const CLAIM_KEY: &str = "INSERT INTO idempotency_keys \
    (tenant_id, environment_id, kind, key, request_sha256, status_code, response_body, created_at) \
    VALUES ($1, $2, $3, $4, $5, 0, '', $6) \
    ON CONFLICT (tenant_id, environment_id, kind, key) DO NOTHING RETURNING kind";

/// Reads a committed key claim.
pub(crate) const LOAD_KEY: &str = "SELECT request_sha256, status_code, response_body, message_id \
    FROM idempotency_keys WHERE tenant_id = $1 AND environment_id = $2 AND kind = $3 AND key = $4";

/// Stores the response of the first request with a key.
pub(crate) const FINISH_KEY: &str = "UPDATE idempotency_keys \
    SET status_code = $5, response_body = $6, message_id = $7 \
    WHERE tenant_id = $1 AND environment_id = $2 AND kind = $3 AND key = $4";

/// Releases a fingerprint whose window has passed, so a new message may claim it.
pub(crate) const RELEASE_EXPIRED: &str = "UPDATE messages SET fingerprint = NULL \
    WHERE tenant_id = $1 AND environment_id = $2 AND fingerprint = $3 \
    AND fingerprint_expires_at <= $4";

/// Inserts a message; the partial unique index decides races on the fingerprint.
pub(crate) const INSERT_MESSAGE: &str = "INSERT INTO messages \
    (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, fingerprint, \
     key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
     provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) \
    ON CONFLICT (tenant_id, environment_id, fingerprint) WHERE fingerprint IS NOT NULL DO NOTHING \
    RETURNING id";

/// The head of [`INSERT_MESSAGE`] for several rows: the columns, then one
/// `VALUES` tuple per row (the fingerprint bound twice, as `$8` is above).
pub(crate) const INSERT_MESSAGES_HEAD: &str = "INSERT INTO messages \
    (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, fingerprint, \
     key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
     provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) ";

/// The tail of the multi-row insert: the same conflict rule as [`INSERT_MESSAGE`].
pub(crate) const INSERT_MESSAGES_TAIL: &str = " ON CONFLICT (tenant_id, environment_id, fingerprint) \
    WHERE fingerprint IS NOT NULL DO NOTHING RETURNING id";

/// One arm of the holders lookup: `tenant_id = ` and the rest of the
/// equalities on the unique index follow; arms are joined with `UNION ALL`.
pub(crate) const HOLDER_ARM: &str = "SELECT tenant_id, environment_id, id, message_type, mestyp, \
    docnum, key_fingerprint AS fingerprint, received_at, fingerprint_expires_at FROM messages \
    WHERE tenant_id = ";

/// The head of [`CLAIM_KEY`] for several keys (their `VALUES` follow, then
/// [`CLAIM_KEYS_TAIL`]).
pub(crate) const CLAIM_KEYS_HEAD: &str = "INSERT INTO idempotency_keys \
    (tenant_id, environment_id, kind, key, request_sha256, status_code, response_body, created_at) ";

/// Returns the keys a multi-row claim took.
pub(crate) const CLAIM_KEYS_TAIL: &str = " ON CONFLICT (tenant_id, environment_id, kind, key) DO NOTHING \
    RETURNING tenant_id, environment_id, kind, key";

/// [`FINISH_KEY`] for several keys: a `VALUES` list of (tenant, environment,
/// kind, key, status, body, message id) follows, then [`FINISH_KEYS_TAIL`].
/// A CTE with named columns and `UPDATE … FROM` work alike on both backends.
pub(crate) const FINISH_KEYS_HEAD: &str = "WITH v (tenant_id, environment_id, kind, key, status_code, \
    response_body, message_id) AS (";

/// Applies the responses listed by [`FINISH_KEYS_HEAD`].
pub(crate) const FINISH_KEYS_TAIL: &str = ") UPDATE idempotency_keys SET status_code = v.status_code, \
    response_body = v.response_body, message_id = v.message_id FROM v \
    WHERE idempotency_keys.tenant_id = v.tenant_id AND idempotency_keys.environment_id = v.environment_id \
    AND idempotency_keys.kind = v.kind AND idempotency_keys.key = v.key";

/// One arm of [`LOAD_KEY`] for several keys, with the message's type and
/// fingerprint: `k.tenant_id = ` and the rest of the primary key follow;
/// arms are joined with `UNION ALL`.
pub(crate) const KEY_STATE_ARM: &str = "SELECT k.tenant_id, k.environment_id, k.kind, k.key, \
    k.request_sha256, k.status_code, k.response_body, k.message_id, m.message_type, \
    m.key_fingerprint AS fingerprint FROM idempotency_keys k LEFT JOIN messages m ON m.id = k.message_id \
    WHERE k.tenant_id = ";

/// The head of [`INSERT_AUDIT`] for several events (their `VALUES` follow).
pub(crate) const INSERT_AUDITS_HEAD: &str = "INSERT INTO audit_events \
    (occurred_at, action, tenant_id, environment_id, message_type, fingerprint, \
     idempotency_key, detected_by, message_id, details) ";

/// The message currently holding a fingerprint.
pub(crate) const FIND_ACTIVE: &str = "SELECT id, message_type, mestyp, docnum, \
    key_fingerprint AS fingerprint, received_at, fingerprint_expires_at FROM messages \
    WHERE tenant_id = $1 AND environment_id = $2 AND fingerprint = $3";

/// A message summary by id.
pub(crate) const SUMMARY_BY_ID: &str = "SELECT id, message_type, mestyp, docnum, \
    key_fingerprint AS fingerprint, received_at FROM messages WHERE id = $1";

/// A full message by id.
pub(crate) const MESSAGE_BY_ID: &str = "SELECT m.id, m.tenant_id, m.environment_id, \
    m.message_type, m.mestyp, m.docnum, m.sender, m.key_fingerprint AS fingerprint, \
    m.fingerprint_basis, m.fingerprint_expires_at, (m.fingerprint IS NOT NULL) AS fingerprint_active, \
    m.key_values, m.idempotency_key, m.provider_event_id, m.packet_index, m.content_type, \
    COALESCE(h.payload, m.payload) AS payload, m.received_at \
    FROM messages m LEFT JOIN messages h ON h.id = m.payload_message_id WHERE m.id = $1";

/// Messages stored in one environment.
pub(crate) const COUNT_MESSAGES: &str =
    "SELECT COUNT(*) FROM messages WHERE tenant_id = $1 AND environment_id = $2";

/// Appends an audit event.
pub(crate) const INSERT_AUDIT: &str = "INSERT INTO audit_events \
    (occurred_at, action, tenant_id, environment_id, message_type, fingerprint, \
     idempotency_key, detected_by, message_id, details) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// The columns of an audit event, for the dynamic audit query.
pub(crate) const AUDIT_COLUMNS: &str = "SELECT id, occurred_at, action, tenant_id, \
    environment_id, message_type, fingerprint, idempotency_key, detected_by, message_id, \
    details FROM audit_events WHERE 1 = 1";

/// Seeds a message type from the configuration without undoing an admin's edit.
pub(crate) const SEED_TYPE: &str = "INSERT INTO message_types \
    (tenant_id, id, duplicate_key_fields, exclude_fields, duplicate_window_seconds, source, updated_at) \
    VALUES ($1, $2, $3, $4, $5, 'config', $6) \
    ON CONFLICT (tenant_id, id) DO UPDATE SET \
    duplicate_key_fields = excluded.duplicate_key_fields, exclude_fields = excluded.exclude_fields, \
    duplicate_window_seconds = excluded.duplicate_window_seconds, updated_at = excluded.updated_at \
    WHERE message_types.source = 'config'";

/// Removes a config-seeded type that the configuration no longer lists.
pub(crate) const DELETE_CONFIG_TYPE: &str =
    "DELETE FROM message_types WHERE tenant_id = $1 AND id = $2 AND source = 'config'";

/// All message types.
pub(crate) const LIST_TYPES: &str = "SELECT tenant_id, id, duplicate_key_fields, exclude_fields, \
    duplicate_window_seconds, source, updated_at FROM message_types ORDER BY tenant_id, id";

/// Seeds an integration from the configuration without undoing an admin's edit.
pub(crate) const SEED_INTEGRATION: &str = "INSERT INTO integrations \
    (id, tenant_id, environment_id, definition, source, updated_at) \
    VALUES ($1, $2, $3, $4, 'config', $5) \
    ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, \
    environment_id = excluded.environment_id, definition = excluded.definition, \
    updated_at = excluded.updated_at WHERE integrations.source = 'config'";

/// Removes a config-seeded integration that the configuration no longer lists.
pub(crate) const DELETE_CONFIG_INTEGRATION: &str =
    "DELETE FROM integrations WHERE id = $1 AND source = 'config'";

/// All integrations.
pub(crate) const LIST_INTEGRATIONS: &str = "SELECT id, tenant_id, environment_id, definition, \
    source, updated_at FROM integrations ORDER BY id";

/// An admin's change of a message type; the row stops following the config.
pub(crate) const PUT_TYPE: &str = "INSERT INTO message_types \
    (tenant_id, id, duplicate_key_fields, exclude_fields, duplicate_window_seconds, source, updated_at) \
    VALUES ($1, $2, $3, $4, $5, 'admin', $6) \
    ON CONFLICT (tenant_id, id) DO UPDATE SET \
    duplicate_key_fields = excluded.duplicate_key_fields, exclude_fields = excluded.exclude_fields, \
    duplicate_window_seconds = excluded.duplicate_window_seconds, source = 'admin', \
    updated_at = excluded.updated_at";

/// One message type.
pub(crate) const GET_TYPE: &str = "SELECT tenant_id, id, duplicate_key_fields, exclude_fields, \
    duplicate_window_seconds, source, updated_at FROM message_types WHERE tenant_id = $1 AND id = $2";

/// An admin's change of an integration.
pub(crate) const PUT_INTEGRATION: &str = "INSERT INTO integrations \
    (id, tenant_id, environment_id, definition, source, updated_at) \
    VALUES ($1, $2, $3, $4, 'admin', $5) \
    ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, \
    environment_id = excluded.environment_id, definition = excluded.definition, \
    source = 'admin', updated_at = excluded.updated_at";

/// One integration.
pub(crate) const GET_INTEGRATION: &str = "SELECT id, tenant_id, environment_id, definition, \
    source, updated_at FROM integrations WHERE id = $1";

/// Message metadata for lookups (no payload).
pub(crate) const MESSAGE_META_COLUMNS: &str = "SELECT id, tenant_id, environment_id, message_type, \
    mestyp, docnum, sender, key_fingerprint AS fingerprint, fingerprint_basis, \
    fingerprint_expires_at, (fingerprint IS NOT NULL) AS fingerprint_active, idempotency_key, \
    provider_event_id, packet_index, content_type, received_at FROM messages WHERE 1 = 1";

/// Releases a batch of fingerprints whose window has passed.
pub(crate) const RELEASE_BATCH: &str = "UPDATE messages SET fingerprint = NULL WHERE id IN \
    (SELECT id FROM messages WHERE fingerprint IS NOT NULL AND fingerprint_expires_at <= $1 LIMIT $2)";

/// Deletes a batch of messages older than the cutoff whose fingerprint no longer
/// blocks and whose body no packet sibling still points to.
pub(crate) const PURGE_MESSAGES: &str = "DELETE FROM messages WHERE id IN \
    (SELECT m.id FROM messages m WHERE m.received_at < $1 \
     AND (m.fingerprint IS NULL OR m.fingerprint_expires_at <= $2) \
     AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.payload_message_id = m.id) LIMIT $3)";

/// Deletes a batch of request keys older than the cutoff.
pub(crate) const PURGE_KEYS: &str = "DELETE FROM idempotency_keys \
    WHERE (tenant_id, environment_id, kind, key) IN \
    (SELECT tenant_id, environment_id, kind, key FROM idempotency_keys WHERE created_at < $1 LIMIT $2)";

/// The head of a purge of some request keys older than the cutoff (its
/// selection, `LIMIT` and closing parenthesis follow).
pub(crate) const PURGE_KEYS_HEAD: &str = "DELETE FROM idempotency_keys \
    WHERE (tenant_id, environment_id, kind, key) IN \
    (SELECT tenant_id, environment_id, kind, key FROM idempotency_keys WHERE created_at < ";

/// Deletes a batch of audit events older than the cutoff.
pub(crate) const PURGE_AUDIT: &str = "DELETE FROM audit_events WHERE id IN \
    (SELECT id FROM audit_events WHERE occurred_at < $1 LIMIT $2)";
