//! Two packets that carry the same fingerprints in opposite order, driven
//! into the interleaving that deadlocks when each claims its fingerprints
//! one by one as it goes (PostgreSQL; SQLite's one writer never interleaves
//! transactions).
//!
//! A claim held by an open transaction of the check's own makes the first
//! packet stop half-way, holding one claim; the second packet then starts.
//! PostgreSQL's deadlock detection is pushed past the check's horizon
//! (`deadlock_timeout` of ten minutes on the check's database), so a
//! deadlock would hang both packets instead of failing one into a retry:
//! both packets answering is the proof that neither waits for the other.

use std::time::{Duration as StdDuration, Instant};

use sqlx::Connection;
use uuid::Uuid;

use super::support::*;
use crate::testing::TestDb;

/// How long the check waits for a packet to reach a lock or to answer: a
/// deadlock waits ten minutes.
const HORIZON: StdDuration = StdDuration::from_secs(30);

/// Waits until `n` sessions of the check's database wait for a lock.
async fn until_waiting(conn: &mut sqlx::PgConnection, n: i64) {
    let start = Instant::now();
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&mut *conn)
        .await
        .expect("activity");
        if waiting >= n {
            return;
        }
        assert!(start.elapsed() < HORIZON, "{waiting} of {n} sessions reached a lock");
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
}

/// The first packet holds `x1` and waits for `x3` (claimed by an open
/// transaction); the second packet `[x2, x1]` starts. Claiming one by one,
/// it would hold `x2` and wait for the first, which would then wait for it
/// at `x2`. Locking its fingerprints first, it waits before it claims.
pub async fn crossed_packets_wait_instead_of_deadlocking(db: &TestDb) {
    let mut conn = sqlx::PgConnection::connect(&db.direct_url()).await.expect("connect");
    let sql = format!("ALTER DATABASE {} SET deadlock_timeout = '10min'", db.name);
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.expect("deadlock_timeout");
    let store = db.store().await;
    let scope = fresh_scope();
    let t = now();
    let mut blocker = sqlx::PgConnection::connect(&db.direct_url()).await.expect("connect");
    sqlx::raw_sql("BEGIN").execute(&mut blocker).await.expect("begin");
    sqlx::query(
        "INSERT INTO message_claims (tenant_id, environment_id, fingerprint, message_id, expires_at, \
         message_type, received_at) VALUES ($1, $2, 'x3', $3, $4, 'ORDERS05', $4)",
    )
    .bind(&scope.tenant_id)
    .bind(&scope.environment_id)
    .bind(Uuid::now_v7())
    .bind(t + chrono::Duration::hours(1))
    .execute(&mut blocker)
    .await
    .expect("hold x3");

    let packet = |fps: &[&str]| fps.iter().map(|f| message(Some(f))).collect::<Vec<_>>();
    let (first, second) = (packet(&["x1", "x3", "x2"]), packet(&["x2", "x1"]));
    let first_ids: Vec<Uuid> = first.iter().map(|m| m.id).collect();
    let spawn = |messages: Vec<NewMessage>| {
        let (store, scope) = (store.clone(), scope.clone());
        tokio::spawn(async move { processed(ingest_at(&store, &scope, None, messages, t).await) })
    };
    let first = spawn(first);
    until_waiting(&mut conn, 1).await;
    let second = spawn(second);
    until_waiting(&mut conn, 2).await;
    sqlx::raw_sql("ROLLBACK").execute(&mut blocker).await.expect("release x3");

    let first = tokio::time::timeout(HORIZON, first).await.expect("the first packet answers").expect("task");
    let second =
        tokio::time::timeout(HORIZON, second).await.expect("the second packet answers").expect("task");
    assert_eq!(first.iter().map(outcome_id).collect::<Vec<_>>(), first_ids, "the first packet stored all");
    let originals: Vec<Uuid> = second.iter().map(outcome_id).collect();
    assert_eq!(originals, [first_ids[2], first_ids[0]], "the second packet repeats it, in its own order");
    assert!(second.iter().all(|o| matches!(o, MessageOutcome::Duplicate { .. })), "{second:?}");
    assert_eq!(store.count_messages(&scope).await.unwrap(), 3);
    store.close().await;
}
