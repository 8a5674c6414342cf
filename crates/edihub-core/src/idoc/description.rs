//! IDoc type descriptions: where each field of each segment sits.
//!
//! A flat-file IDoc carries its segment data as 1000 fixed-width
//! characters (SDATA) with nothing to say where one field ends. SAP
//! documents each IDoc type (transaction WE60, or the IDoc parser) with
//! every segment's fields, their offsets and lengths; with that
//! description a flat segment is split into the same fields its IDoc-XML
//! form has, under the segment *type* name XML uses (`E1EDK01`), whatever
//! name the file carries (the segment *definition*, `E2EDK01005`, or the
//! type). The description also gives the segment order SAP's syntax check
//! expects when the hub writes an IDoc for SAP.
//!
//! Two forms are read (see `json` and `parser_format`): SAP's parser
//! format as WE60 and the IDoc parser write it, and a JSON form for
//! hand-written descriptions. Both are checked the same way: names of at
//! most 30 characters, unique segment and field names, fields inside the
//! 1000 characters of SDATA and not overlapping.

mod json;
mod model;
mod parser_format;

use std::collections::HashMap;

use crate::CoreError;

pub(crate) use model::invalid;
pub use model::{FieldLayout, IdocDescription, SegmentLayout};

impl IdocDescription {
    /// Reads a description in SAP's parser format or, when the text starts
    /// with `{`, in the JSON form.
    pub fn read(text: &str) -> Result<IdocDescription, CoreError> {
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
        if text.trim_start().starts_with('{') { json::read(text) } else { parser_format::read(text) }
    }
}

/// The descriptions configured for a hub, by the name IDocs carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdocDescriptions {
    by_name: HashMap<String, IdocDescription>,
}

impl IdocDescriptions {
    /// No description: flat segments are read as their name and raw SDATA.
    pub fn new() -> IdocDescriptions {
        IdocDescriptions::default()
    }

    /// Adds a description; a second one for the same name is refused.
    pub fn insert(&mut self, description: IdocDescription) -> Result<(), CoreError> {
        let name = description.name().to_string();
        if self.by_name.contains_key(&name) {
            return Err(invalid(format!("{name} is described twice")));
        }
        self.by_name.insert(name, description);
        Ok(())
    }

    /// The description named `name` (an extension or a basic type).
    pub fn get(&self, name: &str) -> Option<&IdocDescription> {
        self.by_name.get(name)
    }

    /// The description an IDoc with this control record is read with: its
    /// extension's when one is described, else its basic type's.
    pub fn for_types(&self, cimtyp: Option<&str>, idoctyp: Option<&str>) -> Option<&IdocDescription> {
        cimtyp.and_then(|c| self.get(c)).or_else(|| idoctyp.and_then(|t| self.get(t)))
    }

    /// Whether no description is configured.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

#[cfg(test)]
mod tests;
