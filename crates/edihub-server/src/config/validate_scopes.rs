//! Start-up validation of tenants, their environments and message types,
//! and the duplicate windows they set: each rule names the offending key.

use std::collections::HashSet;

use edihub_core::KeyPath;

use super::duration::{DEFAULT_INTERCHANGE_WINDOW_DAYS, DEFAULT_WINDOW_SECONDS, parse_window};
use super::names::{check_id, check_type};
use super::validate::check_sha256;
use super::{Config, ConfigError};

impl Config {
    /// Tenants and their environments: ids unique and well-formed, the
    /// interchange window, the message types admitted, and every sender
    /// and consumer key a SHA-256 digest used nowhere else.
    pub(super) fn validate_tenants(&self) -> Result<(), ConfigError> {
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
                    check_type(t)
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

    /// Message types: ids unique per tenant, a known tenant, key and
    /// excluded field paths that parse, a valid window, a fingerprint scope
    /// of known parties named once each.
    pub(super) fn validate_types(&self) -> Result<(), ConfigError> {
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
            edihub_core::FingerprintScope::parse(&mt.fingerprint_scope)
                .map_err(|e| ConfigError::new(format!("{at}.fingerprint_scope"), e))?;
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
