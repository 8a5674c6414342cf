//! The sender and its ledger: every request, when it left, when and how it
//! was answered. A load of workers sends documents (and re-sends some, as
//! SAP does) and retries each until it gets a 2xx, the way an at-least-once
//! sender does; the ledger is then compared with the database.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::docs::{Doc, Rng};

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

/// A message row, as the ledger check needs it.
#[derive(Debug, Clone)]
pub struct StoredMessage {
    /// `messages.id`.
    pub id: Uuid,
    /// Tenant.
    pub tenant_id: String,
    /// Environment.
    pub environment_id: String,
    /// `EDI_DC40.DOCNUM`.
    pub docnum: Option<String>,
    /// The fingerprint as computed.
    pub key_fingerprint: Option<String>,
    /// The Idempotency-Key it came with.
    pub idempotency_key: Option<String>,
    /// The raw body.
    pub payload: Vec<u8>,
    /// When it was received (the server's clock).
    pub received_at: DateTime<Utc>,
}

/// The request keys, each with whether it keeps an answer.
const KEYS: &str = "SELECT tenant_id, key, (answer IS NOT NULL OR status_code <> 0) AS answered, message_id \
    FROM idempotency_keys";

/// An `idempotency_keys` row.
#[derive(Debug, Clone)]
pub struct StoredKey {
    /// Tenant.
    pub tenant_id: String,
    /// The key.
    pub key: String,
    /// Whether the key keeps an answer (as data, or a rendered response
    /// kept by an earlier version); false = claimed without one.
    pub answered: bool,
    /// The message it answered with.
    pub message_id: Option<Uuid>,
}

/// Everything the check reads.
#[derive(Debug, Clone, Default)]
pub struct DbState {
    /// All messages.
    pub messages: Vec<StoredMessage>,
    /// All keys.
    pub keys: Vec<StoredKey>,
    /// `message.duplicate_blocked` audit events.
    pub duplicate_events: i64,
}

/// Reads `messages` and `idempotency_keys` straight from the database.
pub async fn read_db(url: &str) -> DbState {
    use sqlx::Row;
    if url.starts_with("sqlite:") {
        let opts: sqlx::sqlite::SqliteConnectOptions = url.parse().expect("sqlite url");
        let pool = sqlx::SqlitePool::connect_with(opts).await.expect("open sqlite");
        let messages = sqlx::query(
            "SELECT m.id, m.tenant_id, m.environment_id, m.docnum, m.key_fingerprint, m.idempotency_key, COALESCE(h.payload, m.payload) AS payload, m.received_at FROM messages m LEFT JOIN messages h ON h.id = m.payload_message_id",
        )
        .fetch_all(&pool)
        .await
        .expect("read messages")
        .into_iter()
        .map(|r| StoredMessage {
            id: r.get("id"),
            tenant_id: r.get("tenant_id"),
            environment_id: r.get("environment_id"),
            docnum: r.get("docnum"),
            key_fingerprint: r.get("key_fingerprint"),
            idempotency_key: r.get("idempotency_key"),
            payload: r.get("payload"),
            received_at: DateTime::parse_from_rfc3339(&r.get::<String, _>("received_at"))
                .expect("received_at")
                .with_timezone(&Utc),
        })
        .collect();
        let keys = sqlx::query(KEYS)
            .fetch_all(&pool)
            .await
            .expect("read keys")
            .into_iter()
            .map(|r| StoredKey {
                tenant_id: r.get("tenant_id"),
                key: r.get("key"),
                answered: r.get("answered"),
                message_id: r.get("message_id"),
            })
            .collect();
        let duplicate_events: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM audit_events WHERE action = 'message.duplicate_blocked'",
        )
        .fetch_one(&pool)
        .await
        .expect("count audit");
        pool.close().await;
        DbState { messages, keys, duplicate_events }
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("connect postgres");
        let messages = sqlx::query(
            "SELECT m.id, m.tenant_id, m.environment_id, m.docnum, m.key_fingerprint, m.idempotency_key, COALESCE(h.payload, m.payload) AS payload, m.received_at FROM messages m LEFT JOIN messages h ON h.id = m.payload_message_id",
        )
        .fetch_all(&pool)
        .await
        .expect("read messages")
        .into_iter()
        .map(|r| StoredMessage {
            id: r.get("id"),
            tenant_id: r.get("tenant_id"),
            environment_id: r.get("environment_id"),
            docnum: r.get("docnum"),
            key_fingerprint: r.get("key_fingerprint"),
            idempotency_key: r.get("idempotency_key"),
            payload: r.get("payload"),
            received_at: r.get("received_at"),
        })
        .collect();
        let keys = sqlx::query(KEYS)
            .fetch_all(&pool)
            .await
            .expect("read keys")
            .into_iter()
            .map(|r| StoredKey {
                tenant_id: r.get("tenant_id"),
                key: r.get("key"),
                answered: r.get("answered"),
                message_id: r.get("message_id"),
            })
            .collect();
        let duplicate_events: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM audit_events WHERE action = 'message.duplicate_blocked'",
        )
        .fetch_one(&pool)
        .await
        .expect("count audit");
        pool.close().await;
        DbState { messages, keys, duplicate_events }
    }
}

/// What the ledger check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Requests in the ledger.
    pub requests: usize,
    /// Answers by status code.
    pub by_status: BTreeMap<u16, usize>,
    /// Requests without an HTTP answer, by error kind.
    pub transport_errors: BTreeMap<String, usize>,
    /// Documents sent at least once.
    pub docs_sent: usize,
    /// Documents with a 2xx.
    pub docs_acked: usize,
    /// Messages in the database.
    pub messages: usize,
    /// Documents stored by a request whose answer the sender never saw as
    /// 2xx (the retry was then answered as a duplicate, with the same id).
    pub committed_unacknowledged: usize,
    /// Of those, the ones whose only in-flight request got an HTTP error
    /// status (not a transport error): "answered 5xx although committed".
    pub error_after_commit: Vec<String>,
    /// Broken promises.
    pub violations: Vec<String>,
}

impl Report {
    /// Panics listing the violations (and the numbers).
    #[track_caller]
    pub fn assert_clean(&self) {
        assert!(
            self.violations.is_empty(),
            "ledger check failed:\n  {}\n{}",
            self.violations.join("\n  "),
            self.summary()
        );
    }

    /// One paragraph of numbers.
    pub fn summary(&self) -> String {
        format!(
            "requests={} by_status={:?} transport_errors={:?} docs_sent={} docs_acked={} messages={} committed_unacknowledged={} error_after_commit={}",
            self.requests,
            self.by_status,
            self.transport_errors,
            self.docs_sent,
            self.docs_acked,
            self.messages,
            self.committed_unacknowledged,
            self.error_after_commit.len()
        )
    }
}

/// Compares the ledger with the database: every 2xx stored exactly once under
/// the id it named, nothing half-stored, no fingerprint held twice.
pub fn check(docs: &[Doc], attempts: &[Attempt], db: &DbState, tenant: &str) -> Report {
    let mut r = Report { requests: attempts.len(), messages: db.messages.len(), ..Report::default() };
    let mut v = Vec::new();
    let by_docnum: HashMap<&str, (usize, usize)> = docs
        .iter()
        .flat_map(|d| d.docnums.iter().enumerate().map(move |(i, n)| (n.as_str(), (d.index, i))))
        .collect();
    let mut per_doc: HashMap<usize, Vec<&Attempt>> = HashMap::new();
    for a in attempts {
        per_doc.entry(a.doc).or_default().push(a);
        match &a.outcome {
            Outcome::Http { status, .. } => *r.by_status.entry(*status).or_default() += 1,
            Outcome::Transport(e) => {
                let kind = e.split(':').next().unwrap_or("?").to_string();
                *r.transport_errors.entry(kind).or_default() += 1;
            }
        }
    }
    r.docs_sent = per_doc.len();

    // The database side.
    let mut stored: HashMap<&str, Vec<&StoredMessage>> = HashMap::new();
    let mut by_fp: HashMap<(&str, &str, &str), usize> = HashMap::new();
    let ids: HashMap<Uuid, &StoredMessage> = db.messages.iter().map(|m| (m.id, m)).collect();
    for m in &db.messages {
        let Some(docnum) = m.docnum.as_deref() else {
            v.push(format!("message {} has no docnum", m.id));
            continue;
        };
        stored.entry(docnum).or_default().push(m);
        let Some(&(doc, _)) = by_docnum.get(docnum) else {
            v.push(format!("message {} (docnum {docnum}) is no document of this run", m.id));
            continue;
        };
        if !per_doc.contains_key(&doc) {
            v.push(format!("message {} (doc {doc}) was stored but never sent", m.id));
        }
        if m.payload != docs[doc].body {
            v.push(format!("message {} (doc {doc}): payload differs from what was sent", m.id));
        }
        if (m.tenant_id.as_str(), m.environment_id.as_str()) != (tenant, "prod") {
            v.push(format!("message {} stored in {}/{}", m.id, m.tenant_id, m.environment_id));
        }
        if m.idempotency_key != docs[doc].key {
            v.push(format!(
                "message {} (doc {doc}): idempotency_key {:?}, sent {:?}",
                m.id, m.idempotency_key, docs[doc].key
            ));
        }
        match m.key_fingerprint.as_deref() {
            // Every test message type has a window of 168 h and every run
            // lasts minutes: two rows with one fingerprint are two inside it.
            Some(fp) => *by_fp.entry((m.tenant_id.as_str(), m.environment_id.as_str(), fp)).or_default() += 1,
            None => v.push(format!("message {} has no fingerprint", m.id)),
        }
    }
    for ((t, e, fp), n) in &by_fp {
        if *n > 1 {
            v.push(format!("({t}, {e}, {fp}) holds {n} messages inside its window"));
        }
    }
    for (docnum, list) in &stored {
        if list.len() > 1 {
            v.push(format!("docnum {docnum} stored {} times", list.len()));
        }
    }
    // Keys: claimed ⇒ answered, and pointing at a stored message of that key.
    let keys: HashMap<&str, &StoredKey> = db.keys.iter().map(|k| (k.key.as_str(), k)).collect();
    for k in &db.keys {
        if !k.answered {
            v.push(format!("key {} claimed without a response (half-stored)", k.key));
        }
        match k.message_id.and_then(|id| ids.get(&id)) {
            Some(m) if m.idempotency_key.as_deref() == Some(k.key.as_str()) && m.tenant_id == k.tenant_id => {
            }
            _ => {
                v.push(format!("key {} points at {:?}, not at a message stored with it", k.key, k.message_id))
            }
        }
    }
    for m in &db.messages {
        if let Some(key) = &m.idempotency_key
            && !keys.contains_key(key.as_str())
        {
            v.push(format!("message {} came with key {key} but the key is not stored (half-stored)", m.id));
        }
    }

    // The ledger side, document by document.
    for doc in docs {
        let Some(list) = per_doc.get(&doc.index) else { continue };
        let rows: Vec<Option<&StoredMessage>> =
            doc.docnums.iter().map(|n| stored.get(n.as_str()).and_then(|l| l.first().copied())).collect();
        let present = rows.iter().filter(|r| r.is_some()).count();
        if present != 0 && present != rows.len() {
            v.push(format!(
                "doc {} (packet of {}): only {present} IDocs stored (half-stored)",
                doc.index,
                rows.len()
            ));
        }
        let oks: Vec<&&Attempt> = list.iter().filter(|a| a.is_2xx()).collect();
        for a in list {
            if let Some(s) = a.status()
                && !matches!(s, 200 | 202 | 503)
            {
                v.push(format!("doc {}: unexpected status {s}: {:?}", doc.index, a.outcome));
            }
        }
        if oks.is_empty() {
            continue;
        }
        r.docs_acked += 1;
        let accepted = oks.iter().filter(|a| a.status() == Some(202)).count();
        if accepted > 1 {
            v.push(format!("doc {}: {accepted} answers were 202 (stored more than once?)", doc.index));
        }
        let first = &oks[0];
        for a in &oks {
            let Outcome::Http { ids, .. } = &a.outcome else { unreachable!() };
            if ids.len() != doc.docnums.len() {
                v.push(format!(
                    "doc {}: a 2xx named {} ids for {} IDocs: {:?}",
                    doc.index,
                    ids.len(),
                    doc.docnums.len(),
                    a.outcome
                ));
                continue;
            }
            for (i, id) in ids.iter().enumerate() {
                match rows[i] {
                    Some(m) if m.id == *id => {}
                    Some(m) => v.push(format!(
                        "doc {} IDoc {i}: a 2xx named {id}, the database holds {} (duplicate not answered with the winner's id)",
                        doc.index, m.id
                    )),
                    None => v.push(format!("doc {} IDoc {i}: answered 2xx with {id} but not stored (lost 2xx)", doc.index)),
                }
            }
        }
        // Stored by a request the sender did not see succeed?
        if first.status() == Some(200) && accepted == 0 {
            r.committed_unacknowledged += 1;
            if let Some(Some(m)) = rows.first() {
                let in_flight: Vec<&&Attempt> = list
                    .iter()
                    .filter(|a| a.sent_at <= m.received_at && m.received_at <= a.answered_at)
                    .collect();
                let any_2xx = in_flight.iter().any(|a| a.is_2xx());
                let http_error = in_flight.iter().find(|a| a.status().is_some_and(|s| s >= 400));
                let any_transport = in_flight.iter().any(|a| a.status().is_none());
                if !any_2xx
                    && !any_transport
                    && let Some(a) = http_error
                {
                    r.error_after_commit.push(format!(
                        "doc {}: stored at {} by a request answered {:?} after {:?}: {:?}",
                        doc.index,
                        m.received_at,
                        a.status(),
                        a.elapsed,
                        a.outcome
                    ));
                }
            }
        }
    }
    r.violations = v;
    r
}
