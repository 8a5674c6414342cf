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
//! A packet's messages share one stored body (kept with its first message):
//! a page reads each body once and its messages share it. A delivery reads
//! one message at a time ([`StoredMessage`]): it learns where the body is
//! and reads it only when its caller does not hold that body already.

use std::collections::HashMap;

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
}

/// A message of the feed with its body (shared by a packet's messages).
#[derive(Debug, Clone)]
pub struct FeedMessage {
    /// Its metadata.
    pub meta: MessageMeta,
    /// The body it arrived in; empty if that body was purged.
    pub payload: Bytes,
    /// Its position.
    pub position: FeedPosition,
}

/// What [`crate::Store::feed`] answers.
#[derive(Debug, Clone)]
pub struct FeedPage {
    /// Oldest first.
    pub messages: Vec<FeedMessage>,
    /// Where the next page starts: the last message's position, or the
    /// query's own when the page is empty (`None` if it had none).
    pub next: Option<FeedPosition>,
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

/// A row of [`crate::backend::Backend::FEED_PAGE`].
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct FeedRow {
    #[sqlx(flatten)]
    meta: MessageMeta,
    feed_major: i64,
    payload_message_id: Option<Uuid>,
    own_payload: Option<Vec<u8>>,
}

/// The feed's statements (the page itself is the backend's
/// [`crate::backend::Backend::FEED_PAGE`]: its visibility rule differs).
pub(crate) trait FeedSql: sqlx::Database {
    /// One page: runs `statement` (`$1` tenant, `$2` environment, `$3`/`$4`
    /// the position after which to read, `$5` the type or NULL, `$6` the
    /// limit), then reads the bodies the page's rows point to.
    fn feed_page(
        conn: &mut Self::Connection,
        statement: &'static str,
        query: &FeedQuery<'_>,
    ) -> impl Future<Output = Result<FeedPage>> + Send;
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

    async fn feed_page(
        conn: &mut DB::Connection,
        statement: &'static str,
        query: &FeedQuery<'_>,
    ) -> Result<FeedPage> {
        let after = query.after.unwrap_or(FeedPosition::START);
        let mut rows: Vec<FeedRow> = sqlx::query_as(statement)
            .bind(query.scope.tenant_id.clone())
            .bind(query.scope.environment_id.clone())
            .bind(after.major)
            .bind(after.id)
            .bind(query.message_type.map(str::to_string))
            .bind(query.limit)
            .fetch_all(&mut *conn)
            .await?;
        let mut bodies: HashMap<Uuid, Bytes> = HashMap::new();
        for row in &mut rows {
            if let Some(own) = row.own_payload.take() {
                bodies.insert(row.meta.id, Bytes::from(own));
            }
        }
        let mut messages = Vec::with_capacity(rows.len());
        for row in rows {
            let holder = row.payload_message_id.unwrap_or(row.meta.id);
            let payload = match bodies.get(&holder) {
                Some(body) => body.clone(),
                None => {
                    // The packet began on an earlier page (or its body was purged).
                    let body: Option<(Vec<u8>,)> =
                        sqlx::query_as(PAYLOAD_OF).bind(holder).fetch_optional(&mut *conn).await?;
                    let body = body.map(|(b,)| Bytes::from(b)).unwrap_or_default();
                    bodies.insert(holder, body.clone());
                    body
                }
            };
            let position = FeedPosition { major: row.feed_major, id: row.meta.id };
            messages.push(FeedMessage { meta: row.meta, payload, position });
        }
        let next = messages.last().map(|m| m.position).or(query.after);
        Ok(FeedPage { messages, next })
    }
}
