//! `GET /api/edi-hub/messages`, the pull feed, on both backends: a consumer
//! following `next_cursor` while several senders store IDocs and JSON at
//! once sees every message once and no duplicate; the long poll answers
//! with the message that arrives while it waits, and at once on shutdown;
//! each kind of key opens only its own route; bad parameters are refused
//! naming the parameter, and change nothing.

use std::collections::HashSet;

use crate::support::*;
use serde_json::{Value, json};

const FEED: &str = "/api/edi-hub/messages";

/// One feed call with `key`; `query` without the leading `?`.
async fn feed(app: &TestApp, key: &str, query: &str) -> TestResponse {
    app.get(&format!("{FEED}?{query}"), Some(&bearer(key))).await
}

/// A page's envelopes and next cursor; asserts 200.
async fn page(app: &TestApp, key: &str, query: &str) -> (Vec<Value>, String) {
    let res = feed(app, key, query).await;
    res.expect(200);
    let body = res.json();
    let cursor = body["next_cursor"].as_str().expect("next_cursor").to_string();
    (body["messages"].as_array().expect("messages").clone(), cursor)
}

/// The page `query` answers once it holds at least `n` messages. On
/// PostgreSQL a message shows once every older write transaction of the
/// server has ended, and other tests write at the same time: the long poll
/// waits out such a moment.
async fn settled(app: &TestApp, key: &str, query: &str, n: usize) -> (Vec<Value>, String) {
    // By time, not by tries: a page that already shows some of the
    // messages answers at once, so tries alone can run out within one
    // long transaction of another test.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        let (messages, cursor) = page(app, key, &format!("{query}&wait=1")).await;
        if messages.len() >= n {
            return (messages, cursor);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("`{query}` never showed {n} messages in 30 s");
}

/// An ORDERS05 IDoc with its own order number (so its own fingerprint).
fn idoc(order: &str) -> Vec<u8> {
    let xml = String::from_utf8(fixture("orders05.xml")).expect("UTF-8");
    xml.replace("4500012345", order).replace("PO-77881", &format!("PO-{order}")).into_bytes()
}

fn order(id: &str) -> String {
    json!({ "order": { "id": id }, "docnum": id }).to_string()
}

/// Sends `json` then `idoc` messages from `task`, each twice (the repeat is
/// a duplicate); returns the ids stored.
async fn send_some(app: &TestApp, task: usize, each: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..each {
        let body = order(&format!("c{task}-{i}"));
        let res = app.post_json(ACME_PROD, body.clone(), &[("x-message-type", "shop.order")]).await;
        ids.push(accepted(&res)["id"].as_str().expect("id").to_string());
        let again = app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await;
        duplicate_of(&again, &ids[ids.len() - 1]);
        let res = app.post_xml(ACME_PROD, idoc(&format!("9{task:02}{i:04}"))).await;
        ids.push(accepted(&res)["id"].as_str().expect("id").to_string());
    }
    ids
}

async fn consumer_sees_every_message_once_under_concurrent_ingest(backend: Backend) {
    const TASKS: usize = 6;
    const EACH: usize = 8;
    let app = std::sync::Arc::new(TestApp::new(backend).await);
    // Before anything is stored: an empty page and the cursor to start from.
    let (none, start) = page(&app, ACME_PROD_FEED, "").await;
    assert!(none.is_empty());
    let mut senders = Vec::new();
    for task in 0..TASKS {
        let app = app.clone();
        senders.push(tokio::spawn(async move { send_some(&app, task, EACH).await }));
    }
    let (mut seen, mut order, mut cursor) = (HashSet::new(), Vec::new(), start);
    let total = TASKS * EACH * 2;
    for _ in 0..20_000 {
        if seen.len() >= total {
            break;
        }
        let (messages, next) = page(&app, ACME_PROD_FEED, &format!("after={cursor}&limit=5")).await;
        if messages.is_empty() {
            assert_eq!(next, cursor, "an empty page keeps the cursor");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        for m in messages {
            let id = m["id"].as_str().expect("id").to_string();
            assert!(seen.insert(id.clone()), "message {id} seen twice");
            assert_eq!((m["tenant"].as_str(), m["environment"].as_str()), (Some("acme"), Some("prod")));
            order.push(id);
        }
        cursor = next;
    }
    let mut stored = HashSet::new();
    for s in senders {
        stored.extend(s.await.expect("sender"));
    }
    assert_eq!(stored.len(), total);
    assert_eq!(seen, stored, "every stored message once, no duplicate");
    // Read again from the start: the same order.
    let (all, _) = page(&app, ACME_PROD_FEED, "limit=500").await;
    let again: Vec<String> = all.iter().map(|m| m["id"].as_str().expect("id").to_string()).collect();
    assert_eq!(again, order, "the order is stable");
    let (tail, end) = page(&app, ACME_PROD_FEED, &format!("after={cursor}")).await;
    assert!(tail.is_empty() && end == cursor, "nothing after the end");
}

async fn envelopes_carry_the_message_and_filter_by_type(backend: Backend) {
    let app = TestApp::new(backend).await;
    let json_id =
        accepted(&app.post_json(ACME_PROD, order("e-1"), &[("x-message-type", "shop.order")]).await)["id"]
            .clone();
    let idoc_id = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await)["id"].clone();
    let (messages, _) = settled(&app, ACME_PROD_FEED, "", 2).await;
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["id"], json_id);
    assert_eq!(messages[0]["message_type"], "shop.order");
    assert_eq!(messages[0]["payload"]["order"]["id"], "e-1");
    assert_eq!(messages[1]["id"], idoc_id);
    assert_eq!(messages[1]["mestyp"], "ORDERS");
    assert_eq!(messages[1]["docnum"], "0000000000004711");
    assert!(messages[1]["payload"].is_object(), "the IDoc's JSON rendering: {}", messages[1]["payload"]);
    let (orders, _) = settled(&app, ACME_PROD_FEED, "message_type=ORDERS05", 1).await;
    assert_eq!(orders.len(), 1);
    assert_eq!(orders[0]["id"], idoc_id);
}

async fn long_poll_answers_with_the_message_that_arrives(backend: Backend) {
    let app = std::sync::Arc::new(TestApp::new(backend).await);
    let (empty, start) = page(&app, ACME_PROD_FEED, "").await;
    assert!(empty.is_empty());
    let waiting = {
        let (app, start) = (app.clone(), start.clone());
        tokio::spawn(async move { page(&app, ACME_PROD_FEED, &format!("after={start}&wait=30")).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let id =
        accepted(&app.post_json(ACME_PROD, order("lp-1"), &[("x-message-type", "shop.order")]).await)["id"]
            .clone();
    let (messages, next) = waiting.await.expect("long poll");
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["id"], id);
    assert_ne!(next, start);
    // Shutdown ends a waiting request at once with what there is.
    let waiting = {
        let (app, next) = (app.clone(), next.clone());
        tokio::spawn(async move { page(&app, ACME_PROD_FEED, &format!("after={next}&wait=30")).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    app.state.feed.close();
    let (messages, after) = waiting.await.expect("long poll at shutdown");
    assert!(messages.is_empty());
    assert_eq!(after, next, "the cursor is kept");
}

async fn each_key_opens_only_its_own_route(backend: Backend) {
    let app = TestApp::new(backend).await;
    accepted(&app.post_json(ACME_PROD, order("k-1"), &[("x-message-type", "shop.order")]).await);
    app.get(FEED, None).await.expect_problem(401, "credentials are missing");
    feed(&app, "no-such-key", "").await.expect_problem(401, "consumer key is not valid");
    feed(&app, ADMIN_TOKEN, "").await.expect_problem(401, "consumer key is not valid");
    feed(&app, ACME_PROD, "").await.expect_problem(403, "sender key");
    let res = app.get(FEED, Some(&basic("erp", ACME_PROD))).await;
    res.expect_problem(403, "sender key");
    // A consumer key cannot send: refused, nothing stored.
    let res = app.post_json(ACME_PROD_FEED, order("k-2"), &[("x-message-type", "shop.order")]).await;
    res.expect_problem(403, "consumer key");
    assert_eq!(app.count_prod().await, 1);
    // Another environment's consumer key sees nothing of this one.
    let (prod, _) = settled(&app, ACME_PROD_FEED, "", 1).await;
    assert_eq!(prod.len(), 1);
    let (qa, _) = page(&app, ACME_QA_FEED, "").await;
    assert!(qa.is_empty(), "acme/qa sees acme/prod: {qa:?}");
    let (prod_by_basic, _) = {
        let res = app.get(FEED, Some(&basic("erp", ACME_PROD_FEED))).await;
        res.expect(200);
        (res.json()["messages"].as_array().expect("messages").clone(), ())
    };
    assert_eq!(prod_by_basic, prod, "Basic works as for senders");
}

async fn bad_parameters_are_refused_by_name(backend: Backend) {
    let app = TestApp::new(backend).await;
    for i in 0..3 {
        accepted(
            &app.post_json(ACME_PROD, order(&format!("b-{i}")), &[("x-message-type", "shop.order")]).await,
        );
    }
    let (_, cursor) = settled(&app, ACME_PROD_FEED, "limit=2", 2).await;
    let cases = [
        ("limit=0", "`limit`"),
        ("limit=501", "`limit`"),
        ("limit=ten", "`limit`"),
        ("limit=", "`limit`"),
        ("wait=31", "`wait`"),
        ("wait=-1", "`wait`"),
        ("wait=1.5", "`wait`"),
        ("after=not-a-cursor", "`after`"),
        ("after=AAAA", "`after`"),
        ("message_type=", "`message_type`"),
    ];
    for (query, names) in cases {
        feed(&app, ACME_PROD_FEED, query).await.expect_problem(400, names);
    }
    // A truncated cursor is refused too, not read as another position.
    feed(&app, ACME_PROD_FEED, &format!("after={}", &cursor[..cursor.len() - 2]))
        .await
        .expect_problem(400, "`after`");
    // Nothing was lost: the cursor still continues where it was.
    let (rest, _) = settled(&app, ACME_PROD_FEED, &format!("after={cursor}"), 1).await;
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["payload"]["order"]["id"], "b-2");
    assert_eq!(app.count_prod().await, 3);
}

/// Stores `n` shop orders whose payloads carry `pad` bytes of padding; their ids.
async fn padded_orders(app: &TestApp, prefix: &str, n: usize, pad: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let body = json!({ "order": { "id": format!("{prefix}-{i}") }, "pad": "x".repeat(pad) }).to_string();
        let res = app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await;
        ids.push(accepted(&res)["id"].as_str().expect("id").to_string());
    }
    ids
}

async fn pages_end_at_their_byte_budget(backend: Backend) {
    const PAGE_BYTES: usize = 4096;
    let config = TestConfig::new().with(|c| c.feed.page_bytes = PAGE_BYTES);
    let app = TestApp::start(backend, config).await;
    let mut stored = padded_orders(&app, "small", 7, 1200).await;
    stored.extend(padded_orders(&app, "large", 1, 20_000).await);
    stored.extend(padded_orders(&app, "after", 2, 1200).await);
    // On PostgreSQL a message shows once every older transaction of the
    // server has ended (other tests write at the same time): follow the feed
    // once until all ten have shown, so the pass below sees pages that
    // ended at their budget only.
    let (mut shown, mut cursor) = (0, String::new());
    for _ in 0..100 {
        if shown == stored.len() {
            break;
        }
        let (messages, next) = page(&app, ACME_PROD_FEED, &format!("limit=500&wait=1&after={cursor}")).await;
        (shown, cursor) = (shown + messages.len(), next);
    }
    assert_eq!(shown, stored.len());
    let (mut seen, mut sizes, mut cursor) = (Vec::new(), Vec::new(), String::new());
    loop {
        let res = feed(&app, ACME_PROD_FEED, &format!("limit=500&after={cursor}")).await;
        res.expect(200);
        let (text, body) = (res.text(), res.json());
        let messages = body["messages"].as_array().expect("messages").clone();
        cursor = body["next_cursor"].as_str().expect("next_cursor").to_string();
        if messages.is_empty() {
            break;
        }
        // The bytes of the envelopes' array: between `{"messages":` and the cursor.
        let envelopes = text.rfind(",\"next_cursor\"").expect("the cursor") - "{\"messages\":".len();
        if messages.len() > 1 {
            assert!(envelopes <= PAGE_BYTES, "a page of {} holds {envelopes} bytes", messages.len());
        }
        sizes.push(messages.len());
        seen.extend(messages.iter().map(|m| m["id"].as_str().expect("id").to_string()));
    }
    assert_eq!(seen, stored, "every message once, in order, across the short pages");
    // Two envelopes of ~1.3 KB fit 4 KiB, three do not; the 20 KB one comes alone.
    assert_eq!(sizes, [2, 2, 2, 1, 1, 2]);
    assert_eq!(app.count_prod().await, 10, "nothing stored or lost");
    let budget_kib = app.state.config.feed.render_budget_bytes.div_ceil(1024);
    assert_eq!(app.state.render_budget.available_kib(), budget_kib, "every page gave its share back");
}

async fn a_type_that_matches_nothing_moves_the_cursor_on(backend: Backend) {
    let config = TestConfig::new().with(|c| c.feed.scan_messages = 5);
    let app = TestApp::start(backend, config).await;
    let orders = padded_orders(&app, "o", 12, 10).await;
    settled(&app, ACME_PROD_FEED, "limit=500", orders.len()).await;
    let (_, start) = page(&app, ACME_PROD_FEED, "limit=1&message_type=erp.feed").await;
    let (first, _) = page(&app, ACME_PROD_FEED, "limit=5").await;
    let (at_five, _) = page(&app, ACME_PROD_FEED, "limit=6").await;
    assert_eq!(first.len(), 5);
    // Five examined, none of the type: the cursor is past the fifth order.
    let (after_five, _) = page(&app, ACME_PROD_FEED, &format!("after={start}")).await;
    assert_eq!(after_five.first().map(|m| &m["id"]), at_five.last().map(|m| &m["id"]));
    // Following it: a bounded step per read (a wait answers at once while
    // the scan has more to examine), then the cursor stays at the end.
    let (mut cursor, mut reads) = (start, 1);
    loop {
        // `limit=1`: a read examines `feed.scan_messages` or `limit`, whichever is more.
        let query = format!("after={cursor}&limit=1&message_type=erp.feed&wait=0");
        let (none, next) = page(&app, ACME_PROD_FEED, &query).await;
        assert!(none.is_empty());
        reads += 1;
        if next == cursor {
            break;
        }
        cursor = next;
    }
    assert_eq!(reads, 4, "12 orders, five a read, then one that examined nothing");
    let (rest, _) = page(&app, ACME_PROD_FEED, &format!("after={cursor}")).await;
    assert!(rest.is_empty(), "the cursor is past every order: {rest:?}");
    let body = json!({ "id": "feed-1", "docnum": "5001" }).to_string();
    let id = accepted(&app.post_json(ACME_PROD, body, &[("x-message-type", "erp.feed")]).await)["id"].clone();
    let (found, _) = settled(&app, ACME_PROD_FEED, &format!("after={cursor}&message_type=erp.feed"), 1).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["id"], id, "the message of the type, once");
    assert_eq!(app.count_prod().await, 13);
}

async fn cursors_are_sealed_and_old_ones_still_work(backend: Backend) {
    use base64::Engine;
    let app = TestApp::new(backend).await;
    let stored = padded_orders(&app, "c", 3, 10).await;
    settled(&app, ACME_PROD_FEED, "limit=500", 3).await;
    let (one, cursor) = page(&app, ACME_PROD_FEED, "limit=1").await;
    assert_eq!(one[0]["id"], stored[0].as_str());
    // The position behind the cursor, straight from the store.
    let scope = edihub_store::Scope::new("acme", "prod");
    let query = edihub_store::FeedQuery {
        scope: &scope,
        after: None,
        message_type: None,
        limit: 1,
        scan: 1,
        max_body_bytes: u64::MAX,
    };
    let position = app.state.store.feed(&query).await.expect("feed").next.expect("a position");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&cursor).expect("base64url");
    assert_eq!(raw.len(), 40, "a sealed cursor");
    assert!(!raw.windows(8).any(|w| w == position.major.to_be_bytes()), "the position's number is hidden");
    assert!(!raw.windows(16).any(|w| w == position.id.as_bytes()), "and so is the message id");
    // It continues where it was; the same position always seals alike.
    let (rest, end) = page(&app, ACME_PROD_FEED, &format!("after={cursor}")).await;
    let ids: Vec<&str> = rest.iter().map(|m| m["id"].as_str().expect("id")).collect();
    assert_eq!(ids, [stored[1].as_str(), stored[2].as_str()]);
    let (_, again) = page(&app, ACME_PROD_FEED, &format!("after={end}")).await;
    assert_eq!(again, end, "an empty page answers the cursor it was given");
    // A cursor from before cursors were sealed (the bare position) still works.
    let bare = edihub_server::api::feed::cursor::bare_cursor(position);
    assert_eq!(bare.len(), 32);
    let (from_bare, sealed) = page(&app, ACME_PROD_FEED, &format!("after={bare}")).await;
    assert_eq!(from_bare, rest, "the old cursor continues exactly where the new one does");
    assert_eq!((sealed.len(), &sealed), (54, &end), "and the answer carries a sealed cursor");
    // Another environment's cursor, a changed one: refused, naming `after`.
    feed(&app, ACME_QA_FEED, &format!("after={cursor}"))
        .await
        .expect_problem(400, "`after` is not a cursor of this environment");
    let mut changed = raw.clone();
    changed[20] ^= 0x40;
    let changed = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(changed);
    feed(&app, ACME_PROD_FEED, &format!("after={changed}")).await.expect_problem(400, "`after`");
    assert_eq!(app.count_prod().await, 3, "nothing stored or lost");
}

backend_tests!(
    pages_end_at_their_byte_budget,
    a_type_that_matches_nothing_moves_the_cursor_on,
    cursors_are_sealed_and_old_ones_still_work,
    consumer_sees_every_message_once_under_concurrent_ingest,
    envelopes_carry_the_message_and_filter_by_type,
    long_poll_answers_with_the_message_that_arrives,
    each_key_opens_only_its_own_route,
    bad_parameters_are_refused_by_name,
);
