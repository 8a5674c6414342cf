//! Reading what was stored: a message by id, message lookups and the audit
//! log, for the admin API and the console.
//!
//! Lookups are keyset-paginated (newest first, the last row of a page is
//! the next page's bound), so a page never repeats or skips a row when new
//! ones arrive in between, and each filter is an equality or a range the
//! indexes of `messages` and `audit_events` serve. A key value is matched
//! by containment on PostgreSQL (its GIN index on `key_values`) and as text
//! on SQLite ([`KeyValueMatch`]).

use chrono::{DateTime, Utc};
use sqlx::{Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};
use uuid::Uuid;

use crate::claims::ClaimSql;
use crate::model::{docnum_forms, key_value_pattern};
use crate::{AuditEvent, AuditFilter, MessageMeta, MessageQuery, MessageRow, Result, Scope};

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
/// `ClaimSql::FINGERPRINT_ACTIVE` follows, then [`MESSAGE_META_TAIL`].
const MESSAGE_META_COLUMNS: &str = "SELECT id, tenant_id, environment_id, message_type, \
    mestyp, docnum, sender, key_fingerprint AS fingerprint, fingerprint_basis, \
    fingerprint_expires_at, ";
const MESSAGE_META_TAIL: &str = " AS fingerprint_active, idempotency_key, \
    provider_event_id, packet_index, content_type, received_at FROM messages m WHERE 1 = 1";
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

/// How a backend matches a key value, the one lookup whose SQL differs.
pub(crate) trait KeyValueMatch {
    /// The filter's text before its bound value, the value, and the text
    /// after it.
    fn key_value_clause(value: &str) -> (&'static str, String, &'static str);
}

impl KeyValueMatch for sqlx::Postgres {
    /// Containment, which a GIN index on `key_values` would answer (not
    /// created: it costs every insert; see migration 0011).
    fn key_value_clause(value: &str) -> (&'static str, String, &'static str) {
        let doc = serde_json::json!([{ "values": [value] }]).to_string();
        (" AND key_values @> CAST(", doc, " AS JSONB)")
    }
}

impl KeyValueMatch for sqlx::Sqlite {
    /// The value JSON-quoted inside the key values' text: no index, so it
    /// is matched within the rows the other filters leave.
    fn key_value_clause(value: &str) -> (&'static str, String, &'static str) {
        (" AND CAST(key_values AS TEXT) LIKE ", key_value_pattern(value), " ESCAPE '\\'")
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
    /// Message metadata matching `f`, newest first.
    fn find_messages(
        conn: &mut Self::Connection,
        f: &MessageQuery,
    ) -> impl Future<Output = Result<Vec<MessageMeta>>> + Send;
    /// Audit events matching `f`, newest first.
    fn list_audit(
        conn: &mut Self::Connection,
        f: &AuditFilter,
    ) -> impl Future<Output = Result<Vec<AuditEvent>>> + Send;
}

impl<DB> QuerySql for DB
where
    DB: sqlx::Database + KeyValueMatch + ClaimSql,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'e> i64: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'r> (i64,): FromRow<'r, DB::Row>,
    for<'r> MessageRow: FromRow<'r, DB::Row>,
    for<'r> MessageMeta: FromRow<'r, DB::Row>,
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

    async fn find_messages(conn: &mut DB::Connection, f: &MessageQuery) -> Result<Vec<MessageMeta>> {
        let mut q = QueryBuilder::<DB>::new(MESSAGE_META_COLUMNS);
        q.push(DB::FINGERPRINT_ACTIVE).push(MESSAGE_META_TAIL);
        let filters = [
            (" AND tenant_id = ", &f.tenant),
            (" AND environment_id = ", &f.environment),
            (" AND key_fingerprint = ", &f.fingerprint),
            (" AND idempotency_key = ", &f.idempotency_key),
            (" AND message_type = ", &f.message_type),
            (" AND sender = ", &f.sender),
        ];
        for (clause, value) in filters {
            if let Some(v) = value {
                q.push(clause).push_bind(v);
            }
        }
        for (column, listed) in
            [(" AND tenant_id IN (", &f.tenants), (" AND environment_id IN (", &f.environments)]
        {
            if listed.is_empty() {
                continue;
            }
            let mut values = q.push(column).separated(", ");
            for value in listed {
                values.push_bind(value.clone());
            }
            q.push(")");
        }
        if let Some(docnum) = &f.docnum {
            let mut forms = q.push(" AND docnum IN (").separated(", ");
            for form in docnum_forms(docnum) {
                forms.push_bind(form);
            }
            q.push(")");
        }
        if let Some(value) = &f.key_value {
            let (before, bound, after) = DB::key_value_clause(value);
            q.push(before).push_bind(bound).push(after);
        }
        if let Some(since) = f.since {
            q.push(" AND received_at >= ").push_bind(since);
        }
        if let Some(until) = f.until {
            q.push(" AND received_at < ").push_bind(until);
        }
        if let Some((at, id)) = f.before {
            q.push(" AND (received_at < ").push_bind(at);
            q.push(" OR (received_at = ").push_bind(at).push(" AND id < ").push_bind(id).push("))");
        }
        q.push(" ORDER BY received_at DESC, id DESC LIMIT ").push_bind(f.limit);
        Ok(q.build_query_as().fetch_all(&mut *conn).await?)
    }

    async fn list_audit(conn: &mut DB::Connection, f: &AuditFilter) -> Result<Vec<AuditEvent>> {
        let mut q = QueryBuilder::<DB>::new(AUDIT_COLUMNS);
        let text_filters = [
            (" AND action = ", &f.action),
            (" AND tenant_id = ", &f.tenant),
            (" AND environment_id = ", &f.environment),
            (" AND message_type = ", &f.message_type),
            (" AND fingerprint = ", &f.fingerprint),
        ];
        for (clause, value) in text_filters {
            if let Some(v) = value {
                q.push(clause).push_bind(v);
            }
        }
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
