//! An environment's SAP system (`tenants[].environments[].sap`): who the
//! SAP system is and who the hub is in it, for the `sap-idoc-xml`
//! destinations of that environment.

use edihub_core::sap::SapProfile;
use serde::{Deserialize, Serialize};

use super::{Config, ConfigError};

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
}

/// The keys of a SAP system, as the profile's check names them.
const PROFILE_KEYS: [&str; 7] =
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

impl Config {
    /// The SAP system of `tenant`/`environment`, if it has one.
    pub fn sap_system(&self, tenant: &str, environment: &str) -> Option<&SapSystemConfig> {
        self.tenants
            .iter()
            .find(|t| t.id == tenant)
            .and_then(|t| t.environments.iter().find(|e| e.id == environment))
            .and_then(|e| e.sap.as_ref())
    }

    /// Every environment's SAP system: each value fits the control record
    /// field it fills; the error names the key (`….sap.client`).
    pub(super) fn validate_sap(&self) -> Result<(), ConfigError> {
        for (t, tenant) in self.tenants.iter().enumerate() {
            for (e, env) in tenant.environments.iter().enumerate() {
                let Some(sap) = &env.sap else { continue };
                sap.profile().check().map_err(|err| {
                    let detail = match &err {
                        edihub_core::CoreError::SapProfile(detail) => detail.clone(),
                        other => other.to_string(),
                    };
                    // The profile's check starts its detail with the key it is about.
                    let key = detail.split_once(' ').map_or("", |(first, _)| first);
                    let at = format!("tenants[{t}].environments[{e}].sap");
                    let known = PROFILE_KEYS.contains(&key);
                    ConfigError::new(if known { format!("{at}.{key}") } else { at }, err.to_string())
                })?;
            }
        }
        Ok(())
    }
}
