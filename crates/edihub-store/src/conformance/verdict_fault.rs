//! A batch of delivery verdicts of which the database refuses one
//! (PostgreSQL only: a trigger there refuses it; SQLite has no way to make
//! one row of a statement fail on demand). The batch is written again one
//! verdict per transaction (see [`crate::Store::finish_deliveries`]): the
//! others are recorded, each once; the refused one is not recorded at
//! all, keeps its lease, and is claimed again once the lease expires, to
//! be recorded once when the database takes it.

use chrono::Duration;
use sqlx::Connection;

use super::outbox::delivered;
use super::support::*;
use super::verdicts::three_claimed;
use crate::testing::TestDb;
use crate::{ClaimedDelivery, Recorded};

/// The verdicts of message `id` are refused (the update that clears its
/// lease), while the trigger stands.
fn refuse_verdicts_of(id: uuid::Uuid) -> [String; 2] {
    [
        format!(
            "CREATE FUNCTION refuse_verdict() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
               IF NEW.message_id = '{id}' THEN
                 RAISE EXCEPTION 'verdict refused by the test';
               END IF;
               RETURN NEW;
             END $$"
        ),
        "CREATE TRIGGER refuse_verdict BEFORE UPDATE ON deliveries
         FOR EACH ROW WHEN (OLD.lease_until IS NOT NULL AND NEW.lease_until IS NULL)
         EXECUTE FUNCTION refuse_verdict()"
            .into(),
    ]
}

/// The delivery of `c`: (status, attempts, attempts logged, leased).
async fn state(store: &StoreRef, dest: &str, c: &ClaimedDelivery) -> (String, i32, usize, bool) {
    let reports = store.deliveries_of(c.message_id).await.unwrap();
    let r = reports.into_iter().find(|r| r.delivery.destination_id == dest).expect("delivery");
    (r.delivery.status, r.delivery.attempts, r.attempt_log.len(), r.delivery.lease_until.is_some())
}

/// One verdict of a batch refused: the others recorded once each, the
/// refused one left leased and unlogged, claimed again after its lease,
/// and recorded once when the database takes it.
pub async fn a_refused_verdict_costs_only_itself(db: &TestDb) {
    let store = db.store().await;
    let (dest, claimed) = three_claimed(&store, "refused").await;
    let mut conn = sqlx::PgConnection::connect(&db.direct_url()).await.expect("connect");
    for sql in refuse_verdicts_of(claimed[1].message_id) {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.expect("trigger installed");
    }

    let batch: Vec<_> = claimed.iter().map(|c| delivered(&dest, c)).collect();
    let recorded = store.finish_deliveries(&batch).await.unwrap();
    assert_eq!(recorded, [Recorded::Applied, Recorded::NotRecorded, Recorded::Applied]);
    for c in [&claimed[0], &claimed[2]] {
        assert_eq!(state(&store, &dest, c).await, ("delivered".into(), 1, 1, false), "recorded once");
    }
    assert_eq!(
        state(&store, &dest, &claimed[1]).await,
        ("pending".into(), 0, 0, true),
        "the refused verdict wrote nothing and the delivery keeps its lease"
    );
    let after = claimed[1].lease_until + Duration::seconds(1);
    let again = store.claim_deliveries(&dest, after, after + Duration::seconds(30), 10).await.unwrap();
    assert_eq!(
        again.iter().map(|c| c.message_id).collect::<Vec<_>>(),
        [claimed[1].message_id],
        "only the unrecorded delivery is claimed again once its lease expires"
    );

    sqlx::raw_sql("DROP TRIGGER refuse_verdict ON deliveries").execute(&mut conn).await.unwrap();
    assert_eq!(store.finish_delivery(&delivered(&dest, &again[0])).await.unwrap(), Recorded::Applied);
    assert_eq!(state(&store, &dest, &again[0]).await, ("delivered".into(), 1, 1, false), "recorded once");
    store.close().await;
}
