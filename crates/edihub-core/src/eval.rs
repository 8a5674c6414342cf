//! Evaluating key paths on a JSON value, and removing what they select.
//!
//! Both notations produce locations first. IDoc paths are walked here;
//! JSONPath is run by jsonpath-rust, whose results carry RFC 9535 normalized
//! paths (`$['a'][0]['b']`) that are parsed back into locations. Values are
//! then read at those locations and normalised the one way the fingerprint
//! needs: strings trimmed, empty strings and `null` dropped (a blank key is a
//! missing key), numbers, booleans, objects and arrays kept as JSON.
//!
//! Removal (for `exclude_fields` in content mode) deletes the deepest and
//! right-most locations first, so removing one element of an array never
//! shifts the index of another location still to be removed.

use jsonpath_rust::query::js_path_process;
use serde_json::Value;

use crate::path::{KeyPath, Loc, Seg, Step};
use crate::render;

/// The value at `loc` (if it still exists).
pub(crate) fn get<'a>(root: &'a Value, loc: &[Seg]) -> Option<&'a Value> {
    loc.iter().try_fold(root, |v, seg| match (v, seg) {
        (Value::Object(m), Seg::Key(k)) => m.get(k),
        (Value::Array(a), Seg::Index(i)) => a.get(*i),
        _ => None,
    })
}

/// Locations selected by a path, in document order.
pub(crate) fn locate(root: &Value, path: &KeyPath) -> Vec<Loc> {
    match path {
        KeyPath::Idoc(p) => locate_steps(root, &p.steps),
        KeyPath::Json(p) => match js_path_process(&p.query, root) {
            Ok(found) => found.into_iter().filter_map(|r| parse_normalized(&r.path)).collect(),
            // Only function results that are not part of the document land
            // here (e.g. `$.length()`); they select nothing.
            Err(_) => Vec::new(),
        },
    }
}

/// Values at a path: normalised, in document order, blanks dropped. An
/// IDoc path is walked for its values alone, without their locations.
pub(crate) fn values(root: &Value, path: &KeyPath) -> Vec<Value> {
    let mut out = Vec::new();
    match path {
        KeyPath::Idoc(p) => {
            for ((), v) in walk_steps(root, &p.steps, ()) {
                push_value(v, true, &mut out);
            }
        }
        KeyPath::Json(_) => {
            for loc in locate(root, path) {
                if let Some(v) = get(root, &loc) {
                    push_value(v, false, &mut out);
                }
            }
        }
    }
    out
}

pub(crate) fn push_value(v: &Value, flatten: bool, out: &mut Vec<Value>) {
    match v {
        Value::Null => {}
        Value::String(s) => {
            let t = render::trim(s);
            if !t.is_empty() {
                out.push(Value::String(t.to_string()));
            }
        }
        Value::Array(items) if flatten => items.iter().for_each(|i| push_value(i, true, out)),
        other => out.push(other.clone()),
    }
}

/// Where a walk has got to: the location ([`Loc`]) when the caller needs
/// it, nothing (`()`) when only the values are wanted, which spares a
/// location's allocations at every step.
trait Trail: Clone {
    /// This trail one segment further.
    fn then(self, seg: impl FnOnce() -> Seg) -> Self;
}

impl Trail for Loc {
    fn then(mut self, seg: impl FnOnce() -> Seg) -> Self {
        self.push(seg());
        self
    }
}

impl Trail for () {
    fn then(self, _: impl FnOnce() -> Seg) -> Self {}
}

/// Expands a value into itself or, for arrays (nested too), its elements.
fn flatten<'a, T: Trail>(trail: T, v: &'a Value, out: &mut Vec<(T, &'a Value)>) {
    match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                flatten(trail.clone().then(|| Seg::Index(i)), item, out);
            }
        }
        _ => out.push((trail, v)),
    }
}

/// Walks IDoc path steps from `root`.
fn locate_steps(root: &Value, steps: &[Step]) -> Vec<Loc> {
    walk_steps(root, steps, Loc::new()).into_iter().map(|(loc, _)| loc).collect()
}

/// Walks IDoc path steps from `root`, whose trail is `start`: the values
/// selected, in document order, each with its trail.
fn walk_steps<'a, T: Trail>(root: &'a Value, steps: &[Step], start: T) -> Vec<(T, &'a Value)> {
    let mut current = vec![(start, root)];
    for (i, step) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        let mut next = Vec::new();
        let mut parents = Vec::new();
        for (trail, v) in current {
            flatten(trail, v, &mut parents);
        }
        for (trail, v) in parents {
            let Some(child) = v.as_object().and_then(|m| m.get(&step.name)) else {
                continue;
            };
            let child_trail = trail.then(|| Seg::Key(step.name.clone()));
            if last && step.filters.is_empty() {
                next.push((child_trail, child));
                continue;
            }
            let mut items = Vec::new();
            flatten(child_trail, child, &mut items);
            next.extend(items.into_iter().filter(|(_, v)| matches(v, &step.filters)));
        }
        current = next;
    }
    current
}

/// Whether a segment satisfies every `[FIELD=VALUE]` filter.
fn matches(v: &Value, filters: &[(String, String)]) -> bool {
    filters.iter().all(|(field, want)| {
        let mut found = Vec::new();
        if field.contains('.') {
            for have in descendants(v, field) {
                flatten((), have, &mut found);
            }
        } else {
            // The common case, without the walk's allocations.
            let Some(have) = v.as_object().and_then(|m| m.get(field)) else {
                return false;
            };
            flatten((), have, &mut found);
        }
        found.iter().any(|((), h)| scalar_is(h, want))
    })
}

/// The values at a dotted field below `v`, through repeated segments.
fn descendants<'a>(v: &'a Value, field: &str) -> Vec<&'a Value> {
    let mut current = vec![v];
    for part in field.split('.') {
        let mut items = Vec::new();
        for c in current {
            flatten((), c, &mut items);
        }
        current = items.into_iter().filter_map(|(_, item)| item.as_object()?.get(part)).collect();
    }
    current
}

/// Whether a scalar's text (a string trimmed) is `want`; never for
/// `null`, arrays and objects. A string is compared in place.
fn scalar_is(v: &Value, want: &str) -> bool {
    match v {
        Value::String(s) => render::trim(s) == want,
        Value::Number(n) => n.to_string() == want,
        Value::Bool(b) => b.to_string() == want,
        _ => false,
    }
}

/// Parses an RFC 9535 normalized path (`$['a'][0]`) into a location.
pub(crate) fn parse_normalized(path: &str) -> Option<Loc> {
    let mut rest = path.strip_prefix('$')?;
    let mut loc = Vec::new();
    while !rest.is_empty() {
        rest = rest.strip_prefix('[')?;
        if let Some(quoted) = rest.strip_prefix('\'') {
            let mut key = String::new();
            let mut chars = quoted.char_indices();
            let end = loop {
                let (i, c) = chars.next()?;
                match c {
                    '\'' => break i,
                    '\\' => key.push(unescape(&mut chars)?),
                    c => key.push(c),
                }
            };
            loc.push(Seg::Key(key));
            rest = quoted[end + 1..].strip_prefix(']')?;
        } else {
            let close = rest.find(']')?;
            loc.push(Seg::Index(rest[..close].parse().ok()?));
            rest = &rest[close + 1..];
        }
    }
    Some(loc)
}

fn unescape(chars: &mut std::str::CharIndices) -> Option<char> {
    Some(match chars.next()?.1 {
        'b' => '\u{8}',
        'f' => '\u{c}',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'u' => {
            let hex: String = (0..4).filter_map(|_| chars.next().map(|(_, c)| c)).collect();
            char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
        }
        other => other,
    })
}

/// Removes the values at `locs` from `root` (the root itself is never removed).
pub(crate) fn remove_all(root: &mut Value, mut locs: Vec<Loc>) {
    locs.sort_unstable_by(|a, b| b.cmp(a));
    locs.dedup();
    for loc in locs {
        let Some((last, parent)) = loc.split_last() else {
            continue;
        };
        let target = parent.iter().try_fold(&mut *root, |v, seg| match (v, seg) {
            (Value::Object(m), Seg::Key(k)) => m.get_mut(k),
            (Value::Array(a), Seg::Index(i)) => a.get_mut(*i),
            _ => None,
        });
        match (target, last) {
            (Some(Value::Object(m)), Seg::Key(k)) => {
                m.remove(k);
            }
            (Some(Value::Array(a)), Seg::Index(i)) if *i < a.len() => {
                a.remove(*i);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
