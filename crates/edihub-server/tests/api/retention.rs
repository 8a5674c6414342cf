//! Retention (`edihub_server::retention::run_once`) on both backends: a
//! fingerprint past its window is released and the document is admitted
//! again (202); purges remove exactly the messages, keys and audit events
//! older than their policy (checked per table, straight from the database)
//! and keep every row inside its retention; a message whose fingerprint still
//! blocks is never purged; the AS2 messages received go with the messages;
//! `/metrics` counts the rows per step.
//!
//! Time cannot be set over HTTP, so traffic is stored in two batches around
//! an instant `mid`, and retention runs at `mid + N days`: the cutoff of the
//! policy under test then falls exactly between the batches.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::*;
use chrono::{DateTime, Utc};
use edihub_server::config::RetentionConfig;
use edihub_server::retention::{RunReport, run_once};
use tokio_util::sync::CancellationToken;

backend_tests!(
    released_fingerprint_admits_the_document_again,
    purges_only_rows_past_their_retention,
    a_run_pauses_after_each_statement,
    as2_messages_go_with_the_messages
);

/// A one-second and a ten-year window on ORDERS05's keys; retention in
/// batches of two, on the default periods, without pauses, run by the test
/// (hourly timer).
fn config() -> TestConfig {
    TestConfig::new()
        .message_type("WIN1S", |t| {
            t.duplicate_key_fields = strings(ORDERS05_KEYS);
            t.duplicate_window = Some("1s".into());
        })
        .message_type("LONGWIN", |t| {
            t.duplicate_key_fields = strings(ORDERS05_KEYS);
            t.duplicate_window = Some("3650d".into());
        })
        .with(|c| {
            c.retention = RetentionConfig {
                interval_secs: 3600,
                batch_size: 2,
                messages_days: 90,
                keys_days: 30,
                audit_days: 365,
                pause_ms: 0,
                detach_pause_ms: 0,
            }
        })
}

/// Direct read access to the test database.
enum Db {
    Pg(sqlx::PgPool),
    Lite(sqlx::SqlitePool),
}

impl Db {
    async fn open(app: &TestApp) -> Db {
        let url = &app.direct_database_url();
        match app.backend() {
            Backend::Postgres => Db::Pg(sqlx::PgPool::connect(url).await.expect("connect")),
            Backend::Sqlite => Db::Lite(sqlx::SqlitePool::connect(url).await.expect("connect")),
        }
    }

    /// Rows in (messages, idempotency_keys, audit_events).
    async fn counts(&self) -> (i64, i64, i64) {
        let sql = "SELECT (SELECT COUNT(*) FROM messages), (SELECT COUNT(*) FROM idempotency_keys), \
                   (SELECT COUNT(*) FROM audit_events)";
        match self {
            Db::Pg(p) => sqlx::query_as(sql).fetch_one(p).await,
            Db::Lite(p) => sqlx::query_as(sql).fetch_one(p).await,
        }
        .expect("counts")
    }

    async fn keys(&self) -> BTreeSet<String> {
        let sql = "SELECT key FROM idempotency_keys";
        let rows: Vec<String> = match self {
            Db::Pg(p) => sqlx::query_scalar(sql).fetch_all(p).await,
            Db::Lite(p) => sqlx::query_scalar(sql).fetch_all(p).await,
        }
        .expect("keys");
        rows.into_iter().collect()
    }

    async fn audit_ids(&self) -> BTreeSet<i64> {
        let sql = "SELECT id FROM audit_events";
        let rows: Vec<i64> = match self {
            Db::Pg(p) => sqlx::query_scalar(sql).fetch_all(p).await,
            Db::Lite(p) => sqlx::query_scalar(sql).fetch_all(p).await,
        }
        .expect("audit ids");
        rows.into_iter().collect()
    }
}

fn days(n: i64) -> chrono::Duration {
    chrono::Duration::days(n)
}

async fn run_at(app: &TestApp, now: DateTime<Utc>) -> RunReport {
    run_once(&app.state, now, &CancellationToken::new()).await.expect("retention run")
}

/// The ids of the messages that still exist, out of `ids`.
async fn existing(app: &TestApp, ids: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for id in ids {
        let uuid = uuid::Uuid::parse_str(id).unwrap();
        if app.state.store.get_message(uuid).await.expect("get_message").is_some() {
            out.insert((*id).to_string());
        }
    }
    out
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| (*s).to_string()).collect()
}

/// `fingerprint_active` of message `id`, through the admin lookup.
async fn active(app: &TestApp, fingerprint: &str, id: &str) -> bool {
    let res =
        app.get(&format!("/admin/messages?fingerprint={fingerprint}"), Some(&bearer(ADMIN_TOKEN))).await;
    res.expect(200);
    let found = res.json()["messages"].as_array().unwrap().clone();
    let m = found.iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("{id} not found: {found:?}"));
    m["fingerprint_active"].as_bool().expect("fingerprint_active")
}

async fn metric(app: &TestApp, step: &str) -> u64 {
    let text = app.get("/metrics", None).await.text();
    let prefix = format!("edihub_retention_rows_total{{step=\"{step}\"}} ");
    let line =
        text.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {prefix}in\n{text}"));
    line[prefix.len()..].parse().expect("a number")
}

async fn released_fingerprint_admits_the_document_again(backend: Backend) {
    let app = TestApp::start(backend, config()).await;
    let short = [("x-message-type", "WIN1S")];
    let first = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &short).await);
    let (first_id, fp) = (first["id"].as_str().unwrap(), first["fingerprint"].as_str().unwrap());
    let week = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let week_id = week["id"].as_str().unwrap();
    duplicate_of(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &short).await, first_id);

    tokio::time::sleep(Duration::from_millis(1200)).await;
    let report = run_at(&app, edihub_server::ingest::now()).await;
    assert_eq!(report, RunReport { released: 1, ..RunReport::default() }, "only the 1 s window ended");
    assert!(!active(&app, fp, first_id).await, "released");
    assert!(
        active(&app, week["fingerprint"].as_str().unwrap(), week_id).await,
        "the week-long one still blocks"
    );
    assert_eq!(metric(&app, "release_fingerprints").await, 1);
    assert_eq!(metric(&app, "purge_messages").await, 0);

    // The released fingerprint admits the document again, as a new original.
    let second = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &short).await);
    let second_id = second["id"].as_str().unwrap();
    assert_ne!(second_id, first_id);
    assert_eq!(second["fingerprint"], fp);
    duplicate_of(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &short).await, second_id);
    let blocked = app.audit_events(&format!("fingerprint={fp}")).await;
    assert_eq!(blocked[0]["original_message_id"], second_id, "the newest block names the new original");
    duplicate_of(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await, week_id);
    // Released is not purged: the first message is still there for lookups.
    assert_eq!(existing(&app, &[first_id, second_id, week_id]).await, set(&[first_id, second_id, week_id]));
    assert!(active(&app, fp, second_id).await && !active(&app, fp, first_id).await);
}

async fn purges_only_rows_past_their_retention(backend: Backend) {
    let app = TestApp::start(backend, config()).await;
    let db = Db::open(&app).await;
    let long = [("x-message-type", "LONGWIN")];
    let free = |k: &'static str| [("x-message-type", "free.event"), ("idempotency-key", k)];

    // The old batch: 6 messages (one blocking for ten years), 3 keys, 2 audit events.
    let old1 = accepted(
        &app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("idempotency-key", "old-k")]).await,
    );
    app.post_xml(ACME_PROD, fixture("orders05.xml")).await.expect(200);
    let blocking = accepted(&app.post_xml_with(ACME_PROD, fixture("ordchg05.xml"), &long).await);
    app.post_xml_with(ACME_PROD, fixture("ordchg05.xml"), &long).await.expect(200);
    let old2 = accepted(&app.post_json(ACME_PROD, r#"{"docnum":"1"}"#, &free("old-k2")).await);
    let packet =
        app.post_xml_with(ACME_PROD, fixture("packet-3.xml"), &[("idempotency-key", "old-pk")]).await;
    packet.expect(202);
    let packet: Vec<String> = packet.json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().into())
        .collect();
    let old_audit = db.audit_ids().await;
    assert_eq!(db.counts().await, (6, 3, 2));

    tokio::time::sleep(Duration::from_millis(30)).await;
    let mid = chrono::Utc::now();
    tokio::time::sleep(Duration::from_millis(30)).await;

    // The new batch: 2 messages, 1 key, 2 audit events (a replay, a fingerprint block).
    let key = [("idempotency-key", "new-k")];
    let new1 = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05-other-system.xml"), &key).await);
    assert!(app.post_xml_with(ACME_PROD, fixture("orders05-other-system.xml"), &key).await.replayed());
    let new2 =
        accepted(&app.post_json(ACME_PROD, r#"{"docnum":"2"}"#, &[("x-message-type", "free.event")]).await);
    app.post_xml_with(ACME_PROD, fixture("ordchg05.xml"), &long).await.expect(200);
    assert_eq!(db.counts().await, (8, 4, 4));
    let new_audit: BTreeSet<i64> = db.audit_ids().await.difference(&old_audit).copied().collect();

    let id = |v: &serde_json::Value| v["id"].as_str().unwrap().to_string();
    let (old1, blocking, old2, new1, new2) = (id(&old1), id(&blocking), id(&old2), id(&new1), id(&new2));
    let mut all: Vec<&str> = vec![&old1, &blocking, &old2, &new1, &new2];
    all.extend(packet.iter().map(String::as_str));

    // mid + 30 days: the old keys go; every message and event stays; the
    // week-long fingerprints are released (not deleted), the ten-year one is not.
    // On PostgreSQL the partition made ahead at start (the next day, see
    // `TestConfig::new`), empty, also goes once the cutoff passes it; every
    // stored row is in the first partition, whose stragglers the batches
    // delete.
    let ahead = if app.backend() == Backend::Postgres { 1 } else { 0 };
    let report = run_at(&app, mid + days(30)).await;
    assert_eq!(
        report,
        RunReport {
            released: 7,
            partitions: 0,
            messages: 0,
            keys: 3,
            audit: 0,
            as2_messages: 0,
            sap_status: 0
        }
    );
    assert_eq!(db.keys().await, set(&["new-k"]));
    assert_eq!(db.counts().await, (8, 1, 4));

    // mid + 90 days: the old messages go, except the one whose fingerprint
    // still blocks; the new ones stay; the last key goes (30 days).
    let report = run_at(&app, mid + days(90)).await;
    assert_eq!(
        report,
        RunReport {
            released: 0,
            partitions: 0,
            messages: 5,
            keys: 1,
            audit: 0,
            as2_messages: 0,
            sap_status: 0
        }
    );
    assert_eq!(existing(&app, &all).await, set(&[&blocking, &new1, &new2]));
    assert_eq!(db.counts().await, (3, 0, 4));
    assert!(active(&app, blocking_fp(&app, &blocking).await.as_str(), &blocking).await);

    // mid + 365 days: the old audit events go, the new ones stay; the new
    // messages are past 90 days too; the blocking one is still kept.
    let report = run_at(&app, mid + days(365)).await;
    assert_eq!(
        report,
        RunReport {
            released: 0,
            partitions: ahead,
            messages: 2,
            keys: 0,
            audit: 2,
            as2_messages: 0,
            sap_status: 0
        }
    );
    assert_eq!(db.audit_ids().await, new_audit);
    assert_eq!(existing(&app, &all).await, set(&[&blocking]));

    // Ten years on, its window ends: released and purged in the same run.
    let report = run_at(&app, mid + days(3660)).await;
    assert_eq!(
        report,
        RunReport {
            released: 1,
            partitions: ahead,
            messages: 1,
            keys: 0,
            audit: 2,
            as2_messages: 0,
            sap_status: 0
        }
    );
    assert_eq!(db.counts().await, (0, 0, 0));

    for (step, rows) in [
        ("release_fingerprints", 8),
        ("drop_partitions", 2 * ahead),
        ("purge_messages", 8),
        ("purge_keys", 4),
        ("purge_audit", 4),
    ] {
        assert_eq!(metric(&app, step).await, rows, "{step}");
    }
    // Nothing is left to do.
    assert_eq!(run_at(&app, mid + days(3660)).await, RunReport::default());
}

async fn blocking_fp(app: &TestApp, id: &str) -> String {
    let res = app.get(&format!("/admin/messages/{id}"), Some(&bearer(ADMIN_TOKEN))).await;
    res.expect(200);
    res.json()["fingerprint"].as_str().expect("fingerprint").to_string()
}

/// A run waits `pause_ms` after every statement, and the shutdown token
/// cuts the waits short. Nothing is stored, so each of the five steps is one
/// statement: at least five pauses.
async fn a_run_pauses_after_each_statement(backend: Backend) {
    let paused = |ms| config().with(move |c| c.retention.pause_ms = ms);
    let app = TestApp::start(backend, paused(300)).await;
    let started = std::time::Instant::now();
    assert_eq!(run_at(&app, chrono::Utc::now()).await.messages, 0);
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(5 * 300), "five steps, a 300 ms pause after each: {took:?}");

    let app = TestApp::start(backend, paused(10_000)).await;
    let stopping = CancellationToken::new();
    stopping.cancel();
    let started = std::time::Instant::now();
    let report = run_once(&app.state, chrono::Utc::now(), &stopping).await.expect("retention run");
    assert_eq!(report.messages, 0);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "a shutdown does not wait out 10 s pauses: {took:?}");
}

/// The AS2 messages received (their Message-IDs and MDNs) are deleted after
/// the messages' retention, the younger kept.
async fn as2_messages_go_with_the_messages(backend: Backend) {
    use edihub_store::{As2Filter, As2Key, NewAs2Message, Scope};
    let app = TestApp::start(backend, config()).await;
    let now = Utc::now();
    let received = |id: &str, at: DateTime<Utc>| NewAs2Message {
        key: As2Key { station: "EDIHUB".into(), partner: "PARTNER".into(), message_id: id.into() },
        scope: Scope::new("acme", "prod"),
        payload_sha256: "00".into(),
        mdn_mode: "sync".into(),
        received_at: at,
    };
    for (id, at) in [("old@partner", now - days(91)), ("young@partner", now - days(89))] {
        app.state.store.claim_as2_message(&received(id, at)).await.expect("claim");
    }
    let report = run_at(&app, now).await;
    assert_eq!(report.as2_messages, 1);
    let filter = As2Filter { limit: 10, ..As2Filter::default() };
    let left: Vec<String> =
        app.state.store.list_as2_messages(&filter).await.unwrap().into_iter().map(|r| r.message_id).collect();
    assert_eq!(left, ["young@partner"]);
}
