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
use crate::{MessageMeta, MessagePage, MessageQuery};

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
pub(crate) fn scan_bound(f: &MessageQuery) -> Option<i64> {
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

/// Whether a page of `messages` ends where its search did: a full page
/// continues after its last message, and a page that read only what it
/// matched has seen every match. A short page of a bounded scan needs
/// [`next_after_scan`].
pub(crate) fn settled(messages: &[MessageMeta], f: &MessageQuery, scan: Option<i64>) -> bool {
    messages.len() as i64 >= f.limit || scan.is_none()
}

/// The page of `messages` once [`settled`]: a full page continues after
/// its last message.
pub(crate) fn page(messages: Vec<MessageMeta>, f: &MessageQuery) -> MessagePage {
    let full = messages.len() as i64 >= f.limit;
    let next = messages.last().filter(|_| full).map(|m| (m.received_at, m.id));
    MessagePage { messages, next }
}

/// Where the next page starts after a short page whose scan examined at
/// most its bound of messages: `edge` holds the last message the scan
/// examined and the one after it, if any. Only when there is one after it
/// did the scan stop at its limit with older messages left.
pub(crate) fn next_after_scan(edge: &[(DateTime<Utc>, Uuid)]) -> Option<(DateTime<Utc>, Uuid)> {
    (edge.len() == 2).then(|| edge[0])
}
