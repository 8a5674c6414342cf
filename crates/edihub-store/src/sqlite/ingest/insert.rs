//! SQLite's message insert. SQLite keeps a fingerprint's claim on the
//! message row: `messages.fingerprint` is set while the window lasts and
//! cleared when released, and a partial unique index on it arbitrates
//! races. The inserted messages' outbox rows are written by a row trigger
//! (migration 0008); the deliveries a row asks to lease ([`Row::lease`])
//! are leased by a second statement, where no claim took them first.

use sqlx::query_builder::Separated;
use sqlx::types::Json;
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use crate::ingest::insert_answer::{InsertAnswer, Inserted};
use crate::ingest::statements::Row;
use crate::{ClaimedDelivery, Result};

/// Binds one message row: the 19 columns of the insert (the fingerprint
/// twice, as the claim and as `key_fingerprint`, which outlives it).
fn push_row(b: &mut Separated<'_, Sqlite, &'static str>, r: &Row<'_>) {
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
        .push_bind(r.stored_payload())
        .push_bind(r.now)
        .push_bind(r.payload_holder);
}

/// Inserts each of `rows` that claims its fingerprint (or has none);
/// returns the inserted ids. A second row of one fingerprint in the same
/// list meets the first one's claim. The answer names no holders: the
/// probe for them runs in-process anyway.
pub(crate) async fn insert_messages(conn: &mut SqliteConnection, rows: &[Row<'_>]) -> Result<Inserted> {
    let mut q = QueryBuilder::<Sqlite>::new(
        "INSERT INTO messages (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, fingerprint, \
        key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
        provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) ",
    );
    q.push_values(rows, |mut b, r| push_row(&mut b, r));
    q.push(
        " ON CONFLICT (tenant_id, environment_id, fingerprint) \
        WHERE fingerprint IS NOT NULL DO NOTHING RETURNING id",
    );
    let answer: Vec<InsertAnswer> = q.build_query_as().fetch_all(&mut *conn).await?;
    let mut inserted = Inserted::from_answer(answer)?;
    inserted.leased = lease(conn, rows, &inserted.ids).await?;
    Ok(inserted)
}

/// Leases the deliveries that the inserted ones of `rows` ask for (their
/// [`Row::lease`]), each only while no attempt has taken it: the insert
/// commits on its own, and a worker's claim may come between the two.
async fn lease(
    conn: &mut SqliteConnection,
    rows: &[Row<'_>],
    inserted: &[uuid::Uuid],
) -> Result<Vec<ClaimedDelivery>> {
    let asked: Vec<_> = rows
        .iter()
        .filter(|r| inserted.contains(&r.message.id))
        .flat_map(|r| r.lease.iter().flat_map(|l| l.to.iter()).map(|(d, until)| (r.message.id, d, *until)))
        .collect();
    if asked.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = QueryBuilder::<Sqlite>::new("UPDATE deliveries SET lease_until = l.column3 FROM (");
    q.push_values(&asked, |mut b, (id, destination, until)| {
        b.push_bind(*id).push_bind(*destination).push_bind(*until);
    });
    q.push(
        ") AS l WHERE deliveries.message_id = l.column1 AND deliveries.destination_id = l.column2 \
        AND deliveries.status = 'pending' AND deliveries.attempts = 0 AND deliveries.lease_until IS NULL \
        RETURNING message_id, destination_id, attempts, lease_until, created_at",
    );
    Ok(q.build_query_as().fetch_all(&mut *conn).await?)
}
