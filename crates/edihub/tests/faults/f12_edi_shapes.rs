//! F12: EDI shapes no real interchange has, against the real binary on
//! both backends. A 15 MB X12 interchange whose BEG03 holds 7.5 million
//! components (and its kin: 7.5 million elements in one segment, millions
//! of repetitions of one element) is refused with 422 naming the segment
//! as soon as the reader passes the shape limits (docs/edi.md, "Limits"),
//! before the values are kept: the hub's peak resident memory (`VmHWM`)
//! grows by a small multiple of the body, where the accepted shape took
//! over ten times it. Nothing is stored, and the hub serves on.

use std::time::Duration;

use edihub_store::testing::{Backend, TestDb};

use crate::support::*;

/// The size of each body.
const BODY_BYTES: usize = 15_000_000;

/// How much the peak resident memory may grow over the three bodies: the
/// body as received and the reader's copy of its text, with room for the
/// allocator and the database driver; the values of the refused segment
/// are never kept (accepted, the first shape grew it by over ten times the
/// body).
const GROWTH_LIMIT: u64 = 5 * BODY_BYTES as u64;

/// An X12 850 whose BEG is `beg` (without its terminator), under control number `ctrl`.
fn x12(ctrl: u32, beg: &str) -> Vec<u8> {
    format!(
        "ISA*00*          *00*          *ZZ*SHAPES         *ZZ*ACME           *240301*1200*^*00501*{ctrl:09}*0*P*>~\
         GS*PO*SHAPES*ACME*20240301*1200*{ctrl}*X*005010~ST*850*0001~{beg}~SE*3*0001~GE*1*{ctrl}~IEA*1*{ctrl:09}~"
    )
    .into_bytes()
}

/// The three shapes: (name, body, what the refusal names).
fn shapes() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let n = BODY_BYTES / 2;
    vec![
        (
            "7.5 M components in BEG03",
            x12(1, &format!("BEG*00*SA*{}", "A>".repeat(n).trim_end_matches('>'))),
            "segment 4 (BEG) has more than 99 components in element 3",
        ),
        (
            "15 M elements in BEG",
            x12(2, &format!("BEG{}", "*".repeat(2 * n))),
            "segment 4 (BEG) has more than 99 elements",
        ),
        (
            "7.5 M repetitions of BEG01",
            x12(3, &format!("BEG*{}", "A^".repeat(n).trim_end_matches('^'))),
            "more than 999 repetitions of element 1",
        ),
    ]
}

/// `VmHWM` (peak resident set) of process `pid`, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM line");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmHWM value");
    kib * 1024
}

async fn refuse_shapes(backend: Backend) {
    let dir = TempDir::new("f12");
    let db = TestDb::new(backend).await;
    let hub = Hub::start(&dir.0, "hub", HubConfig::new(&db.url)).await;
    let client = client(Duration::from_secs(60));
    let url = format!("{}/api/edi-hub/receive-message", hub.url);
    let post = |body: Vec<u8>| {
        client
            .post(&url)
            .bearer_auth(PROD_KEY)
            .header("content-type", "application/EDI-X12")
            .body(body)
            .send()
    };
    let before = peak_rss(hub.pid());
    for (name, body, detail) in shapes() {
        assert!(body.len() >= BODY_BYTES, "{name}: {} bytes", body.len());
        let res = post(body).await.expect("an answer");
        let status = res.status().as_u16();
        let text = res.text().await.expect("body");
        assert_eq!(status, 422, "{name}: {text}");
        assert!(text.contains(detail) && text.len() < 400, "{name}: {text}");
    }
    let growth = peak_rss(hub.pid()).saturating_sub(before);
    result_line(
        "f12",
        &format!(
            "{backend:?}: three 15 MB bodies refused, peak resident memory grew by {} MB",
            growth / 1_000_000
        ),
    );
    assert!(growth < GROWTH_LIMIT, "{backend:?}: the peak grew by {growth} bytes (limit {GROWTH_LIMIT})");
    let stored = read_db(&db.url).await;
    assert!(stored.messages.is_empty(), "{backend:?}: nothing stored: {:?}", stored.messages.len());
    assert!(stored.keys.is_empty(), "{backend:?}: no interchange claimed");
    // The hub serves on: the same interchange with a sound BEG is stored.
    let res = post(x12(4, "BEG*00*SA*PO-4**20240301")).await.expect("an answer");
    assert_eq!(res.status().as_u16(), 202, "{}", res.text().await.unwrap_or_default());
    assert_eq!(read_db(&db.url).await.messages.len(), 1);
}

/// CI: the three shapes on SQLite and on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f12_segments_of_millions_of_values_are_refused_within_memory() {
    let _serial = serial().await;
    refuse_shapes(Backend::Sqlite).await;
    refuse_shapes(Backend::Postgres).await;
}
