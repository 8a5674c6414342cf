//! The ledger check: the sender's ledger against the database. Every 2xx
//! stored exactly once under the id it named, nothing half-stored, no
//! fingerprint held twice, and every commit the sender did not see
//! succeed counted.

use std::collections::{BTreeMap, HashMap};

use uuid::Uuid;

use super::docs::Doc;
use super::ledger::{Attempt, Outcome};
use super::stored::{DbState, StoredKey, StoredMessage};

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
    let per_doc = tally(attempts, &mut r);
    r.docs_sent = per_doc.len();
    let mut v = Vec::new();
    let stored = check_rows(docs, &per_doc, db, tenant, &mut v);
    check_keys(db, &mut v);
    for doc in docs {
        if let Some(list) = per_doc.get(&doc.index) {
            check_document(doc, list, &stored, &mut r, &mut v);
        }
    }
    r.violations = v;
    r
}

/// The requests of each document, and the answers counted by status.
fn tally<'a>(attempts: &'a [Attempt], r: &mut Report) -> HashMap<usize, Vec<&'a Attempt>> {
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
    per_doc
}

/// Each stored row against the document it came from: sent, the same
/// bytes, in its scope with its key, its fingerprint held once. Returns
/// the rows by docnum.
fn check_rows<'a>(
    docs: &[Doc],
    per_doc: &HashMap<usize, Vec<&Attempt>>,
    db: &'a DbState,
    tenant: &str,
    v: &mut Vec<String>,
) -> HashMap<&'a str, Vec<&'a StoredMessage>> {
    let by_docnum: HashMap<&str, usize> =
        docs.iter().flat_map(|d| d.docnums.iter().map(move |n| (n.as_str(), d.index))).collect();
    let mut stored: HashMap<&str, Vec<&StoredMessage>> = HashMap::new();
    let mut by_fp: HashMap<(&str, &str, &str), usize> = HashMap::new();
    for m in &db.messages {
        let Some(docnum) = m.docnum.as_deref() else {
            v.push(format!("message {} has no docnum", m.id));
            continue;
        };
        stored.entry(docnum).or_default().push(m);
        let Some(&doc) = by_docnum.get(docnum) else {
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
    stored
}

/// Keys: claimed ⇒ answered, and pointing at a stored message of that key;
/// a message that came with a key has its key stored.
fn check_keys(db: &DbState, v: &mut Vec<String>) {
    let ids: HashMap<Uuid, &StoredMessage> = db.messages.iter().map(|m| (m.id, m)).collect();
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
}

/// One document's requests against its rows: all of a packet or none, only
/// expected statuses, at most one 202, every 2xx naming the stored ids.
fn check_document(
    doc: &Doc,
    list: &[&Attempt],
    stored: &HashMap<&str, Vec<&StoredMessage>>,
    r: &mut Report,
    v: &mut Vec<String>,
) {
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
    for a in list {
        if let Some(s) = a.status()
            && !matches!(s, 200 | 202 | 503)
        {
            v.push(format!("doc {}: unexpected status {s}: {:?}", doc.index, a.outcome));
        }
    }
    let oks: Vec<&Attempt> = list.iter().copied().filter(|a| a.is_2xx()).collect();
    let Some(first) = oks.first() else { return };
    r.docs_acked += 1;
    let accepted = oks.iter().filter(|a| a.status() == Some(202)).count();
    if accepted > 1 {
        v.push(format!("doc {}: {accepted} answers were 202 (stored more than once?)", doc.index));
    }
    for a in &oks {
        check_named_ids(doc, a, &rows, v);
    }
    // Stored by a request the sender did not see succeed?
    if first.status() == Some(200) && accepted == 0 {
        r.committed_unacknowledged += 1;
        if let Some(Some(m)) = rows.first() {
            error_after_commit(doc, list, m, r);
        }
    }
}

/// A 2xx names one id per IDoc, each the stored row's (a duplicate is
/// answered with the winner's id).
fn check_named_ids(doc: &Doc, a: &Attempt, rows: &[Option<&StoredMessage>], v: &mut Vec<String>) {
    let Outcome::Http { ids, .. } = &a.outcome else { unreachable!("a 2xx is an HTTP answer") };
    if ids.len() != doc.docnums.len() {
        v.push(format!(
            "doc {}: a 2xx named {} ids for {} IDocs: {:?}",
            doc.index,
            ids.len(),
            doc.docnums.len(),
            a.outcome
        ));
        return;
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

/// Records a document stored by a request whose only in-flight answer was
/// an HTTP error status (not a transport error): "answered 5xx although
/// committed".
fn error_after_commit(doc: &Doc, list: &[&Attempt], m: &StoredMessage, r: &mut Report) {
    let in_flight: Vec<&Attempt> = list
        .iter()
        .copied()
        .filter(|a| a.sent_at <= m.received_at && m.received_at <= a.answered_at)
        .collect();
    let any_2xx = in_flight.iter().any(|a| a.is_2xx());
    let any_transport = in_flight.iter().any(|a| a.status().is_none());
    if any_2xx || any_transport {
        return;
    }
    if let Some(a) = in_flight.iter().find(|a| a.status().is_some_and(|s| s >= 400)) {
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
