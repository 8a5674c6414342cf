//! The headers an integration may read (its event id, an `hmac` scheme's
//! signature): never one that carries credentials or framing the server
//! itself interprets. Which variables may hold its secret is the
//! configuration's rule ([`crate::config::check_secret_env`]).

use axum::http::HeaderName;

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
