//! F7: edihub SIGKILLed while deliveries are in flight (PostgreSQL). A
//! receiver on loopback holds the first requests open, so the hub dies
//! mid-attempt with leases taken; after the restart the leases expire and
//! every message is delivered: none lost, the interrupted ones sent again
//! with the same `webhook-id`. The small orders' deliveries are leased at
//! their insert (docs/delivery.md), so the leases the kill leaves are
//! mostly those: the test checks that some were.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use edihub_store::testing::{Backend, TestDb};

use crate::support::*;

const MESSAGES: usize = 60;
/// Requests the receiver never answers (the attempts the kill interrupts).
const HELD: usize = 4;

/// `webhook-id`s received, in order; the first `HELD` requests hang.
type Seen = Arc<Mutex<Vec<String>>>;

async fn receive(State(seen): State<Seen>, headers: HeaderMap) -> StatusCode {
    let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let n = {
        let mut seen = seen.lock().expect("seen");
        seen.push(id);
        seen.len()
    };
    if n <= HELD {
        std::future::pending::<()>().await;
    }
    StatusCode::NO_CONTENT
}

async fn start_receiver() -> (String, Seen) {
    let seen = Seen::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/in", listener.local_addr().expect("address"));
    let app = axum::Router::new().route("/in", axum::routing::post(receive)).with_state(seen.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

/// The first attempts the hub at `url` started from a lease written at
/// the insert (`edihub_delivery_handoff_total{result="leased"}`).
async fn leased_at_insert(http: &reqwest::Client, url: &str) -> u64 {
    let text = http.get(format!("{url}/metrics")).send().await.expect("metrics").text().await.expect("text");
    let series = "edihub_delivery_handoff_total{result=\"leased\"} ";
    text.lines().find_map(|l| l.strip_prefix(series)).map_or(0, |v| v.parse().expect("a count"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn f7_sigkill_mid_delivery_postgres() {
    let _serial = serial().await;
    let (url, seen) = start_receiver().await;
    let dir = TempDir::new("f7");
    let db = TestDb::new(Backend::Postgres).await;
    let mut config = HubConfig::new(&db.url);
    config.extra_toml = format!(
        "[delivery]\nallow_private_destinations = true\nretry_schedule = [\"200ms\", \"200ms\", \"200ms\"]\npoll_interval_ms = 100\n\
         lease_margin_secs = 1\nmax_in_flight_per_destination = 8\n\n\
         [[destinations]]\nid = \"erp\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{url}\"\ntimeout_secs = 3\n"
    );
    let mut hub = Hub::start(&dir.0, "hub", config).await;
    let http = client(Duration::from_secs(10));
    let mut ids = HashSet::new();
    for i in 0..MESSAGES {
        ids.insert(post_order(&http, &hub.url, &format!("f7-{i}")).await);
    }
    let held = || seen.lock().expect("seen").len() >= HELD;
    assert!(eventually(Duration::from_secs(30), held).await, "no delivery started:\n{}", hub.log());
    let leased = leased_at_insert(&http, &hub.url).await;
    hub.kill();
    let before_kill = seen.lock().expect("seen").clone();
    hub.restart().await;
    let interrupted = before_kill[..HELD].to_vec();
    // Done when every message arrived and the interrupted attempts were made
    // again (a held request counts as arrived, but was never answered).
    let all = || {
        let seen = seen.lock().expect("seen");
        let again = interrupted.iter().all(|id| seen.iter().filter(|s| *s == id).count() >= 2);
        again && seen.iter().collect::<HashSet<_>>().len() >= MESSAGES
    };
    assert!(eventually(Duration::from_secs(60), all).await, "not every message delivered:\n{}", hub.log());

    let got = seen.lock().expect("seen").clone();
    let received: HashSet<String> = got.iter().cloned().collect();
    assert_eq!(received, ids, "every message delivered, none invented");
    let mut times: HashMap<&String, usize> = HashMap::new();
    for id in &got {
        *times.entry(id).or_default() += 1;
    }
    assert!(interrupted.iter().all(|id| times[id] >= 2), "the interrupted ones sent again: {times:?}");
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&db.url).await.expect("connect");
    let pending: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM deliveries WHERE status <> 'delivered'")
        .fetch_one(&mut conn)
        .await
        .expect("count");
    let mut all_delivered = pending == 0;
    for _ in 0..100 {
        if all_delivered {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM deliveries WHERE status <> 'delivered'")
            .fetch_one(&mut conn)
            .await
            .expect("count");
        all_delivered = n == 0;
    }
    assert!(all_delivered, "every delivery recorded as delivered");
    assert!(leased > 0, "no delivery was leased at its insert before the kill");
    result_line(
        "f7",
        &format!(
            "{MESSAGES} messages, SIGKILL with {HELD} attempts in flight ({} requests before the kill, \
             {leased} first attempts leased at the insert): all delivered, {} requests in all, {} repeats",
            before_kill.len(),
            got.len(),
            got.len() - MESSAGES
        ),
    );
    drop(hub);
}
