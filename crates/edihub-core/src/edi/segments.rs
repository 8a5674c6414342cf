//! The tokenizer both syntaxes share, and positional key paths.
//!
//! Tokenizing needs only the separators: the segment terminator ends a
//! segment, the element separator an element, the component separator a
//! component, the repetition separator a repeat, and the release character
//! (EDIFACT only) makes the next character literal. Line breaks after a
//! terminator are skipped (many senders put one segment per line) unless the
//! line break *is* the terminator.

use std::ops::Range;
use std::sync::Arc;

use serde_json::Value;

use super::refusal::{self, Fault, Located};
use super::segment::{Part, Segment, Text};
use super::{EdiSyntax, Separators, malformed, split_glued};
use crate::CoreError;
use crate::path::{IdocPath, Step};

/// Splits `text` into segments; `first_number` numbers the first one.
pub(crate) fn tokenize(
    syntax: EdiSyntax,
    text: &str,
    seps: Separators,
    first_number: usize,
) -> Result<Vec<Segment>, CoreError> {
    tokenize_located(syntax, text, seps, first_number).map_err(|(e, _)| e)
}

/// [`tokenize`], with the error's fault: a premature end (the text ends
/// inside a segment) or another syntax error.
pub(crate) fn tokenize_located(
    syntax: EdiSyntax,
    text: &str,
    seps: Separators,
    first_number: usize,
) -> Result<Vec<Segment>, Located> {
    let mut reader = Reader::new(syntax, text, seps);
    let mut spans = Vec::new();
    let mut number = first_number;
    while reader.at < text.len() {
        if reader.line_break_between_segments() {
            reader.at += 1;
            continue;
        }
        spans.push(reader.segment(number)?);
        number += 1;
    }
    let shared = Arc::new(reader.out);
    Ok(spans
        .into_iter()
        .zip(first_number..)
        .map(|(parts, number)| Segment::new(number, Arc::clone(&shared), parts))
        .collect())
}

/// What a separator or the release character does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Release,
    Segment,
    Element,
    Component,
    Repetition,
}

/// The tokenizer's state: where it is in the text and what it has read.
struct Reader<'a> {
    syntax: EdiSyntax,
    text: &'a str,
    /// The separators and the release character with their roles,
    /// the release first (it makes the next character literal).
    marks: Vec<(char, Role)>,
    /// Whether a byte starts one of `marks` (the bytes to stop at).
    stops: [bool; 256],
    /// Where reading continues.
    at: usize,
    out: Text,
}

impl<'a> Reader<'a> {
    fn new(syntax: EdiSyntax, text: &'a str, seps: Separators) -> Reader<'a> {
        let marks: Vec<(char, Role)> = [
            (seps.release, Role::Release),
            (Some(seps.segment), Role::Segment),
            (Some(seps.element), Role::Element),
            (Some(seps.component), Role::Component),
            (seps.repetition, Role::Repetition),
        ]
        .into_iter()
        .filter_map(|(c, role)| Some((c?, role)))
        .collect();
        let mut stops = [false; 256];
        for (c, _) in &marks {
            let mut buf = [0; 4];
            stops[usize::from(c.encode_utf8(&mut buf).as_bytes()[0])] = true;
        }
        let out = Text { values: String::with_capacity(text.len()), parts: Vec::new() };
        Reader { syntax, text, marks, stops, at: 0, out }
    }

    /// Line breaks after a terminator are skipped, unless they are the terminator.
    fn line_break_between_segments(&self) -> bool {
        let rest = &self.text[self.at..];
        (rest.starts_with('\r') || rest.starts_with('\n')) && self.mark(rest) != Some(Role::Segment)
    }

    /// The role of the separator `rest` starts with, if any.
    fn mark(&self, rest: &str) -> Option<Role> {
        self.marks.iter().find(|(c, _)| rest.starts_with(*c)).map(|&(_, role)| role)
    }

    /// Reads one segment up to and including its terminator; its parts in `out`.
    fn segment(&mut self, number: usize) -> Result<Range<usize>, Located> {
        let first = self.out.parts.len();
        let start = self.out.values.len();
        let mut part = Part { start, end: start, element: 0, repeat: 0 };
        let bytes = self.text.as_bytes();
        let mut run = self.at;
        loop {
            let Some(stop) = bytes[self.at..].iter().position(|&b| self.stops[usize::from(b)]) else {
                self.at = self.text.len();
                self.out.values.push_str(&self.text[run..]);
                self.out.parts.push(Part { end: self.out.values.len(), ..part });
                return Err(self.unterminated(number, first));
            };
            self.at += stop;
            let rest = &self.text[self.at..];
            let Some(role) = self.mark(rest) else {
                // The first byte of a separator that is not ASCII, starting another character.
                self.at += rest.chars().next().map_or(1, char::len_utf8);
                continue;
            };
            self.out.values.push_str(&self.text[run..self.at]);
            let width = rest.chars().next().map_or(1, char::len_utf8);
            self.at += width;
            if role == Role::Release {
                let Some(next) = self.text[self.at..].chars().next() else {
                    return Err(premature(malformed(
                        self.syntax,
                        "the body ends with a release character".into(),
                    )));
                };
                self.out.values.push(next);
                self.at += next.len_utf8();
                run = self.at;
                continue;
            }
            run = self.at;
            part.end = self.out.values.len();
            self.out.parts.push(part);
            let here = self.out.values.len();
            part = match role {
                Role::Segment => break,
                Role::Element => Part { start: here, end: here, element: part.element + 1, repeat: 0 },
                Role::Repetition => Part { start: here, end: here, repeat: part.repeat + 1, ..part },
                Role::Component | Role::Release => Part { start: here, end: here, ..part },
            };
        }
        let parts = first..self.out.parts.len();
        check_tag(self.syntax, &self.out.values[start..self.out.parts[first].end], number)
            .map_err(refusal::syntax)?;
        Ok(parts)
    }

    /// The error for a segment the text ends in, named by its first element.
    fn unterminated(&self, number: usize, first: usize) -> Located {
        let parts = &self.out.parts[first..];
        let tag_end = parts.iter().take_while(|p| p.element == 0).last().map_or(parts[0].start, |p| p.end);
        let tag: String = self.out.values[parts[0].start..tag_end].chars().take(20).collect();
        premature(malformed(
            self.syntax,
            format!("segment {number} ({tag}) is not terminated by `{}`", self.mark_char(Role::Segment)),
        ))
    }

    fn mark_char(&self, role: Role) -> char {
        self.marks.iter().find(|(_, r)| *r == role).map_or(' ', |&(c, _)| c)
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

/// Values at an IDoc-notation path on a message's segments, as on its
/// rendering (see the module docs of `edi`): strings trimmed, blanks
/// dropped, repeats flattened.
pub(crate) fn values(segments: &[Segment], path: &IdocPath) -> Vec<Value> {
    let Some((first, rest)) = path.steps.split_first() else { return Vec::new() };
    let (tag, glued) = split_glued(first);
    let mut positions: Vec<&str> = glued.into_iter().collect();
    positions.extend(rest.iter().map(|s| s.name.as_str()));
    if rest.iter().any(|s| !s.filters.is_empty()) || positions.len() > 2 {
        return Vec::new();
    }
    let Some(positions) = positions.iter().map(|p| index(p)).collect::<Option<Vec<_>>>() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for seg in segments.iter().filter(|s| is_segment(s, tag, first)) {
        match positions.as_slice() {
            [] => crate::eval::push_value(&seg.render(), true, &mut out),
            [e] => seg.repeats(*e).flatten().for_each(|v| push_text(v, &mut out)),
            [e, c] => at(seg, *e, *c).for_each(|v| push_text(v, &mut out)),
            _ => {}
        }
    }
    out
}

/// A value trimmed, unless it is blank.
fn push_text(value: &str, out: &mut Vec<Value>) {
    let t = value.trim();
    if !t.is_empty() {
        out.push(Value::String(t.to_string()));
    }
}

/// `01` → 1; anything but 1–99 written with digits is no position.
fn index(step: &str) -> Option<usize> {
    let n: usize = step.parse().ok()?;
    (step.bytes().all(|b| b.is_ascii_digit()) && (1..=99).contains(&n)).then_some(n)
}

/// Whether a segment has this tag and passes the step's filters.
fn is_segment(seg: &Segment, tag: &str, step: &Step) -> bool {
    if seg.tag() != tag {
        return false;
    }
    step.filters.iter().all(|(field, want)| {
        let mut parts = field.split('.');
        let element = parts.next().and_then(index);
        let component = parts.next().map(index);
        let (Some(e), None) = (element, parts.next()) else { return false };
        match component {
            // An element compares only where it is simple (one component).
            None => seg
                .repeats(e)
                .any(|mut r| matches!((r.next(), r.next()), (Some(v), None) if v.trim() == want)),
            Some(Some(c)) => at(seg, e, c).any(|v| v.trim() == want),
            Some(None) => false,
        }
    })
}

/// Component `c` (1-based) of element `e` (1-based), one per repeat that has it.
fn at(seg: &Segment, e: usize, c: usize) -> impl Iterator<Item = &str> {
    seg.repeats(e).filter_map(move |mut components| components.nth(c - 1))
}
