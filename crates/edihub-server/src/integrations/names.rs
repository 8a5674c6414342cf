//! Which names an integration may use: the environment variable holding its
//! secret, and the headers it reads.
//!
//! A `secret_env` set through the admin API would otherwise turn any process
//! variable into a webhook secret, and a valid signature into an oracle for
//! guessing it (`DATABASE_URL`). So a variable must start with
//! `webhook_secret_prefix` (default `EDIHUB_SECRET_`) or be named by an
//! integration of the configuration file, and never be one of the process's
//! well-known variables, whoever names it.

use axum::http::HeaderName;

use crate::config::Config;

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

/// Headers whose value must never be stored as an event id or read as a
/// signature: credentials, or framing the server itself interprets.
const RESERVED_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-length",
    "content-type",
    "content-encoding",
    "transfer-encoding",
    "idempotency-key",
    "x-message-type",
];

/// Checks that `var` may hold an integration secret under `config`.
pub(crate) fn check_secret_env(var: &str, config: &Config) -> Result<(), String> {
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

/// A header name an integration reads: a valid HTTP field name, not one of
/// [`RESERVED_HEADERS`]; returned in lower case.
pub(crate) fn header_name(name: &str, key: &str) -> Result<String, (String, String)> {
    let lower = name.trim().to_ascii_lowercase();
    if lower.is_empty() || lower.len() > 100 || HeaderName::from_bytes(lower.as_bytes()).is_err() {
        return Err((
            key.to_string(),
            format!("`{name}` is not an HTTP header name (1–100 token characters)"),
        ));
    }
    if RESERVED_HEADERS.contains(&lower.as_str()) {
        return Err((
            key.to_string(),
            format!("`{name}` carries credentials or framing; name another header"),
        ));
    }
    Ok(lower)
}
