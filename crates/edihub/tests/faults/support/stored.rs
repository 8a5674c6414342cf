//! The database side of the ledger check: `messages` and
//! `idempotency_keys`, read straight from PostgreSQL or SQLite.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// A message row, as the ledger check needs it.
#[derive(Debug, Clone)]
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
#[derive(Debug, Clone)]
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

/// Reads `messages` and `idempotency_keys` straight from the database.
pub async fn read_db(url: &str) -> DbState {
    use sqlx::Row;
    if url.starts_with("sqlite:") {
        let opts: sqlx::sqlite::SqliteConnectOptions = url.parse().expect("sqlite url");
        let pool = sqlx::SqlitePool::connect_with(opts).await.expect("open sqlite");
        let messages = sqlx::query(
            "SELECT m.id, m.tenant_id, m.environment_id, m.docnum, m.key_fingerprint, m.idempotency_key, COALESCE(h.payload, m.payload) AS payload, m.received_at FROM messages m LEFT JOIN messages h ON h.id = m.payload_message_id",
        )
        .fetch_all(&pool)
        .await
        .expect("read messages")
        .into_iter()
        .map(|r| StoredMessage {
            id: r.get("id"),
            tenant_id: r.get("tenant_id"),
            environment_id: r.get("environment_id"),
            docnum: r.get("docnum"),
            key_fingerprint: r.get("key_fingerprint"),
            idempotency_key: r.get("idempotency_key"),
            payload: r.get("payload"),
            received_at: DateTime::parse_from_rfc3339(&r.get::<String, _>("received_at"))
                .expect("received_at")
                .with_timezone(&Utc),
        })
        .collect();
        let keys = sqlx::query(KEYS)
            .fetch_all(&pool)
            .await
            .expect("read keys")
            .into_iter()
            .map(|r| StoredKey {
                tenant_id: r.get("tenant_id"),
                key: r.get("key"),
                answered: r.get("answered"),
                message_id: r.get("message_id"),
            })
            .collect();
        let duplicate_events: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM audit_events WHERE action = 'message.duplicate_blocked'",
        )
        .fetch_one(&pool)
        .await
        .expect("count audit");
        pool.close().await;
        DbState { messages, keys, duplicate_events }
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("connect postgres");
        let messages = sqlx::query(
            "SELECT m.id, m.tenant_id, m.environment_id, m.docnum, m.key_fingerprint, m.idempotency_key, COALESCE(h.payload, m.payload) AS payload, m.received_at FROM messages m LEFT JOIN messages h ON h.id = m.payload_message_id",
        )
        .fetch_all(&pool)
        .await
        .expect("read messages")
        .into_iter()
        .map(|r| StoredMessage {
            id: r.get("id"),
            tenant_id: r.get("tenant_id"),
            environment_id: r.get("environment_id"),
            docnum: r.get("docnum"),
            key_fingerprint: r.get("key_fingerprint"),
            idempotency_key: r.get("idempotency_key"),
            payload: r.get("payload"),
            received_at: r.get("received_at"),
        })
        .collect();
        let keys = sqlx::query(KEYS)
            .fetch_all(&pool)
            .await
            .expect("read keys")
            .into_iter()
            .map(|r| StoredKey {
                tenant_id: r.get("tenant_id"),
                key: r.get("key"),
                answered: r.get("answered"),
                message_id: r.get("message_id"),
            })
            .collect();
        let duplicate_events: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM audit_events WHERE action = 'message.duplicate_blocked'",
        )
        .fetch_one(&pool)
        .await
        .expect("count audit");
        pool.close().await;
        DbState { messages, keys, duplicate_events }
    }
}
