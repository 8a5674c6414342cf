//! One JSON shape for an IDoc, whichever way it arrived.
//!
//! SAP Integration Suite and common converters write an IDoc as JSON like
//! this: a segment is an object, a field is a string, a repeated segment (or
//! field) is an array, attributes are `"@NAME"` members. The XML parser
//! builds exactly that shape while it reads (with [`insert_child`] and
//! [`element`], so there is never a second tree to convert and drop), and
//! [`normalise`] brings a JSON IDoc into the same shape: a one-element array
//! becomes a single object, numbers and booleans become text, `null` is an
//! absent field, text is trimmed. Key paths, JSONPath queries and content
//! fingerprints all run on that value, which is why an IDoc sent as XML and
//! the same IDoc sent as JSON give identical values and fingerprints.
//!
//! Namespace declarations (`@xmlns`, `@xmlns:ns0`) are dropped in both
//! directions: they are transport details, not message content. Mixed
//! content (text next to child elements, never seen in IDocs) is kept under
//! a `"#text"` member so it is not lost.
//!
//! Members are a `serde_json::Map`, which (without serde_json's
//! `preserve_order` feature, off in this workspace) keeps them sorted by
//! name: the order in which attributes, text and children are inserted does
//! not show in the value. A test guards that assumption.

use serde_json::map::Entry;
use serde_json::{Map, Value};

use crate::CoreError;

/// Member name holding text of an element that also has children or attributes.
pub(crate) const TEXT_MEMBER: &str = "#text";

/// Adds a child element's rendering under its name: the first occurrence is
/// the value itself, a repeat turns it into an array in document order.
///
/// `repeat` says the previous sibling had the same name: then the member is
/// looked up by `name` as it is; otherwise one lookup with an owned key
/// either inserts it or finds it.
pub(crate) fn insert_child(members: &mut Map<String, Value>, name: &str, value: Value, repeat: bool) {
    if repeat && let Some(existing) = members.get_mut(name) {
        return append(existing, value);
    }
    match members.entry(name) {
        Entry::Vacant(vacant) => {
            vacant.insert(value);
        }
        Entry::Occupied(mut occupied) => append(occupied.get_mut(), value),
    }
}

/// Adds a repeat to a member: an array grows, a single value becomes one.
fn append(existing: &mut Value, value: Value) {
    match existing {
        Value::Array(items) => items.push(value),
        _ => {
            let first = existing.take();
            *existing = Value::Array(vec![first, value]);
        }
    }
}

/// Finishes an element from its members (`@` attributes and children) and
/// its trimmed text: a leaf without attributes is its text; anything else
/// is an object, with non-empty text under `#text`.
pub(crate) fn element(mut members: Map<String, Value>, text: String) -> Value {
    if members.is_empty() {
        return Value::String(text);
    }
    if !text.is_empty() {
        match members.get_mut(TEXT_MEMBER) {
            None => {
                members.insert(TEXT_MEMBER.to_string(), Value::String(text));
            }
            // XML elements named `#text` (quick-xml does not check names)
            // were merged as children; the text goes first, as it always has.
            // An element never renders as an array, so an array here is a
            // list of such children.
            Some(Value::Array(items)) => items.insert(0, Value::String(text)),
            Some(child) => {
                let first = child.take();
                *child = Value::Array(vec![Value::String(text), first]);
            }
        }
    }
    Value::Object(members)
}

/// `text.trim()`, which a text that starts and ends with a visible ASCII
/// character (the usual field value) passes unchanged: that is told from
/// two bytes, where `trim` decodes characters to test them for Unicode
/// whitespace.
pub(crate) fn trim(text: &str) -> &str {
    match text.as_bytes() {
        [first, .., last] if first.is_ascii_graphic() && last.is_ascii_graphic() => text,
        [only] if only.is_ascii_graphic() => text,
        _ => text.trim(),
    }
}

/// Whether a member name is a namespace declaration attribute.
fn is_xmlns(attr: &str) -> bool {
    attr == "xmlns" || attr.starts_with("xmlns:")
}

/// Scalar JSON as element text (`None` for `null`, arrays and objects).
fn scalar_text(value: Value) -> Option<String> {
    match value {
        Value::String(s) if trim(&s).len() == s.len() => Some(s),
        Value::String(s) => Some(trim(&s).to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Normalises a JSON member `name: value` into the renderings of the
/// elements it stands for: none for `null`, several for an array, one
/// otherwise. The value is consumed, so strings move instead of being copied.
pub(crate) fn normalise(name: &str, value: Value) -> Result<Vec<Value>, CoreError> {
    let mut out = Vec::new();
    normalise_into(name, value, &mut out)?;
    Ok(out)
}

/// [`normalise`] appending to `out`.
fn normalise_into(name: &str, value: Value, out: &mut Vec<Value>) -> Result<(), CoreError> {
    match value {
        Value::Null => {}
        Value::Array(items) => {
            for item in items {
                if item.is_array() {
                    return Err(CoreError::InvalidIdocJson(format!(
                        "`{name}` holds an array inside an array"
                    )));
                }
                normalise_into(name, item, out)?;
            }
        }
        Value::Object(members) => out.push(normalise_object(name, members)?),
        scalar => out.push(Value::String(scalar_text(scalar).unwrap_or_default())),
    }
    Ok(())
}

/// Normalises an object standing for one element: `@` members are
/// attributes, `#text` is text, everything else is children. Members are
/// visited in the map's order, so the first error found is always the same.
fn normalise_object(name: &str, members: Map<String, Value>) -> Result<Value, CoreError> {
    let mut out = Map::new();
    let mut text = String::new();
    for (key, value) in members {
        if let Some(attr) = key.strip_prefix('@') {
            if is_xmlns(attr) || value.is_null() {
                continue;
            }
            let attr_text = scalar_text(value).ok_or_else(|| {
                CoreError::InvalidIdocJson(format!(
                    "attribute `{key}` of `{name}` must be a string, number or boolean"
                ))
            })?;
            out.insert(key, Value::String(attr_text));
        } else if key == TEXT_MEMBER {
            if value.is_null() {
                continue;
            }
            text = scalar_text(value).ok_or_else(|| {
                CoreError::InvalidIdocJson(format!(
                    "`{TEXT_MEMBER}` of `{name}` must be a string, number or boolean"
                ))
            })?;
        } else {
            let mut children = normalise(&key, value)?;
            // Keys are unique, so one member is the only source of its children.
            match children.len() {
                0 => {}
                1 => {
                    out.insert(key, children.swap_remove(0));
                }
                _ => {
                    out.insert(key, Value::Array(children));
                }
            }
        }
    }
    Ok(element(out, text))
}

#[cfg(test)]
mod tests;
