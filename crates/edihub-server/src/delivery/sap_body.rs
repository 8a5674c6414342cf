//! The body of a `sap-idoc-xml` delivery: the message's IDoc as IDoc-XML
//! for SAP's inbound HTTP service.
//!
//! The stored IDoc (XML, JSON, SOAP or a flat file, read with the
//! configured descriptions as at intake) is rewritten by
//! [`SapIdoc::from_document`]: addressed from the hub to the environment's
//! SAP system, its segments in the order of the IDoc type's description
//! when one is configured (the hub's status IDocs, ALEAUD01 and SYSTAT01,
//! in the order of core's writer). One IDoc per call; the URL carries the SAP
//! client as `sap-client`, which SAP's ICF reads to log on to the client.

use std::sync::Arc;

use bytes::Bytes;
use edihub_core::IdocDescriptions;
use edihub_core::sap::{SapIdoc, SapProfile, StatusIdocType, idoc_xml};

use super::bodies::Outgoing;
use crate::config::DestinationConfig;
use crate::state::AppState;

/// The SAP system a destination writes to, and the descriptions that order its segments.
#[derive(Debug, Clone)]
pub(crate) struct SapTarget {
    /// The environment's SAP system and the hub in it.
    pub profile: SapProfile,
    descriptions: Arc<IdocDescriptions>,
}

impl SapTarget {
    /// The target of `def`: its environment's SAP system (the configuration
    /// refuses a `sap-idoc-xml` destination without one; an admin change
    /// that names another environment is checked the same way).
    pub fn of(def: &DestinationConfig, state: &AppState) -> Result<SapTarget, String> {
        let system = state.config.sap_system(&def.tenant, &def.environment).ok_or_else(|| {
            format!("{}/{} has no SAP system for a sap-idoc-xml destination", def.tenant, def.environment)
        })?;
        Ok(SapTarget { profile: system.profile(), descriptions: state.idoc_descriptions.clone() })
    }

    /// `url` with `sap-client` set to the profile's client (one given in
    /// the URL is replaced: the control record's MANDT must be the client
    /// logged on to).
    pub fn url(&self, url: &str) -> String {
        let (base, fragment) = url.split_once('#').map_or((url, None), |(b, f)| (b, Some(f)));
        let (path, query) = base.split_once('?').map_or((base, ""), |(p, q)| (p, q));
        let mut params: Vec<&str> =
            query.split('&').filter(|p| !p.is_empty() && !p.starts_with("sap-client=")).collect();
        let client = format!("sap-client={}", self.profile.client);
        params.push(&client);
        let mut out = format!("{path}?{}", params.join("&"));
        if let Some(f) = fragment {
            out.push('#');
            out.push_str(f);
        }
        out
    }

    /// The message's IDoc as IDoc-XML, or why it cannot be written (not an
    /// IDoc, a segment its type's description does not define, …).
    pub fn body(&self, m: &Outgoing) -> Result<Bytes, String> {
        m.body.with_document(m.meta.packet_index, |doc| {
            let doc = doc.ok_or("the stored body holds no IDoc for this message")?;
            let configured = doc
                .control()
                .and_then(|c| self.descriptions.for_types(c.cimtyp.as_deref(), c.idoctyp.as_deref()));
            // The hub's own status IDocs are described by core's writer.
            let status_type =
                doc.control().and_then(|c| c.idoctyp.as_deref()).and_then(StatusIdocType::from_idoc_type);
            let builtin = status_type.map(StatusIdocType::description);
            let description = configured.or(builtin.as_ref());
            let idoc = SapIdoc::from_document(doc, &self.profile, description).map_err(|e| e.to_string())?;
            idoc_xml(&[idoc]).map(Bytes::from).map_err(|e| e.to_string())
        })
    }
}
