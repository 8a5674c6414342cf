//! SAP's parser format: the text WE60 and the IDoc parser write for an
//! IDoc type.
//!
//! The text is a list of `KEYWORD value` lines. Only its segment section
//! matters here (the record section repeats the fixed layouts of `layout`):
//!
//! ```text
//! BEGIN_SEGMENT_SECTION
//!   BEGIN_IDOC          ORDERS05
//!     BEGIN_SEGMENT       E2EDK01005
//!       SEGMENTTYPE         E1EDK01
//!       BEGIN_FIELDS
//!         NAME                ACTION
//!         LENGTH              000003
//!         CHARACTER_FIRST     000064
//!         CHARACTER_LAST      000066
//!       END_FIELDS
//!     END_SEGMENT
//!   END_IDOC
//! END_SEGMENT_SECTION
//! ```
//!
//! `BEGIN_SEGMENT` names the segment definition and `SEGMENTTYPE` its type
//! (older releases write the type alone after `BEGIN_SEGMENT`);
//! `EXTENSION` names an extension type. Positions count from 1 over the
//! whole data record, so SDATA starts at 64. Every other keyword (groups,
//! levels, loop counts, texts, data types) describes what the hub does not
//! check and is skipped.

use super::model::{FieldLayout, IdocDescription, SegmentLayout, invalid};
use crate::CoreError;
use crate::idoc::layout::DATA_HEADER_LEN;

/// A field being read: its name and the numbers seen so far.
#[derive(Default)]
struct FieldDraft {
    name: String,
    line: usize,
    length: Option<usize>,
    first: Option<usize>,
    last: Option<usize>,
}

/// A segment being read.
struct SegmentDraft {
    begin: String,
    segment_type: Option<String>,
    fields: Vec<FieldLayout>,
}

/// Reading state: the IDoc type, the segments done, the one open.
#[derive(Default)]
struct Reader {
    in_segments: bool,
    idoc_type: Option<String>,
    extension: Option<String>,
    segments: Vec<SegmentLayout>,
    segment: Option<SegmentDraft>,
    field: Option<FieldDraft>,
}

/// Reads and checks the parser format.
pub(super) fn read(text: &str) -> Result<IdocDescription, CoreError> {
    let mut reader = Reader::default();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let (key, value) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        reader.line(index + 1, key, value.trim())?;
    }
    if reader.segment.is_some() {
        return Err(invalid("parser format: a segment is not closed by END_SEGMENT".into()));
    }
    let idoc_type = reader
        .idoc_type
        .ok_or_else(|| invalid("parser format: no BEGIN_IDOC in a BEGIN_SEGMENT_SECTION".into()))?;
    IdocDescription::new(idoc_type, reader.extension, reader.segments)
}

impl Reader {
    fn line(&mut self, line: usize, key: &str, value: &str) -> Result<(), CoreError> {
        match key {
            "BEGIN_SEGMENT_SECTION" => self.in_segments = true,
            "END_SEGMENT_SECTION" => self.in_segments = false,
            _ if !self.in_segments => {}
            "BEGIN_IDOC" => set_once(&mut self.idoc_type, "BEGIN_IDOC", value, line)?,
            "EXTENSION" => set_once(&mut self.extension, "EXTENSION", value, line)?,
            "BEGIN_SEGMENT" => {
                if self.segment.is_some() {
                    return Err(at(line, "BEGIN_SEGMENT inside a segment"));
                }
                if value.is_empty() {
                    return Err(at(line, "BEGIN_SEGMENT without a name"));
                }
                self.segment =
                    Some(SegmentDraft { begin: value.to_string(), segment_type: None, fields: Vec::new() });
            }
            "SEGMENTTYPE" => set_once(&mut self.open(line)?.segment_type, "SEGMENTTYPE", value, line)?,
            "NAME" => {
                self.close_field()?;
                self.open(line)?;
                self.field = Some(FieldDraft { name: value.to_string(), line, ..FieldDraft::default() });
            }
            "LENGTH" => self.number(line, value, |f| &mut f.length)?,
            "CHARACTER_FIRST" => self.number(line, value, |f| &mut f.first)?,
            "CHARACTER_LAST" => self.number(line, value, |f| &mut f.last)?,
            "END_FIELDS" => self.close_field()?,
            "END_SEGMENT" => {
                self.close_field()?;
                let draft = self.segment.take().ok_or_else(|| at(line, "END_SEGMENT outside a segment"))?;
                self.segments.push(match draft.segment_type {
                    Some(segment_type) => {
                        SegmentLayout { segment_type, definition: Some(draft.begin), fields: draft.fields }
                    }
                    None => {
                        SegmentLayout { segment_type: draft.begin, definition: None, fields: draft.fields }
                    }
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// The open segment; a keyword that needs one outside it is an error.
    fn open(&mut self, line: usize) -> Result<&mut SegmentDraft, CoreError> {
        self.segment.as_mut().ok_or_else(|| at(line, "a segment keyword outside BEGIN_SEGMENT"))
    }

    /// Sets a number of the open field.
    fn number(
        &mut self,
        line: usize,
        value: &str,
        slot: impl FnOnce(&mut FieldDraft) -> &mut Option<usize>,
    ) -> Result<(), CoreError> {
        let Some(field) = self.field.as_mut() else {
            return Ok(()); // record section and group lines have no open field
        };
        let n = value.parse::<usize>().map_err(|_| at(line, &format!("`{value}` is not a number")))?;
        *slot(field) = Some(n);
        Ok(())
    }

    /// Finishes the open field: SDATA offset from its record positions.
    fn close_field(&mut self) -> Result<(), CoreError> {
        let Some(f) = self.field.take() else {
            return Ok(());
        };
        let (Some(first), Some(last)) = (f.first, f.last) else {
            return Err(at(f.line, &format!("field {} has no CHARACTER_FIRST and CHARACTER_LAST", f.name)));
        };
        if first <= DATA_HEADER_LEN || last < first {
            return Err(at(
                f.line,
                &format!("field {} spans {first} to {last}, not inside SDATA (64 and after)", f.name),
            ));
        }
        let length = last - first + 1;
        if f.length.is_some_and(|l| l != length) {
            return Err(at(f.line, &format!("field {}: LENGTH does not match {first} to {last}", f.name)));
        }
        let offset = first - DATA_HEADER_LEN - 1;
        let segment = self.segment.as_mut().ok_or_else(|| at(f.line, "a field outside a segment"))?;
        segment.fields.push(FieldLayout { name: f.name, offset, length });
        Ok(())
    }
}

fn set_once(slot: &mut Option<String>, key: &str, value: &str, line: usize) -> Result<(), CoreError> {
    if value.is_empty() {
        return Err(at(line, &format!("{key} without a name")));
    }
    if slot.is_some() {
        return Err(at(line, &format!("{key} given twice")));
    }
    *slot = Some(value.to_string());
    Ok(())
}

fn at(line: usize, detail: &str) -> CoreError {
    invalid(format!("parser format, line {line}: {detail}"))
}
