//! The crate's single error type.
//!
//! Every failure this crate can report is a [`CoreError`] variant whose
//! `Display` text is written for the person who sent the message: the server
//! copies it verbatim into the `detail` of an RFC 9457 problem document, and
//! the CLI prints it. Each variant also knows its [`ErrorClass`], so the
//! server maps errors to HTTP statuses in one place instead of matching on
//! variants: *malformed* bytes (400), an *unsupported* media type (415), or a
//! well-formed body that is *unusable* as a message (422).

use thiserror::Error;

/// Which HTTP class an error belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The bytes are not a well-formed document (HTTP 400).
    Malformed,
    /// The media type is not one the hub accepts (HTTP 415).
    Unsupported,
    /// Well-formed, but not a usable message (HTTP 422).
    Unusable,
}

impl ErrorClass {
    /// The HTTP status code conventionally used for this class.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorClass::Malformed => 400,
            ErrorClass::Unsupported => 415,
            ErrorClass::Unusable => 422,
        }
    }
}

/// Everything that can go wrong while reading a body or a key path.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CoreError {
    /// The body has no content at all (or only whitespace).
    #[error("the body is empty")]
    EmptyBody,
    /// The Content-Type names a media type the hub does not accept.
    #[error("unsupported content type {0}")]
    UnsupportedContentType(String),
    /// A generic Content-Type and a body that is neither XML nor JSON.
    #[error(
        "cannot tell the body's format: it starts with neither `<` (XML), `{{` or `[` (JSON), `UNA`/`UNB` (EDIFACT), `ISA` (X12) nor `EDI_DC40` (a flat-file IDoc); send a Content-Type"
    )]
    UnknownFormat,
    /// Bytes that are invalid in the document's character encoding.
    #[error("invalid {encoding} at byte {offset}")]
    InvalidText {
        /// Name of the encoding the bytes were read as.
        encoding: &'static str,
        /// Offset of the first invalid byte in the body.
        offset: usize,
    },
    /// An encoding label that is not known.
    #[error("unknown encoding `{0}`")]
    UnknownEncoding(String),
    /// A UTF-16 encoding declared for a body without a byte order mark.
    #[error("encoding `{0}` is declared but the body has no UTF-16 byte order mark")]
    Utf16WithoutBom(String),
    /// A JSON body that is not UTF-8.
    #[error("JSON must be UTF-8 (the body starts with a UTF-16 byte order mark)")]
    JsonNotUtf8,
    /// A `<!DOCTYPE …>` declaration in an XML body.
    #[error("a DOCTYPE is not allowed (entities are never expanded)")]
    Doctype,
    /// An entity reference other than the five predefined ones.
    #[error("undefined entity &{0};")]
    UndefinedEntity(String),
    /// A numeric character reference that names no valid character.
    #[error("invalid character reference &{0};")]
    InvalidCharRef(String),
    /// The XML ends while an element is still open.
    #[error("XML is truncated: element <{0}> is not closed")]
    XmlTruncated(String),
    /// An end tag that does not close the open element.
    #[error("mismatched end tag: expected </{expected}>, found </{found}>")]
    MismatchedEndTag {
        /// The name of the element that is open.
        expected: String,
        /// The name found in the end tag.
        found: String,
    },
    /// Any other XML syntax error reported by the parser.
    #[error("XML syntax error at byte {offset}: {reason}")]
    XmlSyntax {
        /// Offset in the decoded text.
        offset: u64,
        /// The parser's description.
        reason: String,
    },
    /// Elements nested deeper than the XML limit.
    #[error("XML nesting deeper than {0}")]
    XmlTooDeep(usize),
    /// A second top-level element.
    #[error("more than one root element: <{second}> after <{first}>")]
    MultipleRoots {
        /// The first root element.
        first: String,
        /// The element found after it.
        second: String,
    },
    /// Non-whitespace text before or after the root element.
    #[error("text outside the root element")]
    TextOutsideRoot,
    /// An XML body without any element.
    #[error("no root element")]
    NoRoot,
    /// JSON nested deeper than serde_json's recursion limit.
    #[error("JSON nesting deeper than 128")]
    JsonTooDeep,
    /// JSON that does not parse (truncated or invalid), with line and column.
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    /// A JSON object with two members of the same name (I-JSON, RFC 7493):
    /// the member, its JSON pointer, and serde_json's line and column.
    #[error("duplicate JSON member {0}; a name may appear once per object")]
    DuplicateMember(String),
    /// A top-level `idempotencyKey` that is not a string.
    #[error("idempotencyKey must be a string")]
    IdempotencyKeyNotString,
    /// Plain JSON whose top level is not an object.
    #[error("a plain JSON message must be an object")]
    PlainJsonNotObject,
    /// A SOAP Envelope without a Body element.
    #[error("the SOAP Envelope has no Body")]
    SoapNoBody,
    /// A SOAP Body without any element.
    #[error("the SOAP Body is empty")]
    SoapBodyEmpty,
    /// A SOAP Body holding several elements.
    #[error("the SOAP Body holds {0} elements; expected one")]
    SoapBodyMultiple(usize),
    /// A root element without any IDOC child.
    #[error("no IDOC element under <{0}>")]
    NoIdoc(String),
    /// An IDoc without its control record.
    #[error("IDoc {index} of {total} has no control record EDI_DC40")]
    NoControlRecord {
        /// 1-based position of the IDoc in the packet.
        index: usize,
        /// Number of IDocs in the packet.
        total: usize,
    },
    /// An IDoc with a second control record: which one counts is not for the hub to guess.
    #[error("IDoc {index} of {total} has a second EDI_DC40 control record; an IDoc has exactly one")]
    ControlRecordRepeated {
        /// 1-based position of the IDoc in the packet.
        index: usize,
        /// Number of IDocs in the packet.
        total: usize,
    },
    /// A control record with a field given twice (XML elements, or a JSON array).
    #[error("IDoc {index} of {total}: the control record EDI_DC40 has field {field} more than once")]
    ControlFieldRepeated {
        /// 1-based position of the IDoc in the packet.
        index: usize,
        /// Number of IDocs in the packet.
        total: usize,
        /// The repeated field, e.g. `DOCNUM`.
        field: String,
    },
    /// JSON that looks like an IDoc but cannot be read as one.
    #[error("invalid IDoc JSON: {0}")]
    InvalidIdocJson(String),
    /// Plain JSON received without an explicit message type.
    #[error("plain JSON needs a message type: send X-Message-Type or ?message_type=")]
    NoMessageType,
    /// An IDoc whose type cannot be determined.
    #[error(
        "cannot determine the message type: the control record has no IDOCTYP and the IDoc has no named root; send X-Message-Type"
    )]
    UnknownMessageType,
    /// An EDIFACT or X12 interchange that cannot be read: separators,
    /// segment syntax, the order of envelope segments, character encoding.
    #[error("{syntax} syntax error: {detail}")]
    EdiSyntax {
        /// `EDIFACT` or `X12`.
        syntax: &'static str,
        /// What is wrong, naming the segment and element.
        detail: String,
    },
    /// An EDIFACT or X12 interchange whose counts or control references
    /// disagree (SE01, SE02, GE, IEA, UNT, UNE, UNZ).
    #[error("{syntax} envelope does not add up: {detail}")]
    EdiStructure {
        /// `EDIFACT` or `X12`.
        syntax: &'static str,
        /// Which count or reference disagrees, with both values.
        detail: String,
    },
    /// An EDIFACT or X12 segment over the hub's shape limits (elements per
    /// segment, components or repetitions per element): well-formed, but
    /// not kept.
    #[error("{syntax} interchange over the hub's limits: {detail}")]
    EdiLimit {
        /// `EDIFACT` or `X12`.
        syntax: &'static str,
        /// Which segment and element, and the limit.
        detail: String,
    },
    /// A body with more messages than the caller accepts in one request (an
    /// EDIFACT or X12 interchange, a flat file of IDocs, a large IDoc-XML
    /// packet): read no further than the first message over.
    #[error("the body holds more than {limit} messages")]
    TooManyMessages {
        /// The most messages the caller accepts.
        limit: usize,
    },
    /// A record of a flat-file IDoc whose length is not its layout's.
    #[error("flat-file IDoc record {record} ({name}) has {found} characters; an {layout} has {expected}")]
    FlatRecordLength {
        /// 1-based record (line) number.
        record: usize,
        /// The record's first characters (its segment or structure name).
        name: String,
        /// The layout it was read as, e.g. `EDI_DD40 data record`.
        layout: &'static str,
        /// Its length in characters.
        found: usize,
        /// The layout's length.
        expected: usize,
    },
    /// A flat-file IDoc whose records do not make IDocs (order, numbers,
    /// segments the description does not know, control characters).
    #[error("flat-file IDoc record {record} {detail}")]
    FlatStructure {
        /// 1-based record (line) number.
        record: usize,
        /// What is wrong, as the rest of a sentence about the record.
        detail: String,
    },
    /// Bytes of a flat-file IDoc invalid in its encoding (mixed encodings).
    #[error("flat-file IDoc record {record}: invalid {encoding} at byte {offset}")]
    FlatEncoding {
        /// 1-based record (line) number holding the first invalid byte.
        record: usize,
        /// Name of the encoding the bytes were read as.
        encoding: &'static str,
        /// Offset of the first invalid byte in the body.
        offset: usize,
    },
    /// An IDoc type description (WE60 parser format or JSON) that cannot be used.
    #[error("invalid IDoc type description: {0}")]
    InvalidIdocDescription(String),
    /// A SAP system profile that cannot address an IDoc (a value longer
    /// than its control record field, a client that is not three digits).
    #[error("invalid SAP profile: {0}")]
    SapProfile(String),
    /// An IDoc or status that cannot be written as SAP's IDoc-XML.
    #[error("cannot write the IDoc for SAP: {0}")]
    SapWrite(String),
    /// A key path that does not parse.
    #[error("invalid key path `{path}`: {reason}")]
    InvalidKeyPath {
        /// The path as written.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl CoreError {
    /// The HTTP class of this error.
    pub fn class(&self) -> ErrorClass {
        use CoreError::*;
        match self {
            UnsupportedContentType(_) | UnknownFormat => ErrorClass::Unsupported,
            PlainJsonNotObject
            | SoapNoBody
            | SoapBodyEmpty
            | SoapBodyMultiple(_)
            | NoIdoc(_)
            | NoControlRecord { .. }
            | ControlRecordRepeated { .. }
            | ControlFieldRepeated { .. }
            | InvalidIdocJson(_)
            | NoMessageType
            | UnknownMessageType
            | EdiStructure { .. }
            | EdiLimit { .. }
            | TooManyMessages { .. }
            | FlatRecordLength { .. }
            | FlatStructure { .. }
            | SapWrite(_) => ErrorClass::Unusable,
            EmptyBody
            | InvalidText { .. }
            | UnknownEncoding(_)
            | Utf16WithoutBom(_)
            | JsonNotUtf8
            | Doctype
            | UndefinedEntity(_)
            | InvalidCharRef(_)
            | XmlTruncated(_)
            | MismatchedEndTag { .. }
            | XmlSyntax { .. }
            | XmlTooDeep(_)
            | MultipleRoots { .. }
            | TextOutsideRoot
            | NoRoot
            | JsonTooDeep
            | InvalidJson(_)
            | DuplicateMember(_)
            | IdempotencyKeyNotString
            | EdiSyntax { .. }
            | FlatEncoding { .. }
            | InvalidIdocDescription(_)
            | SapProfile(_)
            | InvalidKeyPath { .. } => ErrorClass::Malformed,
        }
    }
}

#[cfg(test)]
mod tests;
