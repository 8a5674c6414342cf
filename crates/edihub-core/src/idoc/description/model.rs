//! What an IDoc type description is (its segments and their fields) and
//! the checks every description passes, whichever form it was read from.

use std::collections::HashMap;

use crate::CoreError;
use crate::idoc::layout::{NAME_LEN, SDATA_LEN};

/// Where one field of a segment sits in its segment data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldLayout {
    /// Field name, e.g. `BELNR`.
    pub name: String,
    /// 0-based offset in SDATA (SAP's 1-based record position minus 64).
    pub offset: usize,
    /// Length in characters.
    pub length: usize,
}

/// One segment of an IDoc type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentLayout {
    /// Segment type, the name IDoc-XML uses (`E1EDK01`).
    pub segment_type: String,
    /// Segment definition, the versioned name flat files may carry
    /// (`E2EDK01005`), if the description names one.
    pub definition: Option<String>,
    /// Fields in definition order.
    pub fields: Vec<FieldLayout>,
}

/// The segments of one IDoc type (basic type or extension), in definition order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdocDescription {
    idoc_type: String,
    extension: Option<String>,
    segments: Vec<SegmentLayout>,
    /// Segment type and definition names to their index in `segments`.
    by_name: HashMap<String, usize>,
}

impl IdocDescription {
    /// A description from its parts, checked (see the module docs).
    pub fn new(
        idoc_type: String,
        extension: Option<String>,
        segments: Vec<SegmentLayout>,
    ) -> Result<IdocDescription, CoreError> {
        check_name("IDoc type", &idoc_type)?;
        if let Some(ext) = &extension {
            check_name("extension", ext)?;
        }
        if segments.is_empty() {
            return Err(invalid(format!("{idoc_type} describes no segment")));
        }
        let mut by_name = HashMap::new();
        for (index, segment) in segments.iter().enumerate() {
            check_segment(segment)?;
            let names = std::iter::once(&segment.segment_type).chain(segment.definition.as_ref());
            for name in names {
                if by_name.insert(name.clone(), index).is_some_and(|other| other != index) {
                    return Err(invalid(format!("segment name {name} is used twice")));
                }
            }
        }
        Ok(IdocDescription { idoc_type, extension, segments, by_name })
    }

    /// The basic IDoc type, e.g. `ORDERS05`.
    pub fn idoc_type(&self) -> &str {
        &self.idoc_type
    }

    /// The extension type, e.g. `ZORDERS05`, if this describes one.
    pub fn extension(&self) -> Option<&str> {
        self.extension.as_deref()
    }

    /// The name IDocs of this description carry as their type: the
    /// extension (CIMTYP) if any, else the basic type (IDOCTYP).
    pub fn name(&self) -> &str {
        self.extension.as_deref().unwrap_or(&self.idoc_type)
    }

    /// Every segment, in definition order.
    pub fn segments(&self) -> &[SegmentLayout] {
        &self.segments
    }

    /// The segment with this type or definition name.
    pub fn segment(&self, name: &str) -> Option<&SegmentLayout> {
        self.by_name.get(name).map(|&i| &self.segments[i])
    }

    /// The position of a segment (by type or definition name) in definition order.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }
}

/// A description error.
pub(crate) fn invalid(detail: String) -> CoreError {
    CoreError::InvalidIdocDescription(detail)
}

/// SAP names: 1 to 30 characters, no white space or control characters.
fn check_name(what: &str, name: &str) -> Result<(), CoreError> {
    let count = name.chars().count();
    if count == 0 || count > NAME_LEN {
        return Err(invalid(format!("{what} name `{name}` must have 1 to {NAME_LEN} characters")));
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(format!("{what} name `{name}` contains white space or a control character")));
    }
    Ok(())
}

/// A segment's names and fields: unique names, inside SDATA, no overlap.
fn check_segment(segment: &SegmentLayout) -> Result<(), CoreError> {
    let seg = &segment.segment_type;
    check_name("segment", seg)?;
    if let Some(def) = &segment.definition {
        check_name("segment definition", def)?;
    }
    let mut spans: Vec<(usize, usize, &str)> = Vec::with_capacity(segment.fields.len());
    for field in &segment.fields {
        check_name("field", &field.name)?;
        if field.length == 0 || field.offset + field.length > SDATA_LEN {
            return Err(invalid(format!(
                "{seg}.{}: offset {} and length {} do not fit in the {SDATA_LEN} characters of SDATA",
                field.name, field.offset, field.length
            )));
        }
        if spans.iter().any(|(_, _, name)| *name == field.name) {
            return Err(invalid(format!("{seg} has field {} twice", field.name)));
        }
        spans.push((field.offset, field.offset + field.length, &field.name));
    }
    spans.sort_unstable();
    for pair in spans.windows(2) {
        if pair[1].0 < pair[0].1 {
            return Err(invalid(format!("{seg}: fields {} and {} overlap", pair[0].2, pair[1].2)));
        }
    }
    Ok(())
}
