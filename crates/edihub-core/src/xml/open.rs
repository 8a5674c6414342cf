//! Opening an element: the checks a start tag must pass, and its attributes.
//!
//! Attributes become `@NAME` members by local name, so they are in place
//! before any child is merged after them. Namespace declarations are
//! dropped (transport, not content). Two attributes with the same
//! qualified name are an error; `a:x` and `b:x` merely share a local name,
//! and the last one wins.

use std::borrow::Cow;
use std::collections::HashSet;

use quick_xml::XmlVersion;
use quick_xml::errors::Error as XmlError;
use quick_xml::escape::EscapeError;
use quick_xml::events::BytesStart;
use serde_json::{Map, Value};

use super::chars::check_chars;
use super::{Frame, MAX_DEPTH, Parser, Role, reborrow};
use crate::{CoreError, render};

impl<'a> Parser<'a> {
    /// A frame for a start tag beginning at `at`, after refusing a second
    /// root and nesting deeper than [`MAX_DEPTH`].
    pub(super) fn open(&self, start: &BytesStart<'a>, at: usize) -> Result<Frame<'a>, CoreError> {
        if let Some((first, _)) = &self.root {
            return Err(CoreError::MultipleRoots {
                first: first.to_string(),
                second: start.local_name().into_inner().to_string(),
            });
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(CoreError::XmlTooDeep(MAX_DEPTH));
        }
        let name = reborrow(self.text, split_name(start.name().into_inner()).1);
        let role = self.role_of(&name);
        let keep = !matches!(role, Role::Skipped);
        let members = attributes(start, &name, self.reader.buffer_position(), keep)?;
        Ok(Frame {
            name,
            members,
            text: Cow::Borrowed(""),
            elements: 0,
            last: Cow::Borrowed(""),
            start: at,
            role,
        })
    }
}

/// The attributes of `<element …>` (whose tag ends at `offset`) as members;
/// only checked, and left out, unless `keep`.
fn attributes(
    start: &BytesStart,
    element: &str,
    offset: u64,
    keep: bool,
) -> Result<Map<String, Value>, CoreError> {
    let mut members = Map::new();
    // Most IDoc elements are fields without attributes.
    if start.attributes_raw().is_empty() {
        return Ok(members);
    }
    let mut seen = SeenKeys::default();
    for attr in start.attributes().with_checks(false) {
        let attr = attr.map_err(|e| CoreError::XmlSyntax {
            offset,
            reason: format!("bad attribute in <{element}>: {e}"),
        })?;
        let key = attr.key;
        let (prefix, local) = split_name(key.into_inner());
        if prefix.unwrap_or(local) == "xmlns" {
            continue;
        }
        let value = attr.normalized_value(XmlVersion::Implicit1_0).map_err(|e| match e {
            XmlError::Escape(EscapeError::UnrecognizedEntity(_, name)) => CoreError::UndefinedEntity(name),
            other => CoreError::XmlSyntax {
                offset,
                reason: format!("bad attribute value in <{element}>: {other}"),
            },
        })?;
        if !seen.insert(key.into_inner()) {
            return Err(CoreError::XmlSyntax {
                offset,
                reason: format!("attribute `{}` repeated in <{element}>", key.as_ref()),
            });
        }
        check_chars(&value, offset)?;
        if !keep {
            continue;
        }
        let mut name = String::with_capacity(local.len() + 1);
        name.push('@');
        name.push_str(local);
        // Inserting an existing key replaces its value: the last one wins.
        members.insert(name, Value::String(render::trim(&value).to_string()));
    }
    Ok(members)
}

/// A qualified name's prefix (before the first `:`) and local name, as
/// quick-xml's `QName` splits it. A byte loop: names are short, and a
/// `char` search costs more to set up than it scans.
fn split_name(qname: &str) -> (Option<&str>, &str) {
    match qname.bytes().position(|b| b == b':') {
        Some(i) => (Some(&qname[..i]), &qname[i + 1..]),
        None => (None, qname),
    }
}

/// How many qualified names [`SeenKeys`] compares in a list before it
/// switches to a set.
pub(super) const FEW: usize = 8;

/// Qualified attribute names of one start tag, for the duplicate check.
///
/// quick-xml's own check compares every pair (quadratic in the attribute
/// count). A short list costs no allocation for the usual handful of
/// attributes; past it a set keeps the check linear.
#[derive(Default)]
struct SeenKeys<'k> {
    few: [&'k str; FEW],
    len: usize,
    many: Option<HashSet<&'k str>>,
}

impl<'k> SeenKeys<'k> {
    /// Records a name; `false` when it was already there.
    fn insert(&mut self, key: &'k str) -> bool {
        if let Some(many) = &mut self.many {
            return many.insert(key);
        }
        if self.few[..self.len].contains(&key) {
            return false;
        }
        if self.len < FEW {
            self.few[self.len] = key;
            self.len += 1;
        } else {
            let mut many: HashSet<&str> = self.few.iter().copied().collect();
            many.insert(key);
            self.many = Some(many);
        }
        true
    }
}
