//! The pull feed: every message of an environment once, oldest first,
//! whatever order transactions commit in, across purges.

use std::collections::HashSet;

use uuid::Uuid;

use super::*;
use crate::testing::{Backend, TestDb};
use crate::{FeedPage, FeedPosition, FeedQuery, RetentionStep};

/// One page of `scope`'s feed.
pub async fn feed_page(
    store: &StoreRef,
    scope: &Scope,
    after: Option<FeedPosition>,
    message_type: Option<&str>,
    limit: i64,
) -> FeedPage {
    store.feed(&FeedQuery { scope, after, message_type, limit }).await.expect("feed")
}

/// Follows the feed from `after` until a page is empty; the ids in order
/// and the last position.
pub async fn follow(
    store: &StoreRef,
    scope: &Scope,
    mut after: Option<FeedPosition>,
    limit: i64,
) -> (Vec<Uuid>, Option<FeedPosition>) {
    let mut ids = Vec::new();
    loop {
        let page = feed_page(store, scope, after, None, limit).await;
        if page.messages.is_empty() {
            assert_eq!(page.next, after, "an empty page keeps the cursor");
            return (ids, after);
        }
        ids.extend(page.messages.iter().map(|m| m.meta.id));
        after = page.next;
    }
}

/// Follows the feed from `after` until at least `expected` messages have
/// come. On PostgreSQL a message shows only once every older write
/// transaction of the server has ended, and other checks write at the same
/// time, so an empty page may just mean "not yet".
pub async fn follow_until(
    store: &StoreRef,
    scope: &Scope,
    after: Option<FeedPosition>,
    limit: i64,
    expected: usize,
) -> (Vec<Uuid>, Option<FeedPosition>) {
    let (mut ids, mut at) = (Vec::new(), after);
    for _ in 0..3000 {
        let (more, end) = follow(store, scope, at, limit).await;
        ids.extend(more);
        at = end;
        if ids.len() >= expected {
            return (ids, at);
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the feed showed {} of {expected} messages", ids.len());
}

fn typed(message_type: &str, fingerprint: Option<&str>) -> NewMessage {
    NewMessage { message_type: message_type.into(), ..message(fingerprint) }
}

/// Pages follow storage order, a duplicate is never in the feed, a type
/// filter keeps only its type, another environment sees nothing, and a
/// packet's messages all carry the body they arrived in.
pub async fn feed_pages_in_order(store: StoreRef) {
    let (scope, other) = (fresh_scope(), fresh_scope());
    let t = now();
    let mut stored = Vec::new();
    for (i, kind) in ["ORDERS05", "INVOIC02", "ORDERS05", "INVOIC02", "ORDERS05"].into_iter().enumerate() {
        let out =
            processed(ingest_at(&store, &scope, None, vec![typed(kind, Some(&format!("f{i}")))], t).await);
        stored.push(outcome_id(&out[0]));
    }
    let dup = processed(ingest_at(&store, &scope, None, vec![message(Some("f0"))], t).await);
    assert!(matches!(dup[0], MessageOutcome::Duplicate { .. }));
    let body = bytes::Bytes::from_static(b"<PACKET/>");
    let packet: Vec<NewMessage> = (0..3)
        .map(|i| NewMessage { packet_index: i, payload: body.clone(), ..typed("DELVRY07", None) })
        .collect();
    stored.extend(processed(ingest_at(&store, &scope, None, packet, t).await).iter().map(outcome_id));
    ingest_at(&store, &other, None, vec![message(None)], t).await;

    let (ids, end) = follow_until(&store, &scope, None, 2, stored.len()).await;
    assert_eq!(ids, stored, "every message once, in storage order");
    assert!(feed_page(&store, &scope, end, None, 100).await.messages.is_empty());

    let page = feed_page(&store, &scope, None, None, 100).await;
    for m in page.messages.iter().filter(|m| m.meta.message_type == "DELVRY07") {
        assert_eq!(m.payload, body, "a packet's message carries the packet's body");
    }
    assert_eq!(page.messages[0].payload.as_ref(), b"<ORDERS05/>");
    // A page that starts inside the packet still finds its body.
    let inside = feed_page(&store, &scope, Some(page.messages[6].position), None, 100).await;
    assert_eq!(inside.messages.len(), 1);
    assert_eq!(inside.messages[0].payload, body);

    let invoices = feed_page(&store, &scope, None, Some("INVOIC02"), 100).await;
    let ids: Vec<Uuid> = invoices.messages.iter().map(|m| m.meta.id).collect();
    assert_eq!(ids, [stored[1], stored[3]]);
    assert_eq!(invoices.next, Some(invoices.messages[1].position));
    let none = feed_page(&store, &scope, None, Some("NOPE"), 100).await;
    assert!(none.messages.is_empty());
    assert_eq!(none.next, None, "no cursor given, none answered");
    let (other_ids, _) = follow_until(&store, &other, None, 100, 1).await;
    assert_eq!(other_ids.len(), 1, "the other environment sees only its own message");
    assert!(!stored.contains(&other_ids[0]));
}

/// A cursor at a purged message goes on after it, even when retention has
/// emptied the table (positions are never handed out twice).
pub async fn feed_cursor_survives_a_purge(store: StoreRef) {
    let scope = fresh_scope();
    let old = now() - chrono::Duration::days(30);
    for _ in 0..3 {
        ingest_at(&store, &scope, None, vec![message(None)], old).await;
    }
    let (ids, cursor) = follow_until(&store, &scope, None, 100, 3).await;
    assert_eq!(ids.len(), 3);
    let purged = store.retention_step(RetentionStep::PurgeMessages, now(), now(), 100).await.unwrap();
    assert_eq!(purged, 3);
    assert_eq!(store.count_messages(&scope).await.unwrap(), 0);
    let fresh = processed(ingest_at(&store, &scope, None, vec![message(None)], now()).await);
    let (after, _) = follow_until(&store, &scope, cursor, 100, 1).await;
    assert_eq!(after, [outcome_id(&fresh[0])], "the new message follows the purged cursor");
}

/// Many tasks storing at once while a reader follows the cursor: the
/// reader sees every message exactly once.
pub async fn feed_follows_concurrent_ingest(store: StoreRef) {
    const WRITERS: usize = 8;
    const EACH: usize = 12;
    let scope = fresh_scope();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (store, scope) = (store.clone(), scope.clone());
        writers.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..EACH {
                let m = message(Some(&format!("w{w}-{i}")));
                let out = processed(ingest_at(&store, &scope, None, vec![m], now()).await);
                ids.push(outcome_id(&out[0]));
            }
            ids
        }));
    }
    let (mut seen, mut order, mut after) = (HashSet::new(), Vec::new(), None);
    while seen.len() < WRITERS * EACH {
        let page = feed_page(&store, &scope, after, None, 7).await;
        for m in &page.messages {
            assert!(seen.insert(m.meta.id), "message {} seen twice", m.meta.id);
            order.push(m.meta.id);
        }
        after = page.next;
        if page.messages.is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }
    let mut written = HashSet::new();
    for w in writers {
        written.extend(w.await.expect("writer"));
    }
    assert_eq!(seen, written, "every stored message, none other");
    let (again, _) = follow(&store, &scope, None, 500).await;
    assert_eq!(again, order, "the order is stable");
}

/// Inserts one message row in `scope` inside an open transaction of the
/// test's own connection, as another replica's slow request would.
async fn insert_row<'c, E>(conn: E, scope: &Scope, id: Uuid)
where
    E: sqlx::Executor<'c>,
    for<'e> String: sqlx::Encode<'e, E::Database> + sqlx::Type<E::Database>,
    for<'e> Uuid: sqlx::Encode<'e, E::Database> + sqlx::Type<E::Database>,
    for<'e> Vec<u8>: sqlx::Encode<'e, E::Database> + sqlx::Type<E::Database>,
    for<'e> chrono::DateTime<chrono::Utc>: sqlx::Encode<'e, E::Database> + sqlx::Type<E::Database>,
    for<'e> crate::Json<serde_json::Value>: sqlx::Encode<'e, E::Database> + sqlx::Type<E::Database>,
    <E::Database as sqlx::Database>::Arguments: sqlx::IntoArguments<E::Database>,
{
    sqlx::query(
        "INSERT INTO messages (id, tenant_id, environment_id, message_type, fingerprint_basis, \
         key_values, packet_index, payload, received_at) VALUES ($1, $2, $3, $4, 'none', $5, 0, $6, $7)",
    )
    .bind(id)
    .bind(scope.tenant_id.clone())
    .bind(scope.environment_id.clone())
    .bind("ORDERS05".to_string())
    .bind(crate::Json(serde_json::json!([])))
    .bind(b"<SLOW/>".to_vec())
    .bind(now())
    .execute(conn)
    .await
    .expect("insert the slow row");
}

/// Transaction A stores a message and stays open; B stores one and
/// commits. The feed must not move past A's row: until A commits it shows
/// neither (on SQLite B waits for the writer lock; on PostgreSQL B's row
/// is held back behind A's running transaction), then both, once, in order.
pub async fn feed_waits_for_an_older_open_transaction(db: &TestDb) {
    use sqlx::Connection;
    let store = db.store().await;
    let scope = fresh_scope();
    let first = processed(ingest_at(&store, &scope, None, vec![message(None)], now()).await);
    let (ids, cursor) = follow_until(&store, &scope, None, 100, 1).await;
    assert_eq!(ids, [outcome_id(&first[0])]);
    let slow = Uuid::now_v7();
    let ingest_b = |store: StoreRef, scope: Scope| async move {
        outcome_id(&processed(ingest_at(&store, &scope, None, vec![message(None)], now()).await)[0])
    };
    let b = match db.backend {
        Backend::Postgres => {
            // The test's own connection goes to the server directly, never
            // through the test pooler (its statements are prepared ones).
            let mut conn = sqlx::PgConnection::connect(&db.direct_url()).await.expect("connect");
            let mut tx = conn.begin().await.expect("begin");
            insert_row(&mut *tx, &scope, slow).await;
            let b = ingest_b(store.clone(), scope.clone()).await;
            assert!(store.get_message(b).await.unwrap().is_some(), "B is committed");
            let page = feed_page(&store, &scope, cursor, None, 100).await;
            assert!(page.messages.is_empty(), "B waits behind the open transaction: {:?}", page.messages);
            assert_eq!(page.next, cursor);
            tx.commit().await.expect("commit A");
            b
        }
        Backend::Sqlite => {
            let mut conn = sqlx::SqliteConnection::connect(&db.url).await.expect("connect");
            let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.expect("begin");
            insert_row(&mut *tx, &scope, slow).await;
            let b = tokio::spawn(ingest_b(store.clone(), scope.clone()));
            let page = feed_page(&store, &scope, cursor, None, 100).await;
            assert!(page.messages.is_empty(), "nothing uncommitted is shown: {:?}", page.messages);
            tx.commit().await.expect("commit A");
            b.await.expect("B")
        }
    };
    let (ids, _) = follow_until(&store, &scope, cursor, 1, 2).await;
    assert_eq!(ids, [slow, b], "A's row is not skipped, and B follows it once");
    let (all, _) = follow(&store, &scope, None, 100).await;
    assert_eq!(all, [outcome_id(&first[0]), slow, b], "the order is stable");
    store.close().await;
}
