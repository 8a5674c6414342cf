//! Refused webhook signatures, gathered before they reach the audit log.
//!
//! Anyone can post a bad signature, as fast as they like: one audit row per
//! refusal would let them fill the database and bury real events. Refusals
//! are counted in memory instead, one entry per integration, reason and
//! client address, and written every `signature_rejection_audit_secs` as one
//! `webhook.signature_rejected` event each, carrying the count. At most
//! [`MAX_SOURCES`] addresses are kept apart per interval; refusals from
//! further addresses are counted under the source `other`, so the rows per
//! interval are bounded whoever sends, and the counts always add up. Every
//! refusal is also counted at once in `edihub_webhook_signatures_rejected_total`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use chrono::{DateTime, SecondsFormat, Utc};
use edihub_store::{NewAuditEvent, SIGNATURE_REJECTED, Store};
use serde_json::json;

use super::Integration;

/// Client addresses kept apart per interval; further ones count as `other`.
pub const MAX_SOURCES: usize = 100;

/// The source of refusals from addresses past [`MAX_SOURCES`].
pub const OTHER_SOURCES: &str = "other";

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    integration: String,
    reason: String,
    source: String,
}

#[derive(Debug)]
struct Entry {
    tenant: String,
    environment: String,
    count: u64,
    first_at: DateTime<Utc>,
    last_at: DateTime<Utc>,
    /// Arrival order of the entry, so events are written oldest first.
    seq: u64,
}

#[derive(Debug, Default)]
struct Pending {
    entries: HashMap<Key, Entry>,
    sources: std::collections::HashSet<String>,
    seq: u64,
}

/// Refusals not yet written to the audit log.
#[derive(Debug, Default)]
pub struct Rejections {
    pending: Mutex<Pending>,
}

impl Rejections {
    /// Counts one refusal of `integ`'s signature for `reason`, from `source`
    /// (the client's address, when the server knows it).
    pub fn record(&self, integ: &Integration, reason: &str, source: Option<IpAddr>, at: DateTime<Utc>) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let mut source = source.map_or_else(|| "unknown".to_string(), |a| a.to_string());
        if !pending.sources.contains(&source) {
            if pending.sources.len() < MAX_SOURCES {
                pending.sources.insert(source.clone());
            } else {
                source = OTHER_SOURCES.to_string();
            }
        }
        let key = Key { integration: integ.id.clone(), reason: reason.to_string(), source };
        let seq = pending.seq;
        let entry = pending.entries.entry(key).or_insert_with(|| Entry {
            tenant: integ.scope.tenant_id.clone(),
            environment: integ.scope.environment_id.clone(),
            count: 0,
            first_at: at,
            last_at: at,
            seq,
        });
        entry.count += 1;
        entry.last_at = at;
        pending.seq += 1;
    }

    /// Writes what was gathered as audit events (oldest first) and starts a
    /// new interval; returns the number of events written. A failed write is
    /// logged with its count: the refusals stood, and the metric has them.
    pub async fn flush(&self, store: &dyn Store) -> usize {
        let taken = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        let mut entries: Vec<_> = taken.entries.into_iter().collect();
        entries.sort_by_key(|(_, e)| e.seq);
        let mut written = 0;
        for (key, entry) in entries {
            let stamp = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Millis, true);
            let event = NewAuditEvent {
                action: SIGNATURE_REJECTED.into(),
                tenant_id: Some(entry.tenant),
                environment_id: Some(entry.environment),
                details: json!({
                    "integration": key.integration,
                    "reason": key.reason,
                    "source": key.source,
                    "count": entry.count,
                    "first_at": stamp(entry.first_at),
                    "last_at": stamp(entry.last_at),
                }),
                ..Default::default()
            };
            match store.insert_audit(&event).await {
                Ok(()) => written += 1,
                Err(e) => tracing::warn!(
                    error = %e,
                    integration = %key.integration,
                    reason = %key.reason,
                    source = %key.source,
                    count = entry.count,
                    "could not audit rejected webhook signatures"
                ),
            }
        }
        written
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::TypeSource;
    use crate::signing::Verifier;
    use edihub_store::Scope;

    fn integration(id: &str) -> Integration {
        Integration {
            id: id.into(),
            scope: Scope::new("acme", "prod"),
            message_type: TypeSource::Fixed("t".into()),
            event_id: None,
            verifier: Verifier::None,
            allowed_types: None,
            event_id_days: None,
        }
    }

    #[test]
    fn entries_are_bounded_and_counts_add_up() {
        let r = Rejections::default();
        let (a, b) = (integration("a"), integration("b"));
        let now = Utc::now();
        // 1,000 addresses, two integrations, two reasons, 4,000 refusals.
        for i in 0..1000u32 {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            for integ in [&a, &b] {
                r.record(integ, "mismatch", Some(ip), now);
                r.record(integ, "missing", Some(ip), now);
            }
        }
        let pending = r.pending.lock().unwrap();
        assert!(pending.entries.len() <= MAX_SOURCES * 4 + 4, "{} entries", pending.entries.len());
        assert_eq!(pending.entries.values().map(|e| e.count).sum::<u64>(), 4000);
        let other = Key { integration: "a".into(), reason: "missing".into(), source: OTHER_SOURCES.into() };
        assert_eq!(pending.entries[&other].count, 900, "addresses past the cap count as `other`");
    }
}
