//! An IDoc of a large IDoc-XML body, kept as its text until its rendering
//! is asked for.
//!
//! The rendering of a 10 MB IDoc (a `serde_json::Value`) is several times
//! the body's size, while receiving it needs only its control record and
//! its key fields. For a body of [`DEFER_FROM`] bytes or more, the parser
//! therefore renders only the control record of each `IDOC` element and
//! notes where each of its segments lies in the text (see `xml`), and the
//! document keeps the text:
//!
//! - a key path of the IDoc notation renders only the segments its first
//!   step names ([`DeferredIdoc::segments_named`]): walking a path never
//!   leaves the member its first step selects, so the values are those
//!   the whole rendering gives;
//! - the whole rendering (JSONPath, content fingerprints, deliveries) is
//!   built on first use by parsing the element again, with the parser that
//!   checked it, so it equals what an eager parse builds.
//!
//! The text is the request's own buffer where the body is UTF-8
//! ([`SharedText`]): a 10 MB body is then held once, not once as received
//! and again as the text its IDocs answer from.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::render::{self, TEXT_MEMBER};
use crate::xml::{self, Deferred, Segment};

/// Bodies of this size or more are read into deferred IDocs; smaller ones
/// are rendered while they are parsed (their rendering is small, and a
/// delivery or feed that renders them parses them once).
pub(crate) const DEFER_FROM: usize = 1024 * 1024;

/// The decoded text of a large IDoc-XML body, shared by the IDocs of a
/// packet: a slice of the body's buffer when the body was UTF-8 (no copy),
/// else the text decoded from its charset.
#[derive(Clone)]
pub(crate) struct SharedText(Bytes);

impl SharedText {
    /// `text`, held as the slice of `body` it borrows from when it borrows
    /// (then it must lie within `body`: the text of a UTF-8 body is the body
    /// less its BOM), as its own buffer when it was decoded, else copied.
    pub(crate) fn of(text: Cow<'_, str>, body: Option<&Bytes>) -> SharedText {
        SharedText(match (text, body) {
            (Cow::Borrowed(text), Some(body)) => body.slice_ref(text.as_bytes()),
            (Cow::Borrowed(text), None) => Bytes::copy_from_slice(text.as_bytes()),
            (Cow::Owned(text), _) => {
                // A decoder sizes its output for the worst case; keep the text only.
                let mut text = text.into_bytes();
                text.shrink_to_fit();
                Bytes::from(text)
            }
        })
    }

    /// The text in `range`: an element's or a name's span, which the XML
    /// parser took at ASCII delimiters (`<`, `>`, whitespace) of the valid
    /// UTF-8 it read, so the slice is UTF-8 too.
    fn get(&self, range: Range<usize>) -> &str {
        std::str::from_utf8(&self.0[range]).expect("a span of the parsed text lies on character boundaries")
    }
}

/// One `IDOC` element of a shared IDoc-XML text, rendered on demand.
#[derive(Clone)]
pub(crate) struct DeferredIdoc {
    /// The whole decoded text, shared by the IDocs of a packet.
    text: SharedText,
    /// The `IDOC` element's bytes in `text`.
    span: Range<usize>,
    /// Its child elements in document order; `None` when they could not be
    /// indexed (then every question renders the whole element).
    segments: Option<Vec<Segment>>,
    rendered: OnceLock<Value>,
}

/// The element's place and size, not the shared text.
impl std::fmt::Debug for DeferredIdoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredIdoc")
            .field("span", &self.span)
            .field("segments", &self.segments.as_ref().map(Vec::len))
            .field("rendered", &self.rendered.get().is_some())
            .finish()
    }
}

impl DeferredIdoc {
    /// The IDoc the parser deferred as `deferred` in `text`.
    pub fn new(text: SharedText, deferred: Deferred) -> DeferredIdoc {
        let Deferred { span, segments } = deferred;
        DeferredIdoc { text, span, segments, rendered: OnceLock::new() }
    }

    /// The whole rendering of the `IDOC` element.
    pub fn value(&self) -> &Value {
        self.rendered.get_or_init(|| xml::render_element(self.text.get(self.span.clone())))
    }

    /// The whole rendering, taken (rendered first if it was not yet).
    pub fn into_value(self) -> Value {
        self.value();
        self.rendered.into_inner().unwrap_or_default()
    }

    /// The rendering restricted to the member `name`: an object holding the
    /// child elements called `name` as the whole rendering holds them (one
    /// value, or an array of repeats in document order), or an empty object
    /// when there are none. `None` when it cannot be told apart from the
    /// rest: for an attribute (`@…`) or text member, or when the children
    /// were not indexed; the caller then asks the whole rendering.
    pub fn segments_named(&self, name: &str) -> Option<Value> {
        if name.starts_with('@') || name == TEXT_MEMBER || self.rendered.get().is_some() {
            return None;
        }
        let mut members = Map::new();
        let mut repeat = false;
        for segment in self.segments.as_ref()? {
            if self.text.get(segment.name.clone()) != name {
                continue;
            }
            let value = xml::render_element(self.text.get(segment.span.clone()));
            render::insert_child(&mut members, name, value, repeat);
            repeat = true;
        }
        Some(Value::Object(members))
    }
}

/// Two IDocs are equal when their renderings are.
impl PartialEq for DeferredIdoc {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

#[cfg(test)]
mod tests;
