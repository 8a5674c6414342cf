//! What every fault test uses: the hub process, a private PostgreSQL, the
//! documents, the ledger-keeping sender and the ledger check.

#![allow(dead_code)] // not every test uses every helper

pub mod docs;
pub mod hub;
pub mod ledger;
pub mod ledger_check;
pub mod pg;
pub mod raw;
pub mod sink;
pub mod stored;

use std::time::Duration;

use tokio::sync::{Mutex, MutexGuard};

pub use docs::{Doc, Rng, make_docs};
pub use hub::{Hub, HubConfig, PROD_KEY, TempDir};
pub use ledger::{Load, Report, Sender, check, client, read_db};
pub use pg::PgCluster;
pub use sink::post_order;

static SERIAL: Mutex<()> = Mutex::const_new(());

/// One fault test at a time: they load the machine on purpose, and their
/// timing assertions (answers within the request timeout) must not measure
/// another test's load. (A tokio mutex: a failed test does not poison it.)
pub async fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().await
}

/// A multiplier for the heavy (`#[ignore]`d, `make chaos`) variants:
/// `EDIHUB_CHAOS_SCALE` (default 1).
pub fn chaos_scale() -> usize {
    std::env::var("EDIHUB_CHAOS_SCALE").ok().and_then(|s| s.parse().ok()).filter(|n| *n > 0).unwrap_or(1)
}

/// Polls `f` every 50 ms until it is true or `limit` passes; returns whether it became true.
pub async fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    f()
}

/// Prints a result line that `make chaos` output and RELIABILITY.md quote.
pub fn result_line(test: &str, text: &str) {
    eprintln!("[{test}] {text}");
}
