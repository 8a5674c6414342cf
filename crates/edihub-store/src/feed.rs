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
//! precede ([`crate::backend::Backend::FEED_PAGE`]): PostgreSQL those whose
//! transaction is older than the snapshot's `xmin` (every transaction
//! before it has ended); SQLite's one writer hands its keys out in
//! commit order, so every committed row qualifies. Positions are never
//! reused, so a cursor at a purged message still continues after it.
//!
//! A page is read in two steps, so a caller can bound its memory before
//! any body is in it: [`FeedSql::feed_page`] reads the messages with the
//! sizes of their bodies, ending the page at its byte budget, then
//! [`FeedSql::message_bodies`] reads the bodies. A read with a message type
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
use sqlx::{Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};
use uuid::Uuid;

use crate::claims::ClaimSql;
use crate::{MessageMeta, Result, Scope};

/// The body of a message stored without its own (a packet's later IDocs).
const PAYLOAD_OF: &str = "SELECT payload FROM messages WHERE id = $1";
/// One message, the id of the row holding its body, and that body only
/// when the message holds it itself.
/// `ClaimSql::FINGERPRINT_ACTIVE` follows, then [`STORED_MESSAGE_TAIL`].
const STORED_MESSAGE: &str = "SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, \
    sender, key_fingerprint AS fingerprint, fingerprint_basis, fingerprint_expires_at, ";
const STORED_MESSAGE_TAIL: &str = " AS fingerprint_active, idempotency_key, provider_event_id, \
    packet_index, content_type, received_at, payload_message_id, \
    CASE WHEN payload_message_id IS NULL THEN payload END AS own_payload FROM messages m WHERE id IN (";

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

/// A row of [`STORED_MESSAGE`].
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct StoredRow {
    #[sqlx(flatten)]
    meta: MessageMeta,
    payload_message_id: Option<Uuid>,
    own_payload: Option<Vec<u8>>,
}

/// A row of [`crate::backend::Backend::FEED_PAGE`]: a message the read
/// examined that is of the type asked for, or the last one it examined.
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

/// The key of feed cursors (one row, made by a migration).
const CURSOR_KEY: &str = "SELECT key FROM feed_cursor_key WHERE id = 1";
/// The bodies of a page.
const BODIES: &str = "SELECT id, payload FROM messages WHERE id IN (";
/// The sizes of bodies held by messages not on the page (a page that
/// starts inside a packet).
const BODY_SIZES: &str = "SELECT id, CAST(octet_length(payload) AS BIGINT) FROM messages WHERE id IN (";

/// The feed's statements (the page itself is the backend's
/// [`crate::backend::Backend::FEED_PAGE`]: its visibility rule differs).
pub(crate) trait FeedSql: sqlx::Database {
    /// One page: runs `statement` (`$1` tenant, `$2` environment, `$3`/`$4`
    /// the position after which to read, `$5` the type or NULL, `$6` the
    /// most rows to return, `$7` the most to examine), then ends the page
    /// at its limit or byte budget.
    fn feed_page(
        conn: &mut Self::Connection,
        statement: &'static str,
        query: &FeedQuery<'_>,
    ) -> impl Future<Output = Result<FeedPage>> + Send;
    /// The bodies held by the messages `ids` (each a [`FeedMessage::body_id`]),
    /// in no particular order; a purged one is left out.
    fn message_bodies(
        conn: &mut Self::Connection,
        ids: &[Uuid],
    ) -> impl Future<Output = Result<Vec<(Uuid, Bytes)>>> + Send;
    /// The key of feed cursors (see [`crate::Store::feed_cursor_key`]).
    fn feed_cursor_key(conn: &mut Self::Connection) -> impl Future<Output = Result<Vec<u8>>> + Send;
    /// Messages with the id of each one's body row (and the body, if its
    /// own), in no particular order; an id not stored is left out.
    fn stored_messages(
        conn: &mut Self::Connection,
        ids: &[Uuid],
    ) -> impl Future<Output = Result<Vec<StoredMessage>>> + Send;
    /// The body held by message `body_id`; `None` if it is gone (purged).
    fn message_body(
        conn: &mut Self::Connection,
        body_id: Uuid,
    ) -> impl Future<Output = Result<Option<Bytes>>> + Send;
}

impl<DB> FeedSql for DB
where
    DB: sqlx::Database + ClaimSql + sqlx::database::HasStatementCache,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> Option<String>: Encode<'e, DB> + Type<DB>,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'e> i64: Encode<'e, DB> + Type<DB>,
    for<'r> (Vec<u8>,): FromRow<'r, DB::Row>,
    for<'r> (Uuid, Vec<u8>): FromRow<'r, DB::Row>,
    for<'r> (Uuid, i64): FromRow<'r, DB::Row>,
    for<'r> FeedRow: FromRow<'r, DB::Row>,
    for<'r> StoredRow: FromRow<'r, DB::Row>,
{
    async fn stored_messages(conn: &mut DB::Connection, ids: &[Uuid]) -> Result<Vec<StoredMessage>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut q = QueryBuilder::<DB>::new(STORED_MESSAGE);
        q.push(DB::FINGERPRINT_ACTIVE).push(STORED_MESSAGE_TAIL);
        // Unnamed, so planned with the ids known: a prepared plan would
        // cover every partition (and a statement per message was planned
        // afresh each time anyway).
        crate::queries::push_ids(&mut q, ids.iter().copied());
        let rows: Vec<StoredRow> = q.build_query_as().persistent(false).fetch_all(&mut *conn).await?;
        Ok(rows
            .into_iter()
            .map(|r| StoredMessage {
                body_id: r.payload_message_id.unwrap_or(r.meta.id),
                own_body: r.own_payload.map(Bytes::from),
                meta: r.meta,
            })
            .collect())
    }

    async fn message_body(conn: &mut DB::Connection, body_id: Uuid) -> Result<Option<Bytes>> {
        let body: Option<(Vec<u8>,)> =
            sqlx::query_as(PAYLOAD_OF).bind(body_id).fetch_optional(&mut *conn).await?;
        Ok(body.map(|(b,)| Bytes::from(b)))
    }

    async fn feed_cursor_key(conn: &mut DB::Connection) -> Result<Vec<u8>> {
        let (key,): (Vec<u8>,) = sqlx::query_as(CURSOR_KEY).fetch_one(&mut *conn).await?;
        Ok(key)
    }

    async fn message_bodies(conn: &mut DB::Connection, ids: &[Uuid]) -> Result<Vec<(Uuid, Bytes)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut q = QueryBuilder::<DB>::new(BODIES);
        crate::queries::push_ids(&mut q, ids.iter().copied());
        let rows: Vec<(Uuid, Vec<u8>)> = q.build_query_as().persistent(false).fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().map(|(id, body)| (id, Bytes::from(body))).collect())
    }

    async fn feed_page(
        conn: &mut DB::Connection,
        statement: &'static str,
        query: &FeedQuery<'_>,
    ) -> Result<FeedPage> {
        let after = query.after.unwrap_or(FeedPosition::START);
        // Without a type every examined message is on the page: no wider scan.
        let scan = if query.message_type.is_some() { query.scan.max(query.limit) } else { query.limit };
        let rows: Vec<FeedRow> = sqlx::query_as(statement)
            .bind(query.scope.tenant_id.clone())
            .bind(query.scope.environment_id.clone())
            .bind(after.major)
            .bind(after.id)
            .bind(query.message_type.map(str::to_string))
            .bind(query.limit.saturating_add(1))
            .bind(scan)
            .fetch_all(&mut *conn)
            .await?;
        let examined = rows.first().map_or(0, |r| r.examined);
        let last_examined = rows
            .iter()
            .find(|r| r.last_examined)
            .map(|r| FeedPosition { major: r.feed_major, id: r.meta.id });
        let sizes = body_sizes::<DB>(conn, &rows).await?;
        let (messages, cut) = within_budget(rows, &sizes, query);
        let next = match (cut, messages.last()) {
            (true, Some(last)) => Some(last.position),
            _ => last_examined.or(query.after),
        };
        Ok(FeedPage { messages, next, examined, more: cut || examined >= scan })
    }
}

/// The size of every body the wanted `rows` point to: their own, and those
/// of packet bodies held by messages the read did not return.
async fn body_sizes<DB>(conn: &mut DB::Connection, rows: &[FeedRow]) -> Result<HashMap<Uuid, u64>>
where
    DB: sqlx::Database + sqlx::database::HasStatementCache,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'r> (Uuid, i64): FromRow<'r, DB::Row>,
{
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
        let mut q = QueryBuilder::<DB>::new(BODY_SIZES);
        crate::queries::push_ids(&mut q, elsewhere);
        let found: Vec<(Uuid, i64)> = q.build_query_as().persistent(false).fetch_all(&mut *conn).await?;
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
