//! F8: two edihub replicas on one PostgreSQL share the delivery queue. A
//! receiver on loopback records every request (its `webhook-id`, the
//! connection it came on, when it started and ended) and holds each one a
//! little, so that two attempts of one delivery running at once would
//! overlap in time. Messages are sent one after another, alternating
//! between the replicas, to two destinations: `fan` (parallel) and `line`
//! (`ordering = "fifo"`). Every message must reach both, none lost; no two
//! attempts of one delivery may overlap; the `line` has one request in
//! flight at any time, across both replicas, in commit order.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode};
use edihub_store::testing::{Backend, TestDb};

use crate::support::*;

const MESSAGES: usize = 60;
/// How long the receiver holds each request.
const HOLD: Duration = Duration::from_millis(30);

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    id: String,
    connection: SocketAddr,
    start: Instant,
    end: Instant,
}

type Log = Arc<Mutex<Vec<Seen>>>;

async fn receive(
    State(log): State<Log>,
    ConnectInfo(connection): ConnectInfo<SocketAddr>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> StatusCode {
    let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let start = Instant::now();
    tokio::time::sleep(HOLD).await;
    let seen = Seen { path, id, connection, start, end: Instant::now() };
    log.lock().expect("log").push(seen);
    StatusCode::NO_CONTENT
}

async fn start_receiver() -> (SocketAddr, Log) {
    let log = Log::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let app = axum::Router::new().route("/{path}", axum::routing::post(receive)).with_state(log.clone());
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, log)
}

/// The requests of `path`, by start time.
fn requests(log: &Log, path: &str) -> Vec<Seen> {
    let mut got: Vec<Seen> = log.lock().expect("log").iter().filter(|s| s.path == path).cloned().collect();
    got.sort_by_key(|s| s.start);
    got
}

/// Pairs of attempts of one delivery that overlap in time.
fn overlapping(got: &[Seen]) -> Vec<(Seen, Seen)> {
    let mut by_id: HashMap<&str, Vec<&Seen>> = HashMap::new();
    for s in got {
        by_id.entry(s.id.as_str()).or_default().push(s);
    }
    let mut out = Vec::new();
    for attempts in by_id.values() {
        for pair in attempts.windows(2) {
            if pair[1].start < pair[0].end {
                out.push((pair[0].clone(), pair[1].clone()));
            }
        }
    }
    out
}

/// The delivered attempts one hub made to `destination`, from its metrics.
async fn delivered_by(http: &reqwest::Client, hub: &Hub, destination: &str) -> u64 {
    let text = http.get(format!("{}/metrics", hub.url)).send().await.expect("metrics");
    let text = text.text().await.expect("metrics text");
    let series =
        format!("edihub_delivery_attempts_total{{destination=\"{destination}\",outcome=\"delivered\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&series)?.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn f8_two_replicas_share_the_delivery_queue() {
    let _serial = serial().await;
    let (addr, log) = start_receiver().await;
    let dir = TempDir::new("f8");
    let db = TestDb::new(Backend::Postgres).await;
    let mut config = HubConfig::new(&db.url);
    config.max_connections = 8;
    config.extra_toml = format!(
        "[delivery]\nallow_private_destinations = true\nretry_schedule = [\"200ms\", \"200ms\", \"200ms\"]\npoll_interval_ms = 50\n\
         lease_margin_secs = 1\nmax_in_flight_per_destination = 4\n\n\
         [[destinations]]\nid = \"fan\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"http://{addr}/fan\"\ntimeout_secs = 3\n\n\
         [[destinations]]\nid = \"line\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"http://{addr}/line\"\n\
         ordering = \"fifo\"\ntimeout_secs = 3\n"
    );
    let (a, b) = tokio::join!(Hub::start(&dir.0, "a", config.clone()), Hub::start(&dir.0, "b", config));
    let http = client(Duration::from_secs(10));
    let mut sent = Vec::new();
    for i in 0..MESSAGES {
        let hub = if i % 2 == 0 { &a } else { &b };
        sent.push(post_order(&http, &hub.url, &format!("f8-{i}")).await);
    }
    let everything = || {
        let ids = |path: &str| requests(&log, path).into_iter().map(|s| s.id).collect::<HashSet<_>>();
        ids("fan").len() >= MESSAGES && ids("line").len() >= MESSAGES
    };
    let logs = || format!("hub a:\n{}\nhub b:\n{}", a.log(), b.log());
    assert!(
        eventually(Duration::from_secs(90), everything).await,
        "not every message delivered:\n{}",
        logs()
    );

    let expected: HashSet<String> = sent.iter().cloned().collect();
    let fan = requests(&log, "fan");
    assert_eq!(
        fan.iter().map(|s| s.id.clone()).collect::<HashSet<_>>(),
        expected,
        "fan: none lost, none invented"
    );
    let clashes = overlapping(&fan);
    assert!(clashes.is_empty(), "attempts of one delivery ran at once: {clashes:?}");

    let line = requests(&log, "line");
    for pair in line.windows(2) {
        assert!(pair[1].start >= pair[0].end, "line: two requests in flight at once: {pair:?}");
    }
    let mut order: Vec<String> = line.iter().map(|s| s.id.clone()).collect();
    order.dedup(); // a repeat of the head (an expired lease) comes right after it
    assert_eq!(order, sent, "line: in commit order");

    let (fan_a, fan_b) = (delivered_by(&http, &a, "fan").await, delivered_by(&http, &b, "fan").await);
    let (line_a, line_b) = (delivered_by(&http, &a, "line").await, delivered_by(&http, &b, "line").await);
    assert!(fan_a > 0 && fan_b > 0, "both replicas delivered to fan: {fan_a} and {fan_b}");
    let connections = fan.iter().chain(&line).map(|s| s.connection).collect::<HashSet<_>>().len();
    result_line(
        "f8",
        &format!(
            "{MESSAGES} messages to two replicas: fan got {} requests ({} repeats; replica a {fan_a}, b {fan_b}), \
             none overlapping; line got {} requests ({} repeats; a {line_a}, b {line_b}), one at a time, \
             in commit order; {connections} connections",
            fan.len(),
            fan.len() - MESSAGES,
            line.len(),
            line.len() - MESSAGES
        ),
    );
    drop((a, b));
}
