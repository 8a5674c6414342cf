//! Reading what was stored: a message by id and the audit log, for the
//! admin API and the console (message search is in
//! [`crate::message_search`]).
//!
//! The audit log is keyset-paginated (newest first, the last row of a page
//! is the next page's bound), so a page never repeats or skips a row when
//! new ones arrive in between, and each filter is an equality or a range
//! the indexes of `audit_events` serve.

use chrono::{DateTime, Utc};
use sqlx::{Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};
use uuid::Uuid;

use crate::claims::ClaimSql;
use crate::{AuditEvent, AuditFilter, MessageRow, Result, Scope};

/// A full message; a packet's messages share the body stored with the first.
/// `ClaimSql::FINGERPRINT_ACTIVE` follows, then [`MESSAGE_BY_ID_TAIL`].
const MESSAGE_BY_ID: &str = "SELECT m.id, m.tenant_id, m.environment_id, \
    m.message_type, m.mestyp, m.docnum, m.sender, m.key_fingerprint AS fingerprint, \
    m.fingerprint_basis, m.fingerprint_expires_at, ";
const MESSAGE_BY_ID_TAIL: &str = " AS fingerprint_active, \
    m.key_values, m.idempotency_key, m.provider_event_id, m.packet_index, m.content_type, \
    COALESCE(h.payload, m.payload) AS payload, m.received_at \
    FROM messages m LEFT JOIN messages h ON h.id = m.payload_message_id WHERE m.id = ";
const COUNT_MESSAGES: &str = "SELECT COUNT(*) FROM messages WHERE tenant_id = $1 AND environment_id = $2";
const AUDIT_COLUMNS: &str = "SELECT id, occurred_at, action, tenant_id, \
    environment_id, message_type, fingerprint, idempotency_key, detected_by, message_id, \
    details FROM audit_events WHERE 1 = 1";

/// Binds `ids` as the comma-separated items of an `IN (…)` list whose
/// opening the statement already has, and closes it. In an unnamed
/// statement PostgreSQL plans such a list with the ids known, so a lookup
/// by message id reads only the partitions they fall in.
pub(crate) fn push_ids<DB>(q: &mut QueryBuilder<DB>, ids: impl IntoIterator<Item = Uuid>)
where
    DB: sqlx::Database,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
{
    let mut list = q.separated(", ");
    for id in ids {
        list.push_bind(id);
    }
    q.push(")");
}

/// Appends ` AND column = value` for each filter that is set (`clause`
/// ends with the `=`), binding the value.
pub(crate) fn push_equalities<DB>(q: &mut QueryBuilder<DB>, filters: &[(&'static str, &Option<String>)])
where
    DB: sqlx::Database,
    for<'e> String: Encode<'e, DB> + Type<DB>,
{
    for (clause, value) in filters {
        if let Some(v) = value {
            q.push(*clause).push_bind(v.clone());
        }
    }
}

/// The lookups' statements.
pub(crate) trait QuerySql: sqlx::Database {
    /// A message by id, payload included.
    fn get_message(
        conn: &mut Self::Connection,
        id: Uuid,
    ) -> impl Future<Output = Result<Option<MessageRow>>> + Send;
    /// How many messages an environment holds.
    fn count_messages(conn: &mut Self::Connection, scope: &Scope)
    -> impl Future<Output = Result<i64>> + Send;
    /// Audit events matching `f`, newest first.
    fn list_audit(
        conn: &mut Self::Connection,
        f: &AuditFilter,
    ) -> impl Future<Output = Result<Vec<AuditEvent>>> + Send;
}

impl<DB> QuerySql for DB
where
    DB: sqlx::Database + ClaimSql,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'e> i64: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'r> (i64,): FromRow<'r, DB::Row>,
    for<'r> MessageRow: FromRow<'r, DB::Row>,
    for<'r> AuditEvent: FromRow<'r, DB::Row>,
{
    async fn get_message(conn: &mut DB::Connection, id: Uuid) -> Result<Option<MessageRow>> {
        let mut q = QueryBuilder::<DB>::new(MESSAGE_BY_ID);
        q.push(DB::FINGERPRINT_ACTIVE).push(MESSAGE_BY_ID_TAIL).push_bind(id);
        Ok(q.build_query_as().fetch_optional(&mut *conn).await?)
    }

    async fn count_messages(conn: &mut DB::Connection, scope: &Scope) -> Result<i64> {
        let (n,): (i64,) = sqlx::query_as(COUNT_MESSAGES)
            .bind(&scope.tenant_id)
            .bind(&scope.environment_id)
            .fetch_one(&mut *conn)
            .await?;
        Ok(n)
    }

    async fn list_audit(conn: &mut DB::Connection, f: &AuditFilter) -> Result<Vec<AuditEvent>> {
        let mut q = QueryBuilder::<DB>::new(AUDIT_COLUMNS);
        push_equalities(
            &mut q,
            &[
                (" AND action = ", &f.action),
                (" AND tenant_id = ", &f.tenant),
                (" AND environment_id = ", &f.environment),
                (" AND message_type = ", &f.message_type),
                (" AND fingerprint = ", &f.fingerprint),
            ],
        );
        if let Some(id) = f.message_id {
            q.push(" AND message_id = ").push_bind(id);
        }
        if let Some(since) = f.since {
            q.push(" AND occurred_at >= ").push_bind(since);
        }
        if let Some(until) = f.until {
            q.push(" AND occurred_at < ").push_bind(until);
        }
        if let Some(cursor) = f.cursor {
            q.push(" AND id < ").push_bind(cursor);
        }
        q.push(" ORDER BY id DESC LIMIT ").push_bind(f.limit);
        Ok(q.build_query_as().fetch_all(&mut *conn).await?)
    }
}
