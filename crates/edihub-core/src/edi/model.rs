//! What an interchange is made of, as the readers of both syntaxes build it:
//! the syntax, the parties, the interchange and message envelopes, the
//! separators, and the errors a reader reports. A leaf of `edi`: the
//! readers, acknowledgements and the document model import it, it imports
//! none of them.

use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;

use super::segment::{Segment, Text};
use crate::CoreError;

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
