//! UN/EDIFACT and ANSI X12 interchanges: one [`Document`] per message.
//!
//! An interchange is an envelope (`UNB…UNZ`, `ISA…IEA`) around optional
//! groups (`UNG…UNE`, `GS…GE`) around messages (`UNH…UNT`, `ST…SE`). The
//! hub deduplicates messages, so an interchange is split like an IDoc packet:
//! each message becomes a document typed `EDIFACT.<type>` or `X12.<type>`,
//! carrying its envelope ([`EdiHeader`]) for control numbers and the
//! fallback fingerprint.
//!
//! The two syntaxes differ only in how their separators are announced and in
//! the names of their envelope segments, so `edifact` and `x12` each find the
//! separators and walk their envelope, and share this module's tokenizer,
//! rendering and key-path evaluation. Nothing needs a message dictionary:
//! the envelope is all the hub checks (segment counts, control references),
//! and key fields are addressed by position.
//!
//! # Rendering
//!
//! A message renders as a JSON array of its segments *between* the header
//! and trailer (`UNH`/`UNT`, `ST`/`SE` are the envelope, exposed as control
//! numbers), in order. A segment is an array whose item 0 is the tag and
//! item *n* is element *n*: a string for a simple element, an array of
//! strings for a composite (components in order, empty ones kept), and
//! `{"repeat": [...]}` for a repeated element. `BGM+220+5YGVX1VT+9'` renders
//! as `["BGM","220","5YGVX1VT","9"]`, `DTM+137:20240311:102'` as
//! `["DTM",["137","20240311","102"]]`. Escapes are resolved, values are not
//! trimmed. The rendering is built on first use: positional key paths read
//! the segments in place (`segments`), with the same results.
//!
//! # Key paths
//!
//! The IDoc path notation ([`crate::KeyPath`]) is read positionally on an
//! EDI document: the first step names the segment, optionally with the
//! element number glued on as X12 writes it (`BEG03` = `BEG.03`), the next
//! steps the element and component numbers (`BGM.02`,
//! `RFF[01.01=ON].01.02`). Filters on the segment step compare an element
//! (`REF[01=PO]`) or a component (`[01.01=ON]`) with a value. JSONPath works
//! on the rendering as on any JSON.

mod ack;
mod edifact;
mod envelope;
mod message;
mod model;
mod refusal;
mod segment;
mod segments;
mod x12;

use crate::CoreError;
use crate::body_format::BodyFormat;
use crate::document::Document;
use crate::parsed::ParsedBody;

pub use ack::{AckKind, AckTime, acknowledge, acknowledge_refusal};
pub use envelope::Envelope;
pub(crate) use message::EdiMessage;
pub use model::{EdiHeader, EdiSyntax, Interchange, Party};
pub(crate) use model::{RawMessage, disagree};
pub use refusal::Refusal;
use refusal::{Fault, Mismatch};
pub(crate) use segment::Text;

/// Parses an EDIFACT interchange.
pub(crate) fn parse_edifact(bytes: &[u8], max_messages: usize) -> Result<ParsedBody, CoreError> {
    finish(BodyFormat::Edifact, edifact::parse(bytes, max_messages).map_err(|f| f.error)?)
}

/// Parses an X12 interchange.
pub(crate) fn parse_x12(bytes: &[u8], max_messages: usize) -> Result<ParsedBody, CoreError> {
    finish(BodyFormat::X12, x12::parse(bytes, max_messages).map_err(|f| f.error)?)
}

fn finish(
    format: BodyFormat,
    (messages, envelope): (Vec<RawMessage>, Envelope),
) -> Result<ParsedBody, CoreError> {
    let interchange = envelope.interchange.clone();
    if messages.is_empty() {
        return Err(disagree(interchange.syntax, "the interchange holds no message".into()));
    }
    let documents = messages.into_iter().map(|m| Document::edi(m.header, m.text, m.body)).collect();
    Ok(ParsedBody {
        format,
        documents,
        idempotency_key: None,
        interchange: Some(interchange),
        envelope: Some(envelope),
    })
}

/// Whether a (BOM- and whitespace-stripped) body starts like an interchange.
pub(crate) fn sniff(rest: &[u8]) -> Option<BodyFormat> {
    match rest.get(..3) {
        Some(b"UNA" | b"UNB") => Some(BodyFormat::Edifact),
        Some(b"ISA") => Some(BodyFormat::X12),
        _ => None,
    }
}

/// The refusal of a body that does not parse as an interchange, if its
/// header could be read; `None` for a body that parses, or one that is not
/// EDIFACT or X12.
pub(crate) fn refusal_of(format: BodyFormat, bytes: &[u8]) -> Option<Refusal> {
    let parsed = match format {
        BodyFormat::X12 => x12::parse(bytes, usize::MAX),
        BodyFormat::Edifact => edifact::parse(bytes, usize::MAX),
        _ => return None,
    };
    match parsed {
        // An envelope that adds up but holds no message (see `finish`).
        Ok((messages, envelope)) if messages.is_empty() => {
            Some(Refusal { envelope, fault: Fault::Interchange(Mismatch::Empty) })
        }
        Ok(_) => None,
        Err(failure) => failure.refusal.map(|r| *r),
    }
}

#[cfg(test)]
mod tests;
