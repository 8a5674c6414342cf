//! A small, strict element tree built from decoded XML text.
//!
//! IDocs are data, not documents, so the tree keeps only what dedup and key
//! paths need: local element names (prefixes and namespaces are dropped, so
//! `ns0:ORDERS05` and a default-namespaced `ORDERS05` are the same element),
//! attributes by local name (namespace declarations dropped), and text trimmed
//! of surrounding whitespace, with CDATA counted as text.
//!
//! quick-xml is a pull parser that does not check everything a well-formed
//! document needs, so this module does: it refuses any DOCTYPE (no entity is
//! ever expanded, which disposes of billion-laughs and XXE in one rule),
//! resolves only the five predefined entities and character references,
//! refuses a document that ends with open elements (a truncated upload), a
//! second root, text outside the root, and nesting deeper than
//! [`MAX_DEPTH`]. The tree is built with an explicit stack, never recursion,
//! so a hostile 100 000-level document fails fast without touching the
//! thread's stack.

use quick_xml::Reader;
use quick_xml::XmlVersion;
use quick_xml::errors::{Error as XmlError, IllFormedError, SyntaxError};
use quick_xml::escape::EscapeError;
use quick_xml::events::{BytesRef, BytesStart, Event};

use crate::CoreError;

/// Deepest element nesting accepted.
pub(crate) const MAX_DEPTH: usize = 256;

/// One XML element, reduced to what the hub needs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Element {
    /// Local name.
    pub name: String,
    /// Attributes by local name, in document order (namespace declarations dropped).
    pub attrs: Vec<(String, String)>,
    /// Direct text content, trimmed.
    pub text: String,
    /// Child elements in document order.
    pub children: Vec<Element>,
}

impl Element {
    /// A bare element with a name.
    pub fn named(name: impl Into<String>) -> Self {
        Element { name: name.into(), ..Element::default() }
    }
}

/// Parses decoded XML text into its root element.
pub(crate) fn parse(text: &str) -> Result<Element, CoreError> {
    // XML 1.0 forbids these anywhere: names, text, attributes, comments.
    // One pass over the whole document catches them all (character
    // references are checked where they are resolved).
    if let Some(at) = text.bytes().position(|b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) {
        return Err(CoreError::XmlSyntax {
            offset: at as u64,
            reason: format!("control character U+{:04X} is not allowed in XML 1.0", text.as_bytes()[at]),
        });
    }
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        let event = reader.read_event().map_err(|e| map_error(e, &reader, &stack))?;
        match event {
            Event::Start(start) => {
                check_new_root(&root, &start)?;
                if stack.len() >= MAX_DEPTH {
                    return Err(CoreError::XmlTooDeep(MAX_DEPTH));
                }
                stack.push(open(&start, reader.buffer_position())?);
            }
            Event::Empty(start) => {
                check_new_root(&root, &start)?;
                if stack.len() >= MAX_DEPTH {
                    return Err(CoreError::XmlTooDeep(MAX_DEPTH));
                }
                close(open(&start, reader.buffer_position())?, &mut stack, &mut root);
            }
            Event::End(end) => match stack.pop() {
                Some(element) => close(element, &mut stack, &mut root),
                None => {
                    return Err(CoreError::XmlSyntax {
                        offset: reader.buffer_position(),
                        reason: format!("end tag </{}> without a start tag", end.local_name().into_inner()),
                    });
                }
            },
            Event::Text(t) => push_text(&mut stack, &t.xml10_content(), reader.buffer_position())?,
            Event::CData(c) => push_text(&mut stack, &c.xml10_content(), reader.buffer_position())?,
            Event::GeneralRef(r) => {
                push_text(&mut stack, &resolve_ref(&r)?.to_string(), reader.buffer_position())?;
            }
            Event::DocType(_) => return Err(CoreError::Doctype),
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
            Event::Eof => break,
        }
    }
    if let Some(open) = stack.last() {
        return Err(CoreError::XmlTruncated(open.name.clone()));
    }
    root.ok_or(CoreError::NoRoot)
}

/// Refuses a start tag that would begin a second root element.
fn check_new_root(root: &Option<Element>, start: &BytesStart) -> Result<(), CoreError> {
    match root {
        Some(first) => Err(CoreError::MultipleRoots { first: first.name.clone(), second: local(start) }),
        None => Ok(()),
    }
}

fn local(start: &BytesStart) -> String {
    start.local_name().into_inner().to_string()
}

/// Builds an element (name and attributes) from a start tag ending at `offset`.
fn open(start: &BytesStart, offset: u64) -> Result<Element, CoreError> {
    let mut element = Element::named(local(start));
    // quick-xml's duplicate check compares every pair (quadratic in the
    // attribute count); a set does it in linear time.
    let mut seen = std::collections::HashSet::new();
    let mut by_local = std::collections::HashMap::new();
    for attr in start.attributes().with_checks(false) {
        let attr = attr.map_err(|e| CoreError::XmlSyntax {
            offset,
            reason: format!("bad attribute in <{}>: {e}", element.name),
        })?;
        let key = attr.key;
        if key.as_ref() == "xmlns" || key.prefix().is_some_and(|p| p.as_ref() == "xmlns") {
            continue;
        }
        let value = attr.normalized_value(XmlVersion::Implicit1_0).map_err(|e| match e {
            XmlError::Escape(EscapeError::UnrecognizedEntity(_, name)) => CoreError::UndefinedEntity(name),
            other => CoreError::XmlSyntax {
                offset,
                reason: format!("bad attribute value in <{}>: {other}", element.name),
            },
        })?;
        if !seen.insert(key.as_ref().to_string()) {
            return Err(CoreError::XmlSyntax {
                offset,
                reason: format!("attribute `{}` repeated in <{}>", key.as_ref(), element.name),
            });
        }
        check_chars(&value, offset)?;
        let name = key.local_name().into_inner().to_string();
        // `a:x` and `b:x` share a local name: the last one wins, in place.
        match by_local.get(&name) {
            Some(&i) => {
                let old: &mut (String, String) = &mut element.attrs[i];
                old.1 = value.trim().to_string();
            }
            None => {
                by_local.insert(name.clone(), element.attrs.len());
                element.attrs.push((name, value.trim().to_string()));
            }
        }
    }
    Ok(element)
}

/// Finishes an element: trims its text and attaches it to its parent (or makes it the root).
fn close(mut element: Element, stack: &mut [Element], root: &mut Option<Element>) {
    let trimmed = element.text.trim();
    if trimmed.len() != element.text.len() {
        element.text = trimmed.to_string();
    }
    match stack.last_mut() {
        Some(parent) => parent.children.push(element),
        None => *root = Some(element),
    }
}

/// Refuses the C0 control characters XML 1.0 forbids (all but tab, LF, CR),
/// raw or as character references. Bytes below 0x20 never occur inside a
/// multi-byte UTF-8 sequence, so a byte scan is exact.
fn check_chars(text: &str, offset: u64) -> Result<(), CoreError> {
    match text.bytes().find(|b| *b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) {
        Some(b) => Err(CoreError::XmlSyntax {
            offset,
            reason: format!("control character U+{b:04X} is not allowed in XML 1.0"),
        }),
        None => Ok(()),
    }
}

/// Appends text to the open element; outside the root only whitespace is allowed.
fn push_text(stack: &mut [Element], text: &str, offset: u64) -> Result<(), CoreError> {
    check_chars(text, offset)?;
    match stack.last_mut() {
        // Leading whitespace is trimmed at the close anyway: skipping it here
        // spares the indentation between child elements an allocation each.
        Some(open) if open.text.is_empty() && text.bytes().all(|b| b.is_ascii_whitespace()) => {}
        Some(open) => open.text.push_str(text),
        None if text.trim().is_empty() => {}
        None => return Err(CoreError::TextOutsideRoot),
    }
    Ok(())
}

/// Resolves `&name;`: the five predefined entities and character references only.
fn resolve_ref(r: &BytesRef) -> Result<char, CoreError> {
    let name: &str = r;
    let predefined = match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "apos" => Some('\''),
        "quot" => Some('"'),
        _ => None,
    };
    if let Some(c) = predefined {
        return Ok(c);
    }
    match r.resolve_char_ref() {
        // XML 1.0 allows no C0 control but tab, LF and CR, not even as a reference.
        Ok(Some(c)) if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {
            Err(CoreError::InvalidCharRef(name.to_string()))
        }
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err(CoreError::UndefinedEntity(name.to_string())),
        Err(_) => Err(CoreError::InvalidCharRef(name.to_string())),
    }
}

/// Maps a quick-xml error to a [`CoreError`] with a useful message.
///
/// Every syntax error except unknown `<!` markup means the text ended inside
/// a construct; with an element open, that is a truncated document.
fn map_error(e: XmlError, reader: &Reader<&[u8]>, stack: &[Element]) -> CoreError {
    match (e, stack.last()) {
        (XmlError::IllFormed(IllFormedError::MismatchedEndTag { expected, found }), _) => {
            CoreError::MismatchedEndTag { expected, found }
        }
        (XmlError::Syntax(kind), Some(open)) if kind != SyntaxError::InvalidBangMarkup => {
            CoreError::XmlTruncated(open.name.clone())
        }
        (other, _) => CoreError::XmlSyntax { offset: reader.error_position(), reason: other.to_string() },
    }
}

#[cfg(test)]
mod tests;
