//! Flat-file IDocs: SAP's fixed-width format of file ports and EDI subsystems.
//!
//! A file holds one or more IDocs, each a control record `EDI_DC40` (524
//! characters) followed by its data records `EDI_DD40` (a 63-character
//! header naming the segment, its number and its parent's number, then
//! 1000 characters of segment data). Each control record starts an IDoc.
//!
//! Each IDoc is read into the same rendering its IDoc-XML form has (see
//! `render`): `@BEGIN` on the IDoc, the control record's non-blank fields
//! under `EDI_DC40`, each segment nested under its parent (by PSGNUM) with
//! `@SEGMENT` and its non-blank fields, repeats as arrays in file order.
//! With an IDoc type description (see `description`) the segment data is
//! split into fields under the segment type name XML uses, so the flat
//! file and its XML twin have the same values and fingerprints. Without
//! one, a segment is its name as the file writes it with its raw SDATA
//! (trailing blanks removed) under `SDATA`: control record paths (DOCNUM,
//! MESTYP, SNDPRN, RCVPRN) and the DOCNUM fallback work as for XML, while
//! key paths into segment fields find nothing until the type is described.
//!
//! Two spellings are taken as the same: the control record's TABNAM is
//! `EDI_DC40` or `EDI_DC40_U` (a Unicode system's name for the same
//! layout) and renders as `EDI_DC40`, the name IDoc-XML gives it; data
//! records' DOCNUMs and PSGNUMs compare as numbers when they are digits.
//!
//! Refused, naming the record: a record of the wrong length (a control
//! record of release 3, `EDI_DC`, included), a data record before any
//! control record, a second control record for one DOCNUM, a data record
//! of another IDoc's DOCNUM, a parent that is not an earlier segment, a
//! segment the configured description does not know, segment data outside
//! the described fields, and bytes invalid in the file's encoding (mixed
//! encodings). Refusing is the rule because every reading of such a file
//! would change a business key.

mod records;

use std::collections::HashMap;

use serde_json::{Map, Value};

use self::records::{Record, records, structure};
use crate::body_format::BodyFormat;
use crate::document::{Document, PacketPosition};
use crate::idoc::description::{IdocDescription, IdocDescriptions, SegmentLayout};
use crate::idoc::layout::{
    CONTROL_RECORD, CONTROL_RECORD_LEN, CONTROL_RECORD_UNICODE, DATA_HEADER_LEN, DATA_RECORD_LEN, SDATA_LEN,
    control_field_spans, data_header_spans,
};
use crate::parsed::ParsedBody;
use crate::{CoreError, encoding, render, xml};

/// The member the raw segment data of an undescribed segment is kept under.
pub(crate) const SDATA: &str = "SDATA";

/// Segments nest at most this deep under `IDOC`, as XML elements under a root may.
const MAX_SEGMENT_DEPTH: usize = xml::MAX_DEPTH - 2;

/// Whether a body starts like a flat-file IDoc (its first control record).
pub(crate) fn sniff(bytes: &[u8]) -> bool {
    bytes.starts_with(b"EDI_DC")
}

/// Parses a flat file into its IDocs; a file of more than `max_idocs` is
/// refused ([`CoreError::TooManyMessages`]) at the first control record
/// over, before that IDoc is read.
pub(crate) fn parse(
    body: &[u8],
    content_type: Option<&str>,
    descriptions: &IdocDescriptions,
    max_idocs: usize,
) -> Result<ParsedBody, CoreError> {
    let text = encoding::decode_text(body, content_type).map_err(|e| at_record(e, body))?;
    let mut idocs: Vec<IdocDraft<'_>> = Vec::new();
    let mut control_records: HashMap<String, usize> = HashMap::new();
    for record in records(&text)? {
        if record.starts_with("EDI_DC") {
            if idocs.len() == max_idocs {
                return Err(CoreError::TooManyMessages { limit: max_idocs });
            }
            let idoc = IdocDraft::start(&record, descriptions)?;
            if !idoc.docnum.is_empty()
                && let Some(first) = control_records.insert(numeric(&idoc.docnum).to_string(), record.number)
            {
                return Err(structure(
                    record.number,
                    format!(
                        "is a second control record for IDoc {} (its first is record {first})",
                        idoc.docnum
                    ),
                ));
            }
            idocs.push(idoc);
            continue;
        }
        let Some(idoc) = idocs.last_mut() else {
            return Err(structure(
                record.number,
                format!("({}) is a data record before any control record EDI_DC40", record.head(30)),
            ));
        };
        idoc.data(&record)?;
    }
    if idocs.is_empty() {
        return Err(CoreError::EmptyBody);
    }
    let total = idocs.len();
    let documents = idocs
        .into_iter()
        .enumerate()
        .map(|(i, idoc)| idoc.finish(PacketPosition { index: i + 1, total }))
        .collect::<Result<_, _>>()?;
    Ok(ParsedBody {
        format: BodyFormat::IdocFlat,
        documents,
        idempotency_key: None,
        interchange: None,
        envelope: None,
    })
}

/// An invalid byte names the record (line) it is on.
fn at_record(e: CoreError, body: &[u8]) -> CoreError {
    match e {
        CoreError::InvalidText { encoding, offset } => {
            let record = body[..offset.min(body.len())].iter().filter(|b| **b == b'\n').count() + 1;
            CoreError::FlatEncoding { record, encoding, offset }
        }
        other => other,
    }
}

/// A numeric identifier without leading zeros; others unchanged.
fn numeric(s: &str) -> &str {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return s;
    }
    match s.trim_start_matches('0') {
        "" => "0",
        rest => rest,
    }
}

/// One segment read: its rendered name and members, where it hangs.
struct SegmentDraft {
    name: String,
    members: Map<String, Value>,
    parent: Option<usize>,
    depth: usize,
}

/// An IDoc being read: its control record and the segments so far.
struct IdocDraft<'d> {
    /// Record number of the control record.
    record: usize,
    docnum: String,
    /// The IDoc's members so far: `@BEGIN` and `EDI_DC40`.
    members: Map<String, Value>,
    description: Option<&'d IdocDescription>,
    segments: Vec<SegmentDraft>,
    /// SEGNUM (as a number) to its segment.
    by_segnum: HashMap<String, usize>,
}

impl<'d> IdocDraft<'d> {
    /// Reads a control record.
    fn start(record: &Record<'_>, descriptions: &'d IdocDescriptions) -> Result<IdocDraft<'d>, CoreError> {
        let tabnam = record.head(10);
        if tabnam != CONTROL_RECORD && tabnam != CONTROL_RECORD_UNICODE {
            return Err(structure(
                record.number,
                format!(
                    "is a control record {tabnam}; only EDI_DC40, the layout of SAP release 4.0 and later, is read"
                ),
            ));
        }
        check_length(record, tabnam, "EDI_DC40 control record", CONTROL_RECORD_LEN)?;
        let mut control = Map::new();
        control.insert("@SEGMENT".into(), Value::String("1".into()));
        for (name, at, len) in control_field_spans() {
            let value = if name == "TABNAM" { CONTROL_RECORD } else { record.trimmed(at, len) };
            if !value.is_empty() {
                control.insert(name.to_string(), Value::String(value.to_string()));
            }
        }
        let text = |name: &str| control.get(name).and_then(Value::as_str);
        let description = descriptions.for_types(text("CIMTYP"), text("IDOCTYP"));
        let docnum = text("DOCNUM").unwrap_or_default().to_string();
        let mut members = Map::new();
        members.insert("@BEGIN".into(), Value::String("1".into()));
        members.insert(CONTROL_RECORD.into(), Value::Object(control));
        Ok(IdocDraft {
            record: record.number,
            docnum,
            members,
            description,
            segments: Vec::new(),
            by_segnum: HashMap::new(),
        })
    }

    /// Reads a data record of this IDoc.
    fn data(&mut self, record: &Record<'_>) -> Result<(), CoreError> {
        check_length(record, record.head(30), "EDI_DD40 data record", DATA_RECORD_LEN)?;
        let segnam = header(record, "SEGNAM");
        if segnam.is_empty() {
            return Err(structure(record.number, "is a data record without a segment name (SEGNAM)".into()));
        }
        let docnum = header(record, "DOCNUM");
        if !docnum.is_empty() && numeric(docnum) != numeric(&self.docnum) {
            let theirs = match self.docnum.as_str() {
                "" => "has no DOCNUM".to_string(),
                own => format!("is IDoc {own}"),
            };
            return Err(structure(
                record.number,
                format!(
                    "({segnam}) has DOCNUM {docnum}, but its control record (record {}) {theirs}",
                    self.record
                ),
            ));
        }
        let (parent, depth) = self.parent(record, segnam)?;
        let sdata = record.field(DATA_HEADER_LEN, SDATA_LEN);
        let (name, members) = match self.description {
            Some(description) => {
                let layout = description.segment(segnam).ok_or_else(|| {
                    structure(
                        record.number,
                        format!(
                            "has segment {segnam}, which the description of {} does not name",
                            description.name()
                        ),
                    )
                })?;
                (layout.segment_type.clone(), fields(record.number, layout, sdata)?)
            }
            None => (segnam.to_string(), raw(sdata)),
        };
        let segnum = header(record, "SEGNUM");
        if !segnum.is_empty()
            && let Some(first) = self.by_segnum.insert(numeric(segnum).to_string(), self.segments.len())
        {
            return Err(structure(
                record.number,
                format!("({segnam}) repeats segment number {segnum} of record {}", self.record + 1 + first),
            ));
        }
        self.segments.push(SegmentDraft { name, members, parent, depth });
        Ok(())
    }

    /// The parent (by PSGNUM) of a data record and its depth under `IDOC`.
    fn parent(&self, record: &Record<'_>, segnam: &str) -> Result<(Option<usize>, usize), CoreError> {
        let psgnum = header(record, "PSGNUM");
        if psgnum.is_empty() || numeric(psgnum) == "0" {
            return Ok((None, 1));
        }
        let Some(&parent) = self.by_segnum.get(numeric(psgnum)) else {
            return Err(structure(
                record.number,
                format!(
                    "({segnam}) names parent segment {psgnum}, which is not an earlier segment of its IDoc"
                ),
            ));
        };
        let depth = self.segments[parent].depth + 1;
        if depth > MAX_SEGMENT_DEPTH {
            return Err(structure(
                record.number,
                format!("({segnam}) nests segments deeper than {MAX_SEGMENT_DEPTH}"),
            ));
        }
        Ok((Some(parent), depth))
    }

    /// The IDoc as a document: segments nested bottom-up, without recursion.
    fn finish(self, at: PacketPosition) -> Result<Document, CoreError> {
        let IdocDraft { mut members, segments, .. } = self;
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); segments.len()];
        let mut top = Vec::new();
        for (i, segment) in segments.iter().enumerate() {
            match segment.parent {
                Some(p) => children[p].push(i),
                None => top.push(i),
            }
        }
        let mut drafts: Vec<Option<SegmentDraft>> = segments.into_iter().map(Some).collect();
        let mut done: Vec<Option<(String, Value)>> = (0..drafts.len()).map(|_| None).collect();
        // A child always comes after its parent, so walking backwards
        // finishes every child before its parent needs it.
        for i in (0..drafts.len()).rev() {
            let Some(SegmentDraft { name, mut members, .. }) = drafts[i].take() else {
                continue;
            };
            for &c in &children[i] {
                if let Some((child, value)) = done[c].take() {
                    render::insert_child(&mut members, &child, value, false);
                }
            }
            done[i] = Some((name, Value::Object(members)));
        }
        for i in top {
            if let Some((name, value)) = done[i].take() {
                render::insert_child(&mut members, &name, value, false);
            }
        }
        Document::idoc(None, Value::Object(members), at)
    }
}

/// A data record header field, trimmed (empty if the record is too short).
fn header<'t>(record: &Record<'t>, name: &str) -> &'t str {
    match data_header_spans().find(|(n, ..)| *n == name) {
        Some((_, at, len)) if at + len <= record.len() => record.trimmed(at, len),
        _ => "",
    }
}

/// Refuses a record whose length is not its layout's; `name` names it.
fn check_length(
    record: &Record<'_>,
    name: &str,
    layout: &'static str,
    expected: usize,
) -> Result<(), CoreError> {
    let found = record.len();
    if found == expected {
        return Ok(());
    }
    Err(CoreError::FlatRecordLength {
        record: record.number,
        name: if name.is_empty() { "blank".to_string() } else { name.to_string() },
        layout,
        found,
        expected,
    })
}

/// A described segment's non-blank fields; SDATA outside every field must be blank.
fn fields(record: usize, layout: &SegmentLayout, sdata: &str) -> Result<Map<String, Value>, CoreError> {
    let chars: Vec<char> = sdata.chars().collect();
    let mut covered = vec![false; chars.len()];
    let mut members = Map::new();
    members.insert("@SEGMENT".into(), Value::String("1".into()));
    for field in &layout.fields {
        let span = field.offset..field.offset + field.length;
        covered[span.clone()].iter_mut().for_each(|c| *c = true);
        let value: String = chars[span].iter().collect();
        let value = value.trim();
        if !value.is_empty() {
            members.insert(field.name.clone(), Value::String(value.to_string()));
        }
    }
    if let Some(offset) = chars.iter().zip(&covered).position(|(c, covered)| !covered && *c != ' ') {
        return Err(structure(
            record,
            format!(
                "({}) has data at SDATA offset {offset}, outside every field the description gives it",
                layout.segment_type
            ),
        ));
    }
    Ok(members)
}

/// An undescribed segment: its raw SDATA without trailing blanks.
fn raw(sdata: &str) -> Map<String, Value> {
    let mut members = Map::new();
    members.insert("@SEGMENT".into(), Value::String("1".into()));
    let data = sdata.trim_end();
    if !data.is_empty() {
        members.insert(SDATA.into(), Value::String(data.to_string()));
    }
    members
}

#[cfg(test)]
mod tests;
