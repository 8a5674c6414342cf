//! The statements of request keys (an Idempotency-Key, a provider's event
//! id, an interchange's control numbers), written once for both backends
//! like the message statements in [`super::statements`], whose row binder
//! the keyed batch's one statement shares.
//!
//! A key is claimed by inserting it (`ON CONFLICT DO NOTHING`): the claim
//! that returns a row won, every other request with that key replays its
//! kept answer (read by [`KeySql::key_states`]) or is refused as a mismatch.
//! The group insert's keyed batches write each key with the answer of a new
//! message already in it; the transaction path claims first and stores the
//! answer with [`KeySql::finish_keys`] once the message is decided.

use chrono::{DateTime, Utc};
use sqlx::query_builder::Separated;
use sqlx::{Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};
use uuid::Uuid;

use super::statements::{IngestSql, Row};
use crate::claims::ClaimSql;
use crate::{KeyClaim, Result, Scope};

/// A request key to claim, with its scope and time, and the answer it
/// keeps if the request turns out as expected (the group insert's keyed
/// requests expect a new message, so an accepted request's key is written
/// once, complete; `None` leaves the answer to [`KeySql::finish_keys`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Claim<'a> {
    pub scope: &'a Scope,
    pub key: &'a KeyClaim,
    pub now: DateTime<Utc>,
    /// The expected answer (JSON text) and the message it points to.
    pub expected: Option<(&'a str, Option<Uuid>)>,
}

/// A key's stored state. The type and fingerprint of the message it
/// answered for (for the repeat's audit event) are in its answer; only a key
/// stored before answers were data has them read from the message (see
/// [`KeySql::key_states`]).
#[derive(Debug, Clone, FromRow)]
pub(crate) struct KeyState {
    pub(crate) tenant_id: String,
    pub(crate) environment_id: String,
    pub(crate) kind: String,
    pub(crate) key: String,
    pub(crate) request_sha256: String,
    /// The rendered status of a key stored before answers were data (0 otherwise).
    pub(crate) status_code: i32,
    /// The rendered body of such a key.
    pub(crate) response_body: String,
    /// The answer as data (JSON text), `None` until stored.
    pub(crate) answer: Option<String>,
    pub(crate) message_id: Option<Uuid>,
    /// The message's type, for a key without an answer as data.
    #[sqlx(default)]
    pub(crate) message_type: Option<String>,
    /// The message's fingerprint, for a key without an answer as data.
    #[sqlx(default)]
    pub(crate) fingerprint: Option<String>,
}

const CLAIM_KEYS: &str = "INSERT INTO idempotency_keys \
    (tenant_id, environment_id, kind, key, request_sha256, status_code, response_body, created_at, \
     answer, message_id) ";
const CLAIM_KEYS_TAIL: &str = " ON CONFLICT (tenant_id, environment_id, kind, key) DO NOTHING \
    RETURNING tenant_id, environment_id, kind, key";
/// The key claim of [`KeySql::claim_and_insert`], its first CTE: the
/// claims' `VALUES`, each with its message's fingerprint, claimed unless a
/// claim of that fingerprint is visible. Such a request is left to its own
/// transaction, which settles the duplicate; so the statement's claim
/// insert fails only when a claim commits while it runs.
const CLAIM_AND_INSERT_KEYS: &str = "WITH k AS (INSERT INTO idempotency_keys \
    (tenant_id, environment_id, kind, key, request_sha256, status_code, response_body, created_at, \
     answer, message_id) SELECT c.tenant_id, c.environment_id, c.kind, c.key, c.request_sha256, \
     c.status_code, c.response_body, c.created_at, c.answer, c.message_id FROM (";
/// Ends the key claim: only where no claim is visible, returning the
/// message each claimed key expects; then opens the rows' `VALUES`, read
/// twice and so inlined (see `ClaimSql::INSERT_HEAD` for PostgreSQL).
const CLAIM_AND_INSERT_KEYS_TAIL: &str = ") AS c (tenant_id, environment_id, kind, key, request_sha256, \
    status_code, response_body, created_at, answer, message_id, fingerprint) \
    WHERE c.fingerprint IS NULL OR NOT EXISTS (SELECT 1 FROM message_claims m \
    WHERE m.tenant_id = c.tenant_id AND m.environment_id = c.environment_id \
    AND m.fingerprint = c.fingerprint) \
    ON CONFLICT (tenant_id, environment_id, kind, key) DO NOTHING RETURNING message_id), \
    v (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, fingerprint, \
    key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, \
    provider_event_id, packet_index, content_type, payload, received_at, payload_message_id) \
    AS NOT MATERIALIZED (";
/// Ends [`KeySql::claim_and_insert`]: the claimed rows' fingerprint
/// claims, inserted without `ON CONFLICT` (a claim committed meanwhile, or
/// a second row of one fingerprint, fails the statement), and their
/// messages as the CTE `m` that `ClaimSql::OUTBOX_TAIL` and
/// `ClaimSql::ANSWER_INSERTED` follow.
const CLAIM_AND_INSERT_TAIL: &str = "), f AS (INSERT INTO message_claims \
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
const FINISH_KEYS: &str = "WITH v (tenant_id, environment_id, kind, key, answer, message_id) AS (";
const FINISH_KEYS_TAIL: &str = ") UPDATE idempotency_keys SET answer = v.answer, message_id = v.message_id \
    FROM v WHERE idempotency_keys.tenant_id = v.tenant_id \
    AND idempotency_keys.environment_id = v.environment_id \
    AND idempotency_keys.kind = v.kind AND idempotency_keys.key = v.key";
/// The key alone, no join to `messages`: on partitioned PostgreSQL a join
/// by a column's value cannot be pruned when planned, and PostgreSQL 15
/// locks and opens every partition of such a plan on every replay.
const KEY_STATE_ARM: &str = "SELECT tenant_id, environment_id, kind, key, request_sha256, \
    status_code, response_body, answer, message_id FROM idempotency_keys WHERE tenant_id = ";
const RELEASE_EXPIRED_KEY: &str = "DELETE FROM idempotency_keys \
    WHERE tenant_id = $1 AND environment_id = $2 AND kind = $3 AND key = $4 AND created_at <= $5";

/// The key statements on a connection (or transaction) of the backend.
pub(crate) trait KeySql: IngestSql {
    /// Claims `keys` (each the key of the row at its index) and inserts the
    /// messages of the claimed ones in one statement; returns the ids
    /// inserted, which name the claimed keys (each key's expected answer
    /// points to its message). A key whose message's fingerprint has a
    /// visible holder is not claimed. PostgreSQL only (a data-modifying
    /// CTE over `message_claims`; see `Backend::ONE_STATEMENT_KEYED_BATCH`).
    /// The fingerprint claims are inserted without `ON CONFLICT`: a claim
    /// that commits meanwhile fails the whole statement, and nothing of it
    /// is kept.
    fn claim_and_insert(
        conn: &mut Self::Connection,
        keys: &[Claim<'_>],
        rows: &[Row<'_>],
    ) -> impl Future<Output = Result<Vec<Uuid>>> + Send;
    /// Binds one key claim: the 10 columns of `CLAIM_KEYS`.
    fn push_claim(b: &mut Separated<'_, Self, &'static str>, c: &Claim<'_>);
    /// Claims request keys; true for each one this statement claimed (a key
    /// twice in one list is claimed once, by its first row).
    fn claim_keys(
        conn: &mut Self::Connection,
        keys: &[Claim<'_>],
    ) -> impl Future<Output = Result<Vec<bool>>> + Send;
    /// Stores the answer (JSON text) and the message each claimed key answered for.
    fn finish_keys(
        conn: &mut Self::Connection,
        rows: &[(&Scope, &KeyClaim, String, Option<Uuid>)],
    ) -> impl Future<Output = Result<()>> + Send;
    /// The stored state of request keys, with their messages.
    fn key_states(
        conn: &mut Self::Connection,
        keys: &[(&Scope, &KeyClaim)],
    ) -> impl Future<Output = Result<Vec<KeyState>>> + Send;
    /// Deletes the claims among `keys` whose window ended by their `now`
    /// (keys with a window only), so each request may claim its key anew.
    /// A concurrent claimant of the same key waits on the deleted row and
    /// then meets the new claim.
    fn release_expired_keys(
        conn: &mut Self::Connection,
        keys: &[Claim<'_>],
    ) -> impl Future<Output = Result<()>> + Send;
}

impl<DB> KeySql for DB
where
    DB: IngestSql + ClaimSql + sqlx::database::HasStatementCache,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> &'e str: Encode<'e, DB> + Type<DB>,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'e> i32: Encode<'e, DB> + Type<DB>,
    for<'e> Option<String>: Encode<'e, DB>,
    for<'e> Option<&'e str>: Encode<'e, DB>,
    for<'e> Option<Uuid>: Encode<'e, DB>,
    for<'r> (Uuid,): FromRow<'r, DB::Row>,
    for<'r> (String, String, String, String): FromRow<'r, DB::Row>,
    for<'r> KeyState: FromRow<'r, DB::Row>,
    for<'r> super::rendered_keys::KeyMessage: FromRow<'r, DB::Row>,
{
    async fn claim_and_insert(
        conn: &mut DB::Connection,
        keys: &[Claim<'_>],
        rows: &[Row<'_>],
    ) -> Result<Vec<Uuid>> {
        let mut q = QueryBuilder::<DB>::new(CLAIM_AND_INSERT_KEYS);
        q.push_values(keys.iter().zip(rows), |mut b, (c, r)| {
            DB::push_claim(&mut b, c);
            b.push_bind(&r.message.fingerprint);
        });
        q.push(CLAIM_AND_INSERT_KEYS_TAIL);
        q.push_values(rows, |mut b, r| DB::push_row(&mut b, r));
        q.push(CLAIM_AND_INSERT_TAIL).push(DB::OUTBOX_TAIL).push(DB::ANSWER_INSERTED);
        let ids: Vec<(Uuid,)> = q.build_query_as().fetch_all(&mut *conn).await?;
        Ok(ids.into_iter().map(|(id,)| id).collect())
    }

    fn push_claim(b: &mut Separated<'_, DB, &'static str>, c: &Claim<'_>) {
        b.push_bind(&c.scope.tenant_id)
            .push_bind(&c.scope.environment_id)
            .push_bind(c.key.kind.as_str())
            .push_bind(&c.key.key)
            .push_bind(&c.key.request_sha256)
            .push_bind(0_i32)
            .push_bind("")
            .push_bind(c.now)
            .push_bind(c.expected.map(|(answer, _)| answer))
            .push_bind(c.expected.and_then(|(_, id)| id));
    }

    async fn claim_keys(conn: &mut DB::Connection, keys: &[Claim<'_>]) -> Result<Vec<bool>> {
        let mut q = QueryBuilder::<DB>::new(CLAIM_KEYS);
        q.push_values(keys, |mut b, c| DB::push_claim(&mut b, c));
        q.push(CLAIM_KEYS_TAIL);
        let rows: Vec<(String, String, String, String)> = q.build_query_as().fetch_all(&mut *conn).await?;
        let mut taken = vec![false; rows.len()];
        Ok(keys
            .iter()
            .map(|Claim { scope, key, .. }| {
                // Each returned row goes to the first item with its key.
                let hit = rows.iter().enumerate().position(|(i, (t, e, k, n))| {
                    !taken[i]
                        && *t == scope.tenant_id
                        && *e == scope.environment_id
                        && k == key.kind.as_str()
                        && *n == key.key
                });
                hit.map(|i| taken[i] = true).is_some()
            })
            .collect())
    }

    async fn finish_keys(
        conn: &mut DB::Connection,
        rows: &[(&Scope, &KeyClaim, String, Option<Uuid>)],
    ) -> Result<()> {
        let mut q = QueryBuilder::<DB>::new(FINISH_KEYS);
        q.push_values(rows, |mut b, (scope, key, answer, id)| {
            b.push_bind(&scope.tenant_id)
                .push_bind(&scope.environment_id)
                .push_bind(key.kind.as_str())
                .push_bind(&key.key)
                .push_bind(answer)
                .push_bind(*id);
        });
        q.push(FINISH_KEYS_TAIL);
        q.build().execute(&mut *conn).await?;
        Ok(())
    }

    async fn key_states(conn: &mut DB::Connection, keys: &[(&Scope, &KeyClaim)]) -> Result<Vec<KeyState>> {
        // One primary-key probe per distinct key, as `UNION ALL` arms (see
        // `holders` for why not an `IN` list).
        let mut distinct: Vec<(&Scope, &KeyClaim)> = Vec::new();
        for (scope, key) in keys {
            if !distinct.iter().any(|(s, k)| s == scope && k.kind == key.kind && k.key == key.key) {
                distinct.push((scope, key));
            }
        }
        let mut q = QueryBuilder::<DB>::new("");
        for (i, (scope, key)) in distinct.iter().enumerate() {
            q.push(if i == 0 { "" } else { " UNION ALL " });
            q.push(KEY_STATE_ARM).push_bind(&scope.tenant_id);
            q.push(" AND environment_id = ").push_bind(&scope.environment_id);
            q.push(" AND kind = ").push_bind(key.kind.as_str());
            q.push(" AND key = ").push_bind(&key.key);
        }
        let mut states: Vec<KeyState> = q.build_query_as().fetch_all(&mut *conn).await?;
        super::rendered_keys::fill_in_messages(conn, &mut states).await?;
        Ok(states)
    }

    async fn release_expired_keys(conn: &mut DB::Connection, keys: &[Claim<'_>]) -> Result<()> {
        for c in keys {
            let Some(window) = c.key.window_seconds else { continue };
            sqlx::query(RELEASE_EXPIRED_KEY)
                .bind(&c.scope.tenant_id)
                .bind(&c.scope.environment_id)
                .bind(c.key.kind.as_str())
                .bind(&c.key.key)
                .bind(c.now - chrono::Duration::seconds(window))
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }
}
