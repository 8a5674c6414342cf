//! Key paths: where a message's business keys live.
//!
//! Two notations, told apart by the first character. A path starting with
//! `$` is RFC 9535 JSONPath (jsonpath-rust), parsed once when the path is
//! configured so a bad path fails at start-up rather than per message.
//! Anything else is an *IDoc path*, the notation SAP people already write:
//! dot-separated segment and field names from the `IDOC` element
//! (`E1EDK01.BELNR`), each step optionally filtered on the trimmed text of a
//! child field (`E1EDK02[QUALF=001].BELNR`, several filters all apply), or
//! of a descendant named by a dotted field (`E1EDP01[E1EDP19.QUALF=002]`;
//! on EDIFACT and X12 messages `[01.01=ON]` names element 1, component 1).
//!
//! Both notations are evaluated on the JSON rendering of a document (see
//! `render`), so there is exactly one evaluator per notation and an IDoc sent
//! as XML or as JSON cannot give different answers. An IDoc path walks
//! object members and flattens arrays (a repeated segment is an array), which
//! also makes it useful on plain JSON.
//!
//! Evaluation yields *locations* ([`Loc`]), not values, so the same code
//! serves value extraction and the removal of excluded fields before a
//! content fingerprint.

use std::fmt;
use std::str::FromStr;

use jsonpath_rust::parser::model::JpQuery;
use jsonpath_rust::parser::parse_json_path;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::CoreError;

/// One step from a JSON value to a child: an object member or an array index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Seg {
    /// Object member.
    Key(String),
    /// Array element.
    Index(usize),
}

/// A location inside a JSON value.
pub(crate) type Loc = Vec<Seg>;

/// One step of an IDoc path: a name and its filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    /// Segment or field name.
    pub name: String,
    /// `(field, value)` pairs that must all match.
    pub filters: Vec<(String, String)>,
}

/// A parsed IDoc path such as `E1EDK02[QUALF=001].BELNR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdocPath {
    src: String,
    pub(crate) steps: Vec<Step>,
}

/// A parsed JSONPath such as `$.order.id`.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPathQuery {
    src: String,
    pub(crate) query: JpQuery,
}

/// A configured key path: an IDoc path or a JSONPath (starts with `$`).
#[derive(Debug, Clone, PartialEq)]
pub enum KeyPath {
    /// Dot-separated IDoc path with optional qualifier filters.
    Idoc(IdocPath),
    /// RFC 9535 JSONPath.
    Json(JsonPathQuery),
}

impl KeyPath {
    /// Parses a path; surrounding whitespace is ignored.
    pub fn parse(src: &str) -> Result<KeyPath, CoreError> {
        let src = src.trim();
        let invalid = |reason: String| CoreError::InvalidKeyPath { path: src.to_string(), reason };
        if src.is_empty() {
            return Err(invalid("the path is empty".into()));
        }
        if src.starts_with('$') {
            let query = parse_json_path(src).map_err(|e| invalid(e.to_string()))?;
            return Ok(KeyPath::Json(JsonPathQuery { src: src.to_string(), query }));
        }
        let steps = parse_steps(src).map_err(invalid)?;
        Ok(KeyPath::Idoc(IdocPath { src: src.to_string(), steps }))
    }

    /// The path as written (trimmed).
    pub fn as_str(&self) -> &str {
        match self {
            KeyPath::Idoc(p) => &p.src,
            KeyPath::Json(p) => &p.src,
        }
    }

    /// Whether this is the JSONPath `$` (the whole document: content mode).
    pub fn is_root(&self) -> bool {
        matches!(self, KeyPath::Json(p) if p.src == "$")
    }
}

impl FromStr for KeyPath {
    type Err = CoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KeyPath::parse(s)
    }
}

/// Serialises as the source text.
impl Serialize for KeyPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Deserialises from a string and parses it, so a bad path fails when the
/// configuration is read.
impl<'de> Deserialize<'de> for KeyPath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let src = String::deserialize(deserializer)?;
        KeyPath::parse(&src).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Characters that cannot appear in a step name or filter field.
fn is_reserved(c: char) -> bool {
    matches!(c, '.' | '[' | ']' | '=') || c.is_whitespace()
}

/// Parses `A.B[F=V][G=W].C` into steps.
fn parse_steps(src: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut rest = src;
    loop {
        let name_len = rest.find(['.', '[']).unwrap_or(rest.len());
        let name = &rest[..name_len];
        if name.is_empty() {
            return Err(format!("empty step {}", step_hint(steps.len())));
        }
        if let Some(bad) = name.chars().find(|c| is_reserved(*c)) {
            return Err(format!("unexpected `{bad}` in step `{name}`"));
        }
        let mut step = Step { name: name.to_string(), filters: Vec::new() };
        rest = &rest[name_len..];
        while let Some(inner) = rest.strip_prefix('[') {
            let close = inner.find(']').ok_or_else(|| format!("`[` after `{name}` is not closed"))?;
            step.filters.push(parse_filter(&inner[..close])?);
            rest = &inner[close + 1..];
        }
        steps.push(step);
        match rest.strip_prefix('.') {
            Some(next) => rest = next,
            None if rest.is_empty() => return Ok(steps),
            None => return Err(format!("unexpected `{rest}` after `{name}`")),
        }
    }
}

fn step_hint(index: usize) -> String {
    if index == 0 { "at the start".to_string() } else { format!("after step {index}") }
}

/// Parses `FIELD=VALUE` (the value may be quoted with `'` or `"`).
fn parse_filter(text: &str) -> Result<(String, String), String> {
    let (field, value) =
        text.split_once('=').ok_or_else(|| format!("filter `[{text}]` needs the form [FIELD=VALUE]"))?;
    let field = field.trim();
    // A dotted field (`01.01`, `E1EDP19.QUALF`) reaches into a child.
    if field.split('.').any(|part| part.is_empty() || part.chars().any(is_reserved)) {
        return Err(format!("filter `[{text}]` has no valid field name"));
    }
    let value = value.trim();
    let unquoted = ['"', '\''].iter().find_map(|q| value.strip_prefix(*q)?.strip_suffix(*q)).unwrap_or(value);
    Ok((field.to_string(), unquoted.trim().to_string()))
}

#[cfg(test)]
mod tests;
