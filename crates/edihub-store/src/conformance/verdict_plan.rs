//! How PostgreSQL reads the deliveries a batch of verdicts updates (SQLite
//! has its own planner and no partitions): by their primary key, also in a
//! partition that was never analyzed, as a new day's partition is until
//! autovacuum first gets to it. Planned without column statistics, the
//! verdict's `message_id = ANY($1)` looks like a third of the rows, and a
//! sequential scan of the whole partition for every batch would win.

use chrono::Duration;
use sqlx::{Connection, PgConnection};

use super::outbox::{delivered, seed_mixed};
use super::support::*;
use crate::Recorded;
use crate::outbox::verdicts;
use crate::testing::TestDb;

/// The partition that holds message `id`'s deliveries.
async fn partition_of(conn: &mut PgConnection, id: uuid::Uuid) -> String {
    let sql = "SELECT tableoid::regclass::text FROM deliveries WHERE message_id = $1 LIMIT 1";
    sqlx::query_scalar(sql).bind(id).fetch_one(conn).await.expect("the message's deliveries")
}

/// 300 messages' deliveries in a partition autovacuum may not analyze; a
/// batch of 100 verdicts in one transaction scans it only by index, and
/// every verdict is applied.
pub async fn verdicts_read_deliveries_by_key_without_statistics(db: &TestDb) {
    let store = db.store().await;
    let scope = fresh_scope();
    let dest = seed_mixed(&store, &scope, &scope.tenant_id).await;
    let mut conn = PgConnection::connect(&db.direct_url()).await.expect("connect");
    let first = processed(ingest_at(&store, &scope, None, vec![message(Some("plan-0"))], now()).await);
    let partition = partition_of(&mut conn, outcome_id(&first[0])).await;
    // One row cannot have been analyzed yet (autovacuum waits for 50).
    let off = format!("ALTER TABLE {partition} SET (autovacuum_enabled = false)");
    sqlx::raw_sql(sqlx::AssertSqlSafe(off)).execute(&mut conn).await.expect("autovacuum off");
    let rest = (1..300).map(|i| message(Some(&format!("plan-{i}")))).collect();
    assert_eq!(processed(ingest_at(&store, &scope, None, rest, now()).await).len(), 299);
    let analyzed = "SELECT count(*) FROM pg_stats WHERE tablename = $1";
    let columns: i64 = sqlx::query_scalar(analyzed).bind(&partition).fetch_one(&mut conn).await.unwrap();
    assert_eq!(columns, 0, "{partition} has no column statistics");

    let t = now();
    let claimed = store.claim_deliveries(&dest, t, t + Duration::seconds(30), 100).await.unwrap();
    assert_eq!(claimed.len(), 100);
    let done: Vec<_> = claimed.iter().map(|c| delivered(&dest, c)).collect();
    let mut tx = conn.begin().await.unwrap();
    let recorded = verdicts::record(&mut *tx, &done, t).await.expect("recorded");
    assert_eq!(recorded, vec![Recorded::Applied; 100]);
    // This transaction's own counts (pg_stat_xact_*), so no other reader counts.
    let scans = "SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relid = $1::regclass";
    let (seq, idx): (i64, i64) = sqlx::query_as(scans).bind(&partition).fetch_one(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(seq, 0, "the verdicts scanned {partition} sequentially");
    assert!(idx >= 1, "the verdicts read {partition} by index ({idx} scans)");
    for c in &claimed[..3] {
        let reports = store.deliveries_of(c.message_id).await.unwrap();
        let r = reports.iter().find(|r| r.delivery.destination_id == dest).expect("delivery");
        assert_eq!((r.delivery.status.as_str(), r.delivery.attempts), ("delivered", 1));
    }
    store.close().await;
}
