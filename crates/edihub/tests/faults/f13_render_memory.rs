//! F13: envelope rendering stays within its memory budget. X12 interchanges
//! of about 15 MB, one transaction set of 140,000 `REF` segments with 50
//! components each (within the intake's shape limits and `max_body_bytes`),
//! are delivered to two envelope destinations and a raw
//! one, on both backends; the hub's peak resident memory (`VmHWM`) must stay
//! under [`PEAK_BOUND_MB`]. Each envelope is rendered under
//! `delivery.render_budget_bytes` (64 MiB here, so such a message renders
//! alone), once for both envelope destinations whose attempts overlap, and
//! written segment by segment. Every message reaches every destination
//! once, its envelope carrying every segment.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use edihub_store::testing::{Backend, TestDb};

use crate::support::*;

/// Interchanges delivered.
const MESSAGES: usize = 4;
/// `REF` segments in the transaction set of each.
const SEGMENTS: usize = 140_000;
/// Components in each `REF02`.
const COMPONENTS: usize = 50;
/// The bound on the hub's peak resident memory, in MB: the intake of one
/// such interchange at a time, the render budget, and the bodies of the
/// attempts in flight, with room for the allocator.
const PEAK_BOUND_MB: u64 = 800;

/// Per path: the `webhook-id`s received and the size of each body.
type Seen = Arc<Mutex<HashMap<String, Vec<(String, usize)>>>>;

async fn receive(
    State(seen): State<Seen>,
    Path(path): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    if path.starts_with("env") {
        let envelope: serde_json::Value = serde_json::from_slice(&body).expect("a JSON envelope");
        let segments = envelope["payload"].as_array().map_or(0, Vec::len);
        assert_eq!(segments, SEGMENTS + 1, "the envelope carries BEG and every REF");
        let last = envelope["payload"][SEGMENTS][2].as_array().map_or(0, Vec::len);
        assert_eq!(last, COMPONENTS, "the last REF02 whole");
    }
    seen.lock().expect("seen").entry(path).or_default().push((id, body.len()));
    StatusCode::NO_CONTENT
}

async fn start_receiver() -> (std::net::SocketAddr, Seen) {
    let seen = Seen::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let app = axum::Router::new()
        .route("/{path}", axum::routing::post(receive))
        .layer(DefaultBodyLimit::disable())
        .with_state(seen.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, seen)
}

/// An X12 interchange (control number `n`) with one transaction set of
/// [`SEGMENTS`] `REF` segments whose `REF02` has [`COMPONENTS`] components.
fn interchange(n: usize) -> Vec<u8> {
    let mut x = format!(
        "ISA*00*          *00*          *ZZ*SENDER         *ZZ*RECEIVER       *240101*1200*^*00501*{n:09}*0*P*>~\
         GS*PO*S*R*20240101*1200*{n}*X*005010~ST*850*0001~BEG*00*SA*PO-{n}**20240101~"
    )
    .into_bytes();
    let reference = format!("REF*ZZ*{}~", vec!["a"; COMPONENTS].join(">"));
    for _ in 0..SEGMENTS {
        x.extend_from_slice(reference.as_bytes());
    }
    let count = SEGMENTS + 3;
    x.extend_from_slice(format!("SE*{count}*0001~GE*1*{n}~IEA*1*{n:09}~").as_bytes());
    x
}

/// The process's peak resident memory in MB (`VmHWM`).
fn peak_mb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).expect("kB") / 1024
}

async fn rendering_stays_within_its_budget(backend: Backend) {
    let _serial = serial().await;
    let (addr, seen) = start_receiver().await;
    let dir = TempDir::new("f13");
    let db = TestDb::new(backend).await;
    let mut config = HubConfig::new(&db.url);
    config.request_timeout_secs = 120;
    let destination = |id: &str, format: &str| {
        format!(
            "[[destinations]]\nid = \"{id}\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"http://{addr}/{id}\"\n\
             format = \"{format}\"\ntimeout_secs = 120\n"
        )
    };
    config.extra_toml = format!(
        "[delivery]\nallow_private_destinations = true\nrender_budget_bytes = 67108864\npoll_interval_ms = 100\n\n{}{}{}",
        destination("env1", "envelope"),
        destination("env2", "envelope"),
        destination("raw", "raw"),
    );
    let hub = Hub::start(&dir.0, "hub", config).await;
    let http = client(Duration::from_secs(300));
    let mut ids = Vec::new();
    for n in 1..=MESSAGES {
        let res = http
            .post(format!("{}/api/edi-hub/receive-message", hub.url))
            .bearer_auth(PROD_KEY)
            .header("content-type", "application/EDI-X12")
            .body(interchange(n))
            .send()
            .await
            .expect("send");
        let status = res.status();
        let body: serde_json::Value =
            serde_json::from_slice(&res.bytes().await.expect("answer")).expect("JSON");
        assert_eq!(status, 202, "{body}");
        ids.push(body["messages"][0]["id"].as_str().expect("id").to_string());
    }
    let all = || {
        let seen = seen.lock().expect("seen");
        ["env1", "env2", "raw"].iter().all(|p| seen.get(*p).is_some_and(|r| r.len() >= MESSAGES))
    };
    assert!(eventually(Duration::from_secs(600), all).await, "not every message delivered:\n{}", hub.log());
    let peak = peak_mb(hub.pid());
    result_line("f13_render_memory", &format!("{backend:?}: {MESSAGES} x 15 MB, peak RSS {peak} MB"));

    let seen = seen.lock().expect("seen").clone();
    for path in ["env1", "env2", "raw"] {
        let mut got: Vec<String> = seen[path].iter().map(|(id, _)| id.clone()).collect();
        got.sort();
        let mut want = ids.clone();
        want.sort();
        assert_eq!(got, want, "{path}: every message once");
    }
    assert!(seen["raw"].iter().all(|(_, len)| *len == interchange(1).len()), "raw: the bytes as received");
    assert!(peak <= PEAK_BOUND_MB, "peak RSS {peak} MB over {PEAK_BOUND_MB} MB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn f13_render_memory_sqlite() {
    rendering_stays_within_its_budget(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn f13_render_memory_postgres() {
    rendering_stays_within_its_budget(Backend::Postgres).await;
}
