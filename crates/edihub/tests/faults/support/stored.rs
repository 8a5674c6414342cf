//! The database side of the ledger check: `messages` and
//! `idempotency_keys`, read straight from PostgreSQL or SQLite with the
//! same statements (sqlx decodes each backend's columns, SQLite's text
//! timestamps included).

use chrono::{DateTime, Utc};
use sqlx::{Database, Executor, FromRow, IntoArguments, Pool};
use uuid::Uuid;

/// A message row, as the ledger check needs it.
#[derive(Debug, Clone, FromRow)]
pub struct StoredMessage {
    /// `messages.id`.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: String,
    /// Environment.
    pub environment_id: String,
    /// `EDI_DC40.DOCNUM`.
    pub docnum: Option<String>,
    /// The fingerprint as computed.
    pub key_fingerprint: Option<String>,
    /// The Idempotency-Key it came with.
    pub idempotency_key: Option<String>,
    /// The raw body.
    pub payload: Vec<u8>,
    /// When it was received (the server's clock).
    pub received_at: DateTime<Utc>,
}

/// The request keys, each with whether it keeps an answer.
const KEYS: &str = "SELECT tenant_id, key, (answer IS NOT NULL OR status_code <> 0) AS answered, message_id \
    FROM idempotency_keys";

/// An `idempotency_keys` row.
#[derive(Debug, Clone, FromRow)]
pub struct StoredKey {
    /// Tenant.
    pub tenant_id: String,
    /// The key.
    pub key: String,
    /// Whether the key keeps an answer (as data, or a rendered response
    /// kept by an earlier version); false = claimed without one.
    pub answered: bool,
    /// The message it answered with.
    pub message_id: Option<Uuid>,
}

/// Everything the check reads.
#[derive(Debug, Clone, Default)]
pub struct DbState {
    /// All messages.
    pub messages: Vec<StoredMessage>,
    /// All keys.
    pub keys: Vec<StoredKey>,
    /// `message.duplicate_blocked` audit events.
    pub duplicate_events: i64,
}

/// Every message, with the body it arrived in (a packet's shared body is
/// stored once, on its first message).
const MESSAGES: &str = "SELECT m.id, m.tenant_id, m.environment_id, m.docnum, m.key_fingerprint, \
    m.idempotency_key, COALESCE(h.payload, m.payload) AS payload, m.received_at \
    FROM messages m LEFT JOIN messages h ON h.id = m.payload_message_id";
const DUPLICATE_EVENTS: &str = "SELECT COUNT(*) FROM audit_events WHERE action = 'message.duplicate_blocked'";

/// Reads `messages` and `idempotency_keys` straight from the database.
pub async fn read_db(url: &str) -> DbState {
    if url.starts_with("sqlite:") {
        let opts: sqlx::sqlite::SqliteConnectOptions = url.parse().expect("sqlite url");
        read(sqlx::SqlitePool::connect_with(opts).await.expect("open sqlite")).await
    } else {
        read(sqlx::PgPool::connect(url).await.expect("connect postgres")).await
    }
}

/// What [`read_db`] reads, on either backend.
async fn read<DB>(pool: Pool<DB>) -> DbState
where
    DB: Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    for<'r> StoredMessage: FromRow<'r, DB::Row>,
    for<'r> StoredKey: FromRow<'r, DB::Row>,
    for<'r> (i64,): FromRow<'r, DB::Row>,
{
    let messages = sqlx::query_as(MESSAGES).fetch_all(&pool).await.expect("read messages");
    let keys = sqlx::query_as(KEYS).fetch_all(&pool).await.expect("read keys");
    let (duplicate_events,) = sqlx::query_as(DUPLICATE_EVENTS).fetch_one(&pool).await.expect("count audit");
    pool.close().await;
    DbState { messages, keys, duplicate_events }
}
