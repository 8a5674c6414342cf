//! The pull feed: every stored message of an environment, oldest first,
//! from a position a consumer keeps.
//!
//! A position is `(major, id)`: on PostgreSQL `major` is the id of the
//! transaction that stored the message (`feed_xid`), on SQLite the row's
//! AUTOINCREMENT key, taken in that transaction (`feed_seq`); the message
//! id breaks ties within one transaction. Reading "everything after my
//! position" over a plain sequence skips rows: a transaction that took a
//! smaller number but commits later lands behind a cursor that has moved
//! on. So each backend returns only rows no still-running transaction can
//! precede (each backend's `feed.rs`): PostgreSQL those whose
//! transaction is older than the snapshot's `xmin` (every transaction
//! before it has ended); SQLite's one writer hands its keys out in
//! commit order, so every committed row qualifies. Positions are never
//! reused, so a cursor at a purged message still continues after it.
//!
//! A page is read in two steps, so a caller can bound its memory before
//! any body is in it: [`feed_page`] reads the messages with the
//! sizes of their bodies, ending the page at its byte budget, then
//! [`crate::Store::message_bodies`] reads the bodies. A read with a message type
//! examines a bounded number of messages (`FeedQuery::scan`): one whose
//! type matches nothing costs one bounded step however large the
//! environment, and its `next` moves past everything it examined. That
//! keeps the rule above: every examined message passed the same
//! visibility test, so none can still appear behind that position.
//!
//! A packet's messages share one stored body (kept with its first message):
//! a page reads each body once and its messages share it. A delivery reads
//! one message at a time ([`StoredMessage`]): it learns where the body is
//! and reads it only when its caller does not hold that body already.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use uuid::Uuid;

use crate::{MessageMeta, Result, Scope};

/// Where a consumer is in its environment's feed; opaque to consumers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FeedPosition {
    /// The storing transaction (PostgreSQL) or the row's key, in commit order (SQLite).
    pub major: i64,
    /// The message id: the order within one transaction.
    pub id: Uuid,
}

impl FeedPosition {
    /// Before every message.
    pub const START: FeedPosition = FeedPosition { major: 0, id: Uuid::nil() };
}

/// One page of the feed to read.
#[derive(Debug, Clone)]
pub struct FeedQuery<'a> {
    /// The environment.
    pub scope: &'a Scope,
    /// Messages strictly after this position; `None`: from the start.
    pub after: Option<FeedPosition>,
    /// Only this message type.
    pub message_type: Option<&'a str>,
    /// Most messages on the page.
    pub limit: i64,
    /// Most messages a read with a `message_type` examines (at least
    /// `limit`): a type that matches nothing costs one bounded step, and
    /// the page's `next` moves past what was examined.
    pub scan: i64,
    /// The bodies a page reads, each counted once, stay within this many
    /// bytes; the first message is always on the page, however large.
    pub max_body_bytes: u64,
}

/// A message of the feed and where its body is (read the bodies of a page
/// with [`crate::Store::message_bodies`]).
#[derive(Debug, Clone)]
pub struct FeedMessage {
    /// Its metadata.
    pub meta: MessageMeta,
    /// Its position.
    pub position: FeedPosition,
    /// The message whose row holds the body it arrived in: its own id, or
    /// its packet's first message.
    pub body_id: Uuid,
    /// That body's size in bytes (0 once purged).
    pub body_bytes: u64,
}

/// What [`crate::Store::feed`] answers.
#[derive(Debug, Clone)]
pub struct FeedPage {
    /// Oldest first.
    pub messages: Vec<FeedMessage>,
    /// Where the next page starts: the last message's position when the
    /// page ended at its limit or byte budget; else the last position the
    /// read examined, which may be a message of another type (all of them
    /// are final, so none can appear behind it later); the query's own when
    /// it examined nothing (`None` if it had none).
    pub next: Option<FeedPosition>,
    /// How many messages the read examined.
    pub examined: i64,
    /// Whether more may follow at once: the page ended at its limit or
    /// byte budget, or the read stopped at its scan bound.
    pub more: bool,
}

/// A message as a delivery sends it: its metadata and where its body is.
#[derive(Debug, Clone)]
pub struct StoredMessage {
    /// Its metadata.
    pub meta: MessageMeta,
    /// The message whose row holds the body: its own id, or its packet's
    /// first message (read it with [`crate::Store::message_body`]).
    pub body_id: Uuid,
    /// The body, when the message holds it itself.
    pub own_body: Option<Bytes>,
}

/// A stored message as each backend's `stored_messages` reads it.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct StoredRow {
    #[sqlx(flatten)]
    meta: MessageMeta,
    payload_message_id: Option<Uuid>,
    own_payload: Option<Vec<u8>>,
}

impl StoredRow {
    /// The message, with where its body is.
    pub(crate) fn into_stored(self) -> StoredMessage {
        StoredMessage {
            body_id: self.payload_message_id.unwrap_or(self.meta.id),
            own_body: self.own_payload.map(Bytes::from),
            meta: self.meta,
        }
    }
}

/// A row of a page ([`FeedSql::page_rows`]): a message the read examined that is of the type asked for, or the last one it examined.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct FeedRow {
    #[sqlx(flatten)]
    meta: MessageMeta,
    feed_major: i64,
    payload_message_id: Option<Uuid>,
    /// The size of its own body (`None` when its packet's first message holds it).
    body_bytes: Option<i64>,
    /// Of the type asked for (always, without one).
    wanted: bool,
    /// The last message the read examined.
    last_examined: bool,
    /// How many messages the read examined.
    examined: i64,
}

/// The statements of a feed page, each backend's (`feed.rs` beside its
/// store): the page itself differs by its visibility rule.
pub(crate) trait FeedSql {
    /// The rows of a page of `query` after `after`: the messages no
    /// running transaction can precede, in feed order, at most `scan`
    /// examined; of those, the ones of the type asked for and the last one
    /// examined, at most `query.limit + 1`.
    fn page_rows(
        &mut self,
        query: &FeedQuery<'_>,
        after: FeedPosition,
        scan: i64,
    ) -> impl Future<Output = Result<Vec<FeedRow>>> + Send;
    /// The size of the body each of `ids` holds, in no particular order.
    fn body_sizes(&mut self, ids: &[Uuid]) -> impl Future<Output = Result<Vec<(Uuid, i64)>>> + Send;
}

/// One page of the feed: the messages after `query.after`, ended at the
/// page's limit or byte budget (see [`crate::Store::feed`]).
pub(crate) async fn feed_page<C: FeedSql + Send>(conn: &mut C, query: &FeedQuery<'_>) -> Result<FeedPage> {
    let after = query.after.unwrap_or(FeedPosition::START);
    // Without a type every examined message is on the page: no wider scan.
    let scan = if query.message_type.is_some() { query.scan.max(query.limit) } else { query.limit };
    let rows = conn.page_rows(query, after, scan).await?;
    let examined = rows.first().map_or(0, |r| r.examined);
    let last_examined =
        rows.iter().find(|r| r.last_examined).map(|r| FeedPosition { major: r.feed_major, id: r.meta.id });
    let sizes = body_sizes(conn, &rows).await?;
    let (messages, cut) = within_budget(rows, &sizes, query);
    let next = match (cut, messages.last()) {
        (true, Some(last)) => Some(last.position),
        _ => last_examined.or(query.after),
    };
    Ok(FeedPage { messages, next, examined, more: cut || examined >= scan })
}

/// The size of every body the wanted `rows` point to: their own, and those
/// of packet bodies held by messages the read did not return.
async fn body_sizes<C: FeedSql + Send>(conn: &mut C, rows: &[FeedRow]) -> Result<HashMap<Uuid, u64>> {
    let mut sizes: HashMap<Uuid, u64> = rows
        .iter()
        .filter_map(|r| r.body_bytes.map(|n| (r.meta.id, u64::try_from(n).unwrap_or(0))))
        .collect();
    let elsewhere: HashSet<Uuid> = rows
        .iter()
        .filter(|r| r.wanted)
        .filter_map(|r| r.payload_message_id)
        .filter(|holder| !sizes.contains_key(holder))
        .collect();
    if !elsewhere.is_empty() {
        let elsewhere: Vec<Uuid> = elsewhere.into_iter().collect();
        let found = conn.body_sizes(&elsewhere).await?;
        sizes.extend(found.into_iter().map(|(id, n)| (id, u64::try_from(n).unwrap_or(0))));
    }
    Ok(sizes)
}

/// The wanted rows, in order, while the page stays within its limit and
/// byte budget (each body counted once; the first message always fits);
/// and whether it ended before a wanted row.
fn within_budget(
    rows: Vec<FeedRow>,
    sizes: &HashMap<Uuid, u64>,
    query: &FeedQuery<'_>,
) -> (Vec<FeedMessage>, bool) {
    let mut messages: Vec<FeedMessage> = Vec::new();
    let (mut counted, mut bytes) = (HashSet::new(), 0u64);
    for row in rows.into_iter().filter(|r| r.wanted) {
        let body_id = row.payload_message_id.unwrap_or(row.meta.id);
        let body_bytes = sizes.get(&body_id).copied().unwrap_or(0);
        let cost = if counted.contains(&body_id) { 0 } else { body_bytes };
        let full = i64::try_from(messages.len()).unwrap_or(i64::MAX) >= query.limit;
        let over = cost > 0 && bytes.saturating_add(cost) > query.max_body_bytes;
        if !messages.is_empty() && (full || over) {
            return (messages, true);
        }
        counted.insert(body_id);
        bytes = bytes.saturating_add(cost);
        let position = FeedPosition { major: row.feed_major, id: row.meta.id };
        messages.push(FeedMessage { meta: row.meta, position, body_id, body_bytes });
    }
    (messages, false)
}
