//! The upgrade to time partitions (PostgreSQL migration 0012) on a database
//! filled at migration 0011, the schema of the version before: every row
//! is still there and readable through the store, active claims still
//! block duplicates and released ones do not, ids stay unique, and new
//! messages are stored after it. The feed's cursor key (0014) is made.

use std::path::Path;

use edihub_store::conformance::{self, ingest_at, message, outcome_id, processed};
use edihub_store::testing::{Backend, TestDb};
use edihub_store::{
    DetectedBy, IngestOutcome, KeyClaim, KeyReusePolicy, MessageOutcome, NewAuditEvent, Scope,
};
use sqlx::PgPool;

/// What the old version stored: messages holding, having released, and
/// past the end of their claims; a packet sharing a body; 500 more with
/// deliveries, attempts and audit events; a request key.
const FILL: &str = "
INSERT INTO destinations VALUES ('erp', 'up', 'prod', NULL, true, '{}', 'config', now());
INSERT INTO messages (id, tenant_id, environment_id, message_type, fingerprint, key_fingerprint,
    fingerprint_basis, fingerprint_expires_at, key_values, packet_index, payload, received_at,
    payload_message_id)
VALUES ('00000001-0000-7000-8000-000000000001', 'up', 'prod', 'ORDERS05', 'fp-active', 'fp-active',
        'key_fields', now() + interval '1 day', '[]', 0, 'active', now() - interval '1 hour', NULL),
       ('00000001-0000-7000-8000-000000000002', 'up', 'prod', 'ORDERS05', NULL, 'fp-released',
        'key_fields', now() - interval '1 day', '[]', 0, 'released', now() - interval '2 days', NULL),
       ('00000001-0000-7000-8000-000000000003', 'up', 'prod', 'ORDERS05', 'fp-expired', 'fp-expired',
        'key_fields', now() - interval '1 minute', '[]', 0, 'expired', now() - interval '1 hour', NULL),
       ('00000001-0000-7000-8000-000000000004', 'up', 'prod', 'ORDERS05', NULL, NULL,
        'none', NULL, '[]', 0, 'shared body', now(), NULL),
       ('00000001-0000-7000-8000-000000000005', 'up', 'prod', 'ORDERS05', NULL, NULL,
        'none', NULL, '[]', 1, '', now(), '00000001-0000-7000-8000-000000000004');
INSERT INTO messages (id, tenant_id, environment_id, message_type, key_fingerprint, fingerprint_basis,
    key_values, packet_index, payload, received_at)
SELECT (lpad(to_hex((extract(epoch FROM now() - interval '1 minute' * g) * 1000)::bigint), 12, '0')
        || '7' || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid,
       'up', 'prod', 'ORDERS05', 'bulk-' || g, 'key_fields', '[]', 0, 'bulk', now() - interval '1 minute' * g
FROM generate_series(1, 500) AS g;
INSERT INTO delivery_attempts (message_id, destination_id, attempted_at, latency_ms)
SELECT message_id, destination_id, now(), 5 FROM deliveries;
INSERT INTO audit_events (occurred_at, action, tenant_id, environment_id, message_id, details)
SELECT received_at, 'message.duplicate_blocked', 'up', 'prod', id, '{}' FROM messages;
INSERT INTO idempotency_keys (tenant_id, environment_id, kind, key, request_sha256, status_code,
    response_body, message_id, created_at)
VALUES ('up', 'prod', 'idempotency_key', 'old-key', 'sha', 202, '{\"old\":true}',
        '00000001-0000-7000-8000-000000000001', now());
";

const TABLES: [&str; 5] = ["messages", "deliveries", "delivery_attempts", "audit_events", "idempotency_keys"];

async fn counts(pool: &PgPool) -> Vec<i64> {
    let mut all = Vec::new();
    for table in TABLES {
        let sql = format!("SELECT count(*) FROM {table}");
        all.push(sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(pool).await.expect("count"));
    }
    all
}

async fn max_id(pool: &PgPool, table: &str) -> i64 {
    let sql = format!("SELECT max(id) FROM {table}");
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(pool).await.expect("max")
}

fn uuid(last: u8) -> uuid::Uuid {
    uuid::Uuid::parse_str(&format!("00000001-0000-7000-8000-{last:012}")).expect("uuid")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_upgrade_keeps_every_row_and_every_rule() {
    let db = TestDb::new(Backend::Postgres).await;
    let pool = PgPool::connect(&db.direct_url()).await.expect("connect");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/postgres");
    let all = sqlx::migrate::Migrator::new(dir).await.expect("migrations");
    let old =
        sqlx::migrate::Migrator::with_migrations(all.iter().filter(|m| m.version <= 11).cloned().collect());
    old.run(&pool).await.expect("migrate to 0011");
    sqlx::raw_sql(FILL).execute(&pool).await.expect("fill");
    let before = counts(&pool).await;
    assert_eq!(before, [505, 505, 505, 505, 1]);
    let (attempt_max, audit_max) =
        (max_id(&pool, "delivery_attempts").await, max_id(&pool, "audit_events").await);

    let store = db.store().await; // migrates: 0012
    assert_eq!(counts(&pool).await, before, "every row is still there");
    let partitioned: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_inherits WHERE inhrelid::regclass::text LIKE '%\\_p\\_initial'",
    )
    .fetch_one(&pool)
    .await
    .expect("catalog");
    assert_eq!(partitioned, 4, "each old table is its parent's first partition");

    let active = store.get_message(uuid(1)).await.unwrap().expect("readable");
    assert!(active.fingerprint_active);
    assert_eq!(active.payload, &b"active"[..]);
    assert!(!store.get_message(uuid(2)).await.unwrap().expect("readable").fingerprint_active);
    let sibling = store.get_message(uuid(5)).await.unwrap().expect("readable");
    assert_eq!(sibling.payload, &b"shared body"[..], "the packet sibling reads the shared body");
    assert_eq!(store.deliveries_of(uuid(3)).await.unwrap().len(), 1);

    let scope = Scope::new("up", "prod");
    let store_ref: conformance::StoreRef = store.clone();
    let now = conformance::now();
    let dup = processed(ingest_at(&store_ref, &scope, None, vec![message(Some("fp-active"))], now).await);
    assert!(
        matches!(&dup[0], MessageOutcome::Duplicate { existing, .. } if existing.id == uuid(1)),
        "an active claim still blocks: {dup:?}"
    );
    for fp in ["fp-released", "fp-expired"] {
        let m = message(Some(fp));
        let out = processed(ingest_at(&store_ref, &scope, None, vec![m.clone()], now).await);
        assert!(matches!(&out[0], MessageOutcome::Accepted(s) if s.id == m.id), "{fp} admits a new message");
        assert_eq!(store.deliveries_of(outcome_id(&out[0])).await.unwrap().len(), 1, "its outbox row");
    }
    let key = KeyClaim {
        kind: DetectedBy::IdempotencyKey,
        key: "old-key".into(),
        request_sha256: "sha".into(),
        on_reuse: KeyReusePolicy::Reject,
        window_seconds: None,
    };
    let replay = ingest_at(&store_ref, &scope, Some(key), vec![message(None)], now).await;
    assert!(matches!(replay, IngestOutcome::Replayed(_)), "an old key replays: {replay:?}");

    store.insert_audit(&NewAuditEvent { action: "after".into(), ..Default::default() }).await.unwrap();
    assert!(max_id(&pool, "audit_events").await > audit_max, "audit ids go on after the old ones");
    let attempts_then = max_id(&pool, "delivery_attempts").await;
    sqlx::query(
        "INSERT INTO delivery_attempts (message_id, destination_id, attempted_at, latency_ms) \
         VALUES ($1, 'erp', now(), 1)",
    )
    .bind(uuid(1))
    .execute(&pool)
    .await
    .expect("a new attempt");
    assert!(max_id(&pool, "delivery_attempts").await > attempts_then.max(attempt_max));
    let claims: i64 = sqlx::query_scalar("SELECT count(*) FROM message_claims WHERE tenant_id = 'up'")
        .fetch_one(&pool)
        .await
        .expect("claims");
    assert_eq!(claims, 3, "fp-active, and the new holders of fp-released and fp-expired");
    // Migration 0014 made the feed's cursor key; the feed reads the old
    // rows with the sizes of their bodies (a packet sibling: the shared one).
    let cursor_key = store.feed_cursor_key().await.expect("the cursor key");
    assert_eq!(cursor_key.len(), 32);
    assert_eq!(store.feed_cursor_key().await.unwrap(), cursor_key, "one key, read alike every time");
    let (ids, _) = conformance::follow_until(&store_ref, &scope, None, 100, 507).await;
    let at = ids.iter().position(|id| *id == uuid(5)).expect("the packet sibling is in the feed");
    // The page that starts at the sibling, after its body's holder.
    let before = conformance::feed_page(&store_ref, &scope, None, None, at as i64).await;
    let page = conformance::feed_page(&store_ref, &scope, before.next, None, 1).await;
    assert_eq!((page.messages[0].meta.id, page.messages[0].body_id), (uuid(5), uuid(4)));
    assert_eq!(page.messages[0].body_bytes, "shared body".len() as u64);
    pool.close().await;
    store.close().await;
}
