//! Prometheus metrics, kept in the application state (no global registry).
//!
//! Counters are atomics in maps keyed by their labels; the maps are behind
//! read-write locks that are written only the first time a label set is
//! seen, so the hot path is a read lock and an atomic add. The delivery
//! queue gauges are not kept here: they are read from the store at each
//! scrape ([`render_queues`]).

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use edihub_store::DeliveryQueue;

/// Latency histogram bucket bounds, in seconds.
const BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];
/// Delivery attempt bucket bounds, in seconds: a receiver takes longer than
/// a request here, up to a destination's timeout (at most 300 s).
const DELIVERY_BUCKETS: [f64; 14] =
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0];

type Labels = Vec<(&'static str, String)>;

#[derive(Debug, Default)]
struct Family {
    series: RwLock<HashMap<Labels, AtomicU64>>,
}

impl Family {
    fn add(&self, labels: Labels, n: u64) {
        if let Some(c) = self.series.read().unwrap_or_else(|p| p.into_inner()).get(&labels) {
            c.fetch_add(n, Ordering::Relaxed);
            return;
        }
        let mut map = self.series.write().unwrap_or_else(|p| p.into_inner());
        map.entry(labels).or_default().fetch_add(n, Ordering::Relaxed);
    }

    fn snapshot(&self) -> Vec<(Labels, u64)> {
        let map = self.series.read().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<_> = map.iter().map(|(k, v)| (k.clone(), v.load(Ordering::Relaxed))).collect();
        out.sort();
        out
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn label_text(labels: &Labels, extra: Option<(&str, &str)>) -> String {
    let mut parts: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
    if let Some((k, v)) = extra {
        parts.push(format!("{k}=\"{v}\""));
    }
    if parts.is_empty() { String::new() } else { format!("{{{}}}", parts.join(",")) }
}

/// All of edihub's metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Family,
    latency_buckets: Family,
    latency_sum_micros: Family,
    received: Family,
    accepted: Family,
    duplicates: Family,
    retention_rows: Family,
    signatures_rejected: Family,
    delivery_attempts: Family,
    delivery_buckets: Family,
    delivery_sum_micros: Family,
    handoff: Family,
    /// The queue gauges last read from the store and when: `/metrics` is
    /// unauthenticated, so scrapes within [`QUEUES_FRESH`] share one read.
    pub(crate) queues: tokio::sync::Mutex<Option<(std::time::Instant, String)>>,
}

/// How long one read of the delivery queues serves scrapes.
pub(crate) const QUEUES_FRESH: Duration = Duration::from_secs(1);

/// A histogram's series: counts per (label, bucket index) and sums per label.
struct Histogram<'a> {
    name: &'a str,
    help: &'a str,
    label: &'a str,
    bounds: &'a [f64],
    buckets: &'a Family,
    sums: &'a Family,
}

/// Counts `elapsed` into the bucket family and the sum family of `label`.
fn observe(buckets: &Family, sums: &Family, bounds: &[f64], label: (&'static str, &str), elapsed: Duration) {
    let secs = elapsed.as_secs_f64();
    let bucket = bounds.iter().position(|b| secs <= *b).unwrap_or(bounds.len());
    buckets.add(vec![(label.0, label.1.to_string()), ("bucket", bucket.to_string())], 1);
    let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
    sums.add(vec![(label.0, label.1.to_string())], micros);
}

impl Metrics {
    /// One finished HTTP request.
    pub fn request(&self, route: &str, status: u16, elapsed: Duration) {
        self.requests.add(vec![("route", route.to_string()), ("status", status.to_string())], 1);
        observe(&self.latency_buckets, &self.latency_sum_micros, &BUCKETS, ("route", route), elapsed);
    }

    /// A message of `message_type` was received and stored as new.
    pub fn accepted(&self, message_type: &str) {
        self.received.add(vec![("message_type", message_type.to_string())], 1);
        self.accepted.add(vec![("message_type", message_type.to_string())], 1);
    }

    /// A message of `message_type` was blocked as a duplicate.
    pub fn duplicate(&self, message_type: &str, detected_by: &str) {
        self.received.add(vec![("message_type", message_type.to_string())], 1);
        let labels =
            vec![("message_type", message_type.to_string()), ("detected_by", detected_by.to_string())];
        self.duplicates.add(labels, 1);
    }

    /// A webhook signature of `integration` was refused; `reason` is one of
    /// `missing`, `malformed`, `stale`, `mismatch` (both label sets are
    /// bounded: integrations come from the configuration).
    pub fn signature_rejected(&self, integration: &str, reason: &str) {
        let labels = vec![("integration", integration.to_string()), ("reason", reason.to_string())];
        self.signatures_rejected.add(labels, 1);
    }

    /// A delivery attempt to `destination` ended with `outcome`
    /// (`delivered`, `retry` or `failed`; destinations come from the
    /// configuration and admins, so the label set is bounded) and took
    /// `elapsed` (the histogram `edihub_delivery_attempt_seconds`). `elapsed` (the histogram `edihub_delivery_attempt_seconds`).
    pub fn delivery_attempt(&self, destination: &str, outcome: &str, elapsed: Duration) {
        let labels = vec![("destination", destination.to_string()), ("outcome", outcome.to_string())];
        self.delivery_attempts.add(labels, 1);
        let (buckets, sums) = (&self.delivery_buckets, &self.delivery_sum_micros);
        observe(buckets, sums, &DELIVERY_BUCKETS, ("destination", destination), elapsed);
    }

    /// First attempts of envelope destinations: `hits` sent the envelope
    /// the intake handed over, `misses` read their message from the store.
    pub fn handoff(&self, hits: u64, misses: u64) {
        if hits > 0 {
            self.handoff.add(vec![("result", "hit".to_string())], hits);
        }
        if misses > 0 {
            self.handoff.add(vec![("result", "miss".to_string())], misses);
        }
    }

    /// First attempts of envelope destinations started without a claim:
    /// leased at the insert (see `delivery::handoff`); each sends the
    /// handed envelope.
    pub fn leased_at_insert(&self, attempts: u64) {
        self.handoff.add(vec![("result", "leased".to_string())], attempts);
    }

    /// Rows a retention step changed.
    pub fn retention(&self, step: &str, rows: u64) {
        self.retention_rows.add(vec![("step", step.to_string())], rows);
    }

    /// The Prometheus text exposition; `pool` is (open connections, idle ones).
    pub fn render(&self, pool: (u32, usize)) -> String {
        let mut out = String::new();
        let counters = [
            ("edihub_http_requests_total", "HTTP requests by route and status.", &self.requests),
            ("edihub_messages_received_total", "Messages received, by message type.", &self.received),
            ("edihub_messages_accepted_total", "Messages stored as new, by message type.", &self.accepted),
            (
                "edihub_duplicates_blocked_total",
                "Duplicates blocked, by message type and detector.",
                &self.duplicates,
            ),
            (
                "edihub_retention_rows_total",
                "Rows released or purged by retention, by step.",
                &self.retention_rows,
            ),
            (
                "edihub_webhook_signatures_rejected_total",
                "Refused webhook signatures, by integration and reason.",
                &self.signatures_rejected,
            ),
            (
                "edihub_delivery_attempts_total",
                "Delivery attempts by destination and outcome (delivered, retry, failed).",
                &self.delivery_attempts,
            ),
            (
                "edihub_delivery_handoff_total",
                "First attempts of envelope destinations: leased were leased at the insert and sent the envelope the intake handed over, hit sent it after a claim, miss read the message from the store.",
                &self.handoff,
            ),
        ];
        for (name, help, family) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (labels, v) in family.snapshot() {
                let _ = writeln!(out, "{name}{} {v}", label_text(&labels, None));
            }
        }
        histogram(
            &mut out,
            &Histogram {
                name: "edihub_http_request_duration_seconds",
                help: "HTTP request latency by route.",
                label: "route",
                bounds: &BUCKETS,
                buckets: &self.latency_buckets,
                sums: &self.latency_sum_micros,
            },
        );
        histogram(
            &mut out,
            &Histogram {
                name: "edihub_delivery_attempt_seconds",
                help: "Delivery attempt latency (until the answer, a timeout or an error) by destination.",
                label: "destination",
                bounds: &DELIVERY_BUCKETS,
                buckets: &self.delivery_buckets,
                sums: &self.delivery_sum_micros,
            },
        );
        let name = "edihub_db_pool_connections";
        let _ = writeln!(out, "# HELP {name} Database pool connections by state.\n# TYPE {name} gauge");
        let _ = writeln!(out, "{name}{{state=\"open\"}} {}\n{name}{{state=\"idle\"}} {}", pool.0, pool.1);
        out
    }
}

/// Writes a histogram's series, cumulative per label value.
fn histogram(out: &mut String, h: &Histogram<'_>) {
    let name = h.name;
    let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} histogram", h.help);
    let mut per_label: HashMap<String, Vec<u64>> = HashMap::new();
    for (labels, v) in h.buckets.snapshot() {
        let i: usize = labels[1].1.parse().unwrap_or(h.bounds.len());
        per_label.entry(labels[0].1.clone()).or_insert_with(|| vec![0; h.bounds.len() + 1])[i] += v;
    }
    let sums: HashMap<String, u64> =
        h.sums.snapshot().into_iter().map(|(l, v)| (l[0].1.clone(), v)).collect();
    let mut values: Vec<_> = per_label.into_iter().collect();
    values.sort();
    for (value, counts) in values {
        let l = format!("{}=\"{}\"", h.label, escape(&value));
        let mut cumulative = 0;
        for (i, bound) in h.bounds.iter().enumerate() {
            cumulative += counts[i];
            let _ = writeln!(out, "{name}_bucket{{{l},le=\"{bound}\"}} {cumulative}");
        }
        cumulative += counts[h.bounds.len()];
        let _ = writeln!(out, "{name}_bucket{{{l},le=\"+Inf\"}} {cumulative}");
        let sum = sums.get(&value).copied().unwrap_or(0) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum{{{l}}} {sum}\n{name}_count{{{l}}} {cumulative}");
    }
}

/// The queue gauges, read from the store when `/metrics` is scraped (so
/// every replica reports the shared queue): per destination (each of
/// `destinations`, and any other with pending deliveries, such as one
/// removed from the configuration) the pending deliveries and the age of
/// the oldest in seconds; 0 and 0 for an empty queue.
pub fn render_queues(destinations: &[String], queues: &[DeliveryQueue], now: DateTime<Utc>) -> String {
    let mut rows: Vec<(&str, i64, f64)> = destinations.iter().map(|d| (d.as_str(), 0, 0.0)).collect();
    for q in queues {
        let age = (now - q.oldest).num_milliseconds().max(0) as f64 / 1e3;
        match rows.iter_mut().find(|r| r.0 == q.destination_id) {
            Some(row) => (row.1, row.2) = (q.depth, age),
            None => rows.push((q.destination_id.as_str(), q.depth, age)),
        }
    }
    rows.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = String::new();
    let gauges: [(&str, &str); 2] = [
        ("edihub_delivery_queue_depth", "Deliveries pending (due or waiting for a retry), by destination."),
        ("edihub_delivery_oldest_pending_seconds", "Age of the oldest pending delivery, by destination."),
    ];
    for (k, (name, help)) in gauges.iter().enumerate() {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (destination, depth, age) in &rows {
            let d = escape(destination);
            let _ = if k == 0 {
                writeln!(out, "{name}{{destination=\"{d}\"}} {depth}")
            } else {
                writeln!(out, "{name}{{destination=\"{d}\"}} {age}")
            };
        }
    }
    out
}
