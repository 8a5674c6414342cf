//! The tokenizer's state and its loop: one segment at a time, one value
//! per part, the text copied once.
//!
//! Reading stops only at bytes that can start a separator or the release
//! character (a table of 256 entries); a separator that is not ASCII is
//! confirmed at its first byte. The open value and the position are plain
//! locals of the loop, so the compiler keeps them in registers.

use std::ops::Range;

use super::{MAX_COMPONENTS, MAX_ELEMENTS, MAX_REPEATS, too_large};
use crate::CoreError;
use crate::edi::model::{EdiSyntax, Separators, malformed};
use crate::edi::refusal::{self, Fault, Located};
use crate::edi::segment::{Part, Text};

/// [`tokenize`](super::tokenize), with the error's fault: a premature end
/// (the text ends inside a segment) or another syntax error.
pub(crate) fn tokenize_located(
    syntax: EdiSyntax,
    text: &str,
    seps: Separators,
    first_number: usize,
) -> Result<Text, Located> {
    if let Some(e) = too_large(syntax, text.len()) {
        return Err(refusal::syntax(e));
    }
    let mut reader = Reader::new(syntax, text, seps, first_number);
    while reader.at < text.len() {
        if reader.line_break_between_segments() {
            reader.at += 1;
            continue;
        }
        let number = first_number + reader.out.segments.len();
        let parts = reader.segment(number)?;
        reader.out.segments.push(parts);
    }
    Ok(reader.out)
}

/// How many bytes of `bytes` are `b`: counted in byte-sized sums of at most
/// 255 bytes each, a form the compiler turns into vector compares and adds.
fn occurrences(bytes: &[u8], b: u8) -> usize {
    let in_chunk = |chunk: &[u8]| chunk.iter().fold(0_u8, |n, &x| n + u8::from(x == b));
    bytes.chunks(255).map(|chunk| usize::from(in_chunk(chunk))).sum()
}

/// What a separator or the release character does; `Nul` is the NUL
/// character, refused wherever it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Release,
    Segment,
    Element,
    Component,
    Repetition,
    Nul,
}

/// The value being read: where it starts in the text, and where the text
/// not yet copied starts once a release character made it escaped (read
/// into `Reader::unescaped`).
///
/// Passed by value, never borrowed, so that the tokenizer's loop keeps it
/// in registers (borrowed, it lived in memory: a third of the loop's
/// instructions were its loads and stores).
#[derive(Clone, Copy)]
struct Open {
    start: usize,
    /// Set once the value had a release character.
    run: Option<usize>,
    /// Its element (0: the tag), repeat and component (0-based).
    element: u32,
    repeat: u32,
    component: u32,
}

/// What a byte of the text can start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Nothing,
    /// An ASCII separator or release character.
    Mark(Role),
    /// Maybe a separator that is not ASCII (the first byte of its UTF-8 form).
    Lead,
}

/// The tokenizer's state: where it is in the text and what it has read.
struct Reader<'a> {
    syntax: EdiSyntax,
    text: &'a str,
    /// The separators and the release character with their roles,
    /// the release first (it makes the next character literal); an array,
    /// not a vector, as it is built per interchange.
    marks: [Option<(char, Role)>; 5],
    /// What each byte can start (the bytes to stop at).
    stops: [Stop; 256],
    /// Where reading continues.
    at: usize,
    out: Text,
    /// The value being read, escapes resolved, once it had a release character.
    unescaped: String,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `text`, its parts and segments sized for it.
    fn new(syntax: EdiSyntax, text: &'a str, seps: Separators, first_number: usize) -> Reader<'a> {
        let marks = [
            seps.release.map(|c| (c, Role::Release)),
            Some((seps.segment, Role::Segment)),
            Some((seps.element, Role::Element)),
            Some((seps.component, Role::Component)),
            seps.repetition.map(|c| (c, Role::Repetition)),
        ];
        let mut stops = [Stop::Nothing; 256];
        // Every value but a segment's first follows a stop, and every
        // segment ends with a terminator: sized by their counts, the parts
        // and segments are not copied as they grow. One counting pass per
        // stop byte, which the compiler vectorizes (one pass summing a
        // byte table was a seventh of the tokenizer's time).
        let (mut stops_in_text, mut terminators) = (0, 0);
        for &(c, role) in marks.iter().flatten() {
            let mut buf = [0; 4];
            let lead = c.encode_utf8(&mut buf).as_bytes()[0];
            let count = occurrences(text.as_bytes(), lead);
            // Two separators that are not ASCII may share their lead byte.
            if stops[usize::from(lead)] == Stop::Nothing {
                stops_in_text += count;
            }
            if role == Role::Segment {
                terminators = count;
            }
            stops[usize::from(lead)] = if c.is_ascii() { Stop::Mark(role) } else { Stop::Lead };
        }
        // After the separators: a NUL is refused even where a UNA named it one.
        stops[0] = Stop::Mark(Role::Nul);
        let out = Text {
            values: text.to_string(),
            parts: Vec::with_capacity(stops_in_text + 1),
            segments: Vec::with_capacity(terminators + 1),
            first_number,
        };
        Reader { syntax, text, marks, stops, at: 0, out, unescaped: String::new() }
    }

    /// Line breaks after a terminator are skipped, unless they are the terminator.
    fn line_break_between_segments(&self) -> bool {
        // Both are ASCII: the byte is the whole character, and `stops` has
        // its role (a `str::starts_with(char)` per segment, through
        // `mark`, was a quarter of the EDIFACT parse time).
        let b = self.text.as_bytes()[self.at];
        (b == b'\r' || b == b'\n') && !matches!(self.stops[usize::from(b)], Stop::Mark(Role::Segment))
    }

    /// The role of the separator `rest` starts with, if any.
    fn mark(&self, rest: &str) -> Option<Role> {
        self.marks.iter().flatten().find(|(c, _)| rest.starts_with(*c)).map(|&(_, role)| role)
    }

    /// Reads one segment up to and including its terminator; its parts in `out`.
    fn segment(&mut self, number: usize) -> Result<Range<u32>, Located> {
        let first = self.out.parts.len();
        let bytes = self.text.as_bytes();
        // Where reading is, in a local rather than in `self.at`: as far as
        // the compiler knows, every push of a part could change `self`, so
        // it kept storing and reloading it.
        let mut at = self.at;
        let mut value = Open { start: at, run: None, element: 0, repeat: 0, component: 0 };
        loop {
            let next = bytes[at..].iter().position(|&b| !matches!(self.stops[usize::from(b)], Stop::Nothing));
            let Some(stop) = next else {
                self.at = bytes.len();
                self.close(value, bytes.len());
                return Err(self.unterminated(number, first));
            };
            at += stop;
            let (role, width) = match self.stops[usize::from(bytes[at])] {
                Stop::Mark(role) => (role, 1),
                Stop::Nothing | Stop::Lead => {
                    let rest = &self.text[at..];
                    let width = rest.chars().next().map_or(1, char::len_utf8);
                    match self.mark(rest) {
                        Some(role) => (role, width),
                        // The first byte of a separator that is not ASCII, starting another character.
                        None => {
                            at += width;
                            continue;
                        }
                    }
                }
            };
            match role {
                Role::Release => {
                    at = self.release(value, at, width, (number, first))?;
                    value.run = Some(at);
                    continue;
                }
                Role::Nul => return Err(self.nul((number, first), value)),
                _ => {}
            }
            self.close(value, at);
            at += width;
            if role == Role::Segment {
                break;
            }
            value = self.next_value(value, role, at, (number, first))?;
        }
        self.at = at;
        let tag = &self.out.parts[first];
        check_tag(self.syntax, self.out.value(tag), number).map_err(refusal::syntax)?;
        // Fewer parts than bytes in the text.
        Ok(first as u32..self.out.parts.len() as u32)
    }

    /// The value that starts at `at` after a separator of `role` (an
    /// element, repetition or component separator), within the shape
    /// limits. `site` is the segment's number and its first part.
    #[inline(always)]
    fn next_value(&self, value: Open, role: Role, at: usize, site: (usize, usize)) -> Result<Open, Located> {
        let (element, repeat, component) = match role {
            Role::Element => (value.element + 1, 0, 0),
            Role::Repetition => (value.element, value.repeat + 1, 0),
            _ => (value.element, value.repeat, value.component + 1),
        };
        let next = Open { start: at, run: None, element, repeat, component };
        if element > MAX_ELEMENTS || repeat >= MAX_REPEATS || component >= MAX_COMPONENTS {
            return Err(self.over_limits(site, next));
        }
        Ok(next)
    }

    /// A release character (of `width`, at `at`) in `value`: the next
    /// character is part of the value, so the value is no longer a slice of
    /// the text. Where reading (and the value's next run) continues.
    #[inline(never)]
    fn release(
        &mut self,
        value: Open,
        at: usize,
        width: usize,
        site: (usize, usize),
    ) -> Result<usize, Located> {
        let run = match value.run {
            Some(run) => run,
            None => {
                self.unescaped.clear();
                value.start
            }
        };
        self.unescaped.push_str(&self.text[run..at]);
        let at = at + width;
        let Some(next) = self.text[at..].chars().next() else {
            return Err(premature(malformed(self.syntax, "the body ends with a release character".into())));
        };
        if next == '\0' {
            return Err(self.nul(site, value));
        }
        self.unescaped.push(next);
        Ok(at + next.len_utf8())
    }

    /// Ends the value open since `value.start` at `end`.
    ///
    /// Inlined (once per value; the call was a fifth of the tokenizer), with
    /// the rare escaped value apart.
    #[inline(always)]
    fn close(&mut self, value: Open, end: usize) {
        let (start, end) = match value.run {
            None => (value.start, end),
            Some(run) => self.close_escaped(run, end),
        };
        // Within 32 bits: the text is at most MAX_TEXT bytes, the copy twice that.
        let (start, end) = (start as u32, end as u32);
        self.out.parts.push(Part { start, end, element: value.element, repeat: value.repeat });
    }

    /// Copies an escaped value, its escapes resolved, to the end of the text
    /// copy; where it lies there.
    #[inline(never)]
    fn close_escaped(&mut self, run: usize, end: usize) -> (usize, usize) {
        self.unescaped.push_str(&self.text[run..end]);
        let start = self.out.values.len();
        self.out.values.push_str(&self.unescaped);
        (start, self.out.values.len())
    }

    /// The error for a segment the text ends in, named by its first element.
    fn unterminated(&self, number: usize, first: usize) -> Located {
        let tag = self.tag_so_far(first);
        premature(malformed(
            self.syntax,
            format!("segment {number} ({tag}) is not terminated by `{}`", self.mark_char(Role::Segment)),
        ))
    }

    /// The tag of the segment being read (its parts from `first`), as far
    /// as it was read, for errors: at most 20 characters.
    fn tag_so_far(&self, first: usize) -> String {
        let parts = self.out.parts[first..].iter().take_while(|p| p.element == 0);
        parts.flat_map(|p| self.out.value(p).chars()).take(20).collect()
    }

    /// The error for a NUL character in `value` of the segment at `site`
    /// (its number and first part).
    #[cold]
    fn nul(&self, (number, first): (usize, usize), value: Open) -> Located {
        let at = match value.element {
            0 => format!("segment {number} has a NUL character (U+0000) in its tag"),
            e => format!(
                "segment {number} ({}) has a NUL character (U+0000) in element {e}",
                self.tag_so_far(first)
            ),
        };
        refusal::syntax(malformed(self.syntax, format!("{at}; no EDI character set has it")))
    }

    /// The error for the segment at `site` (its number and first part)
    /// reaching `value`, over a shape limit.
    #[cold]
    fn over_limits(&self, (number, first): (usize, usize), value: Open) -> Located {
        let tag = self.tag_so_far(first);
        let what = if value.element > MAX_ELEMENTS {
            format!("more than {MAX_ELEMENTS} elements")
        } else if value.repeat >= MAX_REPEATS {
            format!("more than {MAX_REPEATS} repetitions of element {}", value.element)
        } else {
            format!("more than {MAX_COMPONENTS} components in element {}", value.element)
        };
        let detail = format!(
            "segment {number} ({tag}) has {what}; a segment may have at most {MAX_ELEMENTS} elements, \
             an element {MAX_COMPONENTS} components and {MAX_REPEATS} repetitions"
        );
        refusal::syntax(CoreError::EdiLimit { syntax: self.syntax.as_str(), detail })
    }

    fn mark_char(&self, role: Role) -> char {
        self.marks.iter().flatten().find(|(_, r)| *r == role).map_or(' ', |&(c, _)| c)
    }
}

/// A syntax error at the end of the text.
fn premature(e: CoreError) -> Located {
    (e, Fault::Syntax { premature_end: true })
}

/// A tag is 2–3 letters or digits (the first component of the first element).
fn check_tag(syntax: EdiSyntax, tag: &str, number: usize) -> Result<(), CoreError> {
    let valid =
        (2..=3).contains(&tag.len()) && tag.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    if valid {
        return Ok(());
    }
    let shown: String = tag.chars().take(20).collect();
    Err(malformed(
        syntax,
        format!("segment {number} has no valid tag (2–3 letters or digits), found `{shown}`"),
    ))
}
