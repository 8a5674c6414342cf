//! Reading JSON text the way I-JSON (RFC 7493) reads it: unique member names.
//!
//! serde_json's own `Value` keeps the *last* of two members with the same
//! name. Another parser may keep the first, so `{"id":"a1","id":"a2"}` would
//! be deduplicated on `a2` here and processed as `a1` downstream: the dedup
//! key and the business key would drift apart, and RFC 8785 canonical form
//! assumes names are unique anyway. A body that means two things is refused,
//! never guessed at, so this module parses into the same `Value` through a
//! visitor that rejects a repeated name. serde_json adds the line and column
//! where the repeated member's value ends, and the visitor adds the
//! member's JSON pointer, so the sender can find it.
//!
//! The check is the insert's own lookup, made after the member's value is
//! read, as serde_json's visitor does, so it costs no more than parsing
//! into serde_json's `Value` (the core bench's `orders05_json_2k` compares
//! the two). The depth limit is serde_json's (it lives in the
//! deserializer, not in the visitor).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

use crate::CoreError;

/// Parses a JSON text into a `Value`, refusing an object with two members
/// of the same name ([`CoreError::DuplicateMember`]).
pub(crate) fn parse(text: &str) -> Result<Value, CoreError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = ValueSeed { pointer: &Pointer::Root }.deserialize(&mut de).map_err(map_error)?;
    de.end().map_err(map_error)?;
    Ok(value)
}

/// Where a value sits in the document, as a linked list up to the root, so a
/// pointer string is only built when a duplicate is found.
enum Pointer<'a> {
    Root,
    Member(&'a Pointer<'a>, &'a str),
    Index(&'a Pointer<'a>, usize),
}

impl fmt::Display for Pointer<'_> {
    /// RFC 6901: `/a/0/b`, with `~` and `/` escaped; the root is the empty string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pointer::Root => Ok(()),
            Pointer::Member(parent, name) => {
                write!(f, "{parent}/{}", name.replace('~', "~0").replace('/', "~1"))
            }
            Pointer::Index(parent, i) => write!(f, "{parent}/{i}"),
        }
    }
}

/// Marks the custom error raised for a duplicate, so [`map_error`] can tell it
/// from a syntax error without parsing serde_json's text for anything else.
const DUPLICATE: &str = "duplicate member ";

/// Deserializes one value at `pointer`.
struct ValueSeed<'p> {
    pointer: &'p Pointer<'p>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // serde_json never hands a non-finite float to a visitor.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            let pointer = Pointer::Index(self.pointer, items.len());
            match seq.next_element_seed(ValueSeed { pointer: &pointer })? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            let value = map.next_value_seed(ValueSeed { pointer: &Pointer::Member(self.pointer, &name) })?;
            // One lookup, the one the insert needs anyway, finds a repeat.
            match members.entry(name) {
                Entry::Occupied(seen) => {
                    let pointer = Pointer::Member(self.pointer, seen.key());
                    return Err(de::Error::custom(format_args!(
                        "{DUPLICATE}`{}` (JSON pointer `{pointer}`)",
                        seen.key()
                    )));
                }
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
            }
        }
        Ok(Value::Object(members))
    }
}

/// Maps serde_json errors: a duplicate name, depth over the recursion limit,
/// else position and reason.
fn map_error(e: serde_json::Error) -> CoreError {
    let text = e.to_string();
    if let Some(rest) = text.strip_prefix(DUPLICATE) {
        CoreError::DuplicateMember(rest.to_string())
    } else if text.starts_with("recursion limit exceeded") {
        CoreError::JsonTooDeep
    } else {
        CoreError::InvalidJson(text)
    }
}

#[cfg(test)]
mod tests;
