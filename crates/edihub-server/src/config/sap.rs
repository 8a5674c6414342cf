//! An environment's SAP system (`tenants[].environments[].sap`): who the
//! SAP system is and who the hub is in it, for the `sap-idoc-xml`
//! destinations of that environment, and whether the hub reports the
//! status of that system's IDocs back to it (`sap.status`).

use std::time::Duration;

use edihub_core::sap::{MAX_CONFIRMATIONS, SapProfile, StatusIdocType};
use serde::{Deserialize, Serialize};

use super::duration::parse_delay;
use super::error::ConfigError;

/// The SAP system an environment exchanges IDocs with, and the hub's
/// partner profile there (transaction WE20) and port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SapSystemConfig {
    /// The SAP system's logical system (RCVPRN of what the hub sends), e.g. `S4HCLNT100`.
    pub logical_system: String,
    /// The SAP system's partner type (RCVPRT), `LS` by default.
    #[serde(default = "logical_system_type")]
    pub partner_type: String,
    /// The SAP system's port (RCVPOR): `SAP` and its system id, e.g. `SAPS4H`.
    pub port: String,
    /// The SAP client: three digits, sent as `sap-client` and in MANDT.
    pub client: String,
    /// The hub's partner number in SAP (SNDPRN), e.g. `EDIHUB`.
    pub hub_partner: String,
    /// The hub's partner type in SAP (SNDPRT), `LS` by default.
    #[serde(default = "logical_system_type")]
    pub hub_partner_type: String,
    /// The port SAP knows the hub by (SNDPOR), e.g. an XML-HTTP port `EDIHUB`.
    pub hub_port: String,
    /// Status back to SAP: when set, IDocs from this SAP system (SNDPRN
    /// equal to `logical_system`) get their status reported back in status
    /// IDocs, stored as messages of the environment and delivered by its
    /// `sap-idoc-xml` destination. Unset: no status is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SapStatusConfig>,
}

/// How the hub reports the status of a SAP system's IDocs back to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SapStatusConfig {
    /// The status IDoc type: `ALEAUD01` (the ALE audit confirmation, as
    /// SAP's report RBDSTATE sends it) or `SYSTAT01` (an EDI subsystem's
    /// status report).
    #[serde(default = "aleaud01")]
    pub idoc: String,
    /// How often pending status changes are sent, at the latest: `500ms`,
    /// `30s`, `5m`, `1h`.
    #[serde(default = "one_minute")]
    pub interval: String,
    /// Most status changes one status IDoc carries (1 to 500, SAP's limit
    /// for ALEAUD01); once the hub's requests have recorded this many, a
    /// full status IDoc goes before the interval ends.
    #[serde(default = "max_per_idoc")]
    pub max_per_idoc: usize,
}

/// `StatusIdocType::Aleaud01`'s name, written out: docs/configuration.md
/// shows a default's literal.
fn aleaud01() -> String {
    "ALEAUD01".into()
}

fn one_minute() -> String {
    "1m".into()
}

/// The status IDoc types `idoc` may name, for errors: "ALEAUD01 or SYSTAT01".
fn status_types() -> String {
    StatusIdocType::ALL.map(StatusIdocType::idoc_type).join(" or ")
}

/// SAP's limit for ALEAUD01 ([`MAX_CONFIRMATIONS`]).
fn max_per_idoc() -> usize {
    500
}

impl SapStatusConfig {
    /// The status IDoc type, if `idoc` names one.
    pub fn idoc_type(&self) -> Option<StatusIdocType> {
        StatusIdocType::from_idoc_type(&self.idoc)
    }

    /// The interval, once validated (a minute if it does not parse).
    pub fn every(&self) -> Duration {
        parse_delay(&self.interval).unwrap_or(Duration::from_secs(60))
    }

    /// The setting's own checks; the error names the key under `at`.
    pub(super) fn validate(&self, at: &str) -> Result<(), ConfigError> {
        if self.idoc_type().is_none() {
            return Err(ConfigError::new(
                format!("{at}.idoc"),
                format!("`{}` is not a status IDoc type: {}", self.idoc, status_types()),
            ));
        }
        parse_delay(&self.interval).map_err(|r| ConfigError::new(format!("{at}.interval"), r))?;
        if !(1..=MAX_CONFIRMATIONS).contains(&self.max_per_idoc) {
            return Err(ConfigError::new(
                format!("{at}.max_per_idoc"),
                format!("must be 1 to {MAX_CONFIRMATIONS}, not {}", self.max_per_idoc),
            ));
        }
        Ok(())
    }
}

/// The keys of a SAP system, as the profile's check names them.
pub(super) const PROFILE_KEYS: [&str; 7] =
    ["logical_system", "partner_type", "port", "client", "hub_partner", "hub_partner_type", "hub_port"];

fn logical_system_type() -> String {
    "LS".into()
}

impl SapSystemConfig {
    /// The profile the IDoc writer takes.
    pub fn profile(&self) -> SapProfile {
        SapProfile {
            logical_system: self.logical_system.clone(),
            partner_type: self.partner_type.clone(),
            port: self.port.clone(),
            client: self.client.clone(),
            hub_partner: self.hub_partner.clone(),
            hub_partner_type: self.hub_partner_type.clone(),
            hub_port: self.hub_port.clone(),
        }
    }
}
