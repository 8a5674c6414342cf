//! The sender and its ledger: every request, when it left, when and how it
//! was answered. A load of workers sends documents (and re-sends some, as
//! SAP does) and retries each until it gets a 2xx, the way an at-least-once
//! sender does; the ledger is then compared with the database.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::docs::{Doc, Rng};

pub use super::ledger_check::{Report, check};
pub use super::stored::{DbState, read_db};

/// How one request ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// An HTTP answer.
    Http {
        /// Status code.
        status: u16,
        /// `Content-Type`.
        content_type: Option<String>,
        /// `Retry-After`.
        retry_after: Option<String>,
        /// `Idempotency-Replayed: true`.
        replayed: bool,
        /// The message ids of the body, one per IDoc (2xx only).
        ids: Vec<Uuid>,
        /// `status` members of the body (`accepted` / `duplicate`), one per IDoc.
        statuses: Vec<String>,
        /// The body (first 300 bytes).
        body: String,
    },
    /// No HTTP answer: refused, reset, timed out on the client.
    Transport(String),
}

/// One request of the ledger.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The document.
    pub doc: usize,
    /// Which hub (index into the sender's targets).
    pub target: usize,
    /// Wall clock when the request left (comparable with `received_at`).
    pub sent_at: DateTime<Utc>,
    /// Wall clock when the answer (or the error) arrived.
    pub answered_at: DateTime<Utc>,
    /// Monotonic time since the sender started, at sending.
    pub sent_offset: Duration,
    /// How long it took.
    pub elapsed: Duration,
    /// What came back.
    pub outcome: Outcome,
}

impl Attempt {
    /// The HTTP status, if any.
    pub fn status(&self) -> Option<u16> {
        match &self.outcome {
            Outcome::Http { status, .. } => Some(*status),
            Outcome::Transport(_) => None,
        }
    }

    /// Whether the answer was a 2xx.
    pub fn is_2xx(&self) -> bool {
        self.status().is_some_and(|s| (200..300).contains(&s))
    }
}

/// An HTTP client that never uses a proxy.
pub fn client(timeout: Duration) -> reqwest::Client {
    // reqwest is built without a crypto provider (the binary installs ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(2))
        .pool_max_idle_per_host(64)
        .build()
        .expect("HTTP client")
}

/// Sends documents and writes down every request.
#[derive(Debug, Clone)]
pub struct Sender {
    client: reqwest::Client,
    /// Hub base URLs.
    pub targets: Arc<Mutex<Vec<String>>>,
    key: String,
    /// The ledger.
    pub ledger: Arc<Mutex<Vec<Attempt>>>,
    started: Instant,
}

impl Sender {
    /// A sender with `key` to `targets`, giving up on one request after `timeout`.
    pub fn new(targets: Vec<String>, key: &str, timeout: Duration) -> Sender {
        Sender {
            client: client(timeout),
            targets: Arc::new(Mutex::new(targets)),
            key: key.to_string(),
            ledger: Arc::new(Mutex::new(Vec::new())),
            started: Instant::now(),
        }
    }

    /// Monotonic time since the sender was made (the ledger's clock).
    pub fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// All attempts so far.
    pub fn attempts(&self) -> Vec<Attempt> {
        self.ledger.lock().unwrap().clone()
    }

    /// Documents acknowledged so far (distinct).
    pub fn acked(&self) -> usize {
        self.ledger.lock().unwrap().iter().filter(|a| a.is_2xx()).map(|a| a.doc).collect::<HashSet<_>>().len()
    }

    /// One POST of `doc` to hub `target`, recorded in the ledger.
    pub async fn post(&self, doc: &Doc, target: usize) -> Attempt {
        let url = format!("{}/api/edi-hub/receive-message", self.targets.lock().unwrap()[target]);
        let mut req = self
            .client
            .post(url)
            .header("authorization", format!("Bearer {}", self.key))
            .header("content-type", "application/xml")
            .body(doc.body.clone());
        if let Some(key) = &doc.key {
            req = req.header("idempotency-key", key);
        }
        let sent_offset = self.now();
        let sent_at = Utc::now();
        let started = Instant::now();
        let outcome = match req.send().await {
            Ok(res) => {
                let status = res.status().as_u16();
                let header = |n: &str| res.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
                let content_type = header("content-type");
                let retry_after = header("retry-after");
                let replayed = header("idempotency-replayed").as_deref() == Some("true");
                match res.bytes().await {
                    Ok(bytes) => {
                        let (ids, statuses) = parse_ids(&bytes);
                        let text = String::from_utf8_lossy(&bytes);
                        let body = text.chars().take(300).collect();
                        Outcome::Http { status, content_type, retry_after, replayed, ids, statuses, body }
                    }
                    Err(e) => Outcome::Transport(format!("body of a {status}: {}", error_kind(&e))),
                }
            }
            Err(e) => Outcome::Transport(error_kind(&e)),
        };
        let attempt = Attempt {
            doc: doc.index,
            target,
            sent_at,
            answered_at: Utc::now(),
            sent_offset,
            elapsed: started.elapsed(),
            outcome,
        };
        self.ledger.lock().unwrap().push(attempt.clone());
        attempt
    }

    /// Posts `doc` until a 2xx comes back or `deadline` passes; returns the
    /// acknowledging attempt.
    pub async fn until_acked(
        &self,
        doc: &Doc,
        target: usize,
        deadline: Instant,
        rng: &mut Rng,
    ) -> Option<Attempt> {
        let mut tries = 0u64;
        loop {
            let attempt = self.post(doc, target).await;
            if attempt.is_2xx() {
                return Some(attempt);
            }
            tries += 1;
            if Instant::now() >= deadline {
                return None;
            }
            // An impatient SAP: retry soon (with jitter), whatever Retry-After says.
            let backoff = (50 * tries).min(400) + rng.next() % 100;
            tokio::time::sleep(Duration::from_millis(backoff)).await;
        }
    }
}

fn error_kind(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connect"
    } else if e.is_body() || e.is_decode() {
        "body"
    } else {
        "request"
    };
    let mut text = format!("{kind}: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// Ids and statuses of a 2xx body: one object, or `{"messages":[…]}`.
fn parse_ids(bytes: &[u8]) -> (Vec<Uuid>, Vec<String>) {
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else { return (Vec::new(), Vec::new()) };
    let items: Vec<&Value> = match v.get("messages").and_then(Value::as_array) {
        Some(list) => list.iter().collect(),
        None => vec![&v],
    };
    let ids = items.iter().filter_map(|m| m["id"].as_str().and_then(|s| Uuid::parse_str(s).ok())).collect();
    let statuses = items.iter().filter_map(|m| m["status"].as_str().map(str::to_string)).collect();
    (ids, statuses)
}

/// A running load: `workers` tasks sending fresh documents, re-sending about
/// one in five earlier ones, each until acknowledged.
#[derive(Debug)]
pub struct Load {
    stop: Arc<AtomicBool>,
    handles: Vec<tokio::task::JoinHandle<Vec<usize>>>,
    /// Documents handed out so far.
    pub started: Arc<AtomicUsize>,
}

impl Load {
    /// Starts the workers. Target of each request: `target_of(doc index)`.
    pub fn start(
        sender: &Sender,
        docs: &Arc<Vec<Doc>>,
        workers: usize,
        deadline: Instant,
        rng: &Rng,
        target_of: fn(usize) -> usize,
    ) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let next = Arc::new(AtomicUsize::new(0));
        let handles = (0..workers)
            .map(|w| {
                let (sender, docs, stop, next) = (sender.clone(), docs.clone(), stop.clone(), next.clone());
                let mut rng = rng.clone();
                for _ in 0..=w {
                    rng.next();
                }
                tokio::spawn(async move {
                    let mut unacked = Vec::new();
                    while !stop.load(Ordering::SeqCst) {
                        let fresh = next.load(Ordering::SeqCst);
                        let index = if fresh > 0 && (rng.chance(20) || fresh >= docs.len()) {
                            rng.below(fresh.min(docs.len()))
                        } else {
                            let i = next.fetch_add(1, Ordering::SeqCst);
                            if i >= docs.len() {
                                continue;
                            }
                            i
                        };
                        let doc = &docs[index];
                        if sender.until_acked(doc, target_of(index), deadline, &mut rng).await.is_none() {
                            unacked.push(index);
                        }
                        if Instant::now() >= deadline {
                            break;
                        }
                    }
                    unacked
                })
            })
            .collect();
        Load { stop, handles, started: next }
    }

    /// Stops handing out documents, lets each worker finish its current one
    /// (retrying until acknowledged), and returns the documents that never
    /// were.
    pub async fn finish(self) -> Vec<usize> {
        self.stop.store(true, Ordering::SeqCst);
        let mut unacked = Vec::new();
        for h in self.handles {
            unacked.extend(h.await.expect("load worker"));
        }
        unacked
    }
}
