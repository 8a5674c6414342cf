//! The tokenizer both syntaxes share, and positional key paths.
//!
//! Tokenizing needs only the separators: the segment terminator ends a
//! segment, the element separator an element, the component separator a
//! component, the repetition separator a repeat, and the release character
//! (EDIFACT only) makes the next character literal. Line breaks after a
//! terminator are skipped (many senders put one segment per line) unless the
//! line break *is* the terminator. White space after the last terminator is
//! dropped before tokenizing ([`trim_trailing`]).
//!
//! A NUL character is refused wherever it stands (a syntax error, 400):
//! neither standard's character sets have it, and PostgreSQL text cannot
//! hold it. A segment over the shape limits ([`MAX_ELEMENTS`],
//! [`MAX_COMPONENTS`], [`MAX_REPEATS`]) is refused as unusable (422) as
//! soon as the tokenizer reaches the value over the limit. The limits are
//! the standards' own (two-digit positions) with room to spare: a segment
//! of millions of components is no message anyone sends, and its rendering
//! (an array of that many strings) is refused before anything is built.

use serde_json::Value;

mod reader;

pub(crate) use reader::tokenize_located;

use super::model::{EdiSyntax, Separators, malformed};
use super::segment::{Segment, Text, trim};
use crate::CoreError;
use crate::path::{IdocPath, Step};

/// Splits `text` into segments; `first_number` numbers the first one.
pub(crate) fn tokenize(
    syntax: EdiSyntax,
    text: &str,
    seps: Separators,
    first_number: usize,
) -> Result<Text, CoreError> {
    tokenize_located(syntax, text, seps, first_number).map_err(|(e, _)| e)
}

/// `text` without the white space (spaces, tabs, line breaks) after its
/// last segment terminator: neither standard defines anything after the
/// interchange trailer, and translators ignore what files end with. A
/// terminator that is itself white space (a line break) is kept.
pub(crate) fn trim_trailing(text: &str, terminator: char) -> &str {
    let trimmed = text.trim_end_matches(|c: char| c.is_ascii_whitespace());
    if terminator.is_ascii_whitespace() && text[trimmed.len()..].starts_with(terminator) {
        &text[..trimmed.len() + terminator.len_utf8()]
    } else {
        trimmed
    }
}

/// The largest text tokenized: a part's offsets are 32-bit, and unescaped
/// values are copied after the text, which at most doubles it.
pub(crate) const MAX_TEXT: usize = (u32::MAX / 2) as usize;

/// Most elements in one segment (after its tag). Both standards number
/// element positions with two digits (X12 `BEG03`, EDIFACT position `020`
/// in a segment's table), so no real segment has more; positional key
/// paths address 1–99 for the same reason.
pub(crate) const MAX_ELEMENTS: u32 = 99;

/// Most components in one element (or in one repetition of it): composite
/// positions are two digits as well, and real composites hold a few dozen
/// at most.
pub(crate) const MAX_COMPONENTS: u32 = 99;

/// Most repetitions of one element. The directories repeat an element up
/// to 99 times where they allow it at all; ten times that leaves room for
/// partners' own conventions.
pub(crate) const MAX_REPEATS: u32 = 999;

/// The error for a text of `len` bytes over [`MAX_TEXT`].
pub(crate) fn too_large(syntax: EdiSyntax, len: usize) -> Option<CoreError> {
    (len > MAX_TEXT).then(|| malformed(syntax, format!("the interchange is larger than {MAX_TEXT} bytes")))
}

/// Values at an IDoc-notation path on a message's segments, as on its
/// rendering (see the module docs of `edi`): strings trimmed, blanks
/// dropped, repeats flattened.
pub(crate) fn values<'a>(segments: impl Iterator<Item = Segment<'a>>, path: &IdocPath) -> Vec<Value> {
    let Some((first, rest)) = path.steps.split_first() else { return Vec::new() };
    let (tag, glued) = split_glued(first);
    let names = glued.into_iter().chain(rest.iter().map(|s| s.name.as_str()));
    if rest.iter().any(|s| !s.filters.is_empty()) || names.clone().count() > 2 {
        return Vec::new();
    }
    // At most two positions, in an array: this runs per key field and message.
    let mut positions = [0; 2];
    for (i, name) in names.enumerate() {
        let Some(p) = index(name) else { return Vec::new() };
        positions[i] = p;
    }
    let positions = &positions[..usize::from(glued.is_some()) + rest.len()];
    let mut out = Vec::new();
    for seg in segments.filter(|s| is_segment(s, tag, first)) {
        match positions {
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
    let t = trim(value);
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
    if !seg.has_tag(tag) {
        return false;
    }
    step.filters.iter().all(|(field, want)| {
        let mut parts = field.split('.');
        let element = parts.next().and_then(index);
        let component = parts.next().map(index);
        let (Some(e), None) = (element, parts.next()) else { return false };
        match component {
            // An element compares only where it is simple (one component).
            None => {
                seg.repeats(e).any(|mut r| matches!((r.next(), r.next()), (Some(v), None) if trim(v) == want))
            }
            Some(Some(c)) => at(*seg, e, c).any(|v| trim(v) == want),
            Some(None) => false,
        }
    })
}

/// Component `c` (1-based) of element `e` (1-based), one per repeat that has it.
fn at<'a>(seg: Segment<'a>, e: usize, c: usize) -> impl Iterator<Item = &'a str> + use<'a> {
    seg.repeats(e).filter_map(move |mut components| components.nth(c - 1))
}

/// Splits the X12-style first step `BEG03` into `BEG` and element `03`.
pub(crate) fn split_glued(step: &Step) -> (&str, Option<&str>) {
    let name = step.name.as_str();
    let n = name.len();
    if (4..=5).contains(&n) && name.is_ascii() && name[n - 2..].bytes().all(|b| b.is_ascii_digit()) {
        (&name[..n - 2], Some(&name[n - 2..]))
    } else {
        (name, None)
    }
}
