//! Message search, for the admin API and the console: filters, keyset
//! pages, and a bound on the work of one page.
//!
//! Pages are keyset-paginated (newest first, by `received_at` then id), so
//! a page never repeats or skips a row when new ones arrive in between. Two
//! lookups have an index of their own, a docnum (`messages_docnum`) and a
//! fingerprint (`messages_key_fingerprint`): a page of them reads only the
//! messages they name. Every other filter (tenant, environment, message
//! type, sender, key value, Idempotency-Key) is checked row by row while
//! `messages_received_at` is walked from the newest message. A common
//! sender fills a page within a few hundred rows; a sender with no
//! messages would walk the whole table (0.4 s at a million messages,
//! BENCHMARKS.md, "Console pages"). An index per such filter would cost
//! every insert (6–8 % of S1's throughput each, measured), so instead a
//! page of such a search examines at most [`MessageQuery::scan`] messages
//! and, when that ran out before the page filled, its `next` continues
//! after the oldest message it examined. A search is then a walk of short
//! bounded pages that together see every message once.
//!
//! A key value is matched by containment on PostgreSQL (which a GIN index
//! on `key_values` would answer; migration 0011 says why there is none)
//! and as text on SQLite ([`KeyValueMatch`]).

use chrono::{DateTime, Utc};
use sqlx::{Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};
use uuid::Uuid;

use crate::claims::ClaimSql;
use crate::model::{docnum_forms, key_value_pattern};
use crate::{MessageMeta, MessagePage, MessageQuery, Result};

/// Messages one page of a row-by-row search examines by default: 20 to
/// 30 ms a page at a million messages on the 2-core machine of
/// BENCHMARKS.md ("Console pages").
pub const SEARCH_SCAN: i64 = 10_000;

/// The selected columns; `ClaimSql::FINGERPRINT_ACTIVE` follows, then
/// [`META_FROM_TABLE`] or [`META_FROM_SCAN`].
const META_COLUMNS: &str = "SELECT m.id, m.tenant_id, m.environment_id, m.message_type, \
    m.mestyp, m.docnum, m.sender, m.key_fingerprint AS fingerprint, m.fingerprint_basis, \
    m.fingerprint_expires_at, ";
const META_TAIL: &str = " AS fingerprint_active, m.idempotency_key, m.provider_event_id, \
    m.packet_index, m.content_type, m.received_at FROM ";
const META_FROM_TABLE: &str = "messages m WHERE 1 = 1";
/// The scanned messages: the columns the filters and [`META_COLUMNS`]
/// read (`ClaimSql::CLAIM_COLUMNS` follows), newest first, up to a limit.
const SCAN_HEAD: &str = "(SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, \
    sender, key_fingerprint, fingerprint_basis, fingerprint_expires_at, idempotency_key, \
    provider_event_id, packet_index, content_type, received_at, key_values";
const SCAN_FROM: &str = " FROM messages WHERE 1 = 1";
const NEWEST_FIRST: &str = " ORDER BY received_at DESC, id DESC LIMIT ";
/// The end of a scan: the last message it examined and the one after it.
const SCAN_EDGE: &str = "SELECT received_at, id FROM messages WHERE 1 = 1";

/// How a backend matches a key value, the one filter whose SQL differs.
pub(crate) trait KeyValueMatch {
    /// The filter's text before its bound value, the value, and the text
    /// after it.
    fn key_value_clause(value: &str) -> (&'static str, String, &'static str);
}

impl KeyValueMatch for sqlx::Postgres {
    /// Containment, which a GIN index on `key_values` would answer.
    fn key_value_clause(value: &str) -> (&'static str, String, &'static str) {
        let doc = serde_json::json!([{ "values": [value] }]).to_string();
        (" AND m.key_values @> CAST(", doc, " AS JSONB)")
    }
}

impl KeyValueMatch for sqlx::Sqlite {
    /// The value JSON-quoted inside the key values' text.
    fn key_value_clause(value: &str) -> (&'static str, String, &'static str) {
        (" AND CAST(m.key_values AS TEXT) LIKE ", key_value_pattern(value), " ESCAPE '\\'")
    }
}

/// Whether `f` is a docnum or fingerprint lookup, which an index answers.
fn indexed(f: &MessageQuery) -> bool {
    f.docnum.is_some() || f.fingerprint.is_some()
}

/// Whether `f` has a filter that is checked row by row (see the module doc).
fn checked(f: &MessageQuery) -> bool {
    [&f.tenant, &f.environment, &f.message_type, &f.sender, &f.key_value, &f.idempotency_key]
        .iter()
        .any(|v| v.is_some())
}

/// The filters on each message's own columns (all but the time).
fn push_filters<DB>(q: &mut QueryBuilder<DB>, f: &MessageQuery)
where
    DB: sqlx::Database + KeyValueMatch,
    for<'e> String: Encode<'e, DB> + Type<DB>,
{
    crate::queries::push_equalities(
        q,
        &[
            (" AND m.tenant_id = ", &f.tenant),
            (" AND m.environment_id = ", &f.environment),
            (" AND m.key_fingerprint = ", &f.fingerprint),
            (" AND m.idempotency_key = ", &f.idempotency_key),
            (" AND m.message_type = ", &f.message_type),
            (" AND m.sender = ", &f.sender),
        ],
    );
    for (column, listed) in
        [(" AND m.tenant_id IN (", &f.tenants), (" AND m.environment_id IN (", &f.environments)]
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
        let mut forms = q.push(" AND m.docnum IN (").separated(", ");
        for form in docnum_forms(docnum) {
            forms.push_bind(form);
        }
        q.push(")");
    }
    if let Some(value) = &f.key_value {
        let (before, bound, after) = DB::key_value_clause(value);
        q.push(before).push_bind(bound).push(after);
    }
}

/// The time range and the page's keyset bound.
fn push_time<DB>(q: &mut QueryBuilder<DB>, f: &MessageQuery)
where
    DB: sqlx::Database,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
{
    if let Some(since) = f.since {
        q.push(" AND received_at >= ").push_bind(since);
    }
    if let Some(until) = f.until {
        q.push(" AND received_at < ").push_bind(until);
    }
    if let Some((at, id)) = f.before {
        // The first bound is what `messages_received_at` can seek to (the
        // `OR` alone would make every page walk from the newest message
        // again: page 50 of a search took 1.3 s at a million messages).
        q.push(" AND received_at <= ").push_bind(at);
        q.push(" AND (received_at < ").push_bind(at);
        q.push(" OR (received_at = ").push_bind(at).push(" AND id < ").push_bind(id).push("))");
    }
}

/// The search's statements.
pub(crate) trait SearchSql: sqlx::Database {
    /// One page of messages matching `f`, newest first.
    fn find_messages(
        conn: &mut Self::Connection,
        f: &MessageQuery,
    ) -> impl Future<Output = Result<MessagePage>> + Send;
}

impl<DB> SearchSql for DB
where
    DB: sqlx::Database + KeyValueMatch + ClaimSql,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'e> i64: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'r> (DateTime<Utc>, Uuid): FromRow<'r, DB::Row>,
    for<'r> MessageMeta: FromRow<'r, DB::Row>,
{
    async fn find_messages(conn: &mut DB::Connection, f: &MessageQuery) -> Result<MessagePage> {
        let scan = (!indexed(f) && checked(f)).then(|| f.scan.unwrap_or(SEARCH_SCAN).max(1));
        let mut q = QueryBuilder::<DB>::new(META_COLUMNS);
        q.push(DB::FINGERPRINT_ACTIVE).push(META_TAIL);
        match scan {
            None => {
                q.push(META_FROM_TABLE);
                push_time(&mut q, f);
            }
            Some(scan) => {
                q.push(SCAN_HEAD).push(DB::CLAIM_COLUMNS).push(SCAN_FROM);
                push_time(&mut q, f);
                q.push(NEWEST_FIRST).push_bind(scan).push(") m WHERE 1 = 1");
            }
        }
        push_filters(&mut q, f);
        q.push(NEWEST_FIRST).push_bind(f.limit);
        let messages: Vec<MessageMeta> = q.build_query_as().fetch_all(&mut *conn).await?;
        if messages.len() as i64 >= f.limit {
            let next = messages.last().map(|m| (m.received_at, m.id));
            return Ok(MessagePage { messages, next });
        }
        let Some(scan) = scan else { return Ok(MessagePage { messages, next: None }) };
        // A short page of a bounded scan: older messages are left to see
        // if the scan stopped at its limit with one more behind it.
        let mut q = QueryBuilder::<DB>::new(SCAN_EDGE);
        push_time(&mut q, f);
        q.push(NEWEST_FIRST).push("2 OFFSET ").push_bind(scan - 1);
        let edge: Vec<(DateTime<Utc>, Uuid)> = q.build_query_as().fetch_all(&mut *conn).await?;
        let next = (edge.len() == 2).then(|| edge[0]);
        Ok(MessagePage { messages, next })
    }
}
