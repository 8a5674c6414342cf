//! The pull feed: every message of an environment once, oldest first,
//! whatever order transactions commit in, across purges.

use std::collections::HashSet;

use uuid::Uuid;

use super::support::*;
use crate::testing::{Backend, TestDb};
use crate::{FeedPage, FeedPosition, FeedQuery, RetentionStep};

/// One page of `scope`'s feed, with a scan bound and byte budget no check
/// here reaches unless it means to.
pub async fn feed_page(
    store: &StoreRef,
    scope: &Scope,
    after: Option<FeedPosition>,
    message_type: Option<&str>,
    limit: i64,
) -> FeedPage {
    let query = FeedQuery { scope, after, message_type, limit, scan: 10_000, max_body_bytes: u64::MAX };
    store.feed(&query).await.expect("feed")
}

/// The bodies of `page`'s messages, in page order.
pub async fn page_bodies(store: &StoreRef, page: &FeedPage) -> Vec<bytes::Bytes> {
    let ids: Vec<Uuid> =
        page.messages.iter().map(|m| m.body_id).collect::<HashSet<_>>().into_iter().collect();
    let bodies: std::collections::HashMap<Uuid, bytes::Bytes> =
        store.message_bodies(&ids).await.expect("bodies").into_iter().collect();
    page.messages.iter().map(|m| bodies.get(&m.body_id).cloned().unwrap_or_default()).collect()
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
    let bodies = page_bodies(&store, &page).await;
    for (m, b) in page.messages.iter().zip(&bodies).filter(|(m, _)| m.meta.message_type == "DELVRY07") {
        assert_eq!(*b, body, "a packet's message carries the packet's body");
        assert_eq!(m.body_bytes, body.len() as u64);
    }
    assert_eq!(bodies[0].as_ref(), b"<ORDERS05/>");
    assert_eq!(page.messages[0].body_bytes, 11);
    // A page that starts inside the packet still finds its body.
    let inside = feed_page(&store, &scope, Some(page.messages[6].position), None, 100).await;
    assert_eq!(inside.messages.len(), 1);
    assert_eq!(inside.messages[0].body_bytes, body.len() as u64, "the size of a body held before the page");
    assert_eq!(page_bodies(&store, &inside).await, std::slice::from_ref(&body));

    let invoices = feed_page(&store, &scope, None, Some("INVOIC02"), 100).await;
    let ids: Vec<Uuid> = invoices.messages.iter().map(|m| m.meta.id).collect();
    assert_eq!(ids, [stored[1], stored[3]]);
    assert_eq!(invoices.next, Some(page.messages[7].position), "past the messages of other types examined");
    let none = feed_page(&store, &scope, None, Some("NOPE"), 100).await;
    assert!(none.messages.is_empty());
    assert_eq!(none.next, Some(page.messages[7].position), "past every message examined");
    assert_eq!((none.examined, none.more), (8, false));
    let empty = feed_page(&store, &scope, none.next, Some("NOPE"), 100).await;
    assert_eq!((empty.next, empty.examined), (none.next, 0), "nothing examined: the cursor stays");
    let elsewhere = feed_page(&store, &fresh_scope(), None, None, 100).await;
    assert_eq!(elsewhere.next, None, "no cursor given and nothing examined: none answered");
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
    for<'e> sqlx::types::Json<serde_json::Value>: sqlx::Encode<'e, E::Database> + sqlx::Type<E::Database>,
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
    .bind(sqlx::types::Json(serde_json::json!([])))
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

/// `n` messages of `message_type` with bodies of `size` bytes, stored one
/// request each; their ids.
async fn store_sized(
    store: &StoreRef,
    scope: &Scope,
    message_type: &str,
    n: usize,
    size: usize,
) -> Vec<Uuid> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let m = NewMessage { payload: bytes::Bytes::from(vec![b'x'; size]), ..typed(message_type, None) };
        ids.push(outcome_id(&processed(ingest_at(store, scope, None, vec![m], now()).await)[0]));
    }
    ids
}

/// A read with a message type examines at most `scan` messages: one whose
/// type matches nothing answers an empty page whose `next` has moved past
/// them, and following it finds every message of the type once, however
/// many others lie between.
pub async fn feed_scan_is_bounded(store: StoreRef) {
    let scope = fresh_scope();
    let early = store_sized(&store, &scope, "ORDERS05", 25, 10).await;
    let wanted = store_sized(&store, &scope, "INVOIC02", 1, 10).await;
    let late = store_sized(&store, &scope, "ORDERS05", 12, 10).await;
    let (all, end) = follow_until(&store, &scope, None, 100, 38).await;
    assert_eq!(all.len(), 38);
    let query = |after| FeedQuery {
        scope: &scope,
        after,
        message_type: Some("INVOIC02"),
        limit: 5,
        scan: 10,
        max_body_bytes: u64::MAX,
    };
    let first = store.feed(&query(None)).await.expect("feed");
    assert!(first.messages.is_empty());
    assert_eq!((first.examined, first.more), (10, true), "ten examined, and more may follow");
    let full = feed_page(&store, &scope, None, None, 10).await;
    assert_eq!(first.next, full.next, "next is the tenth message's position");
    let (mut found, mut after, mut reads) = (Vec::new(), first.next, 1);
    loop {
        let page = store.feed(&query(after)).await.expect("feed");
        reads += 1;
        assert!(page.examined <= 10, "a read examines at most its scan bound: {}", page.examined);
        found.extend(page.messages.iter().map(|m| m.meta.id));
        after = page.next;
        if !page.more {
            break;
        }
    }
    assert_eq!(found, wanted, "the one message of the type, once");
    assert_eq!(after, end, "the cursor ends past every message examined");
    assert_eq!(reads, 4, "38 messages, ten a read");
    // Nothing new: a read from the end examines nothing and keeps the cursor.
    let idle = store.feed(&query(after)).await.expect("feed");
    assert_eq!((idle.examined, idle.next, idle.more), (0, after, false));
    assert_eq!(early.len() + late.len(), 37);
}

/// A page ends before a message whose body would take it past its byte
/// budget, each body counted once (a packet's messages share theirs); its
/// first message always fits, however large; and following `next` still
/// yields every message once.
pub async fn feed_page_ends_at_its_byte_budget(store: StoreRef) {
    let scope = fresh_scope();
    let mut stored = store_sized(&store, &scope, "ORDERS05", 5, 100).await;
    stored.extend(store_sized(&store, &scope, "ORDERS05", 1, 1000).await);
    let body = bytes::Bytes::from(vec![b'p'; 300]);
    let packet: Vec<NewMessage> = (0..3)
        .map(|i| NewMessage { packet_index: i, payload: body.clone(), ..typed("DELVRY07", None) })
        .collect();
    stored.extend(processed(ingest_at(&store, &scope, None, packet, now()).await).iter().map(outcome_id));
    stored.extend(store_sized(&store, &scope, "ORDERS05", 1, 100).await);
    follow_until(&store, &scope, None, 100, stored.len()).await;
    let (mut seen, mut sizes, mut after) = (Vec::new(), Vec::new(), None);
    loop {
        let query = FeedQuery {
            scope: &scope,
            after,
            message_type: None,
            limit: 100,
            scan: 10_000,
            max_body_bytes: 250,
        };
        let page = store.feed(&query).await.expect("feed");
        if page.messages.is_empty() {
            assert_eq!(page.next, after);
            break;
        }
        let ids: Vec<Uuid> = page.messages.iter().map(|m| m.meta.id).collect();
        let bodies = page_bodies(&store, &page).await;
        assert!(bodies.iter().zip(&page.messages).all(|(b, m)| b.len() as u64 == m.body_bytes));
        sizes.push(page.messages.len());
        seen.extend(ids);
        after = page.next;
    }
    assert_eq!(seen, stored, "every message once, in order");
    // 100+100, 100+100, 100, the 1000-byte one alone, the packet's 300 once, then 100.
    assert_eq!(sizes, [2, 2, 1, 1, 3, 1]);
}
