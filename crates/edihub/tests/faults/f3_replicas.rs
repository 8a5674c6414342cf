//! F3: two edihub processes on one PostgreSQL. The same documents are sent
//! to both at once (each document's requests in flight together, documents in
//! random order), half with an Idempotency-Key and half without. Exactly one
//! message per document must be stored, and every duplicate must be answered
//! with the winner's id: by replay (`Idempotency-Replayed: true`, the
//! original body) for keyed documents, as `"status":"duplicate"` otherwise.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use edihub_store::testing::{Backend, TestDb};
use tokio::sync::Semaphore;

use crate::support::ledger::Outcome;
use crate::support::*;

async fn replicas(test: &str, count: usize, sends_per_hub: usize, in_flight: usize) {
    let _serial = serial().await;
    let mut rng = Rng::from_env(test);
    let dir = TempDir::new(test);
    let db = TestDb::new(Backend::Postgres).await;
    let mut config = HubConfig::new(&db.url);
    config.max_connections = 8;
    let (a, b) = tokio::join!(Hub::start(&dir.0, "a", config.clone()), Hub::start(&dir.0, "b", config));
    let docs = Arc::new(make_docs(&mut rng, count, false, 50));
    let sender = Sender::new(vec![a.url.clone(), b.url.clone()], PROD_KEY, Duration::from_secs(30));
    let mut order: Vec<usize> = (0..count).collect();
    rng.shuffle(&mut order);
    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(in_flight));
    let mut tasks = Vec::with_capacity(count);
    for index in order {
        let permit = gate.clone().acquire_owned().await.expect("semaphore");
        let (sender, docs) = (sender.clone(), docs.clone());
        let mut targets: Vec<usize> = (0..2 * sends_per_hub).map(|i| i % 2).collect();
        rng.shuffle(&mut targets);
        let mut task_rng = rng.clone();
        rng.next();
        tasks.push(tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            let sends = targets.iter().map(|&t| {
                let (sender, doc, mut r) = (sender.clone(), docs[index].clone(), task_rng.clone());
                task_rng.next();
                async move { sender.until_acked(&doc, t, deadline, &mut r).await }
            });
            let acks = futures_join_all(sends).await;
            drop(permit);
            acks
        }));
    }
    for t in tasks {
        t.await.expect("send task");
    }
    let elapsed = started.elapsed();
    let attempts = sender.attempts();
    let state = read_db(&db.url).await;
    let report = check(&docs, &attempts, &state, "acme");

    // Per document: exactly one 202, every other answer a 200 naming the same id.
    let mut per_doc: HashMap<usize, Vec<&crate::support::ledger::Attempt>> = HashMap::new();
    for a in attempts.iter().filter(|a| a.is_2xx()) {
        per_doc.entry(a.doc).or_default().push(a);
    }
    let (mut replays, mut fingerprint_dups, mut problems) = (0, 0, Vec::new());
    let mut by_hub = [0usize; 2];
    for doc in docs.iter() {
        let oks = per_doc.get(&doc.index).map(Vec::as_slice).unwrap_or_default();
        let winners = oks.iter().filter(|a| a.status() == Some(202)).count();
        if winners != 1 || oks.len() != 2 * sends_per_hub {
            problems.push(format!("doc {}: {winners} answers 202 of {} 2xx", doc.index, oks.len()));
        }
        for a in oks {
            let Outcome::Http { status, replayed, statuses, .. } = &a.outcome else { continue };
            if *status == 202 {
                by_hub[a.target] += 1;
                continue;
            }
            match (&doc.key, *replayed, statuses.first().map(String::as_str)) {
                (Some(_), true, Some("accepted")) => replays += 1,
                (None, false, Some("duplicate")) => fingerprint_dups += 1,
                other => {
                    problems.push(format!("doc {}: duplicate answered {other:?}: {:?}", doc.index, a.outcome))
                }
            }
        }
    }
    let non_2xx = attempts.iter().filter(|a| !a.is_2xx()).count();
    result_line(
        test,
        &format!(
            "{count} docs x {} sends in {elapsed:.1?}: messages={} winners by hub {by_hub:?}, duplicates answered by replay={replays} by fingerprint={fingerprint_dups}, non-2xx={non_2xx}, duplicate_blocked audit events={}",
            2 * sends_per_hub,
            state.messages.len(),
            state.duplicate_events
        ),
    );
    result_line(test, &report.summary());
    report.assert_clean();
    assert_eq!(state.messages.len(), count, "exactly one message per document");
    assert!(problems.is_empty(), "{} problems: {:#?}", problems.len(), &problems[..problems.len().min(10)]);
    assert_eq!(non_2xx, 0, "no fault was injected: every request should get a 2xx");
    assert_eq!(
        state.duplicate_events as usize,
        count * (2 * sends_per_hub - 1),
        "one audit event per blocked duplicate"
    );
    assert!(by_hub[0] > 0 && by_hub[1] > 0, "both replicas won some races: {by_hub:?}");
    drop((a, b));
}

/// Runs all futures concurrently (no `futures` dependency needed).
async fn futures_join_all<F: std::future::Future + Send + 'static>(
    futs: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.expect("join"));
    }
    out
}

/// CI size: 2,000 documents, each sent once to each replica at the same time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn f3_two_replicas_same_documents_at_once() {
    replicas("f3", 2000, 1, 16).await;
}

/// `make chaos`: 10,000 documents, each sent twice to each replica at the same time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "chaos: long; run by `make chaos`"]
async fn chaos_f3_two_replicas_ten_thousand_documents() {
    replicas("chaos_f3", 10_000 * chaos_scale(), 2, 32).await;
}
