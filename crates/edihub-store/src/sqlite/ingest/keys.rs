//! SQLite's statements of request keys, the rows of
//! `idempotency_keys` (see [`crate::ingest::keys`]).

use sqlx::query_builder::Separated;
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};
use uuid::Uuid;

use crate::ingest::keys::{Claim, ClaimedKey, KeySql, KeyState, claimed_in_order, distinct_keys};
use crate::ingest::rendered_keys::{KeyMessage, fill_in, rendered_messages};
use crate::{KeyClaim, Result, Scope};

/// Binds one key claim: the 10 columns of an `idempotency_keys` row.
fn push_claim(b: &mut Separated<'_, Sqlite, &'static str>, c: &Claim<'_>) {
    b.push_bind(&c.scope.tenant_id)
        .push_bind(&c.scope.environment_id)
        .push_bind(c.key.kind.as_str())
        .push_bind(&c.key.key)
        .push_bind(&c.key.request_sha256)
        .push_bind(0_i32)
        .push_bind("")
        .push_bind(c.now)
        .push_bind(c.answer())
        .push_bind(c.message_id());
}

impl KeySql for SqliteConnection {
    async fn claim_keys(&mut self, keys: &[Claim<'_>]) -> Result<Vec<bool>> {
        let mut q = QueryBuilder::<Sqlite>::new(
            "INSERT INTO idempotency_keys \
            (tenant_id, environment_id, kind, key, request_sha256, status_code, response_body, created_at, \
             answer, message_id) ",
        );
        q.push_values(keys, |mut b, c| push_claim(&mut b, c));
        q.push(
            " ON CONFLICT (tenant_id, environment_id, kind, key) DO NOTHING \
            RETURNING tenant_id, environment_id, kind, key",
        );
        let returned: Vec<ClaimedKey> = q.build_query_as().fetch_all(&mut *self).await?;
        Ok(claimed_in_order(keys, &returned))
    }

    async fn finish_keys(&mut self, rows: &[(&Scope, &KeyClaim, String, Option<Uuid>)]) -> Result<()> {
        let mut q = QueryBuilder::<Sqlite>::new(
            "WITH v (tenant_id, environment_id, kind, key, answer, message_id) AS (",
        );
        q.push_values(rows, |mut b, (scope, key, answer, id)| {
            b.push_bind(&scope.tenant_id)
                .push_bind(&scope.environment_id)
                .push_bind(key.kind.as_str())
                .push_bind(&key.key)
                .push_bind(answer)
                .push_bind(*id);
        });
        q.push(
            ") UPDATE idempotency_keys SET answer = v.answer, message_id = v.message_id \
            FROM v WHERE idempotency_keys.tenant_id = v.tenant_id \
            AND idempotency_keys.environment_id = v.environment_id \
            AND idempotency_keys.kind = v.kind AND idempotency_keys.key = v.key",
        );
        q.build().execute(&mut *self).await?;
        Ok(())
    }

    /// One primary-key probe per distinct key, as `UNION ALL` arms.
    async fn key_states(&mut self, keys: &[(&Scope, &KeyClaim)]) -> Result<Vec<KeyState>> {
        let mut q = QueryBuilder::<Sqlite>::new("");
        for (i, (scope, key)) in distinct_keys(keys).into_iter().enumerate() {
            q.push(if i == 0 { "" } else { " UNION ALL " });
            q.push(
                "SELECT tenant_id, environment_id, kind, key, request_sha256, \
                status_code, response_body, answer, message_id FROM idempotency_keys WHERE tenant_id = ",
            );
            q.push_bind(&scope.tenant_id).push(" AND environment_id = ").push_bind(&scope.environment_id);
            q.push(" AND kind = ").push_bind(key.kind.as_str()).push(" AND key = ").push_bind(&key.key);
        }
        let mut states: Vec<KeyState> = q.build_query_as().fetch_all(&mut *self).await?;
        let ids = rendered_messages(&states);
        if !ids.is_empty() {
            fill_in(&mut states, &key_messages(self, ids).await?);
        }
        Ok(states)
    }

    async fn release_expired_keys(&mut self, keys: &[Claim<'_>]) -> Result<()> {
        let release = "DELETE FROM idempotency_keys \
            WHERE tenant_id = $1 AND environment_id = $2 AND kind = $3 AND key = $4 AND created_at <= $5";
        for c in keys {
            let Some(before) = c.expired_before() else { continue };
            sqlx::query(release)
                .bind(&c.scope.tenant_id)
                .bind(&c.scope.environment_id)
                .bind(c.key.kind.as_str())
                .bind(&c.key.key)
                .bind(before)
                .execute(&mut *self)
                .await?;
        }
        Ok(())
    }
}

/// The type and fingerprint of the messages `ids` (those rendered keys
/// answered for). Not kept prepared: such keys are rare, and each list
/// length would be a statement of its own.
async fn key_messages(conn: &mut SqliteConnection, ids: Vec<Uuid>) -> Result<Vec<KeyMessage>> {
    let mut q = QueryBuilder::<Sqlite>::new(
        "SELECT id, message_type, key_fingerprint AS fingerprint FROM messages WHERE id IN (",
    );
    crate::queries::push_ids(&mut q, ids);
    Ok(q.build_query_as().persistent(false).fetch_all(&mut *conn).await?)
}
