//! F11: two pull-feed consumers at once, reading large X12 interchanges
//! (4 MB each, about 270,000 segments: every element becomes a JSON string
//! when the page is rendered). The hub's peak memory (VmHWM) stays within a
//! bound: each page ends at its byte budget (here one message a page) and
//! the pages rendered at once share `feed.render_budget_bytes`, so the two
//! consumers take turns instead of each holding all the parsed messages of
//! a page. Following the cursor still yields every message once, in order,
//! to both.

use std::time::Duration;

use edihub_store::testing::{Backend, TestDb};

use crate::support::hub::sha256_hex;
use crate::support::*;

const SENDER: &str = "f11-sender-key";
const CONSUMER: &str = "f11-consumer-key";
/// Interchanges stored, each one transaction set.
const MESSAGES: usize = 6;
/// Segments of each set: about 4 MB.
const SEGMENTS: usize = 270_000;
/// The render budget of the hub (the default is 256 MiB): a page of one of
/// these messages is estimated above it, so pages are rendered one at a time.
const RENDER_BUDGET: usize = 64 * 1024 * 1024;
/// What the hub may reach: its start, the ingest (a few times one
/// interchange) and one page rendered at a time (RELIABILITY.md, F11, has
/// the figures). Without the bounds one read held all six parsed messages,
/// and two reads twice that.
const PEAK_BOUND_KIB: u64 = 400 * 1024;

/// An X12 interchange of one 850 with `segments` REF segments.
fn interchange(control: usize, segments: usize) -> String {
    let isa = format!(
        "ISA*00*          *00*          *ZZ*SENDER         *ZZ*RECEIVER       *240301*1200*U*00401*{control:09}*0*P*:~"
    );
    assert_eq!(isa.len(), 106);
    let mut x = isa;
    x.push_str(&format!("GS*PO*SENDER*RECEIVER*20240301*1200*{control}*X*004010~ST*850*0001~"));
    x.push_str(&format!("BEG*00*NE*PO{control}**20240301~"));
    for i in 0..segments {
        x.push_str(&format!("REF*ZZ*{i:07}~"));
    }
    x.push_str(&format!("SE*{}*0001~GE*1*{control}~IEA*1*{control:09}~", segments + 3));
    x
}

/// The peak resident memory of process `pid`, in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number")
}

/// Follows the feed from the start until `expected` messages came (a page
/// may be empty for a moment on PostgreSQL, while another transaction of
/// the server runs: the long poll waits it out); the ids in order and the
/// size of each page. Then the end: an empty page.
async fn follow(url: String, expected: usize) -> (Vec<String>, Vec<usize>) {
    let client = client(Duration::from_secs(300));
    let (mut ids, mut pages, mut after) = (Vec::new(), Vec::new(), String::new());
    for _ in 0..100 {
        let wait = if ids.len() < expected { 5 } else { 0 };
        let res = client
            .get(format!("{url}/api/edi-hub/messages?limit=100&wait={wait}&after={after}"))
            .basic_auth("erp", Some(CONSUMER))
            .send()
            .await
            .expect("feed");
        assert_eq!(res.status().as_u16(), 200);
        let page: serde_json::Value =
            serde_json::from_slice(&res.bytes().await.expect("page")).expect("JSON page");
        let messages = page["messages"].as_array().expect("messages");
        if messages.is_empty() && ids.len() >= expected {
            return (ids, pages);
        }
        if !messages.is_empty() {
            pages.push(messages.len());
        }
        ids.extend(messages.iter().map(|m| m["id"].as_str().expect("id").to_string()));
        after = page["next_cursor"].as_str().expect("next_cursor").to_string();
    }
    panic!("the feed did not end after 100 pages ({} messages)", ids.len());
}

async fn feed_of_large_messages_stays_within_its_memory(backend: Backend) {
    let _serial = serial().await;
    let dir = TempDir::new("f11");
    let db = TestDb::new(backend).await;
    let mut config = HubConfig::new(&db.url);
    config.request_timeout_secs = 300;
    config.extra_toml = format!(
        "\n[feed]\nrender_budget_bytes = {RENDER_BUDGET}\n\n[[tenants]]\nid = \"feedco\"\n  \
         [[tenants.environments]]\n  id = \"prod\"\n  api_keys_sha256 = [\"{}\"]\n  \
         consumer_keys_sha256 = [\"{}\"]\n",
        sha256_hex(SENDER),
        sha256_hex(CONSUMER)
    );
    let hub = Hub::start(&dir.0, "hub", config).await;
    let client = client(Duration::from_secs(120));
    let mut stored = Vec::new();
    for control in 1..=MESSAGES {
        let res = client
            .post(format!("{}/api/edi-hub/receive-message", hub.url))
            .basic_auth("sap", Some(SENDER))
            .header("content-type", "application/EDI-X12")
            .body(interchange(control, SEGMENTS))
            .send()
            .await
            .expect("post");
        assert_eq!(res.status().as_u16(), 202);
        let answer: serde_json::Value =
            serde_json::from_slice(&res.bytes().await.expect("answer")).expect("JSON answer");
        stored.push(answer["messages"][0]["id"].as_str().expect("id").to_string());
    }
    let after_ingest = peak_kib(hub.pid());
    let (a, b) = tokio::join!(
        tokio::spawn(follow(hub.url.clone(), MESSAGES)),
        tokio::spawn(follow(hub.url.clone(), MESSAGES))
    );
    let ((seen_a, pages_a), (seen_b, pages_b)) = (a.expect("consumer a"), b.expect("consumer b"));
    let peak = peak_kib(hub.pid());
    result_line(
        "f11",
        &format!("{backend:?}: VmHWM {after_ingest} KiB after the ingest, {peak} KiB after two consumers"),
    );
    assert_eq!(seen_a, stored, "every message once, in order");
    assert_eq!(seen_b, stored, "to each consumer");
    assert_eq!(pages_a, vec![1; MESSAGES], "a page ends at its byte budget: one such message a page");
    assert_eq!(pages_b, pages_a);
    assert!(peak < PEAK_BOUND_KIB, "peak {peak} KiB, bound {PEAK_BOUND_KIB} KiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn f11_sqlite_feed_of_large_messages_stays_within_its_memory() {
    feed_of_large_messages_stays_within_its_memory(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn f11_postgres_feed_of_large_messages_stays_within_its_memory() {
    feed_of_large_messages_stays_within_its_memory(Backend::Postgres).await;
}
