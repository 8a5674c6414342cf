//! An IDoc as SAP's inbound service reads it: ordered, addressed, checked.

use serde_json::{Map, Value};

use super::SapProfile;
use crate::CoreError;
use crate::document::Document;
use crate::idoc::description::{IdocDescription, SegmentLayout};
use crate::idoc::layout::{CONTROL_FIELDS, CONTROL_RECORD, NAME_LEN, SDATA_LEN};

/// One IDoc to write for SAP: its type (the XML root), control record and segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SapIdoc {
    /// The root element's name: the extension type if any, else the basic type.
    pub root: String,
    /// Non-blank control record fields, in EDI_DC40 order.
    pub control: Vec<(&'static str, String)>,
    /// Top-level segments, in definition order.
    pub segments: Vec<SapSegment>,
}

/// One segment: its type name, its fields and its child segments, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SapSegment {
    /// Segment type, e.g. `E1EDK01`.
    pub name: String,
    /// Non-blank fields, in definition order.
    pub fields: Vec<(String, String)>,
    /// Child segments, in definition order.
    pub children: Vec<SapSegment>,
}

/// Control record fields that name the original sender's and receiver's
/// partners or status: the hub writes its own addressing instead.
const READDRESSED: [&str; 7] = ["STATUS", "SNDPFC", "SNDSAD", "SNDLAD", "RCVPFC", "RCVSAD", "RCVLAD"];

impl SapIdoc {
    /// A control record in EDI_DC40 order from `(field, value)` pairs:
    /// TABNAM first, blank values left out, every value within its length.
    pub(crate) fn control_record(
        fields: &[(&'static str, String)],
    ) -> Result<Vec<(&'static str, String)>, CoreError> {
        let mut out = vec![("TABNAM", CONTROL_RECORD.to_string())];
        for (name, len) in CONTROL_FIELDS.iter().skip(1) {
            let Some((_, value)) = fields.iter().rev().find(|(n, _)| n == name) else {
                continue;
            };
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            check_text(CONTROL_RECORD, name, value, *len)?;
            out.push((name, value.to_string()));
        }
        Ok(out)
    }

    /// The value of a control record field.
    pub fn control_field(&self, name: &str) -> Option<&str> {
        self.control.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// An IDoc the hub received, rewritten for SAP: the control record keeps
    /// the IDoc's type, logical message, numbers, dates and references and
    /// is addressed from the hub to the profile's SAP system (the original
    /// partners' functions, addresses and status are left out). Segments
    /// keep their fields; with the type's description they are ordered as
    /// it defines them and checked against it (unknown segments and fields,
    /// values longer than their field, are refused). Without one they are
    /// written in name order, which SAP's syntax check refuses unless that
    /// is also the definition's order: describe every type sent to SAP.
    pub fn from_document(
        doc: &Document,
        profile: &SapProfile,
        description: Option<&IdocDescription>,
    ) -> Result<SapIdoc, CoreError> {
        profile.check()?;
        let (Some(control), Some(dc40)) = (doc.control(), doc.value().get(CONTROL_RECORD)) else {
            return Err(unwritable("only an IDoc can be written as IDoc-XML".into()));
        };
        let root = control
            .cimtyp
            .clone()
            .or_else(|| control.idoctyp.clone())
            .ok_or_else(|| unwritable("the control record names no IDoc type (IDOCTYP)".into()))?;
        let mut fields: Vec<(&'static str, String)> = CONTROL_FIELDS
            .iter()
            .filter(|(name, _)| !READDRESSED.contains(name))
            .filter_map(|(name, _)| Some((*name, dc40.get(*name)?.as_str()?.to_string())))
            .collect();
        fields.extend(profile.addressing().map(|(n, v)| (n, v.to_string())));
        let control = SapIdoc::control_record(&fields)?;
        let Value::Object(members) = doc.value() else {
            return Err(unwritable("the IDoc has no segments object".into()));
        };
        let segments = segments_of(members, description, 0)?;
        Ok(SapIdoc { root, control, segments })
    }
}

/// The child segments among an element's members, ordered.
fn segments_of(
    members: &Map<String, Value>,
    description: Option<&IdocDescription>,
    depth: usize,
) -> Result<Vec<SapSegment>, CoreError> {
    let mut out = Vec::new();
    for (name, value) in members {
        if name.starts_with('@') || name == CONTROL_RECORD {
            continue;
        }
        let items = match value {
            Value::Array(items) => items.as_slice(),
            other => std::slice::from_ref(other),
        };
        for item in items {
            match item {
                Value::Object(segment) => out.push(segment_of(name, segment, description, depth + 1)?),
                // A segment's fields are read by `segment_of`; under IDOC only segments belong.
                _ if depth > 0 => {}
                _ => return Err(unwritable(format!("`{name}` is a field where a segment was expected"))),
            }
        }
    }
    if let Some(d) = description {
        // Stable: repeats of one segment keep their order.
        out.sort_by_key(|s| d.position(&s.name).unwrap_or(usize::MAX));
    }
    Ok(out)
}

/// One segment from its rendering; fields and children checked and ordered.
fn segment_of(
    name: &str,
    members: &Map<String, Value>,
    description: Option<&IdocDescription>,
    depth: usize,
) -> Result<SapSegment, CoreError> {
    if depth > crate::xml::MAX_DEPTH {
        return Err(unwritable(format!("segments nest deeper than {}", crate::xml::MAX_DEPTH)));
    }
    check_name(name)?;
    let layout = match description {
        Some(d) => Some(d.segment(name).filter(|l| l.segment_type == name).ok_or_else(|| {
            unwritable(format!("segment {name} is not in the description of {}", d.name()))
        })?),
        None => None,
    };
    let mut fields = Vec::new();
    for (field, value) in members {
        match value {
            Value::String(text) if !field.starts_with('@') && field != "#text" => {
                let length = field_length(layout, name, field)?;
                check_name(field)?;
                check_text(name, field, text, length)?;
                if !text.is_empty() {
                    fields.push((field.clone(), text.clone()));
                }
            }
            Value::String(_) if field == "#text" => {
                return Err(unwritable(format!("segment {name} holds text beside its fields")));
            }
            Value::Array(items) if items.iter().any(Value::is_string) => {
                return Err(unwritable(format!("segment {name} has field {field} more than once")));
            }
            _ => {}
        }
    }
    if let Some(layout) = layout {
        let at = |f: &str| layout.fields.iter().position(|l| l.name == f).unwrap_or(usize::MAX);
        fields.sort_by_key(|(f, _)| at(f));
    }
    let children = segments_of(members, description, depth)?;
    Ok(SapSegment { name: name.to_string(), fields, children })
}

/// A field's length from the layout (an unknown field is refused), else SDATA's.
fn field_length(layout: Option<&SegmentLayout>, segment: &str, field: &str) -> Result<usize, CoreError> {
    let Some(layout) = layout else {
        return Ok(SDATA_LEN);
    };
    layout
        .fields
        .iter()
        .find(|f| f.name == field)
        .map(|f| f.length)
        .ok_or_else(|| unwritable(format!("field {segment}.{field} is not in the description")))
}

/// SAP names: 1 to 30 characters, letters, digits, `_` and `/` (namespaces).
fn check_name(name: &str) -> Result<(), CoreError> {
    let ok = !name.is_empty()
        && name.chars().count() <= NAME_LEN
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/');
    if ok { Ok(()) } else { Err(unwritable(format!("`{name}` is not a SAP segment or field name"))) }
}

/// A value fits its field and holds no control character (XML 1.0 cannot
/// carry most of them, and SAP fields never hold them).
fn check_text(segment: &str, field: &str, value: &str, length: usize) -> Result<(), CoreError> {
    if value.chars().any(char::is_control) {
        return Err(unwritable(format!("{segment}.{field} holds a control character")));
    }
    let count = value.chars().count();
    if count > length {
        return Err(unwritable(format!(
            "{segment}.{field} has {count} characters; SAP's field holds {length}"
        )));
    }
    Ok(())
}

pub(crate) fn unwritable(detail: String) -> CoreError {
    CoreError::SapWrite(detail)
}
