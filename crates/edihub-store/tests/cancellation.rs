//! A store call whose future is dropped midway (a request whose client went
//! away) never leaves a pooled PostgreSQL connection inside a transaction:
//! the next autocommit statement on it would stay uncommitted while its
//! request is answered as stored (see `backend::begin_on`).

use std::time::Duration;

use edihub_store::testing::{Backend, TestDb};
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
