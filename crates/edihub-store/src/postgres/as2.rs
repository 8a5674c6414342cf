//! PostgreSQL's statements of AS2 messages received (see [`crate::as2`]).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::as2::{As2Claim, As2Filter, As2Key, As2MdnAttempt, As2MessageRow, As2Settlement, NewAs2Message};
use crate::{MDN_PENDING, MDN_PROCESSING, MDN_SENT, Result, StoreError};

/// Claims `new`'s Message-ID, in the caller's transaction: the insert
/// that the primary key lets only one transaction make; a repeat reads the
/// row it met and writes its audit event. The row can vanish between the
/// two (its message failed and released it): then the insert is tried again.
pub(crate) async fn claim(conn: &mut PgConnection, new: &NewAs2Message) -> Result<As2Claim> {
    for _ in 0..3 {
        if insert(conn, new).await? {
            return Ok(As2Claim::New);
        }
        if let Some(row) = get(conn, &new.key).await? {
            super::audit::insert_audits(conn, &[(new.received_at, new.repeat_event(&row))]).await?;
            return Ok(new.claim_of(row));
        }
    }
    Err(StoreError::Invariant(format!("the AS2 Message-ID {} neither claimed nor held", new.key.message_id)))
}

/// Inserts `new`'s row unless its Message-ID is held; whether it did. On
/// its own (autocommit) it is the whole claim of a new Message-ID, which
/// is the common case: only a repeat needs [`claim`]'s transaction.
pub(crate) async fn insert(conn: &mut PgConnection, new: &NewAs2Message) -> Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO as2_messages (station, partner, message_id, tenant_id, environment_id, \
        payload_sha256, received_at, mdn_mode, mdn_status) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
        ON CONFLICT (station, partner, message_id) DO NOTHING",
    )
    .bind(&new.key.station)
    .bind(&new.key.partner)
    .bind(&new.key.message_id)
    .bind(&new.scope.tenant_id)
    .bind(&new.scope.environment_id)
    .bind(&new.payload_sha256)
    .bind(new.received_at)
    .bind(&new.mdn_mode)
    .bind(MDN_PROCESSING)
    .execute(&mut *conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// The row of `key`.
pub(crate) async fn get(conn: &mut PgConnection, key: &As2Key) -> Result<Option<As2MessageRow>> {
    let select = "SELECT station, partner, message_id, tenant_id, environment_id, payload_sha256, received_at, \
        mdn_mode, mdn_status, mdn_url, mdn_headers, mdn_body, stored_message_id, mdn_attempts, mdn_due_at, mdn_error \
        FROM as2_messages WHERE station = $1 AND partner = $2 AND message_id = $3";
    Ok(sqlx::query_as(select)
        .bind(&key.station)
        .bind(&key.partner)
        .bind(&key.message_id)
        .fetch_optional(&mut *conn)
        .await?)
}

/// Completes a claim with its MDN and the message it stored.
pub(crate) async fn settle(conn: &mut PgConnection, key: &As2Key, s: &As2Settlement) -> Result<()> {
    let (status, due) = match &s.async_url {
        Some(_) => (MDN_PENDING, Some(s.now)),
        None => (MDN_SENT, None),
    };
    sqlx::query(
        "UPDATE as2_messages SET mdn_headers = $4, mdn_body = $5, stored_message_id = $6, mdn_status = $7, \
        mdn_url = $8, mdn_due_at = $9 WHERE station = $1 AND partner = $2 AND message_id = $3",
    )
    .bind(&key.station)
    .bind(&key.partner)
    .bind(&key.message_id)
    .bind(sqlx::types::Json(&s.mdn_headers))
    .bind(&s.mdn_body)
    .bind(s.stored_message_id)
    .bind(status)
    .bind(&s.async_url)
    .bind(due)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Deletes a claim that has no MDN yet (its message failed).
pub(crate) async fn release(conn: &mut PgConnection, key: &As2Key) -> Result<()> {
    sqlx::query(
        "DELETE FROM as2_messages WHERE station = $1 AND partner = $2 AND message_id = $3 AND mdn_body IS NULL",
    )
    .bind(&key.station)
    .bind(&key.partner)
    .bind(&key.message_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Newest first, as `filter` says.
pub(crate) async fn list(conn: &mut PgConnection, filter: &As2Filter) -> Result<Vec<As2MessageRow>> {
    let select = "SELECT station, partner, message_id, tenant_id, environment_id, payload_sha256, received_at, \
        mdn_mode, mdn_status, mdn_url, mdn_headers, mdn_body, stored_message_id, mdn_attempts, mdn_due_at, mdn_error \
        FROM as2_messages WHERE ($1::text IS NULL OR partner = $1) \
        AND ($2::timestamptz IS NULL OR received_at < $2) ORDER BY received_at DESC LIMIT $3";
    Ok(sqlx::query_as(select)
        .bind(&filter.partner)
        .bind(filter.before)
        .bind(filter.limit)
        .fetch_all(&mut *conn)
        .await?)
}

/// Leases up to `limit` asynchronous MDNs due at `now` until
/// `lease_until`, counting the attempt; concurrent callers skip each
/// other's rows.
pub(crate) async fn claim_mdns(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<As2MessageRow>> {
    let claim = "UPDATE as2_messages SET mdn_lease_until = $2, mdn_attempts = mdn_attempts + 1 \
        WHERE (station, partner, message_id) IN (SELECT station, partner, message_id FROM as2_messages \
        WHERE mdn_status = 'pending' AND mdn_due_at <= $1 AND (mdn_lease_until IS NULL OR mdn_lease_until <= $1) \
        ORDER BY mdn_due_at LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING station, partner, message_id, tenant_id, environment_id, payload_sha256, received_at, \
        mdn_mode, mdn_status, mdn_url, mdn_headers, mdn_body, stored_message_id, mdn_attempts, mdn_due_at, mdn_error";
    Ok(sqlx::query_as(claim).bind(now).bind(lease_until).bind(limit).fetch_all(&mut *conn).await?)
}

/// Records an attempt to post an asynchronous MDN, releasing its lease.
pub(crate) async fn finish_mdn(conn: &mut PgConnection, done: &As2MdnAttempt) -> Result<()> {
    sqlx::query(
        "UPDATE as2_messages SET mdn_status = $4, mdn_due_at = $5, mdn_error = $6, mdn_lease_until = NULL \
        WHERE station = $1 AND partner = $2 AND message_id = $3",
    )
    .bind(&done.key.station)
    .bind(&done.key.partner)
    .bind(&done.key.message_id)
    .bind(done.status)
    .bind(done.due_at)
    .bind(&done.error)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Deletes up to `batch` AS2 messages received before `cutoff`.
pub(crate) async fn purge(conn: &mut PgConnection, cutoff: DateTime<Utc>, batch: i64) -> Result<u64> {
    let purge = "DELETE FROM as2_messages WHERE (station, partner, message_id) IN \
        (SELECT station, partner, message_id FROM as2_messages WHERE received_at < $1 LIMIT $2)";
    let done = sqlx::query(purge).bind(cutoff).bind(batch).persistent(false).execute(&mut *conn).await?;
    Ok(done.rows_affected())
}
