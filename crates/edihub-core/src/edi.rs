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
mod refusal;
mod segment;
mod segments;
mod x12;

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::Value;

use crate::CoreError;
use crate::body::{BodyFormat, ParsedBody};
use crate::document::Document;
use crate::path::{KeyPath, Step};

pub use ack::{AckKind, AckTime, acknowledge, acknowledge_refusal};
pub use envelope::Envelope;
pub use refusal::Refusal;
pub(crate) use refusal::of as refusal_of;
pub(crate) use segment::{Segment, Text};

/// Which EDI standard an interchange follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum EdiSyntax {
    /// UN/EDIFACT (ISO 9735).
    #[serde(rename = "EDIFACT")]
    Edifact,
    /// ANSI ASC X12.
    #[serde(rename = "X12")]
    X12,
}

impl EdiSyntax {
    /// `EDIFACT` or `X12`: the prefix of message types and the name in errors.
    pub fn as_str(self) -> &'static str {
        match self {
            EdiSyntax::Edifact => "EDIFACT",
            EdiSyntax::X12 => "X12",
        }
    }
}

/// An interchange partner: identification and its code qualifier.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Party {
    /// Identification (ISA06/ISA08, UNB S002/S003 0004/0010), trimmed.
    pub id: String,
    /// Code qualifier (ISA05/ISA07, UNB 0007), if given.
    pub qualifier: Option<String>,
}

/// The interchange envelope: who sent it to whom under which number.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Interchange {
    /// EDIFACT or X12.
    pub syntax: EdiSyntax,
    /// Interchange control number (ISA13, UNB 0020).
    pub control_number: String,
    /// Interchange sender (ISA05/ISA06, UNB S002).
    pub sender: Party,
    /// Interchange receiver (ISA07/ISA08, UNB S003).
    pub receiver: Party,
}

/// The envelope of one message (transaction set).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EdiHeader {
    /// The interchange the message came in, shared by its messages.
    pub interchange: Arc<Interchange>,
    /// Message type as the standard names it: `850`, `ORDERS`.
    pub message_type: String,
    /// Version: GS08 (`004010`) or UNH S009 0052+0054 (`D96A`).
    pub version: String,
    /// Group control number (GS06, UNG 0048), if the message is in a group.
    pub group_control: Option<String>,
    /// Message control number (ST02, UNH 0062).
    pub control_number: String,
}

impl EdiHeader {
    /// The hub's message type: `X12.850`, `EDIFACT.ORDERS`.
    pub fn hub_type(&self) -> String {
        // Built by hand: `format!` costs more than the rest of reading the type.
        let syntax = self.interchange.syntax.as_str();
        let mut out = String::with_capacity(syntax.len() + 1 + self.message_type.len());
        out.push_str(syntax);
        out.push('.');
        out.push_str(&self.message_type);
        out
    }
}

/// Separators of one interchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Separators {
    pub element: char,
    pub component: char,
    pub repetition: Option<char>,
    pub segment: char,
    pub release: Option<char>,
}

/// An EDIFACT message or X12 transaction set: its envelope and segments.
///
/// The JSON rendering (a string per value) is built on first use:
/// receiving needs only the envelope and the key fields, which are read
/// from the segments in place.
#[derive(Clone)]
pub(crate) struct EdiMessage {
    pub header: EdiHeader,
    /// The interchange's segments, shared by its messages.
    text: Arc<Text>,
    /// This message's segments (indices in `text`).
    segments: Range<usize>,
    rendered: OnceLock<Value>,
}

/// The envelope and this message's segments, not the whole shared text.
impl std::fmt::Debug for EdiMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let segments: Vec<Segment<'_>> = self.segments().collect();
        f.debug_struct("EdiMessage").field("header", &self.header).field("segments", &segments).finish()
    }
}

impl EdiMessage {
    pub fn new(header: EdiHeader, text: Arc<Text>, segments: Range<usize>) -> EdiMessage {
        EdiMessage { header, text, segments, rendered: OnceLock::new() }
    }

    /// The segments between header and trailer.
    fn segments(&self) -> impl Iterator<Item = Segment<'_>> {
        self.text.segments(self.segments.clone())
    }

    /// The rendering: an array of the segments between header and trailer.
    pub fn value(&self) -> &Value {
        self.rendered.get_or_init(|| Value::Array(self.segments().map(|s| s.render()).collect()))
    }

    /// The rendering written to a serializer: the value if it is built,
    /// else segment by segment without building it (the same JSON).
    pub fn serialize_rendering<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        if let Some(value) = self.rendered.get() {
            return serde::Serialize::serialize(value, serializer);
        }
        let mut seq = serializer.serialize_seq(None)?;
        for segment in self.segments() {
            seq.serialize_element(&segment)?;
        }
        seq.end()
    }

    /// The rendering, taken (rendered first if it was not yet).
    pub fn into_value(self) -> Value {
        self.value();
        self.rendered.into_inner().unwrap_or_default()
    }

    /// Values at a key path: positional for the IDoc notation, else JSONPath on the rendering.
    pub fn values(&self, path: &KeyPath) -> Vec<Value> {
        match path {
            KeyPath::Idoc(p) => segments::values(self.segments(), p),
            KeyPath::Json(_) => crate::eval::values(self.value(), path),
        }
    }
}

/// Two messages are equal when their envelopes and renderings are (not
/// their places in the interchanges they came in).
impl PartialEq for EdiMessage {
    fn eq(&self, other: &Self) -> bool {
        self.header == other.header && self.value() == other.value()
    }
}

/// A syntax error: 400.
pub(crate) fn malformed(syntax: EdiSyntax, detail: String) -> CoreError {
    CoreError::EdiSyntax { syntax: syntax.as_str(), detail }
}

/// Counts or references that disagree: 422.
pub(crate) fn disagree(syntax: EdiSyntax, detail: String) -> CoreError {
    CoreError::EdiStructure { syntax: syntax.as_str(), detail }
}

/// Parses a count element (SE01, UNT 0074, …) as a number.
pub(crate) fn count(syntax: EdiSyntax, seg: &Segment, e: usize, name: &str) -> Result<usize, CoreError> {
    seg.el(e).parse().map_err(|_| {
        malformed(
            syntax,
            format!("segment {} ({}): {name} must be a number, got `{}`", seg.number, seg.tag(), seg.el(e)),
        )
    })
}

/// One message read from an interchange, before it becomes a [`Document`].
pub(crate) struct RawMessage {
    pub header: EdiHeader,
    /// The interchange's segments, shared by its messages.
    pub text: Arc<Text>,
    /// This message's segments between header and trailer (indices in `text`).
    pub body: Range<usize>,
}

/// Parses an EDIFACT interchange.
pub(crate) fn parse_edifact(bytes: &[u8]) -> Result<ParsedBody, CoreError> {
    finish(BodyFormat::Edifact, edifact::parse(bytes).map_err(|f| f.error)?)
}

/// Parses an X12 interchange.
pub(crate) fn parse_x12(bytes: &[u8]) -> Result<ParsedBody, CoreError> {
    finish(BodyFormat::X12, x12::parse(bytes).map_err(|f| f.error)?)
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

/// Splits the X12-style first step `BEG03` into `BEG` and element `03`.
pub(crate) fn split_glued(step: &Step) -> (&str, Option<&str>) {
    let name = step.name.as_str();
    let n = name.len();
    if (4..=5).contains(&n) && name.is_ascii() && name[n - 2..].bytes().all(|b| b.is_ascii_digit()) {
        (&name[..n - 2], Some(&name[n - 2..]))
    } else {
        (name, None)
    }
}

#[cfg(test)]
mod tests;
