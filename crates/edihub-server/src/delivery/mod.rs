//! Delivery: every new message is pushed to the destinations of its
//! environment, at least once, with a stable id.
//!
//! The outbox rows are written by the store with the message (see
//! `edihub_store`'s `outbox` module); this module is the worker that drains
//! them. One supervisor loop per process: for each enabled destination it
//! claims (with a lease) as many due deliveries as the destination has free
//! slots (its `max_in_flight`, else `delivery.max_in_flight_per_destination`) and runs each attempt as
//! a task of its own, so a slow destination fills its own slots and never
//! the others'. A destination with `ordering = "fifo"` claims only the head
//! of its line, so one delivery is in flight for it across all replicas.
//! Replicas share the queue through the leases. The loop reads the
//! destinations every `delivery.poll_interval_ms` (so admin changes apply
//! within it) and claims over the whole queue then; between those, an
//! attempt's end wakes it, and a parallel destination claims again, among
//! the deliveries of recent messages (`claim.rs`), once half its slots are
//! free, so one claim statement serves several attempts; the claimed
//! messages are read in one statement too. The deliveries the intake
//! leased at the insert come to the loop without a claim, each with its
//! envelope and slot, and start at once (`handoff.rs`). Verdicts are
//! recorded in batches (`recorder.rs`).
//!
//! - `address_policy.rs`: which addresses deliveries may connect to;
//! - `as2_mdn.rs`: asynchronous AS2 MDNs, posted to the partner's URL with
//!   the same client, address policy and retry schedule;
//! - `as2_target.rs`: the AS2 destination kind (a partner as a destination);
//! - `attempt.rs`: one HTTP attempt (body, headers, signature, the answer);
//! - `bodies.rs`: the bodies attempts send, a packet's shared body read and
//!   parsed once for all its messages;
//! - `claim.rs`: which claim a destination makes (recent messages, the whole
//!   queue, or the head of its line);
//! - `destination.rs`: a destination taken up, its credentials read, once
//!   per change of its definition;
//! - `envelope.rs`: the envelope body, which the pull feed lists too;
//! - `handoff.rs`: envelopes the intake rendered for first attempts, so
//!   they read and parse nothing, and the deliveries it leased at the
//!   insert, so they need no claim;
//! - `http.rs`: the HTTP client (shared with AS2) and how its failures are told;
//! - `recorder.rs`: verdicts written in batches, one commit for many attempts;
//! - `render.rs`: envelopes rendered once per message under a memory budget;
//! - `sap_body.rs`: the IDoc-XML body of a `sap-idoc-xml` destination;
//! - `schedule.rs`: what happens after an attempt (retry when, or give up).

mod address_policy;
pub mod as2_mdn;
mod as2_target;
mod attempt;
mod bodies;
mod claim;
mod destination;
pub mod envelope;
mod handoff;
mod http;
mod recorder;
mod render;
mod sap_body;
mod schedule;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use chrono::{DateTime, Utc};
use edihub_store::{ClaimedDelivery, DestinationRow, Json, SOURCE_CONFIG, StoredMessage};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use address_policy::AddressPolicy;
use claim::Lane;
use destination::{Destination, TakenUp};
pub use handoff::{Handed, Handoff, Reservation, payload as handoff_payload};
use handoff::{LeaseLane, Started};
pub use http::client;
pub(crate) use http::describe;
pub use schedule::jitter_factor;
use schedule::verdict;

use crate::config::{Config, DeliveryFormat, DeliveryOrdering, DestinationConfig};
use crate::state::AppState;

/// The configured destinations as rows to seed.
pub fn seed_rows(config: &Config, now: DateTime<Utc>) -> Vec<DestinationRow> {
    config.destinations.iter().map(|d| row_of(d, SOURCE_CONFIG, now)).collect()
}

/// A destination definition as a stored row.
pub fn row_of(d: &DestinationConfig, source: &str, now: DateTime<Utc>) -> DestinationRow {
    DestinationRow {
        id: d.id.clone(),
        tenant_id: d.tenant.clone(),
        environment_id: d.environment.clone(),
        message_types: d.message_types.clone().map(Json),
        enabled: d.enabled,
        definition: Json(serde_json::to_value(d).unwrap_or_default()),
        source: source.into(),
        updated_at: now,
    }
}

/// Up to `n` of `slots`' free permits, one per attempt.
fn take_slots(slots: &Arc<Semaphore>, n: usize) -> Vec<OwnedSemaphorePermit> {
    std::iter::from_fn(|| slots.clone().try_acquire_owned().ok()).take(n).collect()
}

/// What the attempts of all destinations share.
struct Worker {
    state: AppState,
    client: reqwest::Client,
    delays: Vec<Duration>,
    /// Woken when an attempt ends or a batch of verdicts is recorded.
    wake: Arc<Notify>,
    bodies: bodies::Bodies,
    renderer: render::Renderer,
    verdicts: recorder::Verdicts,
}

/// What the worker keeps per destination, by id.
type Lanes = HashMap<String, Lane>;

/// Where an attempt's message comes from.
enum Source {
    /// The envelope the intake handed over (a first attempt).
    Handed(Handed),
    /// The message as read from the store (`None`: no longer stored).
    Stored(Option<Box<StoredMessage>>),
}

/// Runs the delivery loop until `shutdown`, then lets running attempts
/// finish (at most `shutdown_grace_secs`; an unfinished one keeps its lease,
/// which expires, and is attempted again) and their verdicts be recorded.
pub async fn run(state: AppState, shutdown: CancellationToken) {
    let client = match client(AddressPolicy::of(&state.config.delivery)) {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "delivery disabled: cannot build the HTTP client");
            return;
        }
    };
    let delays = state.config.delivery.delays();
    let wake = Arc::new(Notify::new());
    let (verdicts, incoming) = mpsc::unbounded_channel();
    let recording = tokio::spawn(recorder::run(state.clone(), incoming, wake.clone()));
    let bodies = bodies::Bodies::new(state.idoc_descriptions.clone());
    let renderer = render::Renderer::new(state.config.delivery.render_budget_bytes);
    let worker = Arc::new(Worker { state, client, delays, wake, bodies, renderer, verdicts });
    let grace = Duration::from_secs(worker.state.config.shutdown_grace_secs);
    let attempts = TaskTracker::new();
    worker.claim_until(&shutdown, &attempts).await;
    attempts.close();
    let deadline = Instant::now() + grace;
    let _ = tokio::time::timeout_at(deadline, attempts.wait()).await;
    // The last sender goes with the worker: the recorder then writes what
    // is left and ends.
    drop(worker);
    let _ = tokio::time::timeout_at(deadline, recording).await;
}

impl Worker {
    /// The claim loop: destinations read every poll interval, claims made
    /// then and whenever attempts end, until `shutdown`.
    async fn claim_until(self: &Arc<Self>, shutdown: &CancellationToken, attempts: &TaskTracker) {
        let poll = Duration::from_millis(self.state.config.delivery.poll_interval_ms);
        let mut lanes = Lanes::new();
        let mut taken_up = TakenUp::default();
        let mut destinations = Vec::new();
        let mut next_listing = Instant::now();
        let (started_tx, mut started) = mpsc::unbounded_channel();
        loop {
            let listing = Instant::now() >= next_listing;
            if listing {
                match self.state.store.list_destinations().await {
                    Ok(rows) => {
                        destinations = taken_up.refresh(&rows, |row| self.destination(row));
                        self.want(&destinations, &mut lanes, started_tx.clone());
                    }
                    Err(e) => tracing::warn!(error = %e, "delivery: listing destinations failed"),
                }
                next_listing = Instant::now() + poll;
            }
            for destination in &destinations {
                self.claim(destination, &mut lanes, attempts, listing).await;
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep_until(next_listing) => {}
                () = self.wake.notified() => {}
                Some(first) = started.recv() => {
                    self.start(first, &destinations, attempts);
                    while let Ok(next) = started.try_recv() {
                        self.start(next, &destinations, attempts);
                    }
                }
            }
        }
        // What is still on its way keeps its lease, which expires.
        self.state.handoff.stop_leasing();
    }

    /// Whether the intake leases `destination`'s deliveries at the insert:
    /// a `parallel` destination whose envelopes it hands over, while the
    /// handoff is on.
    fn leased_at_insert(&self, destination: &Destination) -> bool {
        self.state.config.delivery.handoff_bytes > 0
            && destination.takes_handoff()
            && destination.def.ordering != DeliveryOrdering::Fifo
    }

    /// Tells the intake what to hand over after a reading of the
    /// destinations: the envelopes of the envelope destinations'
    /// environments, and the deliveries of those leased at the insert, with
    /// their lanes (made here if new), sent to `started`.
    fn want(
        &self,
        destinations: &[Arc<Destination>],
        lanes: &mut Lanes,
        started: mpsc::UnboundedSender<Started>,
    ) {
        let envelopes = destinations.iter().filter(|d| d.takes_handoff());
        let envelopes =
            envelopes.map(|d| (d.def.tenant.clone(), d.def.environment.clone(), d.def.id.clone()));
        let margin = self.state.config.delivery.lease_margin_secs;
        let mut leasing = Vec::new();
        for destination in destinations.iter().filter(|d| self.leased_at_insert(d)) {
            let def = &destination.def;
            let cap = def.in_flight(&self.state.config.delivery);
            let lane = lanes.entry(def.id.clone()).or_insert_with(|| Lane::new(cap));
            lane.resize(cap);
            leasing.push(LeaseLane {
                destination: def.id.clone(),
                tenant: def.tenant.clone(),
                environment: def.environment.clone(),
                message_types: def.message_types.clone(),
                lease: Duration::from_secs(def.timeout_secs.saturating_add(margin)),
                slots: lane.slots.clone(),
                unleased: lane.unleased.clone(),
                wake: self.wake.clone(),
            });
        }
        self.state.handoff.want(envelopes.collect(), leasing, started);
    }

    /// Starts the attempt of a delivery the intake leased at the insert, in
    /// the slot it took. One of a destination no longer taken up keeps its
    /// lease until it expires, and is claimed then.
    fn start(self: &Arc<Self>, started: Started, destinations: &[Arc<Destination>], attempts: &TaskTracker) {
        let Started { delivery, handed, permit } = started;
        let Some(destination) = destinations.iter().find(|d| d.def.id == delivery.destination_id) else {
            return;
        };
        self.state.metrics.leased_at_insert(1);
        let (worker, destination) = (self.clone(), destination.clone());
        attempts.spawn(async move {
            worker.deliver(&destination, delivery, Source::Handed(handed)).await;
            drop(permit);
            worker.wake.notify_one();
        });
    }

    /// Claims as many due deliveries of `destination` as it has free slots
    /// and starts their attempts. Between listings a parallel destination
    /// waits until half its slots are free, and claims among recent
    /// messages only unless it has an old backlog (see [`Lane`]).
    async fn claim(
        self: &Arc<Self>,
        destination: &Arc<Destination>,
        lanes: &mut Lanes,
        attempts: &TaskTracker,
        listing: bool,
    ) {
        let id = &destination.def.id;
        let cap = destination.def.in_flight(&self.state.config.delivery);
        let lane = lanes.entry(id.clone()).or_insert_with(|| Lane::new(cap));
        lane.resize(cap);
        let slots = lane.slots.clone();
        let free = slots.available_permits();
        let fifo = destination.def.ordering == DeliveryOrdering::Fifo;
        let size = lane.claim_size(free, listing, fifo, self.leased_at_insert(destination));
        // The slots are taken before the claim: the intake takes free slots
        // too (for the deliveries it leases at the insert), and a claimed
        // delivery left without one would wait for its lease to expire.
        let permits = take_slots(&slots, size);
        if permits.is_empty() {
            return;
        }
        let margin = self.state.config.delivery.lease_margin_secs;
        let lease = Duration::from_secs(destination.def.timeout_secs.saturating_add(margin));
        let store = self.state.store.as_ref();
        let claimed = match lane.lease(store, &destination.def, permits.len(), listing, lease).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(destination = %id, error = %e, "delivery: claiming failed");
                return;
            }
        };
        if claimed.is_empty() {
            return;
        }
        let handoff = destination.takes_handoff().then_some(&self.state.handoff);
        let (handed, to_read) = handoff::split(handoff, claimed, &self.state.metrics);
        let read = self.read(id, to_read).await;
        let sources = handed.into_iter().map(|(d, h)| (d, Source::Handed(h))).chain(read);
        for ((delivery, source), permit) in sources.zip(permits) {
            let (worker, destination) = (self.clone(), destination.clone());
            attempts.spawn(async move {
                worker.deliver(&destination, delivery, source).await;
                drop(permit);
                worker.wake.notify_one();
            });
        }
    }

    /// The claimed deliveries `to_read` with their messages, read in one
    /// statement (a statement per message cost PostgreSQL a plan each); a
    /// message no longer stored comes as `None`. A failed read leaves none:
    /// their leases expire and the attempts are made again, as after a
    /// failed attempt.
    async fn read(&self, destination: &str, to_read: Vec<ClaimedDelivery>) -> Vec<(ClaimedDelivery, Source)> {
        if to_read.is_empty() {
            return Vec::new();
        }
        let ids: Vec<_> = to_read.iter().map(|d| d.message_id).collect();
        let mut messages: HashMap<_, _> = match self.state.store.stored_messages(&ids).await {
            Ok(found) => found.into_iter().map(|m| (m.meta.id, m)).collect(),
            Err(e) => {
                tracing::warn!(%destination, error = %e, "delivery: reading the claimed messages failed");
                return Vec::new();
            }
        };
        to_read
            .into_iter()
            .map(|d| {
                let stored = messages.remove(&d.message_id).map(Box::new);
                (d, Source::Stored(stored))
            })
            .collect()
    }

    /// A row's definition with its signing key.
    fn destination(&self, row: &DestinationRow) -> Result<Destination, String> {
        let def: DestinationConfig =
            serde_json::from_value(row.definition.0.clone()).map_err(|e| e.to_string())?;
        let key = match &def.signature {
            Some(sig) => crate::config::signing_key(sig, &self.state.config)?,
            None => None,
        };
        let basic = match &def.basic_auth {
            Some(auth) => crate::config::basic_password(auth, &self.state.config)?
                .map(|password| (auth.user.clone(), password)),
            None => None,
        };
        let sap = match def.format {
            DeliveryFormat::SapIdocXml => Some(sap_body::SapTarget::of(&def, &self.state)?),
            _ => None,
        };
        let as2 = match def.format {
            DeliveryFormat::As2 => Some(as2_target::As2Target::of(&def, &self.state)?),
            _ => None,
        };
        let url = sap.as_ref().map_or_else(|| def.url.clone(), |s| s.url(&def.url));
        Ok(Destination { def, key, basic, url, sap, as2 })
    }

    /// Whether `destination`'s environment reports status to its SAP
    /// system, so a verdict of its may owe one.
    fn reports_sap_status(&self, destination: &Destination) -> bool {
        let def = &destination.def;
        self.state.config.sap_system(&def.tenant, &def.environment).is_some_and(|s| s.status.is_some())
    }

    /// One attempt of `delivery`; its verdict goes to the recorder.
    async fn deliver(&self, destination: &Destination, delivery: ClaimedDelivery, source: Source) {
        let id = delivery.message_id;
        let policy = AddressPolicy::of(&self.state.config.delivery);
        let answer = match source {
            Source::Handed(handed) => {
                attempt::send_handed(&self.client, policy, destination, id, &handed).await
            }
            Source::Stored(stored) => {
                let message = match self.bodies.message(self.state.store.as_ref(), stored.map(|m| *m)).await {
                    Ok(m) => m,
                    Err(e) => {
                        // The lease expires and the attempt is made again.
                        tracing::warn!(message_id = %id, error = %e, "delivery: reading the message failed");
                        return;
                    }
                };
                attempt::send(&self.client, policy, &self.renderer, destination, message.as_ref()).await
            }
        };
        let now = Utc::now();
        let verdict = verdict(&answer, delivery.attempts + 1, &self.delays, jitter_factor(), now);
        if let Some(error) = &answer.record.error {
            // One line per failed attempt; the retry schedule spaces them out.
            let next = match verdict {
                edihub_store::Verdict::RetryAt(at) => at.to_rfc3339(),
                _ => "none: failed".into(),
            };
            tracing::warn!(destination = %delivery.destination_id, message_id = %id, %error, next_attempt = %next,
                "delivery attempt failed");
        }
        let done = edihub_store::FinishedAttempt {
            message_id: id,
            destination_id: delivery.destination_id,
            attempt: answer.record,
            verdict,
            lease_until: delivery.lease_until,
            sap_status: self.reports_sap_status(destination),
        };
        // The recorder outlives every attempt (it ends when the worker does).
        let _ = self.verdicts.send(done);
    }
}
