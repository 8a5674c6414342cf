//! From request body bytes to documents: the entry point of the crate.
//!
//! The Content-Type decides the syntax when it is specific (`application/xml`,
//! `text/xml`, `application/soap+xml`, any `+xml`; `application/json`, any
//! `+json`). SAP HTTP ports and shell scripts often send a generic type
//! (`application/octet-stream`, `text/plain`) or none at all, so for those
//! the body is sniffed by its first non-whitespace character after any byte
//! order mark. Every other type is refused by name (415), so a form post or
//! an image never reaches a parser.
//!
//! EDIFACT (`application/EDIFACT`) and X12 (`application/EDI-X12`, RFC 1767)
//! are sniffed from `UNA`/`UNB` and `ISA`; see `edi`. A flat-file IDoc is
//! sniffed from the `EDI_DC` its first control record starts with, or named
//! by `application/x-sap-idoc-flat` (there is no registered type; SAP ports
//! and scripts send files as `text/plain` or `application/octet-stream`,
//! which are sniffed); see `idoc::flat`. Its segments are split into fields
//! with the IDoc type descriptions given to [`parse_body_with`].
//!
//! Whether a body is an IDoc is decided by its structure, not by the media
//! type: XML must be an IDoc (possibly in a SOAP envelope); JSON is an IDoc
//! when it has the converter shape, otherwise it is a plain JSON message.

use bytes::Bytes;

use crate::body_format::BodyFormat;
use crate::idoc::description::IdocDescriptions;
use crate::idoc::flat;
use crate::parsed::ParsedBody;
use crate::{CoreError, edi, encoding, idoc};

/// The syntax chosen for a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Xml,
    Json,
    Edifact,
    X12,
    IdocFlat,
}

/// Parses a request body; `content_type` is the raw Content-Type header value, if any.
///
/// Flat-file IDocs are read without descriptions (segments as raw SDATA);
/// see [`parse_body_with`].
pub fn parse_body(body: &[u8], content_type: Option<&str>) -> Result<ParsedBody, CoreError> {
    parse_body_with(body, content_type, &IdocDescriptions::new())
}

/// Parses a request body, splitting the segments of flat-file IDocs into
/// fields with `descriptions` (the IDoc types it does not describe are read
/// as raw SDATA). Other formats are read as [`parse_body`] reads them.
pub fn parse_body_with(
    body: &[u8],
    content_type: Option<&str>,
    descriptions: &IdocDescriptions,
) -> Result<ParsedBody, CoreError> {
    parse(body, None, content_type, descriptions, usize::MAX)
}

/// [`parse_body_with`] a body held in a shared buffer: the IDocs of a large
/// UTF-8 IDoc-XML body keep a slice of `body` where the other entry points
/// keep a copy of its text, so a 10 MB body is held once while it is stored.
///
/// A body of more than `max_messages` messages is refused
/// ([`CoreError::TooManyMessages`]) when its reader reaches the first
/// message over, before the rest are built: an EDIFACT or X12 interchange,
/// a flat file of IDocs, and an IDoc-XML body of a megabyte or more. A
/// message of a few segments costs several times its bytes once parsed, so
/// a body of tiny messages would otherwise take many times its size before
/// a count after the parse refused it. Smaller IDoc-XML bodies and JSON are
/// read whole (their size bounds what that takes) and counted after.
pub fn parse_bytes_with(
    body: &Bytes,
    content_type: Option<&str>,
    descriptions: &IdocDescriptions,
    max_messages: usize,
) -> Result<ParsedBody, CoreError> {
    let parsed = parse(body, Some(body), content_type, descriptions, max_messages)?;
    if parsed.documents.len() > max_messages {
        return Err(CoreError::TooManyMessages { limit: max_messages });
    }
    Ok(parsed)
}

/// Parses `body`; `shared`, when given, holds the same bytes.
fn parse(
    body: &[u8],
    shared: Option<&Bytes>,
    content_type: Option<&str>,
    descriptions: &IdocDescriptions,
    max_messages: usize,
) -> Result<ParsedBody, CoreError> {
    let syntax = match classify(content_type)? {
        Some(syntax) => syntax,
        None => sniff(body)?,
    };
    let (_, rest) = encoding::split_bom(body);
    if rest.iter().all(u8::is_ascii_whitespace) {
        return Err(CoreError::EmptyBody);
    }
    match syntax {
        Syntax::Edifact => edi::parse_edifact(body, max_messages),
        Syntax::X12 => edi::parse_x12(body, max_messages),
        Syntax::IdocFlat => flat::parse(body, content_type, descriptions, max_messages),
        Syntax::Xml => {
            let text = encoding::decode_xml(body, content_type)?;
            if text.trim().is_empty() {
                return Err(CoreError::EmptyBody);
            }
            let documents = idoc::from_xml(text, shared, max_messages)?;
            Ok(ParsedBody {
                format: BodyFormat::IdocXml,
                documents,
                idempotency_key: None,
                interchange: None,
                envelope: None,
            })
        }
        Syntax::Json => idoc::from_json(encoding::decode_json(body)?).map_err(|e| xml_sent_as_json(e, body)),
    }
}

/// The refusal of an EDIFACT or X12 body that [`parse_body`] refuses (or
/// that holds no message), when its header (`ISA`, `UNB`) could be read:
/// what an acknowledgement of the refusal needs. `None` for other bodies.
pub fn refusal(body: &[u8], content_type: Option<&str>) -> Option<edi::Refusal> {
    let syntax = match classify(content_type).ok()? {
        Some(syntax) => syntax,
        None => sniff(body).ok()?,
    };
    match syntax {
        Syntax::Edifact => edi::refusal_of(BodyFormat::Edifact, body),
        Syntax::X12 => edi::refusal_of(BodyFormat::X12, body),
        Syntax::Xml | Syntax::Json | Syntax::IdocFlat => None,
    }
}

/// An XML body labelled JSON fails as invalid JSON: say what it looks like.
fn xml_sent_as_json(e: CoreError, body: &[u8]) -> CoreError {
    match e {
        CoreError::InvalidJson(reason) if matches!(sniff(body), Ok(Syntax::Xml)) => CoreError::InvalidJson(
            format!("{reason} (the body looks like XML: send it with Content-Type: application/xml)"),
        ),
        e => e,
    }
}

/// Whether `body` starts like XML (`<`), JSON (`{`, `[`), EDIFACT (`UNA`,
/// `UNB`), X12 (`ISA`) or a flat-file IDoc (`EDI_DC`), after any byte order
/// mark and whitespace: what the hub would sniff as a message. `edihub send` uses it to skip other files of a directory.
pub fn looks_like_message(body: &[u8]) -> bool {
    sniff(body).is_ok()
}

/// The media type that names a flat-file IDoc (lower case, as compared).
pub const FLAT_IDOC_MEDIA: &str = "application/x-sap-idoc-flat";

/// The syntax a Content-Type names: `Some` for a specific type, `None` for a
/// generic one (sniff), an error for anything else.
fn classify(content_type: Option<&str>) -> Result<Option<Syntax>, CoreError> {
    let raw = content_type.unwrap_or("");
    let essence = raw.split(';').next().unwrap_or("").trim();
    match essence.to_ascii_lowercase().as_str() {
        "" | "application/octet-stream" | "text/plain" => Ok(None),
        "application/xml" | "text/xml" => Ok(Some(Syntax::Xml)),
        "application/json" => Ok(Some(Syntax::Json)),
        // RFC 1767.
        "application/edifact" => Ok(Some(Syntax::Edifact)),
        "application/edi-x12" => Ok(Some(Syntax::X12)),
        FLAT_IDOC_MEDIA => Ok(Some(Syntax::IdocFlat)),
        t if t.contains('/') && t.ends_with("+xml") => Ok(Some(Syntax::Xml)),
        t if t.contains('/') && t.ends_with("+json") => Ok(Some(Syntax::Json)),
        _ => Err(CoreError::UnsupportedContentType(essence.to_string())),
    }
}

/// Guesses the syntax from the first non-whitespace character.
fn sniff(body: &[u8]) -> Result<Syntax, CoreError> {
    let (bom, rest) = encoding::split_bom(body);
    let start = rest.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(rest.len());
    if bom.is_none_or(|b| b == encoding_rs::UTF_8) {
        match edi::sniff(&rest[start..]) {
            Some(BodyFormat::Edifact) => return Ok(Syntax::Edifact),
            Some(_) => return Ok(Syntax::X12),
            None => {}
        }
        if flat::sniff(&rest[start..]) {
            return Ok(Syntax::IdocFlat);
        }
    }
    let not_space = |b: &u8| !b.is_ascii_whitespace();
    // For UTF-16, a code unit outside ASCII maps to `?`: enough to see `<`, `{`, `[`.
    let first = match bom.map(encoding_rs::Encoding::name) {
        Some("UTF-16LE") => rest.chunks_exact(2).map(|u| if u[1] == 0 { u[0] } else { b'?' }).find(not_space),
        Some("UTF-16BE") => rest.chunks_exact(2).map(|u| if u[0] == 0 { u[1] } else { b'?' }).find(not_space),
        // NUL bytes are skipped so UTF-16 without a BOM is still seen as `<`.
        _ => rest.iter().copied().filter(|b| *b != 0).find(not_space),
    };
    match first {
        None => Err(CoreError::EmptyBody),
        Some(b'<') => Ok(Syntax::Xml),
        Some(b'{' | b'[') => Ok(Syntax::Json),
        Some(_) => Err(CoreError::UnknownFormat),
    }
}

#[cfg(test)]
mod tests;
