//! Start-up validation: every rule names the offending key, so an operator
//! can fix the file without reading code.

use std::collections::HashSet;
use std::net::SocketAddr;

use super::names::check_id;
use super::sap::PROFILE_KEYS;
use super::{Config, ConfigError, DatabasePooler, SecretSource};

/// A SHA-256 hex digest, as the file stores keys and the admin token.
pub(super) fn check_sha256(key: &str, value: &str) -> Result<(), ConfigError> {
    if value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(ConfigError::new(
            key,
            "not a SHA-256 hex digest (64 hex characters); store `sha256sum` of the secret, never the secret",
        ))
    }
}

impl Config {
    /// Checks every rule, and reads each message type's and environment's
    /// window into the value the hub reads (so a change to a window's key
    /// takes effect through this call); the first violation is returned.
    pub fn validate(&mut self) -> Result<(), ConfigError> {
        self.listen
            .parse::<SocketAddr>()
            .map_err(|e| ConfigError::new("listen", format!("`{}` is not host:port ({e})", self.listen)))?;
        self.validate_limits()?;
        self.validate_database()?;
        let prefix = &self.webhook_secret_prefix;
        if !(prefix.is_empty()
            || (prefix.ends_with('_') && prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')))
        {
            return Err(ConfigError::new(
                "webhook_secret_prefix",
                "must be empty or end with '_' (A–Z, a–z, 0–9, '_'), e.g. EDIHUB_SECRET_",
            ));
        }
        check_sha256("admin.token_sha256", &self.admin.token_sha256)?;
        if !(1..=10_000_000).contains(&self.admin.search_scan_messages) {
            return Err(ConfigError::new("admin.search_scan_messages", "must be from 1 to 10000000"));
        }
        if self.feed.page_bytes < 1024 {
            return Err(ConfigError::new("feed.page_bytes", "must be at least 1024"));
        }
        if !(1..=10_000_000).contains(&self.feed.scan_messages) {
            return Err(ConfigError::new("feed.scan_messages", "must be from 1 to 10000000"));
        }
        if self.feed.render_budget_bytes < 1024 * 1024 {
            return Err(ConfigError::new("feed.render_budget_bytes", "must be at least 1048576"));
        }
        if self.retention.pause_ms > 10_000 {
            return Err(ConfigError::new("retention.pause_ms", "must be at most 10000"));
        }
        if self.retention.detach_pause_ms > 10_000 {
            return Err(ConfigError::new("retention.detach_pause_ms", "must be at most 10000"));
        }
        self.validate_tenants()?;
        self.validate_types()?;
        self.resolve_windows()?;
        self.validate_integrations()?;
        self.validate_delivery()?;
        self.validate_as2()?;
        self.validate_sap()?;
        super::idoc_descriptions::load(self)?;
        Ok(())
    }

    /// The `[as2]` section: ids, references, algorithms, and every PEM read
    /// and checked (by building the stations and partners the hub runs).
    fn validate_as2(&self) -> Result<(), ConfigError> {
        crate::as2::Registry::check_config(self)
    }

    /// Every environment's SAP system: each value fits the control record
    /// field it fills, and its status setting is valid; the error names
    /// the key (`….sap.client`, `….sap.status.interval`).
    fn validate_sap(&self) -> Result<(), ConfigError> {
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
                if let Some(status) = &sap.status {
                    status.validate(&format!("tenants[{t}].environments[{e}].sap.status"))?;
                }
            }
        }
        Ok(())
    }

    /// The body, packet and connection limits: none may be 0.
    fn validate_limits(&self) -> Result<(), ConfigError> {
        if self.max_body_bytes == 0 {
            return Err(ConfigError::new("max_body_bytes", "must be greater than 0"));
        }
        if self.max_idocs_per_packet == 0 {
            return Err(ConfigError::new("max_idocs_per_packet", "must be greater than 0"));
        }
        if self.max_inflight_body_bytes == 0 {
            return Err(ConfigError::new("max_inflight_body_bytes", "must be greater than 0"));
        }
        for (key, value) in [
            ("max_inflight_webhook_body_bytes", self.max_inflight_webhook_body_bytes as u64),
            (
                "max_inflight_webhook_body_bytes_per_address",
                self.max_inflight_webhook_body_bytes_per_address as u64,
            ),
            ("body_read_grace_secs", self.body_read_grace_secs),
            ("max_connections", self.max_connections as u64),
            ("max_connections_per_address", self.max_connections_per_address as u64),
            ("signature_rejection_audit_secs", self.signature_rejection_audit_secs),
        ] {
            if value == 0 {
                return Err(ConfigError::new(key, "must be greater than 0"));
            }
        }
        Ok(())
    }

    /// The database URL and how edihub uses the database.
    fn validate_database(&self) -> Result<(), ConfigError> {
        let url = &self.database_url;
        if !(url.starts_with("sqlite:") || url.starts_with("postgres://") || url.starts_with("postgresql://"))
        {
            return Err(ConfigError::new(
                "database_url",
                "must start with sqlite:, postgres:// or postgresql://",
            ));
        }
        if self.database_max_connections == 0 {
            return Err(ConfigError::new("database_max_connections", "must be greater than 0"));
        }
        if self.database_pooler == DatabasePooler::Transaction && url.starts_with("sqlite:") {
            return Err(ConfigError::new(
                "database_pooler",
                "`transaction` applies to a PostgreSQL database_url, not to SQLite",
            ));
        }
        if self.database_partitions_ahead > 366 {
            return Err(ConfigError::new("database_partitions_ahead", "must be at most 366"));
        }
        Ok(())
    }

    fn validate_integrations(&self) -> Result<(), ConfigError> {
        let mut seen = HashSet::new();
        for (i, def) in self.integrations.iter().enumerate() {
            let at = format!("integrations[{i}]");
            check_id(&format!("{at}.id"), &def.id)?;
            if !seen.insert(def.id.as_str()) {
                return Err(ConfigError::new(
                    format!("{at}.id"),
                    format!("integration `{}` is defined twice", def.id),
                ));
            }
            let env_known = self
                .tenants
                .iter()
                .find(|t| t.id == def.tenant)
                .map(|t| t.environments.iter().any(|e| e.id == def.environment));
            match env_known {
                None => {
                    return Err(ConfigError::new(
                        format!("{at}.tenant"),
                        format!("unknown tenant `{}`", def.tenant),
                    ));
                }
                Some(false) => {
                    return Err(ConfigError::new(
                        format!("{at}.environment"),
                        format!("tenant `{}` has no environment `{}`", def.tenant, def.environment),
                    ));
                }
                Some(true) => {}
            }
            crate::integrations::parse(def, &at, &self.config_to_validate(def))
                .map_err(|(key, reason)| ConfigError::new(key, reason))?;
        }
        Ok(())
    }

    /// The configuration to validate `def` with: this one, or, when secrets
    /// are not read, a copy whose secret source holds a placeholder for
    /// `def`'s variable (usable by every scheme), so the rest of the
    /// signature config is still checked. The placeholder never leaves
    /// validation: nothing is built from it.
    fn config_to_validate(&self, def: &super::IntegrationConfig) -> std::borrow::Cow<'_, super::Config> {
        let var = def.signature.as_ref().and_then(|s| s.secret_env.clone());
        match (&self.secrets, var) {
            (SecretSource::Unread, Some(var)) => {
                let mut copy = self.clone();
                copy.secrets = SecretSource::Fixed([(var, "whsec_cGxhY2Vob2xkZXI=".to_string())].into());
                std::borrow::Cow::Owned(copy)
            }
            _ => std::borrow::Cow::Borrowed(self),
        }
    }
}
