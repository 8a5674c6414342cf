//! The characters XML 1.0 allows, and the only references the hub resolves.
//!
//! XML 1.0 forbids the C0 control characters but tab, LF and CR anywhere:
//! in names, text, attributes and comments, raw or as character references.
//! Raw ones are caught by one pass over the whole text before parsing;
//! references are checked where they are resolved (text here, attribute
//! values in `open`). No DTD is ever read, so the five predefined entities
//! are the only named references that exist.

use quick_xml::events::BytesRef;

use crate::CoreError;

/// Whether a byte is a C0 control character XML 1.0 forbids. Bytes below
/// 0x20 never occur inside a multi-byte UTF-8 sequence, so a byte test is
/// exact.
fn forbidden(b: u8) -> bool {
    b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')
}

/// The error for a forbidden control character at `offset`.
fn control_error(b: u8, offset: u64) -> CoreError {
    CoreError::XmlSyntax { offset, reason: format!("control character U+{b:04X} is not allowed in XML 1.0") }
}

/// Refuses a document containing a forbidden control character anywhere,
/// naming its byte offset.
pub(super) fn check_document(text: &str) -> Result<(), CoreError> {
    // A test without an early exit over a fixed chunk lets the compiler
    // check many bytes per instruction; the position is looked for only in
    // a chunk that has one.
    const CHUNK: usize = 64;
    for (n, chunk) in text.as_bytes().chunks(CHUNK).enumerate() {
        if !chunk.iter().fold(false, |bad, b| bad | forbidden(*b)) {
            continue;
        }
        if let Some(at) = chunk.iter().position(|b| forbidden(*b)) {
            return Err(control_error(chunk[at], (n * CHUNK + at) as u64));
        }
    }
    Ok(())
}

/// Refuses a resolved value (an attribute's) containing a forbidden control
/// character; `offset` is where its start tag ends.
pub(super) fn check_chars(text: &str, offset: u64) -> Result<(), CoreError> {
    match text.bytes().find(|b| forbidden(*b)) {
        Some(b) => Err(control_error(b, offset)),
        None => Ok(()),
    }
}

/// Resolves `&name;`: the five predefined entities and character references only.
pub(super) fn resolve_ref(r: &BytesRef) -> Result<char, CoreError> {
    let name: &str = r;
    let predefined = match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "apos" => Some('\''),
        "quot" => Some('"'),
        _ => None,
    };
    if let Some(c) = predefined {
        return Ok(c);
    }
    match r.resolve_char_ref() {
        // XML 1.0 allows no C0 control but tab, LF and CR, not even as a reference.
        Ok(Some(c)) if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {
            Err(CoreError::InvalidCharRef(name.to_string()))
        }
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err(CoreError::UndefinedEntity(name.to_string())),
        Err(_) => Err(CoreError::InvalidCharRef(name.to_string())),
    }
}
