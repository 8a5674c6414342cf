//! Envelopes handed from the intake to the delivery worker.
//!
//! An attempt in the envelope format sends the message's JSON rendering.
//! Made from the store, that is a read of the message and a parse of its
//! body: about what receiving the message cost. The receive route holds
//! the parsed document already, so for a message that is likely to be
//! delivered it writes the document's rendering before the insert (and
//! drops the parse, which takes many times the body), the envelope once
//! the message is stored, and hands it over here; the first attempt of
//! each of its envelope deliveries that this process's worker claims sends
//! those bytes and reads and parses nothing.
//!
//! - **Which messages**: a request's only document, of a body of at most
//!   [`UNCOUNTED_BODY`] (packets and large bodies render from the store,
//!   under the render budget), stored as new, in an environment that had
//!   an enabled envelope destination when the worker last read them.
//! - **Bounded**: at most `delivery.handoff_bytes` of envelope bytes (an
//!   entry's bookkeeping not counted), the oldest dropped first; `0` turns
//!   the handoff off. A message whose envelope is not here (dropped, stored
//!   by another replica, or before a restart) is read from the store as
//!   before: the handoff is a shortcut, never the only way. An envelope
//!   stays until it is dropped, for every destination of its message.
//! - **First attempts only**: a retry or a replay renders from the store,
//!   the authoritative copy.
//! - **Leased at the insert** (`leases.rs`): for each `parallel` envelope
//!   destination of the message's environment with more attempt slots in
//!   this process free than it has deliveries waiting for a claim, the
//!   route takes a slot before the insert and asks the store to lease the
//!   delivery with the message ([`edihub_store::InsertLease`]); the
//!   deliveries the insert leased go straight to this process's worker
//!   with their envelope and slot ([`Started`]), which attempts them
//!   without a claim. No claim looks for them either: between two polls a
//!   leasing destination claims only as many as were stored without their
//!   lease since its last claim (every intake counts them and wakes the
//!   worker, [`Handoff::stored`]), and more while its last claim filled
//!   its slots. A busier destination leases nothing new: its deliveries
//!   are claimed, oldest first, so new messages never take every freed
//!   slot from those waiting. A process that stops between the insert and
//!   the attempt leaves the lease to expire, and the delivery is claimed
//!   as after a failed attempt. `fifo` destinations are never leased
//!   here: their line's head is the claim's to take.
//! - **The same bytes**: the envelope is what a render from the store
//!   gives. The document comes from the same parse of the same body, and
//!   the metadata is what the store keeps (the time at its microsecond
//!   precision); a test compares a handed envelope with the one its replay
//!   renders from the store.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, RwLock};

use bytes::Bytes;
use edihub_core::Document;
use edihub_store::{ClaimedDelivery, MessageSummary, Scope};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use uuid::Uuid;

use super::envelope::envelope_of_summary;
use super::render::UNCOUNTED_BODY;
use crate::metrics::Metrics;

mod leases;

pub use leases::Reservation;
pub(super) use leases::{LeaseLane, Started};

/// A message's envelope, rendered by the intake.
#[derive(Debug, Clone)]
pub struct Handed {
    /// The message's tenant.
    pub tenant: String,
    /// The message's environment.
    pub environment: String,
    /// The envelope's bytes.
    pub envelope: Bytes,
}

/// The envelopes handed over and not yet dropped.
#[derive(Debug)]
pub struct Handoff {
    budget: usize,
    /// What the worker wants, as of its last reading of the destinations:
    /// read by every receive request.
    wanted: RwLock<Wanted>,
    inner: Mutex<Inner>,
}

/// What the worker wants from the intake.
#[derive(Debug, Default)]
struct Wanted {
    /// (tenant, environment, destination) of each enabled envelope
    /// destination: their messages' envelopes are handed over.
    envelopes: Vec<(String, String, String)>,
    /// The destinations whose deliveries are leased at the insert.
    lanes: Vec<LeaseLane>,
    /// Where leased deliveries go: the worker's (`None`: it is not running,
    /// and nothing is leased).
    started: Option<mpsc::UnboundedSender<Started>>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<Uuid, Handed>,
    /// Ids in the order they were handed over, to drop the oldest first.
    order: VecDeque<Uuid>,
    bytes: usize,
}

impl Handoff {
    /// A handoff of at most `budget` bytes of envelopes (`0`: off).
    pub fn new(budget: usize) -> Handoff {
        Handoff { budget, wanted: RwLock::default(), inner: Mutex::default() }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn wanted(&self) -> std::sync::RwLockReadGuard<'_, Wanted> {
        self.wanted.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sets what is handed over: the envelopes of the messages of the
    /// environments of `envelopes`, (tenant, environment, destination) of
    /// each enabled envelope destination; and the deliveries of `lanes`,
    /// leased at the insert and sent to `started` (the worker calls it at
    /// each reading of the destinations).
    pub(super) fn want(
        &self,
        envelopes: Vec<(String, String, String)>,
        lanes: Vec<LeaseLane>,
        started: mpsc::UnboundedSender<Started>,
    ) {
        let wanted = Wanted { envelopes, lanes, started: Some(started) };
        *self.wanted.write().unwrap_or_else(std::sync::PoisonError::into_inner) = wanted;
    }

    /// Stops leasing at the insert (the worker is ending); envelopes are
    /// still handed over, for the next worker's claims.
    pub(super) fn stop_leasing(&self) {
        let mut wanted = self.wanted.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        wanted.lanes.clear();
        wanted.started = None;
    }

    /// Whether a single document of a body of `body_len` bytes, stored in
    /// `scope`, should be handed over (then the receive route keeps it
    /// until the message is stored).
    pub fn wants(&self, scope: &Scope, body_len: usize) -> bool {
        if self.budget == 0 || body_len > UNCOUNTED_BODY {
            return false;
        }
        // A few destinations at most: a scan, with nothing allocated.
        self.wanted().envelopes.iter().any(|(t, e, _)| *t == scope.tenant_id && *e == scope.environment_id)
    }

    /// Hands over the envelope of `stored` (stored in `scope`) with
    /// `payload`, its document's rendering ([`payload`]): with each of the
    /// `leased` deliveries and its slot in `reservation` to the worker,
    /// and kept for the claims of the others, dropping the oldest beyond
    /// the budget.
    pub fn hand(
        &self,
        scope: &Scope,
        stored: &MessageSummary,
        payload: &RawValue,
        reservation: Option<Reservation>,
        leased: &[ClaimedDelivery],
    ) {
        let envelope = envelope_of_summary(scope, stored, Some(payload));
        // Serializing plain fields and JSON text cannot fail.
        let Ok(envelope) = serde_json::to_vec(&envelope) else { return };
        if envelope.len() > self.budget {
            return;
        }
        let handed = Handed {
            tenant: scope.tenant_id.clone(),
            environment: scope.environment_id.clone(),
            envelope: Bytes::from(envelope),
        };
        let started = self.start(&handed, reservation, leased);
        let all_started = self
            .wanted()
            .envelopes
            .iter()
            .all(|(t, e, d)| *t != scope.tenant_id || *e != scope.environment_id || started.contains(d));
        if started.is_empty() || !all_started {
            self.keep(stored.id, handed);
        }
    }

    /// Keeps `handed` for the claims of message `id`'s deliveries.
    fn keep(&self, id: Uuid, handed: Handed) {
        let mut inner = self.inner();
        inner.bytes += handed.envelope.len();
        if let Some(replaced) = inner.entries.insert(id, handed) {
            inner.bytes -= replaced.envelope.len();
        } else {
            inner.order.push_back(id);
        }
        while inner.bytes > self.budget {
            let Some(oldest) = inner.order.pop_front() else { break };
            if let Some(dropped) = inner.entries.remove(&oldest) {
                inner.bytes -= dropped.envelope.len();
            }
        }
    }

    /// The envelope handed over for message `id`, if it is still here.
    pub fn get(&self, id: Uuid) -> Option<Handed> {
        self.inner().entries.get(&id).cloned()
    }

    /// Bytes of envelopes held.
    #[cfg(any(test, feature = "testing"))]
    pub fn held_bytes(&self) -> usize {
        self.inner().bytes
    }
}

/// `document`'s JSON rendering, as the envelope's payload writes it:
/// made before the message is stored, so the parsed document is dropped
/// before the insert (it takes many times the body's size) and only this
/// text waits for the store's answer.
pub fn payload(document: &Document) -> Option<Box<RawValue>> {
    serde_json::value::to_raw_value(&document.json()).ok()
}

/// Splits `claimed` into the first attempts whose envelope `handoff` holds
/// (with it) and the deliveries whose message is read from the store; with
/// no handoff (a destination of another format), all are read. Counts the
/// first attempts found and not (`edihub_delivery_handoff_total`).
pub(super) fn split(
    handoff: Option<&Handoff>,
    claimed: Vec<ClaimedDelivery>,
    metrics: &Metrics,
) -> (Vec<(ClaimedDelivery, Handed)>, Vec<ClaimedDelivery>) {
    let Some(handoff) = handoff.filter(|h| h.budget > 0) else { return (Vec::new(), claimed) };
    let (mut handed, mut to_read) = (Vec::new(), Vec::new());
    for delivery in claimed {
        if delivery.attempts > 0 {
            to_read.push(delivery);
            continue;
        }
        match handoff.get(delivery.message_id) {
            Some(envelope) => handed.push((delivery, envelope)),
            None => to_read.push(delivery),
        }
    }
    metrics.handoff(handed.len() as u64, to_read.iter().filter(|d| d.attempts == 0).count() as u64);
    (handed, to_read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: Uuid) -> MessageSummary {
        MessageSummary {
            id,
            message_type: "ORDERS05".into(),
            mestyp: Some("ORDERS".into()),
            docnum: Some("1".into()),
            fingerprint: None,
            received_at: chrono::Utc::now(),
        }
    }

    fn acme_prod() -> (String, String, String) {
        ("acme".to_string(), "prod".to_string(), "d".to_string())
    }

    fn document() -> Document {
        let body = br#"{"order": {"id": "A-1"}}"#;
        edihub_core::parse_body(body, Some("application/json")).expect("parses").documents.remove(0)
    }

    #[test]
    fn only_wanted_environments_and_small_bodies_are_handed_over() {
        let handoff = Handoff::new(1024 * 1024);
        let scope = Scope::new("acme", "prod");
        assert!(!handoff.wants(&scope, 10), "nothing is wanted before the worker says so");
        let (started, _) = mpsc::unbounded_channel();
        handoff.want(vec![acme_prod()], Vec::new(), started.clone());
        assert!(handoff.wants(&scope, 10));
        assert!(!handoff.wants(&scope, UNCOUNTED_BODY + 1), "a large body renders from the store");
        assert!(!handoff.wants(&Scope::new("acme", "test"), 10));
        let off = Handoff::new(0);
        off.want(vec![acme_prod()], Vec::new(), started);
        assert!(!off.wants(&scope, 10), "a budget of 0 turns it off");
    }

    #[test]
    fn the_oldest_envelopes_go_first_beyond_the_budget() {
        let scope = Scope::new("acme", "prod");
        let payload = payload(&document()).expect("a rendering");
        let ids: Vec<Uuid> = (0..10).map(|_| Uuid::now_v7()).collect();
        let one = {
            let probe = Handoff::new(1024 * 1024);
            probe.hand(&scope, &summary(ids[0]), &payload, None, &[]);
            probe.held_bytes()
        };
        let handoff = Handoff::new(one * 3);
        for id in &ids {
            handoff.hand(&scope, &summary(*id), &payload, None, &[]);
        }
        assert!(handoff.held_bytes() <= one * 3);
        let kept: Vec<bool> = ids.iter().map(|id| handoff.get(*id).is_some()).collect();
        assert_eq!(kept, [false, false, false, false, false, false, false, true, true, true]);
        let handed = handoff.get(ids[9]).expect("the newest is kept");
        assert_eq!((handed.tenant.as_str(), handed.environment.as_str()), ("acme", "prod"));
        let envelope: serde_json::Value = serde_json::from_slice(&handed.envelope).expect("JSON");
        assert_eq!(envelope["id"], ids[9].to_string());
        assert_eq!(envelope["payload"]["order"]["id"], "A-1");
    }
}
