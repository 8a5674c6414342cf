//! PostgreSQL's time partitions and claims table (see
//! `crate::partitions`): races decided by the claims table across
//! partitions, a row whose range has no partition yet, and retention that
//! drops whole partitions but keeps what today's rules keep.
//!
//! Message ids here are UUIDv7s minted for chosen days, so rows land in the
//! partitions of those days; the checks read the catalog on a connection of
//! their own.

use chrono::{DateTime, Duration, Utc};
use sqlx::Connection;
use uuid::Uuid;

use super::outbox::destination;
use super::races::{RACERS, blocked_events, one_winner};
use super::support::*;
use crate::testing::TestDb;
use crate::{AuditFilter, Pace, RetentionStep};
use tokio_util::sync::CancellationToken;

/// A UUIDv7 whose time is `at` (random below), as `Uuid::now_v7` mints at `at`.
pub fn id_at(at: DateTime<Utc>) -> Uuid {
    let random = Uuid::new_v4().into_bytes();
    let ms = u64::try_from(at.timestamp_millis()).expect("after 1970");
    uuid::Builder::from_unix_timestamp_millis(ms, &random[..10].try_into().expect("10 bytes")).into_uuid()
}

/// The start (UTC midnight) of the day holding `at`.
fn day_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.date_naive().and_hms_opt(0, 0, 0).expect("midnight").and_utc()
}

/// Whether a partition of `parent` named `<parent>_p<yyyymmdd of day>` is
/// attached, and whether a table of that name exists at all.
async fn partition_state(conn: &mut sqlx::PgConnection, parent: &str, day: DateTime<Utc>) -> (bool, bool) {
    let name = format!("{parent}_p{}", day.format("%Y%m%d"));
    sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
                        WHERE i.inhparent = $1::regclass AND c.relname = $2), \
                EXISTS (SELECT 1 FROM pg_class WHERE relname = $2 AND relkind = 'r')",
    )
    .bind(parent)
    .bind(&name)
    .fetch_one(conn)
    .await
    .expect("catalog")
}

/// 48 racers for one fingerprint whose ids fall on four different days
/// (four partitions, two created on demand): the claims table, not an index
/// of one partition, decides, so exactly one wins.
pub async fn racing_fingerprints_across_partitions_store_one(db: &TestDb) {
    let store = db.store().await;
    let scope = fresh_scope();
    let t = now();
    let mut tasks = Vec::new();
    for i in 0..RACERS {
        let (store, scope) = (store.clone(), scope.clone());
        let day = t + Duration::days([0, 1, 20, 40][i % 4]);
        tasks.push(tokio::spawn(async move {
            let m = NewMessage { id: id_at(day), ..message(Some("race-across")) };
            processed(ingest_at(&store, &scope, None, vec![m], t).await)
        }));
    }
    one_winner(&store, &scope, tasks).await;
    store.close().await;
}

/// A message (and its duplicate's audit event) far in the future, where no
/// partition exists: the store creates the partitions and the rows land,
/// also when only one table of the family lacks its partition; one far in
/// the past lands in the first partition.
pub async fn insert_into_an_uncreated_range_lands(db: &TestDb) {
    let store = db.store().await;
    let mut conn = sqlx::PgConnection::connect(&db.direct_url()).await.expect("connect");
    let scope = fresh_scope();
    let later = now() + Duration::days(400);
    assert_eq!(partition_state(&mut conn, "messages", day_of(later)).await, (false, false));
    let m = NewMessage { id: id_at(later), ..message(Some("far-future")) };
    let out = processed(ingest_at(&store, &scope, None, vec![m.clone()], later).await);
    assert!(matches!(out[0], MessageOutcome::Accepted(_)), "{out:?}");
    let repeat = NewMessage { id: id_at(later), ..m.clone() };
    let out = processed(ingest_at(&store, &scope, None, vec![repeat], later).await);
    assert_eq!(outcome_id(&out[0]), m.id, "the stored message blocks its repeat");
    for parent in ["messages", "deliveries", "delivery_attempts", "audit_events"] {
        assert_eq!(partition_state(&mut conn, parent, day_of(later)).await, (true, true), "{parent}");
    }
    let stored = store.get_message(m.id).await.unwrap().expect("stored");
    assert!(stored.fingerprint_active);
    let filter = AuditFilter { tenant: Some(scope.tenant_id.clone()), limit: 10, ..Default::default() };
    let events = store.list_audit(&filter).await.unwrap();
    assert_eq!(events.iter().map(|e| e.occurred_at).collect::<Vec<_>>(), [later]);
    // A table of the family missing its partition alone (the outbox of a
    // day whose messages partition exists) gets it on demand too.
    store.put_destination(&destination("erp", &scope, None, true)).await.unwrap();
    let name = format!("deliveries_p{}", day_of(later).format("%Y%m%d"));
    let ddl = format!("ALTER TABLE deliveries DETACH PARTITION {name}; DROP TABLE {name}");
    sqlx::raw_sql(sqlx::AssertSqlSafe(ddl)).execute(&mut conn).await.expect("drop the outbox partition");
    let outboxed = NewMessage { id: id_at(later), ..message(None) };
    processed(ingest_at(&store, &scope, None, vec![outboxed.clone()], later).await);
    assert_eq!(store.deliveries_of(outboxed.id).await.unwrap().len(), 1, "its delivery landed");
    assert_eq!(partition_state(&mut conn, "deliveries", day_of(later)).await, (true, true));
    let past = NewMessage { id: id_at(now() - Duration::days(700)), ..message(None) };
    processed(ingest_at(&store, &scope, None, vec![past.clone()], now()).await);
    assert!(store.get_message(past.id).await.unwrap().is_some(), "the first partition holds the past");
    store.close().await;
}

/// Retention drops a whole expired partition with its deliveries, attempts
/// and audit events; the stragglers of the first partition are deleted in
/// batches as before.
pub async fn retention_drops_whole_expired_partitions(db: &TestDb) {
    let store = db.store().await;
    let mut conn = sqlx::PgConnection::connect(&db.direct_url()).await.expect("connect");
    let scope = fresh_scope();
    store.put_destination(&destination("erp", &scope, None, true)).await.unwrap();
    let day = day_of(now() + Duration::days(30));
    let at = day + Duration::hours(1);
    let m = NewMessage { id: id_at(at), ..message(Some("dropped")) };
    processed(ingest_at(&store, &scope, None, vec![m.clone()], at).await);
    processed(ingest_at(&store, &scope, None, vec![NewMessage { id: id_at(at), ..m.clone() }], at).await);
    assert_eq!(store.deliveries_of(m.id).await.unwrap().len(), 1);
    let straggler = message(None);
    processed(ingest_at(&store, &scope, None, vec![straggler.clone()], now() - Duration::days(100)).await);

    let cutoff = day + Duration::days(1);
    let after_window = at + Duration::hours(2);
    let released = store.retention_step(RetentionStep::ReleaseFingerprints, after_window, after_window, 100);
    assert_eq!(released.await.unwrap(), 1);
    let dropped = store.drop_partitions(Some(cutoff), Some(cutoff), &Pace::default()).await.unwrap();
    // The day's messages and audit partitions, and the empty ones made
    // ahead for tomorrow (the test store makes one period ahead).
    assert_eq!(dropped, 4);
    for parent in ["messages", "deliveries", "delivery_attempts", "audit_events"] {
        assert_eq!(partition_state(&mut conn, parent, day).await, (false, false), "{parent} dropped");
    }
    assert!(store.get_message(m.id).await.unwrap().is_none());
    assert!(store.deliveries_of(m.id).await.unwrap().is_empty(), "its deliveries went with it");
    assert_eq!(blocked_events(&store, &scope).await, 0, "the day's audit events went with it");

    assert!(store.get_message(straggler.id).await.unwrap().is_some(), "the first partition is never dropped");
    let purged =
        store.retention_step(RetentionStep::PurgeMessages, now() - Duration::days(50), now(), 100).await;
    assert_eq!(purged.unwrap(), 1, "the straggler is deleted by the batch");
    assert!(store.get_message(straggler.id).await.unwrap().is_none());
    store.close().await;
}

/// A run that stops halfway through a period (stopped by shutdown at a
/// pause: its attempts partition detached; then a crash after the
/// deliveries partition's detach, the attempts table dropped) is finished
/// by the next run, which skips what is gone.
pub async fn retention_finishes_a_period_a_crash_left_half_dropped(db: &TestDb) {
    let store = db.store().await;
    let mut conn = sqlx::PgConnection::connect(&db.direct_url()).await.expect("connect");
    let scope = fresh_scope();
    store.put_destination(&destination("erp", &scope, None, true)).await.unwrap();
    let day = day_of(now() + Duration::days(40));
    let at = day + Duration::hours(1);
    let m = NewMessage { id: id_at(at), ..message(None) };
    processed(ingest_at(&store, &scope, None, vec![m.clone()], at).await);
    let cutoff = day + Duration::days(1);

    let stopped = Pace { pause: std::time::Duration::from_secs(60), stop: CancellationToken::new() };
    stopped.stop.cancel();
    assert_eq!(store.drop_partitions(Some(cutoff), None, &stopped).await.unwrap(), 0, "stopped");
    // The first expired period (maybe an earlier day of this store's) had
    // its attempts partition detached, then the pause met the stop.
    assert_eq!(detached(&mut conn, "delivery_attempts").await, 1, "one detach");
    assert_eq!(detached(&mut conn, "deliveries").await + detached(&mut conn, "messages").await, 0);
    assert_eq!(partition_state(&mut conn, "messages", day).await, (true, true), "the leader waits");
    assert!(store.get_message(m.id).await.unwrap().is_some());

    let suffix = day.format("%Y%m%d");
    let crash = format!(
        "DROP TABLE delivery_attempts_p{suffix}; ALTER TABLE deliveries DETACH PARTITION deliveries_p{suffix}"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(crash)).execute(&mut conn).await.expect("half a drop");
    let paced = Pace { pause: std::time::Duration::from_millis(200), stop: CancellationToken::new() };
    let started = std::time::Instant::now();
    let dropped = store.drop_partitions(Some(cutoff), None, &paced).await;
    assert!(dropped.expect("the run finishes the period") >= 1);
    assert!(started.elapsed() >= paced.pause, "it paused after the period");
    for parent in ["messages", "deliveries", "delivery_attempts"] {
        assert_eq!(partition_state(&mut conn, parent, day).await, (false, false), "{parent} dropped");
        assert_eq!(detached(&mut conn, parent).await, 0, "no {parent} table left behind");
    }
    assert!(store.get_message(m.id).await.unwrap().is_none());
    store.close().await;
}

/// How many tables named as partitions of `parent` are not attached to it.
async fn detached(conn: &mut sqlx::PgConnection, parent: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_class c WHERE c.relkind = 'r' AND c.relname LIKE $1 || '\\_p%' \
         AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid)",
    )
    .bind(parent)
    .fetch_one(conn)
    .await
    .expect("catalog")
}

/// A partition is kept while a claim points into it (a window longer than
/// the retention) or a message outside it holds a body inside it.
pub async fn retention_keeps_partitions_with_claims_or_shared_bodies(db: &TestDb) {
    let store = db.store().await;
    let mut conn = sqlx::PgConnection::connect(&db.direct_url()).await.expect("connect");
    let scope = fresh_scope();
    let claimed_day = day_of(now() + Duration::days(50));
    let mut long = NewMessage { id: id_at(claimed_day + Duration::hours(1)), ..message(Some("long-window")) };
    long.window_seconds = 100 * 86_400;
    processed(ingest_at(&store, &scope, None, vec![long.clone()], claimed_day).await);
    // A packet whose first IDoc (holding the body) is on one day, its
    // sibling on the next.
    let body_day = day_of(now() + Duration::days(60));
    let holder = NewMessage { id: id_at(body_day + Duration::hours(23)), ..message(None) };
    let sibling = NewMessage { id: id_at(body_day + Duration::hours(25)), packet_index: 1, ..message(None) };
    processed(ingest_at(&store, &scope, None, vec![holder.clone(), sibling.clone()], body_day).await);

    let cutoff = body_day + Duration::days(1);
    store.drop_partitions(Some(cutoff), None, &Pace::default()).await.unwrap();
    assert_eq!(
        partition_state(&mut conn, "messages", claimed_day).await,
        (true, true),
        "a live claim keeps it"
    );
    assert_eq!(
        partition_state(&mut conn, "messages", body_day).await,
        (true, true),
        "a shared body keeps it"
    );
    assert!(store.get_message(long.id).await.unwrap().is_some());
    let kept = store.get_message(sibling.id).await.unwrap().expect("sibling");
    assert_eq!(kept.payload, &holder.payload[..], "the sibling still reads the shared body");

    // A body after midnight whose sibling's id is before it: the probe
    // looks a day either side of the period. The sibling's own day goes in
    // the same run (nothing keeps it); the body's day stays, as it was
    // kept when the run checked it, and goes in the next run.
    let late_day = day_of(now() + Duration::days(70));
    let late_holder = NewMessage { id: id_at(late_day + Duration::minutes(30)), ..message(None) };
    let early_sibling =
        NewMessage { id: id_at(late_day - Duration::minutes(30)), packet_index: 1, ..message(None) };
    processed(ingest_at(&store, &scope, None, vec![late_holder, early_sibling], late_day).await);
    store.drop_partitions(Some(late_day + Duration::days(1)), None, &Pace::default()).await.unwrap();
    assert_eq!(
        partition_state(&mut conn, "messages", late_day).await,
        (true, true),
        "a body shared with the day before keeps it"
    );
    store.close().await;
}
