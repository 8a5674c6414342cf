//! What reading a body yields: its format and its documents, with the
//! envelope of an interchange. A leaf that every reader (IDoc-XML and JSON,
//! flat files, EDIFACT and X12) builds and [`crate::parse_body`] returns.

use crate::body_format::BodyFormat;
use crate::document::Document;
use crate::edi::{Envelope, Interchange};

/// A parsed request body.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedBody {
    /// How the body was read.
    pub format: BodyFormat,
    /// One per IDoc in a packet or message in an interchange (in order);
    /// exactly one for plain JSON.
    pub documents: Vec<Document>,
    /// `idempotencyKey` member at the top of a JSON body (raw, unvalidated), if any.
    pub idempotency_key: Option<String>,
    /// The envelope of an EDIFACT or X12 interchange; `None` otherwise.
    pub interchange: Option<Interchange>,
    /// What an acknowledgement of that interchange needs (its syntax,
    /// groups and message references); `None` for other bodies.
    pub envelope: Option<Envelope>,
}
