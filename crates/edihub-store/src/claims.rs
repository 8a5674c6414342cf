//! Where a fingerprint's claim lives: the one part of the schema that
//! differs between the backends.
//!
//! SQLite keeps it on the message row: `messages.fingerprint` is set while
//! the window lasts and cleared when released, and a partial unique index
//! on it arbitrates races. PostgreSQL partitions `messages` by time, and a
//! unique index on a partitioned table must include the partition key, so
//! its claims are rows of `message_claims`, an unpartitioned table whose
//! primary key (tenant, environment, fingerprint) is the arbiter; releasing
//! a claim deletes its row and message rows are never updated after their
//! insert (see docs/scale.md, "Partitioning"). Each constant is the SQL text
//! one statement needs for that difference; the statements themselves stay
//! written once, in [`crate::ingest::statements`].
//!
//! Two more differences follow from PostgreSQL's insert being a chain of
//! CTEs: `OUTBOX_TAIL` writes the inserted messages' outbox rows in the
//! same statement (SQLite's row trigger does that; migration 0013 says why
//! PostgreSQL has no trigger for it), and the insert's answer also names
//! the holders of the fingerprints it could not claim, which saves the
//! duplicates' holder probe its round trip.

/// The SQL text that depends on where claims live.
pub(crate) trait ClaimSql {
    /// The message insert up to its rows' `VALUES` (19 columns, bound by
    /// `IngestSql::push_row`, the fingerprint twice).
    const INSERT_HEAD: &'static str;
    /// After the `VALUES`: inserts each row whose fingerprint it claimed
    /// (or that has none), `ON CONFLICT DO NOTHING` on the claim, and
    /// returns the inserted ids (followed by [`ClaimSql::OUTBOX_TAIL`]). A
    /// second row of one fingerprint in the same list meets the first one's
    /// claim.
    const INSERT_TAIL: &'static str;
    /// Follows every message insert: writes the outbox rows of the inserted
    /// messages (one per enabled destination of the environment whose
    /// `message_types` admit the message) in the same statement.
    /// PostgreSQL: a CTE over the insert's `RETURNING` (see migration 0013
    /// for why not a trigger); SQLite: empty, its row trigger writes them.
    const OUTBOX_TAIL: &'static str;
    /// Ends the keyed batch's statement (after [`ClaimSql::OUTBOX_TAIL`]):
    /// returns the inserted ids. PostgreSQL only (SQLite has no such
    /// statement).
    const ANSWER_INSERTED: &'static str;
    /// Ends the message insert (after [`ClaimSql::OUTBOX_TAIL`]): returns
    /// the inserted ids and, on PostgreSQL, also the holders the statement
    /// saw of the fingerprints it could not claim (rows of
    /// `statements::InsertAnswer`), which saves the probe for them. A holder
    /// that committed while the statement ran, or a row earlier in the same
    /// list, is not among them. SQLite: empty, `INSERT_TAIL` returns the
    /// ids, and the probe runs in-process anyway.
    const ANSWER_INSERTED_AND_HOLDERS: &'static str;
    /// One holder probe (a [`crate::ingest::statements::ScopedHolder`] row)
    /// up to the tenant's bound value.
    const HOLDER_ARM: &'static str;
    /// The holder probe's environment filter, before its bound value.
    const HOLDER_ENVIRONMENT: &'static str;
    /// The holder probe's fingerprint filter, before its bound value.
    const HOLDER_FINGERPRINT: &'static str;
    /// Releases one claim whose window ended: `$1` tenant, `$2`
    /// environment, `$3` fingerprint, `$4` now.
    const RELEASE_EXPIRED: &'static str;
}

impl ClaimSql for sqlx::Postgres {
    /// `v` is read twice (claims, then messages), and PostgreSQL
    /// materialises a CTE read twice: every row, payload included, copied
    /// into a tuple store that spills to a temporary file past `work_mem`.
    /// Inlined, each read takes the bound parameters as they are; a 10 MB
    /// body's insert ran 30–40 ms faster (BENCHMARKS.md, "Large bodies").
    const INSERT_HEAD: &'static str = "WITH v (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, fingerprint, \
        key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
        provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) AS NOT MATERIALIZED (";
    /// The message row has no `fingerprint` column: its claim is the
    /// `message_claims` row.
    const INSERT_TAIL: &'static str = "), c AS (INSERT INTO message_claims \
        (tenant_id, environment_id, fingerprint, message_id, expires_at, message_type, mestyp, docnum, \
        received_at) SELECT tenant_id, environment_id, fingerprint, id, fingerprint_expires_at, \
        message_type, mestyp, docnum, received_at FROM v \
        WHERE fingerprint IS NOT NULL ON CONFLICT DO NOTHING RETURNING message_id), \
        m AS (INSERT INTO messages (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, \
        key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
        provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, sender, \
        key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
        provider_event_id, packet_index, content_type, payload, received_at, payload_message_id \
        FROM v WHERE v.fingerprint IS NULL OR v.id IN (SELECT message_id FROM c) \
        RETURNING id, tenant_id, environment_id, message_type, received_at)";
    /// Follows an insert CTE `m` that returns the inserted messages' id,
    /// scope, type and receive time.
    const OUTBOX_TAIL: &'static str = ", o AS (INSERT INTO deliveries \
        (message_id, destination_id, status, attempts, next_attempt_at, created_at, updated_at) \
        SELECT m.id, d.id, 'pending', 0, m.received_at, m.received_at, m.received_at FROM m \
        JOIN destinations d ON d.tenant_id = m.tenant_id AND d.environment_id = m.environment_id \
        WHERE d.enabled AND (d.message_types IS NULL OR d.message_types ? m.message_type))";
    const ANSWER_INSERTED: &'static str = " SELECT id FROM m";
    /// The claims as the statement's snapshot shows them: those committed
    /// before it, not those `c` inserted. One primary-key probe per row
    /// that `c` did not claim.
    const ANSWER_INSERTED_AND_HOLDERS: &'static str = " SELECT id, NULL::text AS holder_tenant_id, \
        NULL::text AS holder_environment_id, NULL::text AS message_type, NULL::text AS mestyp, \
        NULL::text AS docnum, NULL::text AS fingerprint, NULL::timestamptz AS received_at, \
        NULL::timestamptz AS fingerprint_expires_at FROM m UNION ALL \
        SELECT h.message_id, h.tenant_id, h.environment_id, h.message_type, h.mestyp, h.docnum, \
        h.fingerprint, h.received_at, NULLIF(h.expires_at, 'infinity') FROM v JOIN message_claims h \
        ON h.tenant_id = v.tenant_id AND h.environment_id = v.environment_id \
        AND h.fingerprint = v.fingerprint WHERE v.id NOT IN (SELECT message_id FROM c)";
    /// The claim alone: it carries what the answer names of its holder.
    /// A join to `messages` by id would lock and open every partition per
    /// probe (it cannot be pruned at planning; make bench's S2 ran at a
    /// tenth of S1 with it, docs/scale.md).
    const HOLDER_ARM: &'static str = "SELECT c.tenant_id, c.environment_id, c.message_id AS id, \
        c.message_type, c.mestyp, c.docnum, c.fingerprint, c.received_at, \
        NULLIF(c.expires_at, 'infinity') AS fingerprint_expires_at \
        FROM message_claims c WHERE c.tenant_id = ";
    const HOLDER_ENVIRONMENT: &'static str = " AND c.environment_id = ";
    const HOLDER_FINGERPRINT: &'static str = " AND c.fingerprint = ";
    const RELEASE_EXPIRED: &'static str = "DELETE FROM message_claims \
        WHERE tenant_id = $1 AND environment_id = $2 AND fingerprint = $3 AND expires_at <= $4";
}

impl ClaimSql for sqlx::Sqlite {
    const INSERT_HEAD: &'static str = "INSERT INTO messages (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, fingerprint, \
        key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
        provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) ";
    const INSERT_TAIL: &'static str = " ON CONFLICT (tenant_id, environment_id, fingerprint) \
        WHERE fingerprint IS NOT NULL DO NOTHING RETURNING id";
    const OUTBOX_TAIL: &'static str = "";
    const ANSWER_INSERTED: &'static str = "";
    const ANSWER_INSERTED_AND_HOLDERS: &'static str = "";
    const HOLDER_ARM: &'static str = "SELECT tenant_id, environment_id, id, message_type, mestyp, \
        docnum, key_fingerprint AS fingerprint, received_at, fingerprint_expires_at FROM messages \
        WHERE tenant_id = ";
    const HOLDER_ENVIRONMENT: &'static str = " AND environment_id = ";
    const HOLDER_FINGERPRINT: &'static str = " AND fingerprint = ";
    const RELEASE_EXPIRED: &'static str = "UPDATE messages SET fingerprint = NULL \
        WHERE tenant_id = $1 AND environment_id = $2 AND fingerprint = $3 \
        AND fingerprint_expires_at <= $4";
}
