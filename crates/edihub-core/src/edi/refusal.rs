//! Where a refused interchange went wrong, as its acknowledgement reports it.
//!
//! An interchange is refused as a whole (nothing of it is stored) for a
//! syntax error (400) or for counts and references that disagree (422).
//! When its header (`ISA`, `UNB`) could be read, the partner can still be
//! told in its own syntax: the walk through the envelope keeps what it read
//! (the groups and messages so far) and says at which level it stopped and
//! why ([`Fault`]); the writers in `ack` turn that into a TA1, a 997/999
//! with rejected sets, or a CONTRL with action `4`.

use super::envelope::Envelope;
use super::model::EdiSyntax;
use super::segment::Segment;
use crate::CoreError;
use crate::body_format::BodyFormat;

/// What disagrees in a trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mismatch {
    /// A count (SE01, GE01, IEA01; UNT 0074, UNE 0060, UNZ 0036).
    Count,
    /// A reference that must repeat the header's (SE02, GE02, IEA02; UNT
    /// 0062, UNE 0048, UNZ 0020).
    Reference,
    /// An interchange without any message.
    Empty,
    /// A control number repeated where it must be unique: ST02 within its
    /// group, GS06 within its interchange; UNH 0062 and UNG 0048 within
    /// their interchange.
    Repeated,
}

/// The element in error within a message: of its trailer (SE, UNT), or
/// of its header (ST, UNH) for a repeated control number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TrailerSite {
    /// `SE`, `UNT` (`ST`, `UNH`).
    pub tag: String,
    /// The segment's position in its message, the header being 1.
    pub position: usize,
    /// The element in error (1: the count, 2: the reference).
    pub element: usize,
    /// The element's value as sent.
    pub value: String,
}

/// The level at which a refused interchange went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    /// A syntax error after the header; `premature_end` when the
    /// interchange stops early (an unterminated segment, no trailer).
    Syntax { premature_end: bool },
    /// An element of the interchange header (ISA, UNB) is missing or has
    /// the wrong width: element `element` (1-based after the tag),
    /// component `component` (1-based; 1 for a simple element).
    Header { element: usize, component: usize },
    /// The interchange trailer (IEA, UNZ) disagrees, or there is no message.
    Interchange(Mismatch),
    /// The trailer (GE, UNE) of the envelope's last group disagrees, or
    /// its reference repeats an earlier group's.
    Group { mismatch: Mismatch },
    /// The trailer of the last message of the envelope's last group
    /// disagrees, or its control number repeats an earlier message's
    /// (boxed: errors travel by value through the walk).
    Message { mismatch: Mismatch, site: Box<TrailerSite> },
}

/// A refused interchange whose header could be read: its envelope as far
/// as it was read, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub(crate) envelope: Envelope,
    pub(crate) fault: Fault,
}

impl Refusal {
    /// EDIFACT or X12.
    pub fn syntax(&self) -> EdiSyntax {
        self.envelope.interchange.syntax
    }

    /// The body format of the refused interchange.
    pub fn format(&self) -> BodyFormat {
        match self.syntax() {
            EdiSyntax::X12 => BodyFormat::X12,
            EdiSyntax::Edifact => BodyFormat::Edifact,
        }
    }

    /// The envelope as far as it was read (who sent it, under which number).
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }
}

/// A failed parse: the error, and the refusal when the header was read.
#[derive(Debug)]
pub(crate) struct Failure {
    pub error: CoreError,
    pub refusal: Option<Box<Refusal>>,
}

impl Failure {
    /// An error before the header was read: no acknowledgement possible.
    pub fn bare(error: CoreError) -> Failure {
        Failure { error, refusal: None }
    }
}

impl From<CoreError> for Failure {
    fn from(error: CoreError) -> Self {
        Failure::bare(error)
    }
}

/// An error located at a level of the envelope.
pub(crate) type Located = (CoreError, Fault);

/// A syntax error found while walking the envelope.
pub(crate) fn syntax(error: CoreError) -> Located {
    (error, Fault::Syntax { premature_end: false })
}

/// The envelope as read so far, with the open group (if any) as its last
/// group, for a refusal.
pub(crate) fn refused(
    envelope: &Envelope,
    open: Option<&super::envelope::GroupRef>,
    (error, fault): Located,
) -> Failure {
    let mut envelope = envelope.clone();
    envelope.groups.extend(open.cloned());
    Failure { error, refusal: Some(Box::new(Refusal { envelope, fault })) }
}

/// The site of a disagreeing trailer element of a message.
pub(crate) fn trailer(trailer: &Segment, position: usize, element: usize) -> Box<TrailerSite> {
    Box::new(TrailerSite {
        tag: trailer.tag().to_string(),
        position,
        element,
        value: trailer.el(element).to_string(),
    })
}

/// A message whose control number (element `element` of its header
/// `header`, ST02 or UNH 0062) repeats an earlier message's where it must
/// be unique.
pub(crate) fn repeated_message(header: &Segment, element: usize, error: CoreError) -> Located {
    (error, Fault::Message { mismatch: Mismatch::Repeated, site: trailer(header, 1, element) })
}
