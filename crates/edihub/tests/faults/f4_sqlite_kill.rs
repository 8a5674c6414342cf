//! F4: SQLite, SIGKILL under load. The store runs the file in WAL mode with
//! `synchronous = NORMAL` and `BEGIN IMMEDIATE` write transactions
//! (crates/edihub-store/src/sqlite.rs): a commit is in the WAL before edihub
//! answers, so killing the process loses nothing that was acknowledged (only
//! an OS crash or power loss could lose the last commits).
//!
//! After the last kill, before edihub starts again, the file is opened
//! directly: it must open cleanly (the WAL is recovered), pass
//! `PRAGMA integrity_check` and still be in WAL mode. Then edihub reopens it
//! and the load finishes; the ledger check must pass.

use std::sync::{Arc, Mutex};

use edihub_store::testing::Backend;
use sqlx::Row;

use crate::f2_kill::kill_under_load;
use crate::support::*;

/// What the direct look at the file after the last kill found.
#[derive(Debug, Default, Clone)]
struct FileCheck {
    wal_bytes_before_open: u64,
    integrity: Vec<String>,
    journal_mode: String,
    messages: i64,
}

async fn inspect(url: String, into: Arc<Mutex<FileCheck>>) {
    let path = url.trim_start_matches("sqlite://").to_string();
    let wal = std::fs::metadata(format!("{path}-wal")).map(|m| m.len()).unwrap_or(0);
    let opts: sqlx::sqlite::SqliteConnectOptions = url.parse().expect("sqlite url");
    let pool = sqlx::SqlitePool::connect_with(opts).await.expect("the killed database opens");
    let integrity: Vec<String> = sqlx::query("PRAGMA integrity_check")
        .fetch_all(&pool)
        .await
        .expect("integrity_check")
        .iter()
        .map(|r| r.get::<String, _>(0))
        .collect();
    let journal_mode: String =
        sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&pool).await.expect("journal_mode");
    let messages: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM messages").fetch_one(&pool).await.expect("count");
    pool.close().await;
    *into.lock().unwrap() = FileCheck { wal_bytes_before_open: wal, integrity, journal_mode, messages };
}

async fn sqlite_kills(test: &str, docs: usize, kills: usize) {
    let _serial = serial().await;
    let found = Arc::new(Mutex::new(FileCheck::default()));
    let f = found.clone();
    let run = kill_under_load(test, Backend::Sqlite, docs, kills, Some(move |url| inspect(url, f))).await;
    let file = found.lock().unwrap().clone();
    result_line(
        test,
        &format!(
            "after the last SIGKILL: WAL {} bytes, integrity_check {:?}, journal_mode {}, {} messages",
            file.wal_bytes_before_open, file.integrity, file.journal_mode, file.messages
        ),
    );
    assert_eq!(file.integrity, ["ok"], "integrity_check after SIGKILL");
    assert_eq!(file.journal_mode, "wal");
    assert!(file.messages > 0);
    assert_eq!(run.kills, kills);
    assert!(run.report.transport_errors.values().sum::<usize>() > 0, "the kills were not under load");
}

/// CI size: three SIGKILLs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn f4_sigkill_under_load_sqlite() {
    sqlite_kills("f4", 5000, 3).await;
}

/// `make chaos`: twenty SIGKILLs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "chaos: long; run by `make chaos`"]
async fn chaos_f4_sigkill_twenty_times_sqlite() {
    sqlite_kills("chaos_f4", 20_000 * chaos_scale(), 20).await;
}
