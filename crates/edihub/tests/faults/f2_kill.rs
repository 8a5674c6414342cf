//! F2: edihub killed with SIGKILL under load and restarted, on PostgreSQL.
//! The sender retries through the outage; the ledger check must pass.
//! (F4 runs the same on SQLite and then checks the file.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use edihub_store::testing::{Backend, TestDb};

use crate::support::*;

/// What a kill run leaves for the caller to inspect.
pub struct KillRun {
    /// The ledger check.
    pub report: Report,
    /// SIGKILLs delivered.
    pub kills: usize,
}

/// Sends load at one hub on `backend`, SIGKILLs it `kills` times (each after
/// a random 100–400 further acknowledgements) and restarts it. When
/// `after_last_kill` is given, it runs with the hub killed the last time and
/// not yet restarted (F4 checks the SQLite file there).
pub async fn kill_under_load<F, Fut>(
    test: &str,
    backend: Backend,
    docs: usize,
    kills: usize,
    after_last_kill: Option<F>,
) -> KillRun
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut rng = Rng::from_env(test);
    let dir = TempDir::new(test);
    let db = TestDb::new(backend).await;
    let mut hub = Hub::start(&dir.0, "hub", HubConfig::new(&db.url)).await;
    let docs = Arc::new(make_docs(&mut rng, docs, true, 30));
    let sender = Sender::new(vec![hub.url.clone()], PROD_KEY, Duration::from_secs(15));
    let deadline = Instant::now() + Duration::from_secs(40 + 20 * kills as u64);
    let load = Load::start(&sender, &docs, 8, deadline, &rng, |_| 0);
    let mut after = after_last_kill;
    let mut restarts = Vec::new();
    for k in 0..kills {
        let acked = sender.acked();
        let more = 100 + rng.below(300);
        assert!(
            eventually(Duration::from_secs(30), || sender.acked() >= acked + more).await,
            "no progress before kill {k}:\n{}",
            hub.log()
        );
        hub.kill();
        let killed = Instant::now();
        if k + 1 == kills
            && let Some(f) = after.take()
        {
            f(db.url.clone()).await;
        }
        tokio::time::sleep(Duration::from_millis(rng.below(500) as u64)).await;
        hub.restart().await;
        restarts.push(killed.elapsed());
    }
    let acked = sender.acked();
    assert!(
        eventually(Duration::from_secs(30), || sender.acked() >= acked + 100).await,
        "no progress after the last restart"
    );
    let unacked = load.finish().await;
    let attempts = sender.attempts();
    let state = read_db(&db.url).await;
    let report = check(&docs, &attempts, &state, "acme");
    result_line(test, &format!("{kills} SIGKILLs, down (kill→healthy) {restarts:.1?}"));
    result_line(test, &format!("{} | unacked={}", report.summary(), unacked.len()));
    for e in &report.error_after_commit {
        result_line(test, &format!("note: {e}"));
    }
    report.assert_clean();
    assert!(unacked.is_empty(), "documents never acknowledged: {unacked:?}");
    // A killed hub leaves no answer; a running one never answers 500.
    assert!(
        report.by_status.keys().all(|s| matches!(s, 200 | 202 | 503)),
        "unexpected statuses {:?}",
        report.by_status
    );
    drop(hub);
    drop(db);
    KillRun { report, kills }
}

async fn nothing(_: String) {}

/// CI size: three SIGKILLs in about 15 s of load.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn f2_sigkill_under_load_postgres() {
    let _serial = serial().await;
    let run = kill_under_load("f2", Backend::Postgres, 5000, 3, Some(nothing)).await;
    assert!(run.report.transport_errors.values().sum::<usize>() > 0, "the kills were not under load");
}

/// `make chaos`: twenty SIGKILLs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "chaos: long; run by `make chaos`"]
async fn chaos_f2_sigkill_twenty_times_postgres() {
    let _serial = serial().await;
    kill_under_load("chaos_f2", Backend::Postgres, 20_000 * chaos_scale(), 20, Some(nothing)).await;
}
