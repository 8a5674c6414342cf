//! The names a configuration gives things, and the rules each follows:
//! ids of tenants, environments, integrations and destinations
//! ([`check_id`]), message types ([`check_type`], which every type named by
//! a request passes too) and the environment variables that hold secrets
//! ([`check_secret_env`]).
//!
//! A `secret_env` set through the admin API would otherwise turn any process
//! variable into a webhook secret, and a valid signature into an oracle for
//! guessing it (`DATABASE_URL`). So a variable must start with
//! `webhook_secret_prefix` (default `EDIHUB_SECRET_`) or be named by an
//! integration of the configuration file, and never be one of the process's
//! well-known variables, whoever names it.

use super::error::ConfigError;
use super::root::Config;

/// An id: 1–100 characters of `A–Z a–z 0–9 - _ .`.
pub fn check_id(key: &str, value: &str) -> Result<(), ConfigError> {
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

/// Longest message type.
pub const MAX_TYPE_LEN: usize = 100;

/// A message type is 1–100 characters of `A–Z a–z 0–9 . _ - : /`
/// (surrounding blanks are trimmed): enough for IDoc types and providers'
/// event names, nothing a page or a log could misread.
pub fn check_type(t: &str) -> Result<&str, String> {
    let t = t.trim();
    let ok = !t.is_empty()
        && t.len() <= MAX_TYPE_LEN
        && t.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-:/".contains(&b));
    if ok {
        Ok(t)
    } else {
        Err(format!(
            "the message type must be 1–{MAX_TYPE_LEN} characters of A–Z, a–z, 0–9, '.', '_', '-', ':', '/' (got {} bytes)",
            t.len()
        ))
    }
}

/// Variables that hold no webhook secret, whoever names them.
const DENIED: &[&str] = &[
    "DATABASE_URL",
    "HOME",
    "PATH",
    "PWD",
    "OLDPWD",
    "USER",
    "LOGNAME",
    "SHELL",
    "HOSTNAME",
    "LANG",
    "TERM",
    "TMPDIR",
];
/// Prefixes of variables that configure a process or a client library.
const DENIED_PREFIXES: &[&str] = &["EDIHUB_", "PG", "LD_", "LC_", "RUST", "CARGO", "SSH_", "AWS_", "XDG_"];

/// Checks that `var` may hold an integration secret under `config`.
pub fn check_secret_env(var: &str, config: &Config) -> Result<(), String> {
    let prefix = config.webhook_secret_prefix.as_str();
    let charset = !var.is_empty() && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !charset {
        return Err(format!("`{var}` is not an environment variable name (A–Z, a–z, 0–9, '_')"));
    }
    let upper = var.to_ascii_uppercase();
    let prefixed = !prefix.is_empty() && var.starts_with(prefix);
    let denied = DENIED.contains(&upper.as_str())
        // The prefix may lie under `EDIHUB_` (the default does); no other
        // denied family can be opened up by choosing a prefix.
        || DENIED_PREFIXES.iter().any(|p| upper.starts_with(p) && !(prefixed && *p == "EDIHUB_"));
    if denied {
        return Err(format!("`{var}` is a process variable, not a webhook secret"));
    }
    if prefixed || config.file_secret_names.contains(var) {
        Ok(())
    } else {
        Err(format!(
            "`{var}` must start with `{prefix}` (webhook_secret_prefix) or be named by an integration of the \
             configuration file"
        ))
    }
}
