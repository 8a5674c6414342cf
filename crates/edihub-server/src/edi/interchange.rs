//! What the receive route adds for EDIFACT and X12 interchanges: the
//! answer with the envelope, and the interchange's claim for the first dedup
//! layer.
//!
//! An interchange control number (ISA13, UNB 0020) is unique per sender and
//! receiver, so a repeat of the three is a repeat of the whole interchange.
//! It is claimed like a request key (kind [`DetectedBy::Interchange`] in the
//! store): the first request stores its answer; a repeat with the same
//! content gets that answer with 200, stores nothing, and writes an
//! `interchange.duplicate_blocked` event naming the first message. A
//! repeat with other content is refused (422, `interchange.mismatch` with
//! `same_payload: false`), whatever the environment's `on_key_reuse`: the
//! answer describes the first interchange's messages, and another file's
//! messages must never be answered (or acknowledged) as accepted with it.
//! The content is the interchange's bytes without a byte order mark and
//! the white space around them, which the parse ignores too. A claim blocks
//! for the environment's interchange window (`interchange_window` or
//! `interchange_window_days`, default 30 days): a repeat after it is a new
//! interchange, which claims the number anew. The claims are request keys, kept for
//! `retention.keys_days`, so a window may not be longer than that (refused
//! at start).

use edihub_core::{Interchange, Party};
use edihub_store::{DetectedBy, KeyClaim, KeyReusePolicy};
use serde_json::Value;

use crate::config::Window;
use crate::error::ApiError;
use crate::ingest::MAX_KEY_LEN;

/// What an interchange's answer carries besides its messages: the
/// envelope (syntax, control number, sender, receiver), kept with the
/// interchange's claim so a repeat is answered with it.
pub fn envelope(interchange: &Interchange) -> Result<Value, ApiError> {
    // A struct of strings always serialises; an error would be a bug (500).
    serde_json::to_value(interchange).map_err(ApiError::internal)
}

fn party(p: &Party) -> String {
    format!("{}:{}", p.qualifier.as_deref().unwrap_or(""), p.id)
}

/// The claim of an interchange: `X12|ZZ:SENDER|ZZ:RECEIVER|000000901`.
/// Identifiers too long for a key (the standards allow 35 characters each)
/// or with control characters are refused rather than cut, since two cut
/// keys could collide.
pub fn interchange_claim(
    interchange: &Interchange,
    request_sha256: String,
    window: Window,
) -> Result<KeyClaim, ApiError> {
    let key = format!(
        "{}|{}|{}|{}",
        interchange.syntax.as_str(),
        party(&interchange.sender),
        party(&interchange.receiver),
        interchange.control_number
    );
    if key.len() > MAX_KEY_LEN || key.chars().any(char::is_control) {
        return Err(ApiError::Unprocessable(format!(
            "the interchange's sender, receiver and control number must together be at most {MAX_KEY_LEN} characters without control characters (got {} bytes)",
            key.len()
        )));
    }
    Ok(KeyClaim {
        kind: DetectedBy::Interchange,
        key,
        request_sha256,
        on_reuse: KeyReusePolicy::Reject,
        window_seconds: Some(window.seconds()),
    })
}

/// The refusal of an interchange whose control number was claimed, within
/// its window, by an interchange with other content (422).
pub fn reused_number(interchange: &Interchange) -> ApiError {
    let field = match interchange.syntax {
        edihub_core::EdiSyntax::X12 => "ISA13",
        edihub_core::EdiSyntax::Edifact => "UNB 0020",
    };
    ApiError::Unprocessable(format!(
        "interchange control number {} from {} to {} was already received with other content within the \
         interchange window; nothing of this interchange was stored: send new content under a new {field}",
        interchange.control_number,
        party(&interchange.sender),
        party(&interchange.receiver),
    ))
}

/// The bytes an interchange's content is compared by: the body without a
/// UTF-8 byte order mark and the white space before and after it, so a
/// re-send that only ends with another line break is the same interchange.
pub fn interchange_content(body: &[u8]) -> &[u8] {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let start = body.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(body.len());
    let end = body.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |i| i + 1);
    &body[start..end.max(start)]
}
