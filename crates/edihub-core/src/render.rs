//! One JSON shape for an IDoc, whichever way it arrived.
//!
//! SAP Integration Suite and common converters write an IDoc as JSON like
//! this: a segment is an object, a field is a string, a repeated segment (or
//! field) is an array, attributes are `"@NAME"` members. This module renders
//! the XML element tree into exactly that shape, and reads that shape back
//! into an element tree. A JSON IDoc is read into a tree and rendered again,
//! so both inputs end in the *same* normalised value: a one-element array
//! becomes a single object, numbers and booleans become text, `null` is an
//! absent field, text is trimmed. Key paths, JSONPath queries and content
//! fingerprints all run on that value, which is why an IDoc sent as XML and
//! the same IDoc sent as JSON give identical values and fingerprints.
//!
//! Namespace declarations (`@xmlns`, `@xmlns:ns0`) are dropped in both
//! directions: they are transport details, not message content. Mixed
//! content (text next to child elements, never seen in IDocs) is kept under
//! a `"#text"` member so it is not lost.

use serde_json::{Map, Value};

use crate::CoreError;
use crate::xml::Element;

/// Member name holding text of an element that also has children or attributes.
pub(crate) const TEXT_MEMBER: &str = "#text";

/// Renders an element as JSON: a leaf without attributes is its text;
/// anything else is an object of attributes, text and children.
#[cfg(test)]
pub(crate) fn to_json(element: &Element) -> Value {
    into_json(element.clone())
}

/// [`to_json`] consuming the element: names and texts move into the value
/// instead of being copied.
pub(crate) fn into_json(element: Element) -> Value {
    let Element { name: _, attrs, text, children } = element;
    if children.is_empty() && attrs.is_empty() {
        return Value::String(text);
    }
    let mut map = Map::new();
    for (name, value) in attrs {
        map.insert(format!("@{name}"), Value::String(value));
    }
    if !text.is_empty() {
        map.insert(TEXT_MEMBER.to_string(), Value::String(text));
    }
    for child in children {
        let name = child.name.clone();
        let rendered = into_json(child);
        match map.get_mut(&name) {
            None => {
                map.insert(name, rendered);
            }
            Some(Value::Array(items)) => items.push(rendered),
            Some(existing) => {
                let first = existing.take();
                *existing = Value::Array(vec![first, rendered]);
            }
        }
    }
    Value::Object(map)
}

/// Whether a member name is a namespace declaration attribute.
fn is_xmlns(attr: &str) -> bool {
    attr == "xmlns" || attr.starts_with("xmlns:")
}

/// Scalar JSON as element text (`null` gives `None`).
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Reads a JSON member `name: value` as the elements it stands for:
/// none for `null`, several for an array, one otherwise.
pub(crate) fn from_json(name: &str, value: &Value) -> Result<Vec<Element>, CoreError> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                if item.is_array() {
                    return Err(CoreError::InvalidIdocJson(format!(
                        "`{name}` holds an array inside an array"
                    )));
                }
                out.extend(from_json(name, item)?);
            }
            Ok(out)
        }
        Value::Object(members) => Ok(vec![object_element(name, members)?]),
        scalar => {
            let mut element = Element::named(name);
            element.text = scalar_text(scalar).unwrap_or_default();
            Ok(vec![element])
        }
    }
}

/// Reads an object as one element: `@` members are attributes, `#text` is
/// text, everything else is children.
fn object_element(name: &str, members: &Map<String, Value>) -> Result<Element, CoreError> {
    let mut element = Element::named(name);
    for (key, value) in members {
        if let Some(attr) = key.strip_prefix('@') {
            if is_xmlns(attr) || value.is_null() {
                continue;
            }
            let text = scalar_text(value).ok_or_else(|| {
                CoreError::InvalidIdocJson(format!(
                    "attribute `{key}` of `{name}` must be a string, number or boolean"
                ))
            })?;
            element.attrs.push((attr.to_string(), text));
        } else if key == TEXT_MEMBER {
            if value.is_null() {
                continue;
            }
            element.text = scalar_text(value).ok_or_else(|| {
                CoreError::InvalidIdocJson(format!(
                    "`{TEXT_MEMBER}` of `{name}` must be a string, number or boolean"
                ))
            })?;
        } else {
            element.children.extend(from_json(key, value)?);
        }
    }
    Ok(element)
}

#[cfg(test)]
mod tests;
