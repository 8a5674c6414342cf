//! PostgreSQL's status changes owed to SAP senders (see [`crate::sap_status`]).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

use crate::sap_status::{
    Change, DeliveryState, SAP_IN_TARGET, SAP_NOT_CREATED, earned, owed_statuses, refused_text, stored_text,
};
use crate::{
    FinishedAttempt, NewSapStatus, Recorded, Result, SapRefusal, SapStatusRow, SapStatusState, Scope,
};

const COLUMNS: &str = "id, tenant_id, environment_id, message_id, docnum, mestyp, status, text, params, \
    created_at, batch_message_id";

/// The class of the per-message status locks (the two-key advisory lock
/// space, apart from the fingerprint locks' class): "sa".
const MESSAGE_LOCK_CLASS: i32 = 0x7361;

/// Takes the status lock of each message of `ids` until the transaction
/// ends (see [`crate::sap_status`]), one per distinct hash in hash order,
/// so two transactions locking overlapping sets never deadlock. Two
/// messages that share a hash only wait for each other.
async fn lock_messages(conn: &mut PgConnection, ids: &[Uuid]) -> Result<()> {
    sqlx::query(
        "SELECT pg_advisory_xact_lock($1, k) FROM \
         (SELECT DISTINCT hashtext(m::text) AS k FROM unnest($2::uuid[]) AS m ORDER BY k) AS s",
    )
    .bind(MESSAGE_LOCK_CLASS)
    .bind(ids)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Records `changes` in `scope`, each followed by the 41 or 40 its
/// message's deliveries have already earned; a change whose IDoc already
/// has that status pending adds nothing. Returns how many were added.
pub(crate) async fn record(
    conn: &mut PgConnection,
    scope: &Scope,
    changes: &[NewSapStatus],
    now: DateTime<Utc>,
) -> Result<u64> {
    let ids: Vec<Uuid> = changes.iter().map(|c| c.message_id).collect();
    lock_messages(conn, &ids).await?;
    let mut added = 0;
    for c in changes {
        added += record_one(conn, scope, c, now).await?;
        added += record_earned(conn, scope, c, now).await?;
    }
    Ok(added)
}

/// Records `c`'s own change: 39, or for a re-send its message's latest status.
async fn record_one(
    conn: &mut PgConnection,
    scope: &Scope,
    c: &NewSapStatus,
    now: DateTime<Utc>,
) -> Result<u64> {
    let (text, params) = stored_text(c.message_id);
    if c.state == SapStatusState::Stored {
        let change = Change {
            message_id: Some(c.message_id),
            docnum: &c.docnum,
            mestyp: &c.mestyp,
            status: SAP_IN_TARGET,
        };
        return insert_change(conn, scope, change, (text, params), now).await;
    }
    // A re-send: the message's latest status, 39 with the stored text when it has none.
    let done = sqlx::query(
        "INSERT INTO sap_status_changes \
         (tenant_id, environment_id, message_id, docnum, mestyp, status, text, params, created_at) \
         SELECT $1, $2, $3, $4, $5, COALESCE(l.status, '39'), COALESCE(l.text, $6), \
         COALESCE(l.params, $7), $8 \
         FROM (SELECT 1) one LEFT JOIN (SELECT status, text, params FROM sap_status_changes \
         WHERE message_id = $3 ORDER BY id DESC LIMIT 1) l ON true \
         ON CONFLICT (tenant_id, environment_id, docnum, status) WHERE batch_message_id IS NULL DO NOTHING",
    )
    .bind(&scope.tenant_id)
    .bind(&scope.environment_id)
    .bind(c.message_id)
    .bind(&c.docnum)
    .bind(&c.mestyp)
    .bind(text)
    .bind(Json(params))
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected())
}

/// Records the 41 or 40 the deliveries of `c`'s message have earned
/// ([`earned`]), if any: the verdicts that earned it ran before the
/// message had a status, so they recorded none.
async fn record_earned(
    conn: &mut PgConnection,
    scope: &Scope,
    c: &NewSapStatus,
    now: DateTime<Utc>,
) -> Result<u64> {
    let deliveries: Vec<DeliveryState> = sqlx::query_as(
        "SELECT destination_id, status, last_status_code, last_error FROM deliveries \
         WHERE message_id = $1 ORDER BY updated_at, destination_id",
    )
    .bind(c.message_id)
    .fetch_all(&mut *conn)
    .await?;
    let Some((status, (text, params))) = earned(&deliveries) else {
        return Ok(0);
    };
    let change = Change { message_id: Some(c.message_id), docnum: &c.docnum, mestyp: &c.mestyp, status };
    insert_change(conn, scope, change, (text, params), now).await
}

/// Records a 40 with its reason for each of `refusals` in `scope`, about
/// no message (the IDoc was refused, so none holds it); one whose IDoc
/// already has a 40 pending adds nothing. Returns how many were added.
pub(crate) async fn record_refusals(
    conn: &mut PgConnection,
    scope: &Scope,
    refusals: &[SapRefusal],
    now: DateTime<Utc>,
) -> Result<u64> {
    let mut added = 0;
    for r in refusals {
        let (text, params) = refused_text(r);
        let change =
            Change { message_id: None, docnum: &r.docnum, mestyp: &r.mestyp, status: SAP_NOT_CREATED };
        added += insert_change(conn, scope, change, (text, params), now).await?;
    }
    Ok(added)
}

/// Inserts `change` with its text unless its IDoc already has that status
/// pending; returns 1 when it was added.
async fn insert_change(
    conn: &mut PgConnection,
    scope: &Scope,
    change: Change<'_>,
    (text, params): (String, Vec<String>),
    now: DateTime<Utc>,
) -> Result<u64> {
    let done = sqlx::query(
        "INSERT INTO sap_status_changes \
         (tenant_id, environment_id, message_id, docnum, mestyp, status, text, params, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (tenant_id, environment_id, docnum, status) WHERE batch_message_id IS NULL DO NOTHING",
    )
    .bind(&scope.tenant_id)
    .bind(&scope.environment_id)
    .bind(change.message_id)
    .bind(change.docnum)
    .bind(change.mestyp)
    .bind(change.status)
    .bind(text)
    .bind(Json(params))
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected())
}

/// Up to `limit` pending changes of `scope`, oldest first.
pub(crate) async fn pending(conn: &mut PgConnection, scope: &Scope, limit: i64) -> Result<Vec<SapStatusRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM sap_status_changes WHERE tenant_id = $1 AND environment_id = $2 \
         AND batch_message_id IS NULL ORDER BY id LIMIT $3"
    );
    Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(&scope.tenant_id)
        .bind(&scope.environment_id)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?)
}

/// Marks `ids` carried by `batch`, all or none: false (and nothing
/// marked, once the caller rolls back) when another batch took one first,
/// and false for no ids: a status message that carries nothing is not
/// stored.
pub(crate) async fn carry(conn: &mut PgConnection, scope: &Scope, ids: &[i64], batch: Uuid) -> Result<bool> {
    if ids.is_empty() {
        return Ok(false);
    }
    let done = sqlx::query(
        "UPDATE sap_status_changes SET batch_message_id = $3 \
         WHERE tenant_id = $1 AND environment_id = $2 AND id = ANY($4) AND batch_message_id IS NULL",
    )
    .bind(&scope.tenant_id)
    .bind(&scope.environment_id)
    .bind(batch)
    .bind(ids)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == ids.len() as u64)
}

/// The changes about message `id` and those a status message `id` carries, in order.
pub(crate) async fn of_message(conn: &mut PgConnection, id: Uuid) -> Result<Vec<SapStatusRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM sap_status_changes WHERE message_id = $1 \
         UNION SELECT {COLUMNS} FROM sap_status_changes WHERE batch_message_id = $1 ORDER BY id"
    );
    Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_all(&mut *conn).await?)
}

/// The status changes the applied verdicts of `done` make, in their
/// transaction: a delivery that leaves all the message's deliveries
/// delivered records 41, one failed for good 40 with its reason; only for
/// attempts marked [`FinishedAttempt::sap_status`] whose message has a 39
/// (an IDoc of a SAP sender), once per IDoc number. A batch without such
/// attempts costs nothing; one with them takes the messages' status locks,
/// after the deliveries' update, so the insert sees a 39 recorded
/// meanwhile (see [`crate::sap_status`]), then records them all in one
/// `INSERT … SELECT` over the batch's arrays.
pub(crate) async fn after_verdicts(
    conn: &mut PgConnection,
    done: &[FinishedAttempt],
    recorded: &[Recorded],
    now: DateTime<Utc>,
) -> Result<()> {
    let owed = owed_statuses(done, recorded);
    if owed.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = owed.iter().map(|o| o.message_id).collect();
    lock_messages(conn, &ids).await?;
    let statuses: Vec<&str> = owed.iter().map(|o| o.status).collect();
    let texts: Vec<&str> = owed.iter().map(|o| o.text.as_str()).collect();
    let params: Vec<Json<&Vec<String>>> = owed.iter().map(|o| Json(&o.params)).collect();
    let all_delivered: Vec<bool> = owed.iter().map(|o| o.all_delivered).collect();
    sqlx::query(
        "INSERT INTO sap_status_changes \
         (tenant_id, environment_id, message_id, docnum, mestyp, status, text, params, created_at) \
         SELECT s.tenant_id, s.environment_id, s.message_id, s.docnum, s.mestyp, v.status, v.text, v.params, $6 \
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::bool[]) \
              WITH ORDINALITY AS v (message_id, status, text, params, all_delivered, n) \
         JOIN sap_status_changes s ON s.message_id = v.message_id AND s.status = '39' \
         WHERE NOT v.all_delivered OR NOT EXISTS (SELECT 1 FROM deliveries d \
               WHERE d.message_id = v.message_id AND d.status <> 'delivered') \
         ORDER BY v.n, s.id \
         ON CONFLICT (tenant_id, environment_id, docnum, status) WHERE batch_message_id IS NULL DO NOTHING",
    )
    .bind(&ids)
    .bind(&statuses)
    .bind(&texts)
    .bind(&params)
    .bind(&all_delivered)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Deletes up to `batch` status changes recorded before `cutoff` that a
/// status message carried; pending ones stay.
pub(crate) async fn purge(conn: &mut PgConnection, cutoff: DateTime<Utc>, batch: i64) -> Result<u64> {
    let purge = "DELETE FROM sap_status_changes WHERE id IN (SELECT id FROM sap_status_changes \
        WHERE created_at < $1 AND batch_message_id IS NOT NULL LIMIT $2)";
    let done = sqlx::query(purge).bind(cutoff).bind(batch).persistent(false).execute(&mut *conn).await?;
    Ok(done.rows_affected())
}
