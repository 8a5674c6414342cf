//! F9: four edihub processes behind PgBouncer in transaction mode
//! (`database_pooler = "transaction"`), F3 generalised. The same documents
//! (every tenth a packet, half with an Idempotency-Key) are sent to all four
//! at once, in random order, and one replica is SIGKILLed mid-load and
//! restarted; senders retry what failed on it, as at-least-once partners do.
//!
//! Exactly one message per document must be stored, and every answer must
//! agree with the database: at most one 202 per document, naming the stored
//! message; every other 2xx a 200 naming the same id (a replay for keyed
//! documents, `duplicate` otherwise). A document may lack its 202 only when
//! the request that stored it died with the killed process. A destination
//! on loopback takes every message, and the outbox must hold exactly one
//! delivery row per message. The test needs
//! the pooler `make test` starts (`EDIHUB_TEST_POOLER_URL`); without it, it
//! says so and passes without running.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use edihub_store::testing::{Backend, TestDb, pg_pooler_url};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::support::ledger::{Attempt, Outcome};
use crate::support::*;

const HUBS: usize = 4;

/// The size of one run.
struct Plan {
    docs: usize,
    sends_per_hub: usize,
    in_flight: usize,
    kills: usize,
}

/// One SIGKILL: which hub, and the sender's clock at the kill and once healthy again.
#[derive(Debug, Clone, Copy)]
struct Kill {
    hub: usize,
    at: Duration,
    healthy: Duration,
}

/// Sends every document to every hub `sends_per_hub` times at once, in random order.
fn send_everything(
    sender: &Sender,
    docs: &Arc<Vec<Doc>>,
    plan: &Plan,
    rng: &mut Rng,
) -> JoinHandle<Vec<Option<Attempt>>> {
    let (sender, docs) = (sender.clone(), docs.clone());
    let (sends, in_flight) = (plan.sends_per_hub * HUBS, plan.in_flight);
    let mut rng = rng.clone();
    tokio::spawn(async move {
        let mut order: Vec<usize> = (0..docs.len()).collect();
        rng.shuffle(&mut order);
        let gate = Arc::new(Semaphore::new(in_flight));
        let mut requests = Vec::new();
        for index in order {
            let permit = Arc::new(gate.clone().acquire_owned().await.expect("semaphore"));
            let mut targets: Vec<usize> = (0..sends).map(|i| i % HUBS).collect();
            rng.shuffle(&mut targets);
            for target in targets {
                let (sender, doc, permit) = (sender.clone(), docs[index].clone(), permit.clone());
                let mut r = rng.clone();
                rng.next();
                requests.push(tokio::spawn(async move {
                    let deadline = Instant::now() + Duration::from_secs(90);
                    let ack = sender.until_acked(&doc, target, deadline, &mut r).await;
                    drop(permit);
                    ack
                }));
            }
        }
        let mut acks = Vec::with_capacity(requests.len());
        for r in requests {
            acks.push(r.await.expect("send task"));
        }
        acks
    })
}

/// SIGKILLs a random hub after a share of the documents is acknowledged,
/// `plan.kills` times, restarting each after 0–500 ms.
async fn kill_mid_load(hubs: &mut [Hub], sender: &Sender, plan: &Plan, rng: &mut Rng) -> Vec<Kill> {
    let mut kills = Vec::new();
    for k in 0..plan.kills {
        let share = plan.docs * (k + 1) / (plan.kills + 2);
        assert!(
            eventually(Duration::from_secs(60), || sender.acked() >= share).await,
            "no progress before kill {k}: {} of {} documents acknowledged",
            sender.acked(),
            plan.docs
        );
        let hub = rng.below(HUBS);
        // The clock before the signal: a cut request may fail before kill() returns.
        let at = sender.now();
        hubs[hub].kill();
        tokio::time::sleep(Duration::from_millis(rng.below(500) as u64)).await;
        hubs[hub].restart().await;
        kills.push(Kill { hub, at, healthy: sender.now() });
    }
    kills
}

/// Whether `a` is a request without an HTTP answer from a hub after that
/// hub was killed: cut off by the kill, or sent later on a kept-alive
/// connection the dead process had left behind.
fn cut_by_kill(a: &Attempt, kills: &[Kill]) -> bool {
    matches!(a.outcome, Outcome::Transport(_))
        && kills.iter().any(|k| k.hub == a.target && a.sent_offset + a.elapsed >= k.at)
}

/// The `message.duplicate_blocked` events one blocked request of `doc`
/// writes: one for a replayed Idempotency-Key, one per IDoc otherwise.
fn blocked_events(doc: &Doc) -> usize {
    if doc.key.is_some() { 1 } else { doc.docnums.len() }
}

/// What the per-document check counted.
#[derive(Debug, Default)]
struct Answers {
    winners_by_hub: [usize; HUBS],
    replays: usize,
    fingerprint_dups: usize,
    stored_by_cut: usize,
    /// `message.duplicate_blocked` events the 200 answers account for.
    blocked_events: usize,
    problems: Vec<String>,
}

/// Checks every document's answers against the rule of the module comment.
fn check_answers(docs: &[Doc], attempts: &[Attempt], kills: &[Kill], sends: usize) -> Answers {
    let mut per_doc: HashMap<usize, Vec<&Attempt>> = HashMap::new();
    for a in attempts {
        per_doc.entry(a.doc).or_default().push(a);
    }
    let mut out = Answers::default();
    for doc in docs {
        let list = per_doc.get(&doc.index).map(Vec::as_slice).unwrap_or_default();
        let oks: Vec<&&Attempt> = list.iter().filter(|a| a.is_2xx()).collect();
        let winners = oks.iter().filter(|a| a.status() == Some(202)).count();
        let cut = list.iter().any(|a| !a.is_2xx() && cut_by_kill(a, kills));
        if oks.len() != sends || winners > 1 || (winners == 0 && !cut) {
            out.problems.push(format!(
                "doc {}: {winners} answers 202 of {} 2xx (cut by a kill: {cut})",
                doc.index,
                oks.len()
            ));
        }
        out.stored_by_cut += usize::from(winners == 0 && cut);
        for a in &oks {
            let Outcome::Http { status, replayed, statuses, .. } = &a.outcome else { continue };
            if *status == 202 {
                out.winners_by_hub[a.target] += 1;
                continue;
            }
            out.blocked_events += blocked_events(doc);
            match (&doc.key, *replayed, statuses.first().map(String::as_str)) {
                (Some(_), true, Some("accepted")) => out.replays += 1,
                (None, false, Some("duplicate")) => out.fingerprint_dups += 1,
                other => out
                    .problems
                    .push(format!("doc {}: duplicate answered {other:?}: {:?}", doc.index, a.outcome)),
            }
        }
        for a in list.iter().filter(|a| !a.is_2xx() && !cut_by_kill(a, kills)) {
            out.problems
                .push(format!("doc {}: hub {} answered {:?} outside a kill", doc.index, a.target, a.outcome));
        }
    }
    out
}

async fn pooled_replicas(test: &str, plan: Plan) {
    let _serial = serial().await;
    if pg_pooler_url().is_none() {
        result_line(
            test,
            "skipped: no PgBouncer (EDIHUB_TEST_POOLER_URL is unset; `make test` sets it in its pooled phase)",
        );
        return;
    }
    let mut rng = Rng::from_env(test);
    let dir = TempDir::new(test);
    let db = TestDb::new(Backend::Postgres).await;
    let mut hubs = start_hubs(&dir, &db, sink::start_receiver().await).await;
    let docs = Arc::new(make_docs(&mut rng, plan.docs, true, 50));
    let sender = Sender::new(hubs.iter().map(|h| h.url.clone()).collect(), PROD_KEY, Duration::from_secs(30));
    let started = Instant::now();
    let load = send_everything(&sender, &docs, &plan, &mut rng);
    let kills = kill_mid_load(&mut hubs, &sender, &plan, &mut rng).await;
    let unacked = load.await.expect("load").iter().filter(|a| a.is_none()).count();
    let elapsed = started.elapsed();

    let attempts = sender.attempts();
    // The test's own reads go to PostgreSQL directly, not through the pooler.
    let state = read_db(&db.direct_url()).await;
    verify(test, &plan, &docs, &attempts, &state, &kills, elapsed);
    assert_eq!(unacked, 0, "every request acknowledged in the end");
    let (wrong, rows) = sink::deliveries_per_message(&db.direct_url()).await;
    result_line(test, &format!("delivery rows={rows}, messages without exactly one={wrong}"));
    assert_eq!((wrong, rows), (0, state.messages.len() as i64), "one delivery row per message");
    drop(hubs);
}

/// Four hubs on `db` through the test pooler, started at once, delivering to `receiver`.
async fn start_hubs(dir: &TempDir, db: &TestDb, receiver: std::net::SocketAddr) -> Vec<Hub> {
    let mut config = HubConfig::new(&db.url);
    config.max_connections = 6;
    config.database_pooler = Some("transaction".into());
    config.extra_toml = format!(
        "[delivery]\nallow_private_destinations = true\n\n[[destinations]]\nid = \"sink\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"http://{receiver}/in\"\n"
    );
    let names: Vec<String> = (0..HUBS).map(|i| format!("hub{i}")).collect();
    let (h0, h1, h2, h3) = tokio::join!(
        Hub::start(&dir.0, &names[0], config.clone()),
        Hub::start(&dir.0, &names[1], config.clone()),
        Hub::start(&dir.0, &names[2], config.clone()),
        Hub::start(&dir.0, &names[3], config),
    );
    vec![h0, h1, h2, h3]
}

/// The result lines and every check of the module comment.
fn verify(
    test: &str,
    plan: &Plan,
    docs: &[Doc],
    attempts: &[Attempt],
    state: &ledger::DbState,
    kills: &[Kill],
    elapsed: Duration,
) {
    let report = check(docs, attempts, state, "acme");
    let answers = check_answers(docs, attempts, kills, plan.sends_per_hub * HUBS);
    let cut = attempts.iter().filter(|a| !a.is_2xx()).count();
    let extra_events = (state.duplicate_events as usize).saturating_sub(answers.blocked_events);
    result_line(
        test,
        &format!(
            "{} docs x {} sends to {HUBS} replicas through PgBouncer in {elapsed:.1?}; kills (hub, at, healthy) {:?}: \
             messages={} winners by hub {:?}, stored by a cut request (no 202)={}, duplicates answered by replay={} by fingerprint={}, \
             non-2xx={cut}, duplicate_blocked events={} (the 200 answers account for {}, {extra_events} more from cut requests)",
            plan.docs,
            plan.sends_per_hub * HUBS,
            kills
                .iter()
                .map(|k| (k.hub, format!("{:.1?}", k.at), format!("{:.1?}", k.healthy)))
                .collect::<Vec<_>>(),
            state.messages.len(),
            answers.winners_by_hub,
            answers.stored_by_cut,
            answers.replays,
            answers.fingerprint_dups,
            state.duplicate_events,
            answers.blocked_events,
        ),
    );
    result_line(test, &report.summary());
    report.assert_clean();
    let idocs: usize = docs.iter().map(|d| d.docnums.len()).sum();
    assert_eq!(state.messages.len(), idocs, "exactly one message per IDoc of every document");
    let p = &answers.problems;
    assert!(p.is_empty(), "{} problems: {:#?}", p.len(), &p[..p.len().min(10)]);
    assert!(cut > 0, "the kills cut no request: not under load");
    // The events of every 200; a request cut by a kill may have written its own.
    let cut_events: usize =
        attempts.iter().filter(|a| !a.is_2xx()).map(|a| blocked_events(&docs[a.doc])).sum();
    assert!(
        (answers.blocked_events..=answers.blocked_events + cut_events)
            .contains(&(state.duplicate_events as usize)),
        "duplicate_blocked events {} outside [{}, {}]",
        state.duplicate_events,
        answers.blocked_events,
        answers.blocked_events + cut_events
    );
    assert!(
        answers.winners_by_hub.iter().filter(|n| **n > 0).count() >= 3,
        "the replicas shared the wins: {:?}",
        answers.winners_by_hub
    );
}

/// CI size: 2,000 documents, each sent once to each of four replicas at
/// the same time; one replica SIGKILLed and restarted mid-load.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn f9_four_replicas_through_pgbouncer_one_killed() {
    pooled_replicas("f9", Plan { docs: 2000, sends_per_hub: 1, in_flight: 12, kills: 1 }).await;
}

/// `make chaos`: 5,000 documents (× `EDIHUB_CHAOS_SCALE`), each sent twice to
/// each replica at the same time; three SIGKILLs of random replicas.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "chaos: long; run by `make chaos`"]
async fn chaos_f9_four_replicas_through_pgbouncer_three_kills() {
    let plan = Plan { docs: 5000 * chaos_scale(), sends_per_hub: 2, in_flight: 24, kills: 3 };
    pooled_replicas("chaos_f9", plan).await;
}
