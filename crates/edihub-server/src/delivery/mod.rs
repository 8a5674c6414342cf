//! Delivery: every new message is pushed to the destinations of its
//! environment, at least once, with a stable id.
//!
//! The outbox rows are written by the store with the message (see
//! `edihub_store`'s `outbox` module); this module is the worker that drains
//! them. One supervisor loop per process: for each enabled destination it
//! claims (with a lease) as many due deliveries as the destination has free
//! slots (`delivery.max_in_flight_per_destination`) and runs each attempt as
//! a task of its own, so a slow destination fills its own slots and never
//! the others'. A destination with `ordering = "fifo"` claims only the head
//! of its line, so one delivery is in flight for it across all replicas.
//! Replicas share the queue through the leases. An attempt's
//! end wakes the loop; otherwise it polls every `delivery.poll_interval_ms`.
//!
//! - `attempt.rs`: one HTTP attempt (body, headers, signature, the answer);
//! - `envelope.rs`: the envelope body, which the pull feed lists too;
//! - `schedule.rs`: what happens after an attempt (retry when, or give up).

mod attempt;
pub mod envelope;
mod schedule;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use edihub_store::{ClaimedDelivery, DestinationRow, Json, SOURCE_CONFIG};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use schedule::{jitter_factor, verdict};

use crate::config::{Config, DeliverySignatureConfig, DestinationConfig};
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

/// The signing key a destination's signature names: `Ok(None)` when
/// secrets are not read (validation of commands that deliver nothing).
pub fn signing_key(sig: &DeliverySignatureConfig, config: &Config) -> Result<Option<Vec<u8>>, String> {
    crate::integrations::names::check_secret_env(&sig.secret_env, config)?;
    if matches!(config.secrets, crate::config::SecretSource::Unread) {
        return Ok(None);
    }
    let var = &sig.secret_env;
    let secret = config
        .secrets
        .get(var)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("environment variable {var} is not set or empty"))?;
    crate::integrations::signature::standard_webhooks_key(&secret)
        .map(Some)
        .ok_or_else(|| format!("{var} is not a whsec_<base64> secret"))
}

/// A destination ready to deliver to.
#[derive(Debug)]
pub(crate) struct Destination {
    /// Its definition.
    pub def: DestinationConfig,
    /// The Standard Webhooks key, when signed.
    pub key: Option<Vec<u8>>,
}

/// What the attempts of all destinations share.
struct Worker {
    state: AppState,
    client: reqwest::Client,
    delays: Vec<Duration>,
    wake: Notify,
}

/// Each destination's free attempt slots in this process, by id.
type Slots = HashMap<String, Arc<Semaphore>>;

/// Runs the delivery loop until `shutdown`, then lets running attempts
/// finish (at most `shutdown_grace_secs`; an unfinished one keeps its lease,
/// which expires, and is attempted again).
pub async fn run(state: AppState, shutdown: CancellationToken) {
    let client = match attempt::client() {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "delivery disabled: cannot build the HTTP client");
            return;
        }
    };
    let delays = state.config.delivery.delays();
    let worker = Arc::new(Worker { state, client, delays, wake: Notify::new() });
    let mut slots = Slots::new();
    let attempts = TaskTracker::new();
    let poll = Duration::from_millis(worker.state.config.delivery.poll_interval_ms);
    loop {
        match worker.state.store.list_destinations().await {
            Ok(rows) => {
                for row in rows.iter().filter(|r| r.enabled) {
                    worker.claim(row, &mut slots, &attempts).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "delivery: listing destinations failed"),
        }
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep(poll) => {}
            () = worker.wake.notified() => {}
        }
    }
    attempts.close();
    let grace = Duration::from_secs(worker.state.config.shutdown_grace_secs);
    let _ = tokio::time::timeout(grace, attempts.wait()).await;
}

impl Worker {
    /// Claims as many due deliveries of `row` as it has free slots and
    /// starts their attempts.
    async fn claim(self: &Arc<Self>, row: &DestinationRow, slots: &mut Slots, attempts: &TaskTracker) {
        let destination = match self.destination(row) {
            Ok(d) => Arc::new(d),
            Err(e) => {
                tracing::warn!(destination = %row.id, error = %e, "delivery: unusable destination skipped");
                return;
            }
        };
        let cap = self.state.config.delivery.max_in_flight_per_destination as usize;
        let slots = slots.entry(row.id.clone()).or_insert_with(|| Arc::new(Semaphore::new(cap))).clone();
        let free = slots.available_permits();
        if free == 0 {
            return;
        }
        let now = Utc::now();
        let margin = self.state.config.delivery.lease_margin_secs;
        let lease = Duration::from_secs(destination.def.timeout_secs.saturating_add(margin));
        let until = now + chrono::Duration::from_std(lease).unwrap_or_default();
        let claimed = if destination.def.ordering == "fifo" {
            // The head of the line or nothing: the store keeps it to one in
            // flight across replicas, whatever this process's slots.
            self.state.store.claim_line_head(&row.id, now, until).await.map(Vec::from_iter)
        } else {
            let limit = i64::try_from(free).unwrap_or(1);
            self.state.store.claim_deliveries(&row.id, now, until, limit).await
        };
        let claimed = match claimed {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(destination = %row.id, error = %e, "delivery: claiming failed");
                return;
            }
        };
        for delivery in claimed {
            let Ok(permit) = slots.clone().try_acquire_owned() else { break };
            let (worker, destination) = (self.clone(), destination.clone());
            attempts.spawn(async move {
                worker.deliver(&destination, delivery).await;
                drop(permit);
                worker.wake.notify_one();
            });
        }
    }

    /// A row's definition with its signing key.
    fn destination(&self, row: &DestinationRow) -> Result<Destination, String> {
        let def: DestinationConfig =
            serde_json::from_value(row.definition.0.clone()).map_err(|e| e.to_string())?;
        let key = match &def.signature {
            Some(sig) => signing_key(sig, &self.state.config)?,
            None => None,
        };
        Ok(Destination { def, key })
    }

    /// One attempt of `delivery` and its record.
    async fn deliver(&self, destination: &Destination, delivery: ClaimedDelivery) {
        let id = delivery.message_id;
        let message = match self.state.store.get_message(id).await {
            Ok(m) => m,
            Err(e) => {
                // The lease expires and the attempt is made again.
                tracing::warn!(message_id = %id, error = %e, "delivery: reading the message failed");
                return;
            }
        };
        let answer = attempt::send(&self.client, destination, message.as_ref()).await;
        let now = Utc::now();
        let verdict = verdict(&answer, delivery.attempts + 1, &self.delays, jitter_factor(), now);
        let outcome = match verdict {
            edihub_store::Verdict::Delivered => "delivered",
            edihub_store::Verdict::RetryAt(_) => "retry",
            edihub_store::Verdict::Failed => "failed",
        };
        if let Some(error) = &answer.record.error {
            // One line per failed attempt; the retry schedule spaces them out.
            let next = match verdict {
                edihub_store::Verdict::RetryAt(at) => at.to_rfc3339(),
                _ => "none: failed".into(),
            };
            tracing::warn!(destination = %delivery.destination_id, message_id = %id, %error, next_attempt = %next,
                "delivery attempt failed");
        }
        let took = Duration::from_millis(u64::try_from(answer.record.latency_ms).unwrap_or(0));
        self.state.metrics.delivery_attempt(&delivery.destination_id, outcome, took);
        let done = edihub_store::FinishedAttempt {
            message_id: id,
            destination_id: delivery.destination_id,
            attempt: answer.record,
            verdict,
            lease_until: delivery.lease_until,
        };
        if let Err(e) = self.state.store.finish_delivery(&done).await {
            tracing::warn!(message_id = %id, error = %e, "delivery: recording the attempt failed");
        }
    }
}
