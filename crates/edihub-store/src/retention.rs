//! Retention: fingerprints past their window are released, and old
//! messages, request keys and audit events deleted, a batch at a time.
//!
//! Each step deletes `LIMIT n` rows through a sub-select, so a purge never
//! holds a table-wide lock and live traffic interleaves with it; the caller
//! repeats a step until a batch comes back short. The message purge is
//! the one step whose statements differ per backend ([`crate::message_purge`]).

use chrono::{DateTime, Utc};
use sqlx::{Encode, Executor, IntoArguments, QueryBuilder, Type};

use crate::claims::ClaimSql;
use crate::message_purge::MessagePurgeSql;
use crate::{KeyPurge, Result, RetentionStep};

const PURGE_KEYS: &str = "DELETE FROM idempotency_keys \
    WHERE (tenant_id, environment_id, kind, key) IN \
    (SELECT tenant_id, environment_id, kind, key FROM idempotency_keys WHERE created_at < $1 LIMIT $2)";
/// Its selection, `LIMIT` and closing parenthesis follow.
const PURGE_SOME_KEYS: &str = "DELETE FROM idempotency_keys \
    WHERE (tenant_id, environment_id, kind, key) IN \
    (SELECT tenant_id, environment_id, kind, key FROM idempotency_keys WHERE created_at < ";
/// The outer `occurred_at < $1` repeats the inner one so that PostgreSQL
/// plans the delete over the audit partitions before the cutoff only, not
/// over every one (`audit_events` is partitioned by `occurred_at`).
const PURGE_AUDIT: &str = "DELETE FROM audit_events WHERE occurred_at < $1 AND id IN \
    (SELECT id FROM audit_events WHERE occurred_at < $1 LIMIT $2)";

/// How many rows a statement changed: each backend's result type has it,
/// but sqlx's generic one does not.
pub(crate) trait RowsAffected {
    /// Rows inserted, updated or deleted.
    fn rows(&self) -> u64;
}

impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn rows(&self) -> u64 {
        self.rows_affected()
    }
}

impl RowsAffected for sqlx::sqlite::SqliteQueryResult {
    fn rows(&self) -> u64 {
        self.rows_affected()
    }
}

/// The retention statements; each returns the rows it changed.
pub(crate) trait RetentionSql: sqlx::Database {
    /// One batch of `step` (see [`crate::Store::retention_step`]).
    fn retention_step(
        conn: &mut Self::Connection,
        step: RetentionStep,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> impl Future<Output = Result<u64>> + Send;
    /// One batch of the request keys `which` names (see [`crate::Store::purge_keys`]).
    fn purge_keys(
        conn: &mut Self::Connection,
        which: KeyPurge<'_>,
        cutoff: DateTime<Utc>,
        batch: i64,
    ) -> impl Future<Output = Result<u64>> + Send;
}

impl<DB> RetentionSql for DB
where
    DB: sqlx::Database + ClaimSql + MessagePurgeSql + sqlx::database::HasStatementCache,
    DB::Arguments: IntoArguments<DB>,
    DB::QueryResult: RowsAffected,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> i32: Encode<'e, DB> + Type<DB>,
    for<'e> i64: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
{
    async fn retention_step(
        conn: &mut DB::Connection,
        step: RetentionStep,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        let q = match step {
            RetentionStep::ReleaseFingerprints => sqlx::query(DB::RELEASE_BATCH).bind(now).bind(batch),
            RetentionStep::PurgeMessages => return DB::purge_messages(conn, cutoff, now, batch).await,
            RetentionStep::PurgeKeys => sqlx::query(PURGE_KEYS).bind(cutoff).bind(batch),
            RetentionStep::PurgeAudit => sqlx::query(PURGE_AUDIT).bind(cutoff).bind(batch),
        };
        // Planned each time with its cutoff known: a run comes once an
        // interval, and a generic plan's guess for `received_at < $1` (a
        // third of each partition) would read whole partitions.
        Ok(q.persistent(false).execute(&mut *conn).await?.rows())
    }

    async fn purge_keys(
        conn: &mut DB::Connection,
        which: KeyPurge<'_>,
        cutoff: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        let mut q = QueryBuilder::<DB>::new(PURGE_SOME_KEYS);
        q.push_bind(cutoff);
        let (negate, integrations) = match which {
            KeyPurge::AllExcept(ids) => (true, ids),
            KeyPurge::EventIdsOf(id) => (false, std::slice::from_ref(id)),
        };
        if !integrations.is_empty() {
            q.push(if negate { " AND NOT " } else { " AND " });
            q.push("(kind = 'provider_event_id' AND (");
            // Event ids are stored as `<integration>:<id>`.
            for (i, id) in integrations.iter().enumerate() {
                let prefix = format!("{id}:");
                let len = i32::try_from(prefix.chars().count()).unwrap_or(i32::MAX);
                q.push(if i == 0 { "substr(key, 1, " } else { " OR substr(key, 1, " });
                q.push_bind(len).push(") = ").push_bind(prefix);
            }
            q.push("))");
        } else if !negate {
            return Ok(0);
        }
        q.push(" LIMIT ").push_bind(batch).push(")");
        Ok(q.build().execute(&mut *conn).await?.rows())
    }
}
