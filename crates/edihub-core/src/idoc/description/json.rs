//! The JSON form of an IDoc type description, for descriptions written by hand:
//!
//! ```json
//! {"idoc_type": "ORDERS05", "extension": null,
//!  "segments": [{"name": "E1EDK01", "definition": "E2EDK01005",
//!                "fields": [{"name": "ACTION", "offset": 0, "length": 3}]}]}
//! ```
//!
//! `offset` counts from the start of SDATA (0-based); `extension` and
//! `definition` may be left out. Unknown members and duplicate members are
//! refused, so a misspelt key never silently drops a field.

use serde::Deserialize;

use super::model::{FieldLayout, IdocDescription, SegmentLayout, invalid};
use crate::CoreError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Description {
    idoc_type: String,
    #[serde(default)]
    extension: Option<String>,
    segments: Vec<Segment>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Segment {
    name: String,
    #[serde(default)]
    definition: Option<String>,
    fields: Vec<Field>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Field {
    name: String,
    offset: usize,
    length: usize,
}

/// Reads and checks the JSON form.
pub(super) fn read(text: &str) -> Result<IdocDescription, CoreError> {
    let value = crate::json::parse(text).map_err(|e| invalid(format!("JSON: {e}")))?;
    let d: Description = serde_json::from_value(value).map_err(|e| invalid(format!("JSON: {e}")))?;
    let segments = d
        .segments
        .into_iter()
        .map(|s| SegmentLayout {
            segment_type: s.name,
            definition: s.definition,
            fields: s
                .fields
                .into_iter()
                .map(|f| FieldLayout { name: f.name, offset: f.offset, length: f.length })
                .collect(),
        })
        .collect();
    IdocDescription::new(d.idoc_type, d.extension, segments)
}
