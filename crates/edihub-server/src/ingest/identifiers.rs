//! The identifiers a document gives itself, under the rules of those a
//! request names.
//!
//! A message's type, logical message (or EDI version), document number and
//! sender are read from its own fields when the request does not name them:
//! `ST01`, `UNH 0065`, `EDI_DC40.IDOCTYP`, the root element, `MESTYP`,
//! `GS08`, `ST02`, `SNDPRN`, `ISA06`… They are stored in indexed columns,
//! grouped by on the overview, shown on every page and written into audit
//! events, so a field of three thousand characters (or one with a control
//! character) would be refused if a request named it, and is refused here
//! too, with 422 naming the field: the message type must pass
//! [`check_type`] like `X-Message-Type`; the others must be at most
//! [`MAX_IDENTIFIER_LEN`] characters without control characters. A longer
//! one is refused, never cut: two identifiers sharing a prefix would
//! collide.

use edihub_core::{Document, EdiSyntax};

use crate::config::check_type;
use crate::error::ApiError;

/// Longest logical message, version, document number or sender kept (a SAP
/// DOCNUM has 16 digits, MESTYP and SNDPRN at most 30 characters; EDI
/// control numbers and party ids are shorter still).
pub const MAX_IDENTIFIER_LEN: usize = 100;

/// Where a document sits in its request, for errors: nothing for a single
/// document, else ` of message 3 in the request` (1-based).
fn place(index: usize, packet: bool) -> String {
    if packet { format!(" of message {} in the request", index + 1) } else { String::new() }
}

/// A message type read from the document's `field` (see
/// [`Document::message_type_and_field`]) must pass [`check_type`].
pub fn check_derived_type(t: &str, field: &str, index: usize, packet: bool) -> Result<(), ApiError> {
    check_type(t).map(|_| ()).map_err(|reason| {
        ApiError::Unprocessable(format!("the message type from {field}{}: {reason}", place(index, packet)))
    })
}

/// The document's own identifiers other than its type (logical message or
/// version, document number, sender) must be at most
/// [`MAX_IDENTIFIER_LEN`] characters without control characters.
pub fn check_identifiers(doc: &Document, index: usize, packet: bool) -> Result<(), ApiError> {
    let fields = [
        (doc.mestyp().or(doc.edi_header().map(|h| h.version.as_str())), mestyp_field(doc)),
        (doc.docnum(), docnum_field(doc)),
        (sender(doc), sender_field(doc)),
    ];
    for (value, field) in fields {
        let Some(v) = value else { continue };
        if v.chars().count() > MAX_IDENTIFIER_LEN || v.chars().any(char::is_control) {
            return Err(ApiError::Unprocessable(format!(
                "{field}{} must be at most {MAX_IDENTIFIER_LEN} characters without control characters (got {} bytes)",
                place(index, packet),
                v.len()
            )));
        }
    }
    Ok(())
}

/// The sender stored with a message: `EDI_DC40.SNDPRN`, or the
/// interchange's sender (ISA06, UNB 0004).
pub fn sender(doc: &Document) -> Option<&str> {
    doc.control()
        .and_then(|c| c.sndprn.as_deref())
        .or_else(|| doc.edi_header().map(|h| h.interchange.sender.id.as_str()))
}

fn syntax(doc: &Document) -> Option<EdiSyntax> {
    doc.edi_header().map(|h| h.interchange.syntax)
}

fn mestyp_field(doc: &Document) -> &'static str {
    match syntax(doc) {
        Some(EdiSyntax::X12) => "the version (GS08)",
        Some(EdiSyntax::Edifact) => "the version (UNH 0052 and 0054)",
        None => "the logical message (EDI_DC40.MESTYP)",
    }
}

fn docnum_field(doc: &Document) -> &'static str {
    match syntax(doc) {
        Some(EdiSyntax::X12) => "the docnum (ST02)",
        Some(EdiSyntax::Edifact) => "the docnum (UNH 0062)",
        None if doc.is_idoc() => "the docnum (EDI_DC40.DOCNUM)",
        None => "the docnum",
    }
}

fn sender_field(doc: &Document) -> &'static str {
    match syntax(doc) {
        Some(EdiSyntax::X12) => "the sender (ISA06)",
        Some(EdiSyntax::Edifact) => "the sender (UNB 0004)",
        None => "the sender (EDI_DC40.SNDPRN)",
    }
}
