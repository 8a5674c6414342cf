//! Start-up validation: every rule names the offending key, so an operator
//! can fix the file without reading code.

use std::collections::HashSet;
use std::net::SocketAddr;

use edihub_core::KeyPath;

use super::{Config, SecretSource};

/// Default dedup window: one week.
pub const DEFAULT_WINDOW_SECONDS: i64 = 168 * 3600;
/// The interchange window when an environment sets none.
pub const DEFAULT_INTERCHANGE_WINDOW_DAYS: u32 = 30;

/// A configuration value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config key `{key}`: {reason}")]
pub struct ConfigError {
    /// The key, e.g. `tenants[0].environments[1].api_keys_sha256[0]`.
    pub key: String,
    /// Why it was refused.
    pub reason: String,
}

impl ConfigError {
    /// An error about `key`.
    pub fn new(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { key: key.into(), reason: reason.into() }
    }

    pub(super) fn from_figment(e: figment::Error) -> Self {
        let key = if e.path.is_empty() { "(file)".to_string() } else { e.path.join(".") };
        Self::new(key, e.kind.to_string())
    }
}

/// Parses a window such as `2s`, `15m`, `12h`, `7d` into seconds.
pub fn parse_window(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (num, unit) = text.split_at(split);
    let n: i64 =
        num.parse().map_err(|_| format!("`{text}` is not a number with a unit (2s, 15m, 12h, 7d)"))?;
    let factor = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => return Err(format!("unknown unit `{other}` (use s, m, h or d)")),
    };
    match n.checked_mul(factor) {
        Some(s) if s > 0 => Ok(s),
        _ => Err(format!("`{text}` must be a positive duration")),
    }
}

fn check_sha256(key: &str, value: &str) -> Result<(), ConfigError> {
    if value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(ConfigError::new(
            key,
            "not a SHA-256 hex digest (64 hex characters); store `sha256sum` of the secret, never the secret",
        ))
    }
}

pub(super) fn check_id(key: &str, value: &str) -> Result<(), ConfigError> {
    let ok = !value.is_empty()
        && value.len() <= 100
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(
            key,
            format!("`{value}` must be 1–100 characters of A–Z, a–z, 0–9, '-', '_', '.'"),
        ))
    }
}

impl Config {
    /// Checks every rule; the first violation is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.listen
            .parse::<SocketAddr>()
            .map_err(|e| ConfigError::new("listen", format!("`{}` is not host:port ({e})", self.listen)))?;
        let url = &self.database_url;
        if !(url.starts_with("sqlite:") || url.starts_with("postgres://") || url.starts_with("postgresql://"))
        {
            return Err(ConfigError::new(
                "database_url",
                "must start with sqlite:, postgres:// or postgresql://",
            ));
        }
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
            ("max_connections", self.max_connections as u64),
            ("max_connections_per_address", self.max_connections_per_address as u64),
            ("signature_rejection_audit_secs", self.signature_rejection_audit_secs),
        ] {
            if value == 0 {
                return Err(ConfigError::new(key, "must be greater than 0"));
            }
        }
        if self.database_max_connections == 0 {
            return Err(ConfigError::new("database_max_connections", "must be greater than 0"));
        }
        match self.database_pooler.as_str() {
            "none" => {}
            "transaction" if !url.starts_with("sqlite:") => {}
            "transaction" => {
                return Err(ConfigError::new(
                    "database_pooler",
                    "`transaction` applies to a PostgreSQL database_url, not to SQLite",
                ));
            }
            _ => return Err(ConfigError::new("database_pooler", "must be `none` or `transaction`")),
        }
        if !matches!(self.database_partition_period.as_str(), "day" | "week") {
            return Err(ConfigError::new("database_partition_period", "must be `day` or `week`"));
        }
        if self.database_partitions_ahead > 366 {
            return Err(ConfigError::new("database_partitions_ahead", "must be at most 366"));
        }
        if !matches!(self.log_format.as_str(), "text" | "json") {
            return Err(ConfigError::new("log_format", "must be `text` or `json`"));
        }
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
        self.validate_tenants()?;
        self.validate_types()?;
        self.validate_integrations()?;
        self.validate_delivery()?;
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

    fn validate_tenants(&self) -> Result<(), ConfigError> {
        let mut tenants = HashSet::new();
        let mut keys = HashSet::new();
        for (t, tenant) in self.tenants.iter().enumerate() {
            check_id(&format!("tenants[{t}].id"), &tenant.id)?;
            if !tenants.insert(tenant.id.as_str()) {
                return Err(ConfigError::new(
                    format!("tenants[{t}].id"),
                    format!("tenant `{}` is defined twice", tenant.id),
                ));
            }
            let mut envs = HashSet::new();
            for (e, env) in tenant.environments.iter().enumerate() {
                let at = format!("tenants[{t}].environments[{e}]");
                check_id(&format!("{at}.id"), &env.id)?;
                if !envs.insert(env.id.as_str()) {
                    return Err(ConfigError::new(
                        format!("{at}.id"),
                        format!("environment `{}` is defined twice", env.id),
                    ));
                }
                self.interchange_window_of(t, e)?;
                for (k, t) in env.message_types.iter().flatten().enumerate() {
                    crate::producers::check_type(t)
                        .map_err(|reason| ConfigError::new(format!("{at}.message_types[{k}]"), reason))?;
                }
                // One set for both kinds: a digest is one key of one
                // environment, so no key both sends and reads.
                let lists = [
                    ("api_keys_sha256", &env.api_keys_sha256),
                    ("consumer_keys_sha256", &env.consumer_keys_sha256),
                ];
                for (list, hashes) in lists {
                    for (k, hash) in hashes.iter().enumerate() {
                        let key = format!("{at}.{list}[{k}]");
                        check_sha256(&key, hash)?;
                        if !keys.insert(hash.to_ascii_lowercase()) {
                            return Err(ConfigError::new(
                                key,
                                "this key is already used (as a sender or consumer key, here or in another environment)",
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn validate_types(&self) -> Result<(), ConfigError> {
        let mut seen = HashSet::new();
        for (i, mt) in self.message_types.iter().enumerate() {
            let at = format!("message_types[{i}]");
            if mt.id.trim().is_empty() || mt.id.len() > 100 {
                return Err(ConfigError::new(format!("{at}.id"), "must be 1–100 characters"));
            }
            if let Some(tenant) = &mt.tenant
                && !self.tenants.iter().any(|t| &t.id == tenant)
            {
                return Err(ConfigError::new(format!("{at}.tenant"), format!("unknown tenant `{tenant}`")));
            }
            if !seen.insert((mt.tenant.clone(), mt.id.clone())) {
                return Err(ConfigError::new(
                    format!("{at}.id"),
                    format!("message type `{}` is defined twice for this tenant", mt.id),
                ));
            }
            for (list, paths) in
                [("duplicate_key_fields", &mt.duplicate_key_fields), ("exclude_fields", &mt.exclude_fields)]
            {
                for (p, path) in paths.iter().enumerate() {
                    KeyPath::parse(path)
                        .map_err(|e| ConfigError::new(format!("{at}.{list}[{p}]"), e.to_string()))?;
                }
            }
            self.window_of(i)?;
        }
        Ok(())
    }

    /// The interchange window of `tenants[t].environments[e]` in seconds:
    /// default 30 days (or `retention.keys_days` when that is shorter), and
    /// a configured one never longer than `retention.keys_days` (when that
    /// purges at all), since the claims that make the window are request
    /// keys and would be deleted before the window ends.
    pub fn interchange_window_of(&self, t: usize, e: usize) -> Result<i64, ConfigError> {
        let env = &self.tenants[t].environments[e];
        let at = format!("tenants[{t}].environments[{e}]");
        let (key, seconds) = match (&env.interchange_window, env.interchange_window_days) {
            (Some(text), _) => {
                let key = format!("{at}.interchange_window");
                (key.clone(), parse_window(text).map_err(|r| ConfigError::new(key, r))?)
            }
            (None, Some(0)) => {
                return Err(ConfigError::new(format!("{at}.interchange_window_days"), "must be at least 1"));
            }
            (None, Some(days)) => (format!("{at}.interchange_window_days"), i64::from(days) * 86_400),
            // The default is cut to the keys' lifetime, as the window was
            // before it could be set.
            (None, None) => {
                let days = match self.retention.keys_days {
                    0 => DEFAULT_INTERCHANGE_WINDOW_DAYS,
                    keys => keys.min(DEFAULT_INTERCHANGE_WINDOW_DAYS),
                };
                return Ok(i64::from(days) * 86_400);
            }
        };
        let keys_days = self.retention.keys_days;
        if keys_days > 0 && seconds > i64::from(keys_days) * 86_400 {
            return Err(ConfigError::new(
                key,
                format!(
                    "is longer than retention.keys_days ({keys_days} days), which keeps the interchange claims: raise retention.keys_days or shorten the window"
                ),
            ));
        }
        Ok(seconds)
    }

    /// The window of `message_types[i]` in seconds.
    pub fn window_of(&self, i: usize) -> Result<i64, ConfigError> {
        let mt = &self.message_types[i];
        if let Some(text) = &mt.duplicate_window {
            return parse_window(text)
                .map_err(|r| ConfigError::new(format!("message_types[{i}].duplicate_window"), r));
        }
        match mt.duplicate_window_hours {
            None => Ok(DEFAULT_WINDOW_SECONDS),
            Some(0) => Err(ConfigError::new(
                format!("message_types[{i}].duplicate_window_hours"),
                "must be at least 1",
            )),
            Some(h) => i64::try_from(h).ok().and_then(|h| h.checked_mul(3600)).ok_or_else(|| {
                ConfigError::new(format!("message_types[{i}].duplicate_window_hours"), "too large")
            }),
        }
    }
}
