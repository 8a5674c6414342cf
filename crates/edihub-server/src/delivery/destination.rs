//! A destination as the worker holds it: its definition with its
//! credentials read and its target resolved. The supervisor builds it once
//! per change of its definition ([`TakenUp`]), an attempt reads it.

use std::collections::HashMap;
use std::sync::Arc;

use edihub_store::DestinationRow;
use serde_json::Value;

use super::as2_target::As2Target;
use super::sap_body::SapTarget;
use crate::config::{DeliveryFormat, DestinationConfig};

/// A destination ready to deliver to.
#[derive(Debug)]
pub(crate) struct Destination {
    /// Its definition.
    pub def: DestinationConfig,
    /// The Standard Webhooks key, when signed.
    pub key: Option<Vec<u8>>,
    /// The HTTP Basic user and password, when it has `basic_auth`.
    pub basic: Option<(String, String)>,
    /// The URL posted to: the definition's, with `sap-client` for a
    /// `sap-idoc-xml` destination.
    pub url: String,
    /// A `sap-idoc-xml` destination's SAP system.
    pub sap: Option<SapTarget>,
    /// An `as2` destination's station and partner.
    pub as2: Option<As2Target>,
}

impl Destination {
    /// Whether its attempts send envelopes the intake may hand over (see
    /// `handoff.rs`): the envelope format, neither SAP's nor AS2's.
    pub(crate) fn takes_handoff(&self) -> bool {
        self.def.format == DeliveryFormat::Envelope && self.sap.is_none() && self.as2.is_none()
    }
}

/// The destinations taken up, by id, each with the definition it was built
/// from: a listing rebuilds only the destinations whose definition changed
/// (reading a destination's credentials and resolving its target is work
/// the poll interval would otherwise repeat for every destination), and an
/// unusable definition is logged once per change rather than every poll.
#[derive(Debug, Default)]
pub(crate) struct TakenUp {
    by_id: HashMap<String, Entry>,
}

/// A definition and what was built from it (`None`: unusable).
#[derive(Debug)]
struct Entry {
    definition: Value,
    built: Option<Arc<Destination>>,
}

impl TakenUp {
    /// The usable destinations among the enabled `rows`, in their order:
    /// each one as built before when its definition is unchanged, else
    /// built by `build` (an error is logged and the row skipped until its
    /// definition changes). Destinations that are disabled or no longer
    /// listed are forgotten.
    pub(crate) fn refresh(
        &mut self,
        rows: &[DestinationRow],
        build: impl Fn(&DestinationRow) -> Result<Destination, String>,
    ) -> Vec<Arc<Destination>> {
        let mut kept = HashMap::with_capacity(rows.len());
        let mut usable = Vec::with_capacity(rows.len());
        for row in rows.iter().filter(|r| r.enabled) {
            let entry = match self.by_id.remove(&row.id) {
                Some(entry) if entry.definition == row.definition.0 => entry,
                _ => Entry { definition: row.definition.0.clone(), built: built(row, &build) },
            };
            usable.extend(entry.built.clone());
            kept.insert(row.id.clone(), entry);
        }
        self.by_id = kept;
        usable
    }
}

/// `build(row)`, an error logged.
fn built(
    row: &DestinationRow,
    build: &impl Fn(&DestinationRow) -> Result<Destination, String>,
) -> Option<Arc<Destination>> {
    match build(row) {
        Ok(d) => Some(Arc::new(d)),
        Err(e) => {
            tracing::warn!(destination = %row.id, error = %e, "delivery: unusable destination skipped until its definition changes");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use chrono::Utc;
    use edihub_store::Json;
    use serde_json::json;

    use super::*;

    fn row(id: &str, url: &str, enabled: bool) -> DestinationRow {
        DestinationRow {
            id: id.into(),
            tenant_id: "acme".into(),
            environment_id: "prod".into(),
            message_types: None,
            enabled,
            definition: Json(json!({"id": id, "tenant": "acme", "environment": "prod", "url": url})),
            source: "admin".into(),
            updated_at: Utc::now(),
        }
    }

    /// Builds a destination from the row's definition, counting the builds;
    /// a url of "unusable" fails as a missing credential would.
    fn counting(builds: &Cell<usize>) -> impl Fn(&DestinationRow) -> Result<Destination, String> + '_ {
        move |row| {
            builds.set(builds.get() + 1);
            let def: DestinationConfig =
                serde_json::from_value(row.definition.0.clone()).map_err(|e| e.to_string())?;
            if def.url == "unusable" {
                return Err("the signing secret is not set".into());
            }
            let url = def.url.clone();
            Ok(Destination { def, key: None, basic: None, url, sap: None, as2: None })
        }
    }

    fn urls(destinations: &[Arc<Destination>]) -> Vec<&str> {
        destinations.iter().map(|d| d.url.as_str()).collect()
    }

    #[test]
    fn a_listing_builds_only_new_and_changed_definitions() {
        let builds = Cell::new(0);
        let mut taken_up = TakenUp::default();
        let first =
            vec![row("a", "http://a/1", true), row("b", "http://b/1", true), row("c", "unusable", true)];
        let got = taken_up.refresh(&first, counting(&builds));
        assert_eq!(urls(&got), ["http://a/1", "http://b/1"]);
        assert_eq!(builds.get(), 3);

        // The same listing again: nothing is rebuilt, the unusable one
        // included, and the same destinations are handed out.
        let again = taken_up.refresh(&first, counting(&builds));
        assert_eq!(builds.get(), 3);
        assert!(Arc::ptr_eq(&got[0], &again[0]) && Arc::ptr_eq(&got[1], &again[1]));

        // `b` changes, `c` is fixed: only those two are built.
        let changed =
            vec![row("a", "http://a/1", true), row("b", "http://b/2", true), row("c", "http://c/1", true)];
        let got = taken_up.refresh(&changed, counting(&builds));
        assert_eq!(urls(&got), ["http://a/1", "http://b/2", "http://c/1"]);
        assert_eq!(builds.get(), 5);

        // Disabled and unlisted ones are forgotten: enabled again, they are
        // built again.
        let fewer = vec![row("a", "http://a/1", false), row("b", "http://b/2", true)];
        assert_eq!(urls(&taken_up.refresh(&fewer, counting(&builds))), ["http://b/2"]);
        assert_eq!(builds.get(), 5);
        let back = taken_up.refresh(&changed, counting(&builds));
        assert_eq!(urls(&back), ["http://a/1", "http://b/2", "http://c/1"]);
        assert_eq!(builds.get(), 7);
    }
}
