//! Prometheus metrics, kept in the application state (no global registry).
//!
//! Counters are atomics in maps keyed by their labels; the maps are behind
//! read-write locks that are written only the first time a label set is
//! seen, so the hot path is a read lock and an atomic add.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Latency histogram bucket bounds, in seconds.
const BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

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
}

impl Metrics {
    /// One finished HTTP request.
    pub fn request(&self, route: &str, status: u16, elapsed: Duration) {
        self.requests.add(vec![("route", route.to_string()), ("status", status.to_string())], 1);
        let secs = elapsed.as_secs_f64();
        let bucket = BUCKETS.iter().position(|b| secs <= *b).unwrap_or(BUCKETS.len());
        self.latency_buckets.add(vec![("route", route.to_string()), ("bucket", bucket.to_string())], 1);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.latency_sum_micros.add(vec![("route", route.to_string())], micros);
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
    /// configuration and admins, so the label set is bounded).
    pub fn delivery_attempt(&self, destination: &str, outcome: &str) {
        let labels = vec![("destination", destination.to_string()), ("outcome", outcome.to_string())];
        self.delivery_attempts.add(labels, 1);
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
        ];
        for (name, help, family) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (labels, v) in family.snapshot() {
                let _ = writeln!(out, "{name}{} {v}", label_text(&labels, None));
            }
        }
        self.render_latency(&mut out);
        let name = "edihub_db_pool_connections";
        let _ = writeln!(out, "# HELP {name} Database pool connections by state.\n# TYPE {name} gauge");
        let _ = writeln!(out, "{name}{{state=\"open\"}} {}\n{name}{{state=\"idle\"}} {}", pool.0, pool.1);
        out
    }

    fn render_latency(&self, out: &mut String) {
        let name = "edihub_http_request_duration_seconds";
        let _ = writeln!(out, "# HELP {name} HTTP request latency by route.\n# TYPE {name} histogram");
        let mut per_route: HashMap<String, [u64; BUCKETS.len() + 1]> = HashMap::new();
        for (labels, v) in self.latency_buckets.snapshot() {
            let route = labels[0].1.clone();
            let i: usize = labels[1].1.parse().unwrap_or(BUCKETS.len());
            per_route.entry(route).or_insert([0; BUCKETS.len() + 1])[i] += v;
        }
        let sums: HashMap<String, u64> =
            self.latency_sum_micros.snapshot().into_iter().map(|(l, v)| (l[0].1.clone(), v)).collect();
        let mut routes: Vec<_> = per_route.into_iter().collect();
        routes.sort();
        for (route, counts) in routes {
            let r = escape(&route);
            let mut cumulative = 0;
            for (i, bound) in BUCKETS.iter().enumerate() {
                cumulative += counts[i];
                let _ = writeln!(out, "{name}_bucket{{route=\"{r}\",le=\"{bound}\"}} {cumulative}");
            }
            cumulative += counts[BUCKETS.len()];
            let _ = writeln!(out, "{name}_bucket{{route=\"{r}\",le=\"+Inf\"}} {cumulative}");
            let sum = sums.get(&route).copied().unwrap_or(0) as f64 / 1e6;
            let _ = writeln!(
                out,
                "{name}_sum{{route=\"{r}\"}} {sum}\n{name}_count{{route=\"{r}\"}} {cumulative}"
            );
        }
    }
}
