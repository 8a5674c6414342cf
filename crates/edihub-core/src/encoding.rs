//! Turning body bytes into text, before any parser sees them.
//!
//! quick-xml's own decoding reader misreads non-ASCII bytes near the start of
//! a document, and its plain reader accepts UTF-8 only, so XML bodies are
//! decoded here and the parser only ever sees a `&str`. The encoding is
//! chosen in a fixed order: a byte order mark wins (UTF-8, UTF-16LE/BE); then
//! the `encoding=` of the XML declaration (which SAP ports always write and
//! which travels with the file when it is stored or replayed); then the
//! Content-Type `charset`; else UTF-8. A UTF-16 body without a BOM is
//! recognised by its `<` + NUL pattern (XML 1.0 appendix F).
//!
//! Decoding never substitutes U+FFFD: a body with invalid bytes is refused
//! with the offset of the first bad byte, because silently altered text
//! would change business keys and therefore fingerprints. encoding_rs maps
//! the `ISO-8859-1`/`latin1` labels to windows-1252 (the WHATWG rule), which
//! agrees with ISO-8859-1 on every printable character.

use std::borrow::Cow;

use encoding_rs::{DecoderResult, Encoding, UTF_8, UTF_16BE, UTF_16LE};

use crate::CoreError;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Splits a byte order mark off the body.
///
/// Returns the encoding it names (if any) and the bytes after it.
pub(crate) fn split_bom(body: &[u8]) -> (Option<&'static Encoding>, &[u8]) {
    match Encoding::for_bom(body) {
        Some((enc, len)) => (Some(enc), &body[len..]),
        None => (None, body),
    }
}

/// Whether the bytes (without BOM) look like UTF-16 XML without a BOM.
fn sniff_utf16(bytes: &[u8]) -> Option<&'static Encoding> {
    match bytes {
        [b'<', 0, ..] => Some(UTF_16LE),
        [0, b'<', ..] => Some(UTF_16BE),
        _ => None,
    }
}

/// Reads the `encoding=` pseudo-attribute of an ASCII XML declaration.
pub(crate) fn declared_encoding(bytes: &[u8]) -> Option<String> {
    let head = &bytes[..bytes.len().min(1024)];
    if !head.starts_with(b"<?xml") {
        return None;
    }
    let end = head.windows(2).position(|w| w == b"?>")?;
    let decl = std::str::from_utf8(&head[5..end]).ok()?;
    let at = decl.find("encoding")?;
    let rest = decl[at + "encoding".len()..].trim_start();
    let rest = rest.strip_prefix('=')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = &rest[1..];
    let close = value.find(quote)?;
    Some(value[..close].trim().to_string())
}

/// The `charset` parameter of a Content-Type value, unquoted.
pub(crate) fn charset_param(content_type: Option<&str>) -> Option<String> {
    content_type?.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        let value = value.trim().trim_matches('"').trim();
        (!value.is_empty()).then(|| value.to_string())
    })
}

/// Looks an encoding label up; `None` for labels encoding_rs does not know.
fn lookup(label: &str) -> Result<&'static Encoding, CoreError> {
    Encoding::for_label_no_replacement(label.as_bytes())
        .ok_or_else(|| CoreError::UnknownEncoding(label.to_string()))
}

/// Decodes an XML body to text following the precedence in the module docs.
///
/// A body that is already UTF-8 is borrowed, not copied: most bodies are,
/// and the parser borrows names and text from it in turn.
pub(crate) fn decode_xml<'b>(body: &'b [u8], content_type: Option<&str>) -> Result<Cow<'b, str>, CoreError> {
    let (bom, rest) = split_bom(body);
    let skipped = body.len() - rest.len();
    if let Some(enc) = bom.or_else(|| sniff_utf16(rest)) {
        return decode_exact(enc, rest, skipped);
    }
    let label = declared_encoding(rest).or_else(|| charset_param(content_type));
    let enc = match label {
        Some(label) => {
            let enc = lookup(&label)?;
            if enc == UTF_16LE || enc == UTF_16BE {
                return Err(CoreError::Utf16WithoutBom(label));
            }
            enc
        }
        None => UTF_8,
    };
    decode_exact(enc, rest, skipped)
}

/// Decodes a text body that declares nothing itself (a flat-file IDoc): a
/// byte order mark wins, then the Content-Type `charset`, else UTF-8.
pub(crate) fn decode_text<'b>(body: &'b [u8], content_type: Option<&str>) -> Result<Cow<'b, str>, CoreError> {
    let (bom, rest) = split_bom(body);
    let skipped = body.len() - rest.len();
    if let Some(enc) = bom {
        return decode_exact(enc, rest, skipped);
    }
    let enc = match charset_param(content_type) {
        Some(label) => {
            let enc = lookup(&label)?;
            if enc == UTF_16LE || enc == UTF_16BE {
                return Err(CoreError::Utf16WithoutBom(label));
            }
            enc
        }
        None => UTF_8,
    };
    decode_exact(enc, rest, skipped)
}

/// Decodes a JSON body: UTF-8 only, a UTF-8 BOM is dropped.
pub(crate) fn decode_json(body: &[u8]) -> Result<&str, CoreError> {
    if body.starts_with(b"\xFF\xFE") || body.starts_with(b"\xFE\xFF") {
        return Err(CoreError::JsonNotUtf8);
    }
    let (skipped, rest) = match body.strip_prefix(UTF8_BOM) {
        Some(rest) => (UTF8_BOM.len(), rest),
        None => (0, body),
    };
    std::str::from_utf8(rest)
        .map_err(|e| CoreError::InvalidText { encoding: "UTF-8", offset: skipped + e.valid_up_to() })
}

/// Decodes `bytes` (which start `skipped` bytes into the body) strictly.
fn decode_exact<'b>(
    enc: &'static Encoding,
    bytes: &'b [u8],
    skipped: usize,
) -> Result<Cow<'b, str>, CoreError> {
    if enc == UTF_8 {
        return std::str::from_utf8(bytes)
            .map(Cow::Borrowed)
            .map_err(|e| CoreError::InvalidText { encoding: "UTF-8", offset: skipped + e.valid_up_to() });
    }
    let mut decoder = enc.new_decoder_without_bom_handling();
    let capacity = decoder
        .max_utf8_buffer_length_without_replacement(bytes.len())
        .unwrap_or(bytes.len().saturating_mul(3));
    let mut out = String::with_capacity(capacity);
    let (result, read) = decoder.decode_to_string_without_replacement(bytes, &mut out, true);
    match result {
        DecoderResult::InputEmpty => Ok(Cow::Owned(out)),
        DecoderResult::Malformed(bad, after) => Err(CoreError::InvalidText {
            encoding: enc.name(),
            offset: skipped + read - usize::from(after) - usize::from(bad),
        }),
        // The buffer was sized for the worst case, so this cannot happen; if
        // it ever did, refusing is safer than returning partial text.
        DecoderResult::OutputFull => {
            Err(CoreError::InvalidText { encoding: enc.name(), offset: skipped + read })
        }
    }
}

#[cfg(test)]
mod tests;
