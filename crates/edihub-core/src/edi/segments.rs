//! The tokenizer both syntaxes share, and positional key paths.
//!
//! Tokenizing needs only the separators: the segment terminator ends a
//! segment, the element separator an element, the component separator a
//! component, the repetition separator a repeat, and the release character
//! (EDIFACT only) makes the next character literal. Line breaks after a
//! terminator are skipped (many senders put one segment per line) unless the
//! line break *is* the terminator.

use serde_json::Value;

use super::refusal::{self, Fault, Located};
use super::{EdiSyntax, Segment, Separators, malformed, split_glued};
use crate::CoreError;
use crate::path::{KeyPath, Step};

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
    let premature = |e| (e, Fault::Syntax { premature_end: true });
    let mut segments = Vec::new();
    let mut chars = text.chars();
    let mut reps: Vec<Vec<String>> = vec![vec![String::new()]];
    let mut elements: Vec<Vec<Vec<String>>> = Vec::new();
    let mut open = false;
    let mut number = first_number;
    while let Some(c) = chars.next() {
        if !open && c != seps.segment && matches!(c, '\r' | '\n') {
            continue;
        }
        open = true;
        let current = reps.last_mut().and_then(|r| r.last_mut()).expect("never empty");
        if Some(c) == seps.release {
            match chars.next() {
                Some(next) => current.push(next),
                None => {
                    return Err(premature(malformed(
                        syntax,
                        "the body ends with a release character".into(),
                    )));
                }
            }
        } else if c == seps.segment {
            elements.push(std::mem::replace(&mut reps, vec![vec![String::new()]]));
            segments.push(segment(syntax, std::mem::take(&mut elements), number).map_err(refusal::syntax)?);
            number += 1;
            open = false;
        } else if c == seps.element {
            elements.push(std::mem::replace(&mut reps, vec![vec![String::new()]]));
        } else if c == seps.component {
            reps.last_mut().expect("never empty").push(String::new());
        } else if Some(c) == seps.repetition {
            reps.push(vec![String::new()]);
        } else {
            current.push(c);
        }
    }
    if open {
        let first = elements.first().unwrap_or(&reps);
        let tag: String = first.concat().concat().chars().take(20).collect();
        return Err(premature(malformed(
            syntax,
            format!("segment {number} ({tag}) is not terminated by `{}`", seps.segment),
        )));
    }
    Ok(segments)
}

/// Builds a segment from its elements, the first being the tag.
fn segment(
    syntax: EdiSyntax,
    mut elements: Vec<Vec<Vec<String>>>,
    number: usize,
) -> Result<Segment, CoreError> {
    let tag_element = elements.remove(0);
    let tag = tag_element.first().and_then(|c| c.first()).cloned().unwrap_or_default();
    let valid =
        (2..=3).contains(&tag.len()) && tag.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    if !valid {
        let shown: String = tag.chars().take(20).collect();
        return Err(malformed(
            syntax,
            format!("segment {number} has no valid tag (2–3 letters or digits), found `{shown}`"),
        ));
    }
    Ok(Segment { number, tag, elements })
}

/// Values at an IDoc-notation path on a rendered message (see the module
/// docs of `edi`): strings trimmed, blanks dropped, repeats flattened.
pub(crate) fn values(rendered: &Value, path: &KeyPath) -> Vec<Value> {
    let KeyPath::Idoc(p) = path else {
        return crate::eval::values(rendered, path);
    };
    let Some((first, rest)) = p.steps.split_first() else { return Vec::new() };
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
    for seg in rendered.as_array().into_iter().flatten().filter(|s| is_segment(s, tag, first)) {
        let found = match positions.as_slice() {
            [] => vec![seg.clone()],
            [e] => at(seg, *e, None),
            [e, c] => at(seg, *e, Some(*c)),
            _ => Vec::new(),
        };
        for v in found {
            crate::eval::push_value(&v, true, &mut out);
        }
    }
    out
}

/// `01` → 1; anything but 1–99 written with digits is no position.
fn index(step: &str) -> Option<usize> {
    let n: usize = step.parse().ok()?;
    (step.bytes().all(|b| b.is_ascii_digit()) && (1..=99).contains(&n)).then_some(n)
}

/// Whether a rendered segment has this tag and passes the step's filters.
fn is_segment(seg: &Value, tag: &str, step: &Step) -> bool {
    if seg.get(0).and_then(Value::as_str) != Some(tag) {
        return false;
    }
    step.filters.iter().all(|(field, want)| {
        let mut parts = field.split('.');
        let element = parts.next().and_then(index);
        let component = parts.next().map(index);
        let (Some(e), None) = (element, parts.next()) else { return false };
        let component = match component {
            None => None,
            Some(Some(c)) => Some(c),
            Some(None) => return false,
        };
        at(seg, e, component).iter().any(|v| v.as_str().is_some_and(|s| s.trim() == want))
    })
}

/// Element `e` (1-based) of a rendered segment, or its component `c`; one
/// value per repeat.
fn at(seg: &Value, e: usize, c: Option<usize>) -> Vec<Value> {
    let Some(element) = seg.get(e) else { return Vec::new() };
    let repeats = match element.get("repeat").and_then(Value::as_array) {
        Some(reps) => reps.clone(),
        None => vec![element.clone()],
    };
    repeats
        .into_iter()
        .filter_map(|r| match (c, r) {
            (None, v) => Some(v),
            (Some(c), Value::Array(items)) => items.get(c - 1).cloned(),
            // A composite sent with its first component only has no separator.
            (Some(1), v @ Value::String(_)) => Some(v),
            _ => None,
        })
        .collect()
}
