//! PostgreSQL's message insert: one statement that claims each row's
//! fingerprint, inserts the messages that claimed theirs (or have none),
//! writes their outbox rows and answers with the inserted ids and the
//! holders it saw of the fingerprints it could not claim, with the
//! deliveries it leased to the caller (a row's [`Row::lease`]: their
//! worker attempts them without a claim).
//!
//! `messages` is partitioned by time, and a unique index on a partitioned
//! table must include the partition key, so a fingerprint's claim is a row
//! of `message_claims`, an unpartitioned table whose primary key (tenant,
//! environment, fingerprint) is the arbiter; releasing a claim deletes its
//! row, and message rows are never updated after their insert (see
//! docs/scale.md, "Partitioning"). The outbox rows are a CTE over the
//! insert's `RETURNING` (migration 0013 says why not a trigger). Payloads
//! of a megabyte or more are not bound but uploaded first (`upload`).

use sqlx::postgres::PgArguments;
use sqlx::query_builder::Separated;
use sqlx::types::Json;
use sqlx::{Arguments, PgConnection, Postgres, QueryBuilder};

use crate::Result;
use crate::ingest::insert_answer::{InsertAnswer, Inserted};
use crate::ingest::statements::Row;

use super::upload::{self, UPLOADED_PAYLOAD, is_uploaded};

/// The columns of `v`, bound per row by [`push_row`].
const ROW_COLUMNS: usize = 19;

/// Binds one message row: the [`ROW_COLUMNS`] columns of `v` (the fingerprint twice,
/// as the claim's and as the message's `key_fingerprint`). An uploaded
/// payload binds NULL (see `upload`); only [`insert_messages`] uploads, the
/// keyed batch carries payloads of at most 64 KiB (`group::MAX_PAYLOAD`).
pub(super) fn push_row(b: &mut Separated<'_, Postgres, &'static str>, r: &Row<'_>) {
    let m = r.message;
    b.push_bind(m.id)
        .push_bind(&r.scope.tenant_id)
        .push_bind(&r.scope.environment_id)
        .push_bind(&m.message_type)
        .push_bind(&m.mestyp)
        .push_bind(&m.docnum)
        .push_bind(&m.sender)
        .push_bind(&m.fingerprint)
        .push_bind(&m.fingerprint)
        .push_bind(&m.fingerprint_basis)
        .push_bind(r.expires_at())
        .push_bind(Json(&m.key_values))
        .push_bind(&m.idempotency_key)
        .push_bind(&m.provider_event_id)
        .push_bind(m.packet_index)
        .push_bind(&m.content_type)
        .push_bind((!is_uploaded(r)).then(|| r.stored_payload()))
        .push_bind(r.now)
        .push_bind(r.payload_holder);
}

/// The leases `rows` ask for ([`Row::lease`]), as the three arrays the
/// insert joins its deliveries to: message ids, destinations, until when.
type LeaseColumns = (Vec<uuid::Uuid>, Vec<String>, Vec<chrono::DateTime<chrono::Utc>>);

fn leases(rows: &[Row<'_>]) -> LeaseColumns {
    let mut columns = LeaseColumns::default();
    for r in rows {
        for (destination, until) in r.lease.map(|l| l.to.as_slice()).unwrap_or_default() {
            columns.0.push(r.message.id);
            columns.1.push(destination.clone());
            columns.2.push(*until);
        }
    }
    columns
}

/// What `messages.payload` reads from `v` when no payload was uploaded.
const BOUND_PAYLOAD: &str = "payload";

/// What a row binds besides its payload, generously: ids, names, the
/// fingerprint twice, key values, timestamps.
const ROW_BINDS_BYTES: usize = 2048;

/// Arguments with room for `rows`' binds, their bound payloads (of under
/// 1 MiB; larger ones are uploaded) included. Without it the buffer grows
/// by doubling, and a payload pushed whole and then followed by one more
/// bind leaves it at twice the payload's size (and both copies alive while
/// it moves).
fn arguments_for(rows: &[Row<'_>]) -> PgArguments {
    let mut arguments = PgArguments::default();
    let payloads: usize = rows.iter().filter(|r| !is_uploaded(r)).map(|r| r.stored_payload().len()).sum();
    arguments.reserve(rows.len() * ROW_COLUMNS, payloads + rows.len() * ROW_BINDS_BYTES);
    arguments
}

/// Inserts `rows` (see the module docs). `v` is read twice (claims, then
/// messages), and PostgreSQL materialises a CTE read twice: every row,
/// payload included, copied into a tuple store that spills to a temporary
/// file past `work_mem`; inlined (`NOT MATERIALIZED`), each read takes the
/// bound parameters as they are (BENCHMARKS.md, scenario S5). The
/// answer's holders are the claims as the statement's snapshot shows them:
/// those committed before it, not those `c` inserted, one primary-key probe
/// per row that `c` did not claim. A holder that committed while the
/// statement ran, or a row earlier in the same list, is not among them.
pub(crate) async fn insert_messages(conn: &mut PgConnection, rows: &[Row<'_>]) -> Result<Inserted> {
    let uploaded = upload::upload(conn, rows).await?;
    let mut q = QueryBuilder::<Postgres>::with_arguments(
        "WITH v (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, fingerprint, \
        key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
        provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) AS NOT MATERIALIZED (",
        arguments_for(rows),
    );
    q.push_values(rows, |mut b, r| push_row(&mut b, r));
    q.push(
        "), c AS (INSERT INTO message_claims \
        (tenant_id, environment_id, fingerprint, message_id, expires_at, message_type, mestyp, docnum, \
        received_at) SELECT tenant_id, environment_id, fingerprint, id, fingerprint_expires_at, \
        message_type, mestyp, docnum, received_at FROM v \
        WHERE fingerprint IS NOT NULL ON CONFLICT DO NOTHING RETURNING message_id), \
        m AS (INSERT INTO messages (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, \
        key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
        provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, sender, \
        key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
        provider_event_id, packet_index, content_type, ",
    );
    q.push(if uploaded { UPLOADED_PAYLOAD } else { BOUND_PAYLOAD });
    q.push(
        ", received_at, payload_message_id FROM v WHERE v.fingerprint IS NULL OR v.id IN (SELECT message_id FROM c) \
        RETURNING id, tenant_id, environment_id, message_type, received_at)\
        , o AS (INSERT INTO deliveries \
        (message_id, destination_id, status, attempts, next_attempt_at, created_at, updated_at, lease_until) \
        SELECT m.id, d.id, 'pending', 0, m.received_at, m.received_at, m.received_at, l.until FROM m \
        JOIN destinations d ON d.tenant_id = m.tenant_id AND d.environment_id = m.environment_id \
        LEFT JOIN unnest(",
    );
    let (lease_ids, lease_to, lease_until) = leases(rows);
    q.push_bind(lease_ids).push("::uuid[], ").push_bind(lease_to).push("::text[], ");
    q.push_bind(lease_until);
    q.push(
        "::timestamptz[]) l (message_id, destination_id, until) \
        ON l.message_id = m.id AND l.destination_id = d.id \
        WHERE d.enabled AND (d.message_types IS NULL OR d.message_types ? m.message_type) \
        RETURNING message_id, destination_id, lease_until, created_at) \
        SELECT id, NULL::text AS holder_tenant_id, \
        NULL::text AS holder_environment_id, NULL::text AS message_type, NULL::text AS mestyp, \
        NULL::text AS docnum, NULL::text AS fingerprint, NULL::timestamptz AS received_at, \
        NULL::timestamptz AS fingerprint_expires_at, NULL::text AS leased_to, \
        NULL::timestamptz AS lease_until FROM m UNION ALL \
        SELECT message_id, NULL, NULL, NULL, NULL, NULL, NULL, created_at, NULL, destination_id, \
        lease_until FROM o WHERE lease_until IS NOT NULL UNION ALL \
        SELECT h.message_id, h.tenant_id, h.environment_id, h.message_type, h.mestyp, h.docnum, \
        h.fingerprint, h.received_at, NULLIF(h.expires_at, 'infinity'), NULL, NULL FROM v \
        JOIN message_claims h ON h.tenant_id = v.tenant_id AND h.environment_id = v.environment_id \
        AND h.fingerprint = v.fingerprint WHERE v.id NOT IN (SELECT message_id FROM c)",
    );
    // The statement that reads uploads names a table of this transaction:
    // it is not kept prepared.
    let answer: Vec<InsertAnswer> = q.build_query_as().persistent(!uploaded).fetch_all(&mut *conn).await?;
    if uploaded {
        upload::clear(conn).await?;
    }
    Inserted::from_answer(answer)
}
