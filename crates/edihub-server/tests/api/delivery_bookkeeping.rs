//! Delivery bookkeeping holds whatever a receiver answers and whatever the
//! database refuses: an answer with a NUL or bytes that are not UTF-8 is
//! recorded (as U+FFFD) like any other, on both backends; on PostgreSQL an
//! attempt whose verdict the database refuses costs only itself: the other
//! verdicts of its batch are recorded, it is made again once its lease
//! expires and recorded once the database takes it, and the metrics count
//! exactly what the attempt log holds.

use std::collections::BTreeMap;

use crate::delivery::{deliveries, has_status, post_order, start_worker, until};
use crate::support::receiver::{Receiver, Reply};
use crate::support::*;
use serde_json::Value;

/// Messages sent per test.
const N: usize = 12;

/// An app whose shop orders go to each of `paths` on `receiver`, with two
/// fast retries and leases of `timeout` seconds plus one.
async fn app(backend: Backend, receiver: &Receiver, paths: &[&str], timeout: u64) -> TestApp {
    let mut toml = String::from(
        "[delivery]\nretry_schedule = [\"200ms\", \"200ms\"]\npoll_interval_ms = 50\nlease_margin_secs = 1\n",
    );
    for path in paths {
        toml.push_str(&format!(
            "[[destinations]]\nid = \"{path}\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{}\"\n\
             message_types = [\"shop.order\"]\ntimeout_secs = {timeout}\n",
            receiver.url(path)
        ));
    }
    TestApp::start(backend, TestConfig::new().delivery_toml(&toml)).await
}

/// The delivery attempt counters, by (destination, outcome).
async fn attempt_counts(app: &TestApp) -> BTreeMap<(String, String), u64> {
    let text = app.get("/metrics", None).await.text();
    let mut counts = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("edihub_delivery_attempts_total{")) {
        let (labels, value) = line.rsplit_once(' ').expect("a sample");
        let label = |name: &str| {
            let start = labels.find(&format!("{name}=\"")).expect("label") + name.len() + 2;
            labels[start..].split('"').next().expect("value").to_string()
        };
        counts.insert((label("destination"), label("outcome")), value.parse().expect("a count"));
    }
    counts
}

/// The attempt log of `message`'s delivery to `destination`.
async fn attempt_log(app: &TestApp, message: &str, destination: &str) -> (Value, Vec<Value>) {
    let d = deliveries(app, message).await.remove(destination).expect("delivery");
    let log = d["attempt_log"].as_array().expect("log").clone();
    (d, log)
}

/// Receivers answering `abc\0def` (with 500 and with 200) and `caf\xe9`
/// (not UTF-8) beside a healthy one: every attempt is recorded once, what
/// they said stored with U+FFFD, nothing sent again beyond the retry
/// schedule, and the metrics equal the attempt log.
async fn odd_answers_are_recorded_like_any_other(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.always("nul500", Reply::Answer(500, b"abc\0def"));
    receiver.always("nul200", Reply::Answer(200, b"abc\0def"));
    receiver.always("latin1", Reply::Answer(200, b"caf\xe9"));
    let app = app(backend, &receiver, &["nul500", "nul200", "latin1", "healthy"], 10).await;
    let stop = start_worker(&app);
    let mut ids = Vec::new();
    for i in 0..N {
        ids.push(post_order(&app, &format!("odd-{i}")).await);
    }
    for id in &ids {
        until("every delivery is settled", async || {
            has_status(&app, id, "nul500", "failed").await
                && has_status(&app, id, "nul200", "delivered").await
                && has_status(&app, id, "latin1", "delivered").await
                && has_status(&app, id, "healthy", "delivered").await
        })
        .await;
    }
    stop.cancel();

    for id in &ids {
        let (d, log) = attempt_log(&app, id, "nul500").await;
        assert_eq!((d["attempts"].as_i64(), log.len()), (Some(3), 3), "{d}");
        assert_eq!(d["last_error"], "HTTP 500 Internal Server Error");
        assert!(log.iter().all(|a| a["response_prefix"] == "abc\u{FFFD}def"), "{d}");
        for (path, said) in
            [("nul200", "abc\u{FFFD}def"), ("latin1", "caf\u{FFFD}"), ("healthy", "receiver says hello")]
        {
            let (d, log) = attempt_log(&app, id, path).await;
            assert_eq!((d["attempts"].as_i64(), log.len()), (Some(1), 1), "{path}: {d}");
            assert_eq!(log[0]["response_prefix"], said, "{path}");
        }
        let failed = app.audit_events(&format!("action=delivery.failed&original_message_id={id}")).await;
        assert_eq!(failed.len(), 1, "the exhausted delivery is audited once");
    }
    for (path, requests) in [("nul500", 3 * N), ("nul200", N), ("latin1", N), ("healthy", N)] {
        assert_eq!(receiver.received(path).len(), requests, "{path}: sent as often as recorded");
    }
    let counts = attempt_counts(&app).await;
    let expected: BTreeMap<(String, String), u64> = [
        ("healthy", "delivered", N),
        ("latin1", "delivered", N),
        ("nul200", "delivered", N),
        ("nul500", "failed", N),
        ("nul500", "retry", 2 * N),
    ]
    .into_iter()
    .map(|(d, o, n)| ((d.to_string(), o.to_string()), n as u64))
    .collect();
    assert_eq!(counts, expected, "the metrics count what the attempt log holds");
}

backend_tests!(odd_answers_are_recorded_like_any_other);

/// While a trigger refuses every verdict of `refused`, its deliveries
/// are attempted, not recorded, not counted, and attempted again at each
/// lease expiry; `healthy`'s verdicts, recorded in the same batches, are
/// recorded once and never sent again. Once the trigger goes, each refused
/// delivery is recorded and counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_a_refused_attempt_costs_only_itself() {
    use sqlx::Connection;
    let receiver = Receiver::start().await;
    let app = app(Backend::Postgres, &receiver, &["refused", "healthy"], 1).await;
    let mut conn = sqlx::PgConnection::connect(&app.direct_database_url()).await.expect("connect");
    for sql in [
        "CREATE FUNCTION refuse_verdict() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF NEW.destination_id = 'refused' THEN RAISE EXCEPTION 'verdict refused by the test'; END IF;
           RETURN NEW;
         END $$",
        "CREATE TRIGGER refuse_verdict BEFORE UPDATE ON deliveries
         FOR EACH ROW WHEN (OLD.lease_until IS NOT NULL AND NEW.lease_until IS NULL)
         EXECUTE FUNCTION refuse_verdict()",
    ] {
        sqlx::raw_sql(sql).execute(&mut conn).await.expect("trigger installed");
    }
    let stop = start_worker(&app);
    let mut ids = Vec::new();
    for i in 0..N {
        ids.push(post_order(&app, &format!("refused-{i}")).await);
    }
    for id in &ids {
        until("healthy has every message", async || has_status(&app, id, "healthy", "delivered").await).await;
    }
    until("every refused delivery is attempted again after its lease", async || {
        receiver.received("refused").len() >= 2 * N
    })
    .await;
    for id in &ids {
        let (d, log) = attempt_log(&app, id, "refused").await;
        assert_eq!((d["status"].as_str(), d["attempts"].as_i64(), log.len()), (Some("pending"), Some(0), 0));
    }
    let counts = attempt_counts(&app).await;
    assert!(!counts.keys().any(|(d, _)| d == "refused"), "nothing unrecorded is counted: {counts:?}");

    sqlx::raw_sql("DROP TRIGGER refuse_verdict ON deliveries").execute(&mut conn).await.unwrap();
    for id in &ids {
        until("refused is delivered", async || has_status(&app, id, "refused", "delivered").await).await;
    }
    stop.cancel();
    for id in &ids {
        for path in ["refused", "healthy"] {
            let (d, log) = attempt_log(&app, id, path).await;
            assert_eq!((d["attempts"].as_i64(), log.len()), (Some(1), 1), "{path} recorded once: {d}");
        }
    }
    assert_eq!(receiver.received("healthy").len(), N, "no healthy delivery sent twice");
    let counts = attempt_counts(&app).await;
    let key = |d: &str| (d.to_string(), "delivered".to_string());
    assert_eq!(
        (counts.get(&key("refused")), counts.get(&key("healthy"))),
        (Some(&(N as u64)), Some(&(N as u64)))
    );
    assert_eq!(counts.len(), 2, "nothing else counted: {counts:?}");
}
