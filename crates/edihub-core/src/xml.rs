//! Strict XML parsing straight into the JSON rendering of the document.
//!
//! IDocs are data, not documents, so the parser keeps only what dedup and
//! key paths need: local element names (prefixes and namespaces are
//! dropped, so `ns0:ORDERS05` and a default-namespaced `ORDERS05` are the
//! same element), attributes by local name (namespace declarations
//! dropped), and text trimmed of surrounding whitespace, with CDATA counted
//! as text. It builds the `render` shape directly from quick-xml's events,
//! one frame per open element: an element tree converted afterwards cost
//! more than the reading itself, in time and in peak memory. Names and text
//! are borrowed from the input until a value needs its own copy.
//!
//! quick-xml is a pull parser that does not check everything a well-formed
//! document needs, so this module does: it refuses any DOCTYPE (no entity is
//! ever expanded, which disposes of billion-laughs and XXE in one rule),
//! resolves only the five predefined entities and character references,
//! refuses a document that ends with open elements (a truncated upload), a
//! second root, text outside the root, and nesting deeper than
//! [`MAX_DEPTH`]. The frames live on an explicit stack, never recursion, so
//! a hostile 100 000-level document fails fast without touching the
//! thread's stack.
//!
//! The parser also reads the first `Body` of a SOAP `Envelope` root as it
//! closes (see [`SoapBody`]): whether it holds exactly one element cannot be
//! told from the rendering afterwards, where an element named `#text` or
//! `@x` would look like text or an attribute.
//!
//! With a [`Deferral`] (large IDocs, see `idoc::deferred`), the children of
//! each outermost container element (`IDOC`) are checked as thoroughly but
//! not rendered, except the kept one (`EDI_DC40`): the parser notes where
//! each child lies in the text instead ([`Deferred`]), and
//! [`render_element`] renders one later from those bytes.

use std::borrow::Cow;
use std::ops::Range;

use quick_xml::Reader;
use quick_xml::errors::{Error as XmlError, IllFormedError, SyntaxError};
use quick_xml::events::Event;
use serde_json::{Map, Value};

use crate::{CoreError, render};

mod chars;
mod open;

use chars::{check_document, resolve_ref};

/// Deepest element nesting accepted.
pub(crate) const MAX_DEPTH: usize = 256;

/// Local name of a SOAP envelope root (SOAP 1.1 and 1.2, any prefix).
pub(crate) const SOAP_ENVELOPE: &str = "Envelope";

/// Local name of the SOAP element that holds the document proper.
const SOAP_BODY: &str = "Body";

/// A parsed document: its root element.
#[derive(Debug)]
pub(crate) struct Root {
    /// Local name of the root element.
    pub name: String,
    /// Its rendering (for an `Envelope` root, without the element taken
    /// into [`SoapBody::One`]).
    pub value: Value,
    /// For an `Envelope` root, what its first `Body` child held; `None`
    /// when there is no such child (or the root is not an `Envelope`).
    pub soap_body: Option<SoapBody>,
    /// The elements whose children were deferred, in the order they
    /// closed; each one's rendering holds its index here under
    /// [`DEFERRED_MEMBER`]. Empty without a [`Deferral`].
    pub deferred: Vec<Deferred>,
}

/// Which children a parse leaves unrendered: those of each outermost
/// element named `container`, except the ones named `kept`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deferral<'n> {
    /// Local name of the elements whose children are deferred.
    pub container: &'n str,
    /// Local name of the children rendered all the same.
    pub kept: &'n str,
    /// The most container elements the text may hold: the parse stops at
    /// the first one over ([`CoreError::TooManyMessages`]), before it
    /// notes the rest.
    pub limit: usize,
}

/// A container element whose children were deferred.
#[derive(Debug)]
pub(crate) struct Deferred {
    /// The element's bytes in the text, start tag to end tag.
    pub span: Range<usize>,
    /// Every child element (kept ones too) in document order; `None` when a
    /// child's name could not be placed in the text.
    pub segments: Option<Vec<Segment>>,
}

/// A child element of a [`Deferred`] element.
#[derive(Debug, Clone)]
pub(crate) struct Segment {
    /// Its local name's bytes in the text.
    pub name: Range<usize>,
    /// Its bytes in the text, start tag to end tag.
    pub span: Range<usize>,
}

/// The member that marks a deferred element's rendering, holding its index
/// in [`Root::deferred`]. No parsed name contains a NUL (control characters
/// are refused), so it never meets an element or attribute.
pub(crate) const DEFERRED_MEMBER: &str = "\u{0}deferred";

/// What the first `Body` child of an `Envelope` root held.
#[derive(Debug, PartialEq)]
pub(crate) enum SoapBody {
    /// Exactly one element: its local name and rendering.
    One(String, Value),
    /// Any other number of elements.
    Count(usize),
}

/// An open element.
struct Frame<'a> {
    /// Local name.
    name: Cow<'a, str>,
    /// `@` attributes, then children as they close (see `render`).
    members: Map<String, Value>,
    /// Direct text so far (untrimmed; leading whitespace skipped).
    text: Cow<'a, str>,
    /// Child elements closed so far.
    elements: usize,
    /// Name of the last child element closed.
    last: Cow<'a, str>,
    /// Where its start tag begins in the text: exact wherever its span is
    /// noted; elsewhere it may be whitespace the reader skipped before the
    /// tag (see `Parser::skips_leading_space`).
    start: usize,
    /// What becomes of it.
    role: Role,
}

/// The most a [`Frame`] may take: each element's frame is moved onto the
/// stack and off it, and these moves are inlined at this size where a
/// larger frame went through a `memcpy` call each (about 1.5 % of a small
/// IDoc's parse + fingerprint).
const FRAME_BYTES: usize = 128;
const _: () = assert!(std::mem::size_of::<Frame>() <= FRAME_BYTES);

/// What becomes of an open element under a [`Deferral`].
enum Role {
    /// Rendered into its parent (every element without a deferral).
    Render,
    /// A container: rendered with its kept children only, the others noted.
    /// Boxed: containers are few, and every frame pays for the size of a
    /// role (see [`FRAME_BYTES`]).
    Deferring(Box<Children>),
    /// Rendered: a kept child of a container, or inside one.
    Kept,
    /// Checked, not rendered: a deferred child, or inside one.
    Skipped,
}

/// The children a container has noted so far.
#[derive(Default)]
struct Children {
    segments: Vec<Segment>,
    /// False once a child's name could not be placed in the text.
    unplaced: bool,
}

/// Parser state over one document text.
struct Parser<'a> {
    text: &'a str,
    reader: Reader<&'a [u8]>,
    stack: Vec<Frame<'a>>,
    root: Option<(Cow<'a, str>, Value)>,
    soap_body: Option<SoapBody>,
    deferral: Option<Deferral<'a>>,
    deferred: Vec<Deferred>,
    /// Container elements opened so far (see [`Deferral::limit`]).
    containers: usize,
}

/// Parses decoded XML text into its root element's name and rendering.
pub(crate) fn parse(text: &str) -> Result<Root, CoreError> {
    check_document(text)?;
    Parser::new(text, None).run()
}

/// [`parse`], leaving the children `deferral` names unrendered (see
/// [`Root::deferred`]).
pub(crate) fn parse_deferring<'a>(text: &'a str, deferral: Deferral<'a>) -> Result<Root, CoreError> {
    check_document(text)?;
    Parser::new(text, Some(deferral)).run()
}

/// The rendering of one element of a text [`parse_deferring`] accepted
/// (a [`Deferred`] element or one of its segments), given its bytes.
/// Those passed every check as part of the whole text, so they pass again;
/// were that broken, the element would render as `null`.
pub(crate) fn render_element(element: &str) -> Value {
    let parsed = Parser::new(element, None).run();
    debug_assert!(parsed.is_ok(), "an element of a checked text failed to parse: {parsed:?}");
    parsed.map(|root| root.value).unwrap_or_default()
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, deferral: Option<Deferral<'a>>) -> Parser<'a> {
        Parser {
            text,
            reader: Reader::from_str(text),
            stack: Vec::with_capacity(16),
            root: None,
            soap_body: None,
            deferral,
            deferred: Vec::new(),
            containers: 0,
        }
    }

    /// The reader's offset in the text.
    fn position(&self) -> usize {
        usize::try_from(self.reader.buffer_position()).unwrap_or(usize::MAX)
    }

    /// Reads every event, then requires a complete document with one root.
    fn run(mut self) -> Result<Root, CoreError> {
        loop {
            // Where the next event begins: a start tag's `<` wherever its
            // span is noted (see `skips_leading_space`).
            let at = self.position();
            self.reader.config_mut().trim_text_start = self.skips_leading_space();
            let event = self.reader.read_event().map_err(|e| map_error(e, &self.reader, &self.stack))?;
            match event {
                Event::Start(start) => {
                    let frame = self.open(&start, at)?;
                    self.count(&frame)?;
                    self.stack.push(frame);
                }
                Event::Empty(start) => {
                    let frame = self.open(&start, at)?;
                    self.count(&frame)?;
                    let end = self.position();
                    self.close(frame, end);
                }
                Event::End(end) => match self.stack.pop() {
                    Some(frame) => {
                        let end = self.position();
                        self.close(frame, end);
                    }
                    None => {
                        return Err(CoreError::XmlSyntax {
                            offset: self.reader.buffer_position(),
                            reason: format!(
                                "end tag </{}> without a start tag",
                                end.local_name().into_inner()
                            ),
                        });
                    }
                },
                Event::Text(t) => {
                    if self.keeps_text(&t)? {
                        // Line ends need normalising only where there is a CR.
                        self.append_text(if has_cr(&t) { t.xml10_content() } else { t.into_inner() });
                    }
                }
                Event::CData(c) => {
                    if self.keeps_text(&c)? {
                        self.append_text(if has_cr(&c) { c.xml10_content() } else { c.into_inner() });
                    }
                }
                Event::GeneralRef(r) => {
                    let mut utf8 = [0; 4];
                    let c: &str = resolve_ref(&r)?.encode_utf8(&mut utf8);
                    if self.keeps_text(c)? {
                        self.append_text(Cow::Owned(c.to_string()));
                    }
                }
                Event::DocType(_) => return Err(CoreError::Doctype),
                Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
                Event::Eof => break,
            }
        }
        if let Some(open) = self.stack.last() {
            return Err(CoreError::XmlTruncated(open.name.to_string()));
        }
        let (name, value) = self.root.ok_or(CoreError::NoRoot)?;
        Ok(Root { name: name.into_owned(), value, soap_body: self.soap_body, deferred: self.deferred })
    }

    /// Counts `frame` if it is a container of the [`Deferral`], refusing
    /// the first one over its limit.
    fn count(&mut self, frame: &Frame<'a>) -> Result<(), CoreError> {
        let (Role::Deferring(_), Some(deferral)) = (&frame.role, self.deferral) else { return Ok(()) };
        if self.containers == deferral.limit {
            return Err(CoreError::TooManyMessages { limit: deferral.limit });
        }
        self.containers += 1;
        Ok(())
    }

    /// The role of a child named `name` of the open element.
    fn role_of(&self, name: &str) -> Role {
        match (self.stack.last().map(|open| &open.role), self.deferral) {
            (Some(Role::Skipped), _) => Role::Skipped,
            (Some(Role::Kept), _) => Role::Kept,
            (Some(Role::Deferring(_)), Some(d)) if d.kept == name => Role::Kept,
            (Some(Role::Deferring(_)), _) => Role::Skipped,
            (_, Some(d)) if d.container == name => Role::Deferring(Box::default()),
            _ => Role::Render,
        }
    }

    /// Finishes an element ending at `end`: renders it and attaches it to
    /// its parent (or makes it the root); a deferred one is only noted.
    fn close(&mut self, frame: Frame<'a>, end: usize) {
        let span = frame.start..end;
        if let Some(Frame { role: Role::Deferring(children), .. }) = self.stack.last_mut() {
            match span_in(self.text, &frame.name) {
                Some(name) => children.segments.push(Segment { name, span: span.clone() }),
                None => children.unplaced = true,
            }
        }
        if matches!(frame.role, Role::Skipped) {
            if let Some(parent) = self.stack.last_mut() {
                parent.elements += 1;
                parent.last = frame.name;
            }
            return;
        }
        let Frame { name, mut members, text, elements, last, start: _, role } = frame;
        let first_soap_body = self.soap_body.is_none()
            && name == SOAP_BODY
            && matches!(self.stack.as_slice(), [envelope] if envelope.name == SOAP_ENVELOPE);
        if first_soap_body {
            self.soap_body = Some(take_only_child(&mut members, elements, &last));
        }
        let mut value = render::element(members, trimmed(text));
        if let (Role::Deferring(children), Value::Object(members)) = (role, &mut value) {
            members.insert(DEFERRED_MEMBER.to_string(), Value::from(self.deferred.len()));
            let segments = (!children.unplaced).then_some(children.segments);
            self.deferred.push(Deferred { span, segments });
        }
        match self.stack.last_mut() {
            Some(parent) => {
                let repeat = parent.last == name;
                render::insert_child(&mut parent.members, &name, value, repeat);
                parent.elements += 1;
                parent.last = name;
            }
            None => self.root = Some((name, value)),
        }
    }

    /// Whether the reader may drop the whitespace that starts the next
    /// text: when the open element has no text yet, that whitespace is
    /// leading and trimmed at the close anyway (outside the root it is
    /// allowed and dropped), so the indentation between elements never
    /// becomes an event. Under a [`Deferral`], only inside a kept or
    /// skipped child: elsewhere a start tag may begin a span that is noted,
    /// and skipped whitespace would come first in the same event.
    fn skips_leading_space(&self) -> bool {
        let Some(open) = self.stack.last() else {
            return self.deferral.is_none();
        };
        open.text.is_empty() && (self.deferral.is_none() || matches!(open.role, Role::Kept | Role::Skipped))
    }

    /// Whether text (as written, line ends not yet normalised) is kept for
    /// the open element; outside the root only whitespace is allowed.
    /// (Control characters were refused for the whole text up front, and
    /// character references as they were resolved.)
    fn keeps_text(&self, raw: &str) -> Result<bool, CoreError> {
        match self.stack.last() {
            // A deferred element's text is not kept (nor refused: it is
            // inside an element).
            Some(Frame { role: Role::Skipped, .. }) => Ok(false),
            // Leading whitespace is trimmed at the close anyway: skipping it
            // here keeps the indentation between elements out of the text
            // (and spares it the line-end normalisation).
            Some(open) => Ok(!open.text.is_empty() || !raw.bytes().all(|b| b.is_ascii_whitespace())),
            None if raw.trim().is_empty() => Ok(false),
            None => Err(CoreError::TextOutsideRoot),
        }
    }

    /// Appends kept text to the open element; the first piece stays
    /// borrowed from the input.
    fn append_text(&mut self, text: Cow<'a, str>) {
        if let Some(open) = self.stack.last_mut() {
            if open.text.is_empty() {
                open.text = text;
            } else {
                open.text.to_mut().push_str(&text);
            }
        }
    }
}

/// Whether text contains a CR, which XML 1.0 line-end handling replaces.
/// (A plain loop: the texts are short, and most have none.)
fn has_cr(text: &str) -> bool {
    text.bytes().any(|b| b == b'\r')
}

/// Takes the only child element out of a SOAP `Body`'s members, or counts.
fn take_only_child(members: &mut Map<String, Value>, elements: usize, last: &str) -> SoapBody {
    let only = match elements {
        1 => match members.remove(last) {
            // An attribute of the same name (`@x`) came first; the element
            // is the one merged after it.
            Some(Value::Array(mut items)) => items.pop(),
            other => other,
        },
        _ => None,
    };
    match only {
        Some(value) => SoapBody::One(last.to_string(), value),
        None => SoapBody::Count(elements),
    }
}

/// Text trimmed of surrounding whitespace, copied only when it must be.
fn trimmed(text: Cow<'_, str>) -> String {
    match text {
        Cow::Owned(s) if render::trim(&s).len() == s.len() => s,
        text => render::trim(&text).to_string(),
    }
}

/// `part`, a slice of an event quick-xml borrowed from `text`, borrowed from
/// `text` itself so that it outlives the event (a copy if it is not a slice
/// of `text`). This spares every element name an allocation of its own.
fn reborrow<'a>(text: &'a str, part: &str) -> Cow<'a, str> {
    match span_in(text, part) {
        Some(span) => Cow::Borrowed(&text[span]),
        None => Cow::Owned(part.to_string()),
    }
}

/// Where `part` lies in `text`, if it is a slice of it.
fn span_in(text: &str, part: &str) -> Option<Range<usize>> {
    let start = part.as_ptr().addr().wrapping_sub(text.as_ptr().addr());
    let span = start..start.wrapping_add(part.len());
    text.get(span.clone()).filter(|slice| slice.as_ptr() == part.as_ptr()).map(|_| span)
}

/// Maps a quick-xml error to a [`CoreError`] with a useful message.
///
/// Every syntax error except unknown `<!` markup means the text ended inside
/// a construct; with an element open, that is a truncated document.
fn map_error(e: XmlError, reader: &Reader<&[u8]>, stack: &[Frame]) -> CoreError {
    match (e, stack.last()) {
        (XmlError::IllFormed(IllFormedError::MismatchedEndTag { expected, found }), _) => {
            CoreError::MismatchedEndTag { expected, found }
        }
        (XmlError::Syntax(kind), Some(open)) if kind != SyntaxError::InvalidBangMarkup => {
            CoreError::XmlTruncated(open.name.to_string())
        }
        (other, _) => CoreError::XmlSyntax { offset: reader.error_position(), reason: other.to_string() },
    }
}

#[cfg(test)]
mod tests;
