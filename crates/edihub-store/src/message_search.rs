//! Message search, for the admin API and the console: filters, keyset
//! pages, and a bound on the work of one page. Each backend writes the
//! statements (`postgres/message_search.rs`, `sqlite/message_search.rs`);
//! what a page is made of and where the next one starts is decided here.
//!
//! Pages are keyset-paginated (newest first, by `received_at` then id), so
//! a page never repeats or skips a row when new ones arrive in between. Two
//! lookups have an index of their own, a docnum (`messages_docnum`) and a
//! fingerprint (`messages_key_fingerprint`): a page of them reads only the
//! messages they name. Every other filter (tenant, environment, message
//! type, sender, key value, Idempotency-Key) is checked row by row while
//! `messages_received_at` is walked from the newest message. A common
//! sender fills a page within a few hundred rows; a sender with no
//! messages would walk the whole table (BENCHMARKS.md, "Console pages").
//! An index per such filter would cost every insert, so instead a page of
//! such a search examines at most [`MessageQuery::scan`] messages and,
//! when that ran out before the page filled, its `next` continues after
//! the oldest message it examined. A search is then a walk of short
//! bounded pages that together see every message once.
//!
//! A key value is matched by containment on PostgreSQL (which a GIN index
//! on `key_values` would answer; migration 0011 says why there is none)
//! and as text on SQLite ([`crate::model::key_value_pattern`]).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::model::docnum_forms;
use crate::{MessageMeta, MessagePage, MessageQuery, Result};

/// Messages one page of a row-by-row search examines by default (its cost
/// is in BENCHMARKS.md, "Console pages").
pub const SEARCH_SCAN: i64 = 10_000;

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

/// How many messages a page of `f` examines at most: `None` when the
/// search reads only what it matches (an indexed lookup, or no filter
/// checked row by row).
fn scan_bound(f: &MessageQuery) -> Option<i64> {
    (!indexed(f) && checked(f)).then(|| f.scan.unwrap_or(SEARCH_SCAN).max(1))
}

/// A list filter as bound: `None` when empty (any value passes).
pub(crate) fn listed(values: &[String]) -> Option<&[String]> {
    (!values.is_empty()).then_some(values)
}

/// The stored forms of the docnum looked up, if any ([`docnum_forms`]).
pub(crate) fn docnums(f: &MessageQuery) -> Option<Vec<String>> {
    f.docnum.as_deref().map(docnum_forms)
}

/// The page bound `f.before` as its two bound values.
pub(crate) fn before(f: &MessageQuery) -> (Option<DateTime<Utc>>, Option<Uuid>) {
    f.before.map_or((None, None), |(at, id)| (Some(at), Some(id)))
}

/// The statements of a search, each backend's.
pub(crate) trait SearchSql {
    /// Messages matching every filter of `f`, newest first, at most
    /// `f.limit`, read from the table (no scan bound).
    fn matching(&mut self, f: &MessageQuery) -> impl Future<Output = Result<Vec<MessageMeta>>> + Send;
    /// The same among the newest `scan` messages of `f`'s time range.
    fn scanned(
        &mut self,
        f: &MessageQuery,
        scan: i64,
    ) -> impl Future<Output = Result<Vec<MessageMeta>>> + Send;
    /// The last message a scan of `scan` messages of `f`'s time range
    /// examined and the one after it, if any.
    fn scan_edge(
        &mut self,
        f: &MessageQuery,
        scan: i64,
    ) -> impl Future<Output = Result<Vec<(DateTime<Utc>, Uuid)>>> + Send;
}

/// One page of messages matching `f`, newest first, and where the next
/// page starts: after the last message of a full page; after the last
/// message a bounded scan examined, when it stopped at its bound with
/// older messages left.
pub(crate) async fn find_messages<C: SearchSql + Send>(
    conn: &mut C,
    f: &MessageQuery,
) -> Result<MessagePage> {
    let scan = scan_bound(f);
    let messages = match scan {
        None => conn.matching(f).await?,
        Some(scan) => conn.scanned(f, scan).await?,
    };
    let full = messages.len() as i64 >= f.limit;
    let Some(scan) = scan.filter(|_| !full) else {
        let next = messages.last().filter(|_| full).map(|m| (m.received_at, m.id));
        return Ok(MessagePage { messages, next });
    };
    let edge = conn.scan_edge(f, scan).await?;
    let next = (edge.len() == 2).then(|| edge[0]);
    Ok(MessagePage { messages, next })
}
