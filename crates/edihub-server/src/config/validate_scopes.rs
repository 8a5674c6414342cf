//! Start-up validation of tenants, their environments and message types,
//! and the duplicate windows they set: each rule names the offending key.

use std::collections::HashSet;
use std::num::NonZeroU32;

use edihub_core::KeyPath;

use super::duration::Window;
use super::names::{check_id, check_type};
use super::sections::{EnvironmentConfig, MessageTypeConfig};
use super::validate::check_sha256;
use super::{Config, ConfigError};

impl Config {
    /// Tenants and their environments: ids unique and well-formed, the
    /// message types admitted, and every sender and consumer key a SHA-256
    /// digest used nowhere else (the interchange window is read by
    /// [`Config::resolve_windows`]).
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
    /// excluded field paths that parse, a fingerprint scope of known
    /// parties named once each (the window is read by
    /// [`Config::resolve_windows`]).
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
            edihub_core::FingerprintScope::parse(&mt.fingerprint_scope)
                .map_err(|e| ConfigError::new(format!("{at}.fingerprint_scope"), e))?;
        }
        Ok(())
    }

    /// Reads every environment's interchange window and every message
    /// type's dedup window, from whichever spelling it uses, into the one
    /// value the hub reads ([`EnvironmentConfig::interchange_window`],
    /// [`MessageTypeConfig::window`]); a refusal names the key written.
    pub(super) fn resolve_windows(&mut self) -> Result<(), ConfigError> {
        let keys_days = self.retention.keys_days;
        for (t, tenant) in self.tenants.iter_mut().enumerate() {
            for (e, env) in tenant.environments.iter_mut().enumerate() {
                let at = format!("tenants[{t}].environments[{e}]");
                env.resolved_interchange_window = interchange_window(env, &at, keys_days)?;
            }
        }
        for (i, mt) in self.message_types.iter_mut().enumerate() {
            mt.resolved_window = dedup_window(mt, &format!("message_types[{i}]"))?;
        }
        Ok(())
    }
}

/// The interchange window of the environment at `at`: `interchange_window`
/// when set, else `interchange_window_days`, else 30 days (or
/// `retention.keys_days` when that is shorter). A configured window is
/// never longer than `retention.keys_days` (when that purges at all),
/// since the claims that make the window are request keys and would be
/// deleted before the window ends.
fn interchange_window(env: &EnvironmentConfig, at: &str, keys_days: u32) -> Result<Window, ConfigError> {
    let keys = NonZeroU32::new(keys_days).map(Window::from_days);
    let (key, window) = match (&env.interchange_window, env.interchange_window_days) {
        (Some(text), _) => {
            let key = format!("{at}.interchange_window");
            let window = Window::parse(text).map_err(|r| ConfigError::new(key.clone(), r))?;
            (key, window)
        }
        (None, Some(days)) => {
            let key = format!("{at}.interchange_window_days");
            let days =
                NonZeroU32::new(days).ok_or_else(|| ConfigError::new(key.clone(), "must be at least 1"))?;
            (key, Window::from_days(days))
        }
        // The default is cut to the keys' lifetime, so it never outlasts
        // the claims.
        (None, None) => {
            return Ok(keys.map_or(Window::DEFAULT_INTERCHANGE, |k| k.min(Window::DEFAULT_INTERCHANGE)));
        }
    };
    match keys {
        Some(keys) if window > keys => Err(ConfigError::new(
            key,
            format!(
                "is longer than retention.keys_days ({keys_days} days), which keeps the interchange claims: raise retention.keys_days or shorten the window"
            ),
        )),
        _ => Ok(window),
    }
}

/// The dedup window of the message type at `at`: `duplicate_window` when
/// set, else `duplicate_window_hours`, else 168 hours.
fn dedup_window(mt: &MessageTypeConfig, at: &str) -> Result<Window, ConfigError> {
    if let Some(text) = &mt.duplicate_window {
        return Window::parse(text).map_err(|r| ConfigError::new(format!("{at}.duplicate_window"), r));
    }
    let key = || format!("{at}.duplicate_window_hours");
    match mt.duplicate_window_hours {
        None => Ok(Window::DEFAULT_DEDUP),
        Some(0) => Err(ConfigError::new(key(), "must be at least 1")),
        Some(hours) => Window::from_hours(hours).ok_or_else(|| ConfigError::new(key(), "too large")),
    }
}
