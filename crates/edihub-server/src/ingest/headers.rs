//! What a request's headers may say, checked before its body is read: an
//! Idempotency-Key's length and characters, a message type named by a
//! header or the query, and no header that decides what the request means
//! given twice.

use axum::http::HeaderMap;

use crate::error::ApiError;

/// Longest accepted Idempotency-Key.
pub const MAX_KEY_LEN: usize = 200;

/// An Idempotency-Key must be 1–200 printable ASCII characters.
pub fn validate_key(key: &str) -> Result<String, ApiError> {
    let ok = !key.is_empty() && key.len() <= MAX_KEY_LEN && key.bytes().all(|b| (0x20..0x7f).contains(&b));
    if ok {
        Ok(key.to_string())
    } else {
        Err(ApiError::BadRequest(format!(
            "Idempotency-Key must be 1–{MAX_KEY_LEN} printable ASCII characters (got {} bytes)",
            key.len()
        )))
    }
}

/// An explicit message type (header, query) must pass [`crate::config::check_type`].
pub fn validate_type<'a>(t: &'a str, source: &str) -> Result<&'a str, ApiError> {
    crate::config::check_type(t).map_err(|reason| ApiError::BadRequest(format!("{source}: {reason}")))
}

/// 400 when any of `names` occurs more than once: which copy counts would
/// change what the request means (who sent it, its key, its type), so a
/// repeated header is refused like an ambiguous body.
pub fn refuse_repeated(headers: &HeaderMap, names: &[&str]) -> Result<(), ApiError> {
    match names.iter().find(|n| headers.get_all(**n).iter().nth(1).is_some()) {
        Some(name) => Err(ApiError::BadRequest(format!("the {name} header is repeated; send it once"))),
        None => Ok(()),
    }
}

/// A header as text; 400 when it is not visible ASCII or is repeated.
pub fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ApiError> {
    refuse_repeated(headers, &[name])?;
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(Some)
            .map_err(|_| ApiError::BadRequest(format!("the {name} header must be printable ASCII"))),
    }
}
