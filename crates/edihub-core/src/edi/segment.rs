//! One segment as the tokenizer leaves it, without a string or vector of
//! its own.
//!
//! An interchange is read into one [`Text`]: a copy of its text, one
//! [`Part`] per value saying where it lies in that copy and where it sits
//! (element, repeat), and one range of parts per segment. A value with a
//! release character (EDIFACT `?+`) is unescaped into the copy's end. A
//! [`Segment`] is a borrowed view of one segment, and a message keeps the
//! shared text and the range of its segments. Tokenizing thus allocates
//! per interchange rather than per value or segment, and the JSON rendering
//! of a message (a string per value) is built only when someone asks for
//! it: receiving needs the envelope and the key fields, which are read in
//! place.

use std::ops::Range;

use serde_json::Value;

/// The values of an interchange's segments and where each one lies.
#[derive(Debug, Default)]
pub(crate) struct Text {
    /// The interchange's text, followed by the values that had a release
    /// character, escapes resolved (the others are read where they are).
    pub values: String,
    /// One per value, in order.
    pub parts: Vec<Part>,
    /// One per segment, in order: its range of `parts`.
    pub segments: Vec<Range<u32>>,
    /// The number of the first segment (1-based, for errors).
    pub first_number: usize,
}

impl Text {
    /// The value a part names.
    #[inline]
    pub fn value(&self, part: &Part) -> &str {
        &self.values[part.start as usize..part.end as usize]
    }

    /// How many segments the text holds.
    pub fn len(&self) -> usize {
        self.segments.len()
    }

    /// Segment `i` (0-based).
    pub fn segment(&self, i: usize) -> Segment<'_> {
        self.view(self.first_number + i, &self.segments[i])
    }

    /// The segments in `range` (0-based indices), in order.
    pub fn segments(&self, range: Range<usize>) -> impl Iterator<Item = Segment<'_>> {
        let first = self.first_number + range.start;
        self.segments[range].iter().zip(first..).map(|(parts, number)| self.view(number, parts))
    }

    #[inline]
    fn view(&self, number: usize, parts: &Range<u32>) -> Segment<'_> {
        Segment { number, text: self, parts: &self.parts[parts.start as usize..parts.end as usize] }
    }
}

/// `str::trim`, without its search when the value starts and ends with a
/// character that is not white space (almost every EDI value): the
/// envelope trims a dozen values per message.
pub(crate) fn trim(value: &str) -> &str {
    // The ASCII characters `char::is_whitespace` accepts; a byte below 0x80
    // is a whole character, so the ends are characters, not parts of one.
    let solid = |b: u8| b < 0x80 && !matches!(b, b' ' | b'\t'..=b'\r');
    match value.as_bytes() {
        [first, .., last] if solid(*first) && solid(*last) => value,
        [only] if solid(*only) => value,
        _ => value.trim(),
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
#[derive(Clone, Copy)]
pub(crate) struct Segment<'a> {
    /// 1-based position in the interchange, for errors.
    pub number: usize,
    text: &'a Text,
    /// The segment's parts (never empty: the tag is part 0).
    parts: &'a [Part],
}

/// The segment's number and values, not the whole shared text.
impl std::fmt::Debug for Segment<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let values: Vec<&str> = self.parts.iter().map(|p| self.value(p)).collect();
        f.debug_struct("Segment").field("number", &self.number).field("values", &values).finish()
    }
}

impl<'a> Segment<'a> {
    /// Where the segment is among its text's segments (0-based).
    pub fn index(&self) -> usize {
        self.number - self.text.first_number
    }

    fn parts(&self) -> &'a [Part] {
        self.parts
    }

    #[inline]
    fn value(&self, part: &Part) -> &'a str {
        self.text.value(part)
    }

    /// The tag: the first value (`BGM`, `ST`).
    #[inline]
    pub fn tag(&self) -> &'a str {
        self.value(&self.parts()[0])
    }

    /// Whether the tag is `tag`: its bytes compared one by one, as tags
    /// are two or three bytes (a `memcmp` call per segment cost more than
    /// the comparison).
    #[inline]
    pub fn has_tag(&self, tag: &str) -> bool {
        // The tag's bytes, without `str` slicing's character-boundary checks.
        let part = &self.parts()[0];
        let ours = self.text.values.as_bytes().get(part.start as usize..part.end as usize);
        let theirs = tag.as_bytes();
        ours.is_some_and(|ours| ours.len() == theirs.len() && ours.iter().zip(theirs).all(|(a, b)| a == b))
    }

    /// The elements after the tag, each as its parts.
    fn elements(&self) -> impl Iterator<Item = &'a [Part]> {
        self.parts().chunk_by(|a, b| a.element == b.element).skip(1)
    }

    /// Where element `e` starts among the parts, or the next element after
    /// it if there is one.
    fn element_start(&self, e: u32) -> Option<usize> {
        // Parts are in element order, and every element (the tag too) has
        // a part, so part `i` is of element `i` at most: element `e` starts
        // at part `e` or later, and the search starts there.
        let from = usize::try_from(e).ok()?;
        let found = self.parts().get(from..)?.iter().position(|p| p.element >= e)?;
        Some(from + found)
    }

    /// Element `e` (1-based) as its parts, if the segment has it.
    fn element(&self, e: usize) -> Option<&'a [Part]> {
        // An element number beyond 32 bits is in no segment.
        let e = u32::try_from(e).ok()?;
        let parts = self.parts();
        let start = self.element_start(e)?;
        let len = parts[start..].iter().take_while(|p| p.element == e).count();
        (e > 0 && len > 0).then(|| &parts[start..start + len])
    }

    /// The repeats of element `e` (1-based), each as its components'
    /// values; none when the segment has no element `e`.
    pub fn repeats(self, e: usize) -> impl Iterator<Item = impl Iterator<Item = &'a str>> + use<'a> {
        let this = self;
        let element = self.element(e).unwrap_or_default();
        element
            .chunk_by(|a, b| a.repeat == b.repeat)
            .map(move |components| components.iter().map(move |p| this.value(p)))
    }

    /// The components of the first repeat of element `e` (1-based), if the
    /// segment has that element.
    pub fn components(self, e: usize) -> Option<impl Iterator<Item = &'a str> + use<'a>> {
        self.element(e)?;
        self.repeats(e).next()
    }

    /// Component `c` (0-based) of the first repeat of element `e` (1-based), or "".
    pub fn text(&self, e: usize, c: usize) -> &'a str {
        // The first repeat's components come first in the element's parts,
        // and parts are in element order: component `c` is the part `c`
        // after the element's first if that one is still of element `e`.
        // (Not measuring the element first: the envelope reads a dozen
        // fields this way per message.)
        let Some(e) = u32::try_from(e).ok().filter(|&e| e > 0) else { return "" };
        let parts = self.parts();
        let Some(start) = self.element_start(e) else { return "" };
        match start.checked_add(c).and_then(|i| parts.get(i)) {
            Some(p) if p.element == e && p.repeat == 0 => self.value(p),
            _ => "",
        }
    }

    /// Element `e` (1-based), first component, trimmed.
    pub fn el(&self, e: usize) -> &'a str {
        trim(self.text(e, 0))
    }

    /// The segment as the rendering describes it (see the module docs of `edi`).
    /// [`Segment`]'s `Serialize` writes the same JSON without building it.
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

/// The segment's rendering ([`Segment::render`]) written straight to a
/// serializer: the same JSON, without a `Value` per component (an element
/// of millions of components would be that many allocations).
impl serde::Serialize for Segment<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(None)?;
        seq.serialize_element(self.tag())?;
        for element in self.elements() {
            let repeats = element.chunk_by(|a, b| a.repeat == b.repeat);
            match element.last().map_or(0, |p| p.repeat) {
                0 => match repeats.map(|r| Repeat(self, r)).next() {
                    Some(repeat) => seq.serialize_element(&repeat)?,
                    None => seq.serialize_element(&())?,
                },
                _ => seq.serialize_element(&RepeatMap(self, element))?,
            }
        }
        seq.end()
    }
}

/// A repeat as [`Segment::render_repeat`] renders it.
struct Repeat<'s, 'a>(&'s Segment<'a>, &'a [Part]);

impl serde::Serialize for Repeat<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self.1 {
            [one] => serializer.serialize_str(self.0.value(one)),
            many => {
                let mut seq = serializer.serialize_seq(Some(many.len()))?;
                for p in many {
                    seq.serialize_element(self.0.value(p))?;
                }
                seq.end()
            }
        }
    }
}

/// A repeated element: `{"repeat": [...]}`.
struct RepeatMap<'s, 'a>(&'s Segment<'a>, &'a [Part]);

impl serde::Serialize for RepeatMap<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("repeat", &Repeats(self.0, self.1))?;
        map.end()
    }
}

/// The repeats of an element, as an array.
struct Repeats<'s, 'a>(&'s Segment<'a>, &'a [Part]);

impl serde::Serialize for Repeats<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(None)?;
        for repeat in self.1.chunk_by(|a, b| a.repeat == b.repeat) {
            seq.serialize_element(&Repeat(self.0, repeat))?;
        }
        seq.end()
    }
}
