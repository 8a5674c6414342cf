//! A store call whose future is dropped midway (a request whose client went
//! away) never leaves a pooled PostgreSQL connection inside a transaction:
//! the next autocommit statement on it would stay uncommitted while its
//! request is answered as stored (see `backend::begin_on`).

use std::time::Duration;

use edihub_store::testing::{Backend, TestDb};
use edihub_store::{IngestRequest, NewMessage, Scope};
use sqlx::Connection;

/// Connections of `database` that sit inside a transaction between statements.
async fn idle_in_transaction(url: &str, database: &str) -> i64 {
    let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
    let (n,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND state LIKE 'idle in transaction%'",
    )
    .bind(database)
    .fetch_one(&mut conn)
    .await
    .expect("pg_stat_activity");
    conn.close().await.expect("close");
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropped_calls_leave_no_connection_in_a_transaction() {
    let db = TestDb::new(Backend::Postgres).await;
    let store = db.store().await;
    let database = db.url.rsplit('/').next().expect("database name").to_string();
    // Each call is a short write transaction (BEGIN, UPDATE, COMMIT); it is
    // aborted after 0 to 1 ms, so over the run the cut falls everywhere in
    // it, including between BEGIN going out and its answer.
    let mut finished = 0;
    for i in 0..3_000u64 {
        let s = store.clone();
        let call = tokio::spawn(async move { s.redeliver(uuid::Uuid::new_v4(), None).await });
        std::thread::sleep(Duration::from_micros(i * 7 % 1_000));
        call.abort();
        if matches!(call.await, Ok(Ok(_))) {
            finished += 1;
        }
    }
    // Dropped transactions roll back when their connection is released.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        idle_in_transaction(&db.url, &database).await,
        0,
        "a connection was left inside a transaction"
    );
    assert!(finished < 3_000, "some calls were cut off ({finished} of 3,000 finished)");
    assert!(finished > 0, "and some finished");
    assert_eq!(
        store.redeliver(uuid::Uuid::new_v4(), None).await.expect("the store still works"),
        Vec::<String>::new()
    );
    store.close().await;
}

/// A request with a large payload (which PostgreSQL receives by `COPY`)
/// whose caller goes away at any point still settles whole: its copy is
/// never left half sent on a pooled connection, every such request is
/// stored once with its whole body, and the store keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropped_large_requests_settle_whole() {
    let db = TestDb::new(Backend::Postgres).await;
    let store = db.store().await;
    let database = db.url.rsplit('/').next().expect("database name").to_string();
    let scope = Scope::new("cut", "prod");
    let body = bytes::Bytes::from((0..3 * 1024 * 1024).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    let message = |n: u32| NewMessage {
        id: uuid::Uuid::now_v7(),
        message_type: "INVOIC02".into(),
        mestyp: Some("INVOIC".into()),
        docnum: Some(n.to_string()),
        sender: None,
        fingerprint: Some(format!("large-{n}")),
        fingerprint_basis: "key_fields".into(),
        window_seconds: 3600,
        key_values: serde_json::json!([]),
        idempotency_key: None,
        provider_event_id: None,
        packet_index: 0,
        content_type: Some("application/xml".into()),
        payload: body.clone(),
    };
    const CALLS: u32 = 60;
    let mut ids = Vec::new();
    for n in 0..CALLS {
        let (s, scope, m) = (store.clone(), scope.clone(), message(n));
        ids.push(m.id);
        // The call signals once it is running: it then reaches the store's
        // own task without yielding, so every cut below falls after the
        // request began (a call cut before it began settles nothing).
        let (running, started) = tokio::sync::oneshot::channel();
        let call = tokio::spawn(async move {
            let req = alone(&scope, m);
            let _ = running.send(());
            s.ingest(req).await
        });
        started.await.expect("the call runs");
        // Cut off 0 to 30 ms in: before, during and after the copy.
        tokio::time::sleep(Duration::from_micros(u64::from(n) * 500)).await;
        call.abort();
        let _ = call.await;
    }
    // The settling goes on without its callers; wait for the last of it.
    for _ in 0..200 {
        if store.count_messages(&scope).await.expect("count") == i64::from(CALLS) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(store.count_messages(&scope).await.expect("count"), i64::from(CALLS), "every request settled");
    for id in ids {
        let stored = store.get_message(id).await.expect("read").expect("stored");
        assert!(stored.payload == body[..], "message {id} has its whole body");
    }
    assert_eq!(
        idle_in_transaction(&db.url, &database).await,
        0,
        "a connection was left inside a transaction"
    );
    let after = message(CALLS);
    let id = after.id;
    assert!(store.ingest(alone(&scope, after)).await.is_ok(), "the store still stores large bodies");
    let stored = store.get_message(id).await.expect("read").expect("stored");
    assert!(stored.payload == body[..], "with its whole body");
    store.close().await;
}

/// A request of one message, without a key, now.
fn alone(scope: &Scope, message: NewMessage) -> IngestRequest<'_> {
    edihub_store::IngestRequest {
        scope,
        key: None,
        messages: vec![message],
        now: chrono::Utc::now(),
        envelope: None,
        lease: None,
    }
}
