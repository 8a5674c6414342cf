//! What an acknowledgement refers to: the interchange's syntax details and
//! the identifiers of its groups and messages, kept while the envelope is
//! walked.
//!
//! An acknowledgement is written in the syntax of the interchange it
//! answers (its separators, its UNA, its syntax identifier and version,
//! its test flag), and names every group and message it acknowledges by
//! the numbers the sender gave them. The message bodies are not needed, so
//! this is small: a few strings per message.

use super::model::{Interchange, Separators};
use super::segment::Segment;
use super::segment::trim;

/// The envelope of a parsed interchange, as an acknowledgement needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// Who sent the interchange to whom under which number.
    pub interchange: Interchange,
    pub(crate) separators: Separators,
    /// EDIFACT: the six service characters of the `UNA`, when one came.
    pub(crate) una: Option<String>,
    /// EDIFACT UNB S001 0001 (`UNOC`); X12 ISA11 as sent (`U`, `^`).
    pub(crate) syntax_id: String,
    /// EDIFACT UNB S001 0002 (`3`); X12 ISA12 (`00401`).
    pub(crate) syntax_version: String,
    /// The interchange's date and time (ISA09/ISA10, UNB S004), as sent.
    pub(crate) date: String,
    pub(crate) time: String,
    /// A test interchange (ISA15 `T`, UNB 0035 `1`): its acknowledgement is one too.
    pub(crate) test: bool,
    /// X12 ISA14 `1`: the sender asks for a TA1 (interchange acknowledgement).
    pub(crate) ta1_requested: bool,
    /// The groups in order; EDIFACT messages outside `UNG` form one group
    /// without a reference.
    pub(crate) groups: Vec<GroupRef>,
}

impl Envelope {
    /// The envelope of an X12 interchange, before its groups are read.
    pub(crate) fn x12(isa: &Segment, interchange: Interchange, separators: Separators) -> Envelope {
        Envelope {
            interchange,
            separators,
            una: None,
            syntax_id: isa.text(11, 0).to_string(),
            syntax_version: isa.el(12).to_string(),
            date: isa.el(9).to_string(),
            time: isa.el(10).to_string(),
            test: isa.el(15) == "T",
            ta1_requested: isa.el(14) == "1",
            groups: Vec::new(),
        }
    }

    /// The envelope of an EDIFACT interchange, before its groups are read.
    pub(crate) fn edifact(
        unb: &Segment,
        interchange: Interchange,
        separators: Separators,
        una: Option<String>,
    ) -> Envelope {
        Envelope {
            interchange,
            separators,
            una,
            syntax_id: unb.el(1).to_string(),
            syntax_version: trim(unb.text(1, 1)).to_string(),
            date: unb.el(4).to_string(),
            time: trim(unb.text(4, 1)).to_string(),
            test: unb.el(11) == "1",
            ta1_requested: false,
            groups: Vec::new(),
        }
    }

    /// How many groups the interchange holds (EDIFACT messages outside
    /// `UNG` count as one).
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }
}

/// A functional group (GS…GE, UNG…UNE) and its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupRef {
    /// GS01 functional identifier (`PO`), UNG 0038 (`ORDERS`); empty
    /// for EDIFACT messages outside a group.
    pub functional_id: String,
    /// Application sender and receiver: GS02/GS03, UNG S006/S007 (id and
    /// qualifier components as sent).
    pub sender: Vec<String>,
    pub receiver: Vec<String>,
    /// GS06, UNG 0048; `None` for EDIFACT messages outside a group.
    pub reference: Option<String>,
    /// GS08 (`004010`); UNG S008 for EDIFACT.
    pub version: String,
    /// The number of messages the group's trailer declares (GE01, UNE
    /// 0060) when it was read and is a number.
    pub declared: Option<usize>,
    pub messages: Vec<MessageRef>,
}

impl GroupRef {
    /// A group opened by `GS` or `UNG` (`seg`); `None` for the implicit
    /// group of EDIFACT messages outside `UNG`.
    pub fn open(seg: Option<&Segment>, elements: GroupElements) -> GroupRef {
        let composite = |e: usize| -> Vec<String> {
            seg.and_then(|s| s.components(e))
                .map(|cs| cs.map(|v| trim(v).to_string()).collect())
                .unwrap_or_default()
        };
        let text = |e: usize| seg.map_or(String::new(), |s| s.el(e).to_string());
        GroupRef {
            functional_id: text(1),
            sender: composite(elements.sender),
            receiver: composite(elements.sender + 1),
            reference: seg.map(|s| s.el(elements.reference).to_string()),
            version: composite(elements.version).join(":"),
            declared: None,
            messages: Vec::new(),
        }
    }
}

/// Where a group segment keeps its parts (they differ between GS and UNG).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GroupElements {
    /// The application sender; the receiver follows it.
    pub sender: usize,
    pub reference: usize,
    pub version: usize,
}

/// GS: sender GS02, receiver GS03, control number GS06, version GS08.
pub(crate) const GS: GroupElements = GroupElements { sender: 2, reference: 6, version: 8 };
/// UNG: sender S006, recipient S007, reference 0048, version S008.
pub(crate) const UNG: GroupElements = GroupElements { sender: 2, reference: 5, version: 7 };

/// One message (transaction set) as its acknowledgement names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MessageRef {
    /// ST01 (`850`), UNH S009 0065 (`ORDERS`).
    pub message_type: String,
    /// ST02, UNH 0062.
    pub control: String,
    /// X12 ST03 (implementation convention), EDIFACT the whole S009
    /// (`ORDERS`, `D`, `96A`, `UN`, `EAN008`), trailing blanks dropped.
    pub identifier: Vec<String>,
}

impl MessageRef {
    /// The reference of a message from its header segment (`ST`, `UNH`).
    pub fn of(header: &Segment, message_type: &str, control: &str) -> MessageRef {
        let identifier = match header.tag() {
            "ST" => [header.el(3)].into_iter().filter(|s| !s.is_empty()).map(str::to_string).collect(),
            _ => {
                // The first five components of S009 (missing ones are blank
                // and dropped below with the trailing blanks).
                let mut parts: Vec<String> = Vec::with_capacity(5);
                let components = header.components(2).into_iter().flatten();
                parts.extend(components.take(5).map(|c| trim(c).to_string()));
                while parts.last().is_some_and(String::is_empty) {
                    parts.pop();
                }
                parts
            }
        };
        MessageRef { message_type: message_type.to_string(), control: control.to_string(), identifier }
    }
}
