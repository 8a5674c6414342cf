//! F10: failover. A private primary with a streaming standby that every
//! commit waits for (`synchronous_standby_names = '*'`,
//! `synchronous_commit = on`); two edihub replicas on the primary under
//! load. The primary is stopped hard (`pg_ctl stop -m immediate`), the
//! standby promoted, and the replicas restarted with its URL (sqlx 0.9 reads
//! one host from a URL and has no `target_session_attrs`, so a multi-host
//! URL cannot do this). Checked: every message acknowledged before the
//! promotion is in the promoted standby, re-sending each of them after the
//! promotion is answered 200 with its original id (not stored twice), and
//! the ledger check passes on the promoted standby. Measured: kill to the
//! first ingest acknowledged by the promoted standby.
//!
//! `EDIHUB_FAILOVER_COMMIT=local` runs the same with `synchronous_commit =
//! local` (the primary acknowledges before the standby has the commit), to
//! show the check can fail: acknowledged messages may then be missing.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::Connection;

use crate::support::*;

/// Waits until the primary reports a synchronous standby (`pg_stat_replication`).
async fn wait_for_sync_standby(primary: &PgCluster) {
    let mut conn = sqlx::PgConnection::connect(&primary.url()).await.expect("connect to the primary");
    for _ in 0..600 {
        let state: Option<String> = sqlx::query_scalar(
            "SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming' LIMIT 1",
        )
        .fetch_optional(&mut conn)
        .await
        .expect("pg_stat_replication");
        if state.as_deref() == Some("sync") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the standby never became synchronous:\n{}", primary.server_log());
}

/// Documents with every IDoc missing from `db` among those `acked`.
fn missing(docs: &[Doc], acked: &HashSet<usize>, db: &ledger::DbState) -> Vec<usize> {
    let stored: HashSet<&str> = db.messages.iter().filter_map(|m| m.docnum.as_deref()).collect();
    let mut lost: Vec<usize> = acked
        .iter()
        .copied()
        .filter(|&d| docs[d].docnums.iter().any(|n| !stored.contains(n.as_str())))
        .collect();
    lost.sort_unstable();
    lost
}

/// Documents acknowledged (2xx) in the ledger so far.
fn acked_docs(sender: &Sender) -> HashSet<usize> {
    sender.attempts().iter().filter(|a| a.is_2xx()).map(|a| a.doc).collect()
}

/// Re-sends each of `acked` once more and returns the ones not answered 200.
async fn resend(sender: &Sender, docs: &[Doc], acked: &HashSet<usize>) -> Vec<String> {
    let mut wrong = Vec::new();
    for &d in acked {
        let a = sender.post(&docs[d], d % 2).await;
        if a.status() != Some(200) {
            wrong.push(format!("doc {d}: re-sent after the promotion, answered {:?}", a.outcome));
        }
    }
    wrong
}

async fn failover(test: &str, docs: usize) {
    let _serial = serial().await;
    let commit = std::env::var("EDIHUB_FAILOVER_COMMIT").unwrap_or_else(|_| "on".into());
    let mut rng = Rng::from_env(test);
    let dir = TempDir::new(test);
    let options = format!("-c synchronous_standby_names='*' -c synchronous_commit={commit}");
    let primary =
        tokio::task::spawn_blocking(move || PgCluster::start_with(&options)).await.expect("primary");
    let standby = tokio::task::block_in_place(|| PgCluster::standby_of(&primary, ""));
    wait_for_sync_standby(&primary).await;
    let mut config = HubConfig::new(&primary.url());
    config.acquire_timeout_secs = 1;
    config.max_connections = 8;
    let (a, b) = tokio::join!(Hub::start(&dir.0, "a", config.clone()), Hub::start(&dir.0, "b", config));
    let mut hubs = [a, b];
    let docs = Arc::new(make_docs(&mut rng, docs, true, 30));
    let sender = Sender::new(hubs.iter().map(|h| h.url.clone()).collect(), PROD_KEY, Duration::from_secs(20));
    let load = Load::start(&sender, &docs, 8, Instant::now() + Duration::from_secs(120), &rng, |i| i % 2);
    assert!(eventually(Duration::from_secs(60), || sender.acked() >= 500).await, "no load before the kill");

    tokio::task::block_in_place(|| primary.stop_immediate());
    let killed = sender.now();
    tokio::task::block_in_place(|| standby.promote());
    let promoted = sender.now();
    // Nothing can be acknowledged now: the primary is gone and no hub knows the standby yet.
    let acked = acked_docs(&sender);
    let lost = missing(&docs, &acked, &read_db(&standby.url()).await);
    for hub in hubs.iter_mut() {
        hub.kill();
        hub.set_database_url(&standby.url());
    }
    let [a, b] = &mut hubs;
    tokio::join!(a.restart(), b.restart());
    let restarted = sender.now();
    let first = eventually(Duration::from_secs(30), || {
        sender.attempts().iter().any(|a| a.sent_offset >= promoted && a.is_2xx())
    })
    .await;
    assert!(first, "no ingest acknowledged after the promotion:\n{}", hubs[0].log());
    let first_ok = sender
        .attempts()
        .iter()
        .filter(|a| a.sent_offset >= promoted && a.is_2xx())
        .map(|a| a.sent_offset + a.elapsed)
        .min()
        .expect("a 2xx after the promotion");
    let resent_wrong = resend(&sender, &docs, &acked).await;
    let more = sender.acked() + 100;
    assert!(
        eventually(Duration::from_secs(30), || sender.acked() >= more).await,
        "no load after the failover"
    );
    let unacked = load.finish().await;

    let report = check(&docs, &sender.attempts(), &read_db(&standby.url()).await, "acme");
    let secs = |d: Duration| (d.saturating_sub(killed)).as_secs_f64();
    result_line(
        test,
        &format!(
            "synchronous_commit={commit}: {} documents acknowledged before the kill, {} of them missing in the \
             promoted standby; promoted {:.2}s after the kill, replicas restarted at {:.2}s, first ingest \
             acknowledged {:.2}s after the kill; {} re-sent after the promotion, {} not answered 200",
            acked.len(),
            lost.len(),
            secs(promoted),
            secs(restarted),
            secs(first_ok),
            acked.len(),
            resent_wrong.len()
        ),
    );
    result_line(test, &format!("{} | unacked={}", report.summary(), unacked.len()));
    assert!(lost.is_empty(), "acknowledged but lost in the failover: docs {:?}", &lost[..lost.len().min(20)]);
    assert!(resent_wrong.is_empty(), "{:#?}", &resent_wrong[..resent_wrong.len().min(10)]);
    report.assert_clean();
    assert!(unacked.is_empty(), "documents never acknowledged: {unacked:?}");
    drop(hubs);
}

/// `make chaos`: one failover under the load of eight senders on two replicas.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "chaos: long; run by `make chaos`"]
async fn chaos_f10_failover_to_a_synchronous_standby() {
    failover("chaos_f10", 20_000 * chaos_scale()).await;
}
