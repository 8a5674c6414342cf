//! One segment as the tokenizer leaves it, without a string or vector of
//! its own.
//!
//! An interchange is read into one [`Text`]: a copy of its text, and one
//! [`Part`] per value saying where it lies in that copy and where it sits
//! (element, repeat). A value with a release character (EDIFACT `?+`) is
//! unescaped into the copy's end. A [`Segment`] is a range of those parts. Tokenizing thus allocates per
//! interchange rather than per value, and the JSON rendering of a message
//! (a string per value) is built only when someone asks for it: receiving
//! needs the envelope and the key fields, which are read in place.

use std::ops::Range;
use std::sync::Arc;

use serde_json::Value;

/// The values of an interchange's segments and where each one lies.
#[derive(Debug, Default)]
pub(crate) struct Text {
    /// The interchange's text, followed by the values that had a release
    /// character, escapes resolved (the others are read where they are).
    pub values: String,
    /// One per value, in order.
    pub parts: Vec<Part>,
}

impl Text {
    /// The value a part names.
    pub fn value(&self, part: &Part) -> &str {
        &self.values[part.start as usize..part.end as usize]
    }
}

/// One value: a component of a repeat of an element of a segment.
///
/// 16 bytes: the text of an interchange is kept under 2 GiB (see
/// `segments::MAX_TEXT`), so offsets and positions fit 32 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Part {
    /// Where the value starts in [`Text::values`].
    pub start: u32,
    /// Where it ends.
    pub end: u32,
    /// 0 for the tag, then the element's number (1-based).
    pub element: u32,
    /// The repeat within the element (0-based).
    pub repeat: u32,
}

/// One segment: its place in the interchange and its parts in the shared text.
#[derive(Clone)]
pub(crate) struct Segment {
    /// 1-based position in the interchange, for errors.
    pub number: usize,
    text: Arc<Text>,
    /// The segment's parts in `text` (never empty: the tag is part 0).
    parts: Range<u32>,
}

/// The segment's number and values, not the whole shared text.
impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let values: Vec<&str> = self.parts().iter().map(|p| self.value(p)).collect();
        f.debug_struct("Segment").field("number", &self.number).field("values", &values).finish()
    }
}

impl Segment {
    pub(crate) fn new(number: usize, text: Arc<Text>, parts: Range<u32>) -> Segment {
        Segment { number, text, parts }
    }

    fn parts(&self) -> &[Part] {
        &self.text.parts[self.parts.start as usize..self.parts.end as usize]
    }

    fn value(&self, part: &Part) -> &str {
        self.text.value(part)
    }

    /// The tag: the first value (`BGM`, `ST`).
    pub fn tag(&self) -> &str {
        self.value(&self.parts()[0])
    }

    /// The elements after the tag, each as its parts.
    fn elements(&self) -> impl Iterator<Item = &[Part]> {
        self.parts().chunk_by(|a, b| a.element == b.element).skip(1)
    }

    /// Element `e` (1-based) as its parts, if the segment has it.
    fn element(&self, e: usize) -> Option<&[Part]> {
        // Parts are in element order; the elements asked for come early.
        // An element number beyond 32 bits is in no segment.
        let e = u32::try_from(e).ok()?;
        let parts = self.parts();
        let start = parts.iter().position(|p| p.element >= e)?;
        let len = parts[start..].iter().take_while(|p| p.element == e).count();
        (e > 0 && len > 0).then(|| &parts[start..start + len])
    }

    /// The repeats of element `e` (1-based), each as its components'
    /// values; none when the segment has no element `e`.
    pub fn repeats(&self, e: usize) -> impl Iterator<Item = impl Iterator<Item = &str>> {
        let element = self.element(e).unwrap_or_default();
        element
            .chunk_by(|a, b| a.repeat == b.repeat)
            .map(|components| components.iter().map(|p| self.value(p)))
    }

    /// The components of the first repeat of element `e` (1-based), if the
    /// segment has that element.
    pub fn components(&self, e: usize) -> Option<impl Iterator<Item = &str>> {
        self.element(e)?;
        self.repeats(e).next()
    }

    /// Component `c` (0-based) of the first repeat of element `e` (1-based), or "".
    pub fn text(&self, e: usize, c: usize) -> &str {
        // The first repeat's components come first in the element's parts.
        let part = self.element(e).and_then(|parts| parts.get(c)).filter(|p| p.repeat == 0);
        part.map_or("", |p| self.value(p))
    }

    /// Element `e` (1-based), first component, trimmed.
    pub fn el(&self, e: usize) -> &str {
        self.text(e, 0).trim()
    }

    /// The segment as the rendering describes it (see the module docs of `edi`).
    pub fn render(&self) -> Value {
        let mut out = vec![Value::String(self.tag().to_string())];
        out.extend(self.elements().map(|element| {
            let mut repeats = element.chunk_by(|a, b| a.repeat == b.repeat).map(|r| self.render_repeat(r));
            match element.last().map_or(0, |p| p.repeat) {
                0 => repeats.next().unwrap_or(Value::Null),
                _ => serde_json::json!({ "repeat": repeats.collect::<Vec<_>>() }),
            }
        }));
        Value::Array(out)
    }

    /// A repeat: a string for one component, else an array of them.
    fn render_repeat(&self, components: &[Part]) -> Value {
        match components {
            [one] => Value::String(self.value(one).to_string()),
            many => Value::Array(many.iter().map(|p| Value::String(self.value(p).to_string())).collect()),
        }
    }
}
