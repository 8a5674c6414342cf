//! One EDIFACT message or X12 transaction set as a document holds it: its
//! envelope and its segments in the shared interchange text, rendered to
//! JSON only when asked.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::model::EdiHeader;
use super::segment::{Segment, Text};
use super::segments;
use crate::path::KeyPath;

/// An EDIFACT message or X12 transaction set: its envelope and segments.
///
/// The JSON rendering (a string per value) is built on first use:
/// receiving needs only the envelope and the key fields, which are read
/// from the segments in place.
#[derive(Clone)]
pub(crate) struct EdiMessage {
    pub header: EdiHeader,
    /// The interchange's segments, shared by its messages.
    text: Arc<Text>,
    /// This message's segments (indices in `text`).
    segments: Range<usize>,
    rendered: OnceLock<Value>,
}

/// The envelope and this message's segments, not the whole shared text.
impl std::fmt::Debug for EdiMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let segments: Vec<Segment<'_>> = self.segments().collect();
        f.debug_struct("EdiMessage").field("header", &self.header).field("segments", &segments).finish()
    }
}

impl EdiMessage {
    pub fn new(header: EdiHeader, text: Arc<Text>, segments: Range<usize>) -> EdiMessage {
        EdiMessage { header, text, segments, rendered: OnceLock::new() }
    }

    /// The segments between header and trailer.
    fn segments(&self) -> impl Iterator<Item = Segment<'_>> {
        self.text.segments(self.segments.clone())
    }

    /// The rendering: an array of the segments between header and trailer.
    pub fn value(&self) -> &Value {
        self.rendered.get_or_init(|| Value::Array(self.segments().map(|s| s.render()).collect()))
    }

    /// The rendering written to a serializer: the value if it is built,
    /// else segment by segment without building it (the same JSON).
    pub fn serialize_rendering<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        if let Some(value) = self.rendered.get() {
            return serde::Serialize::serialize(value, serializer);
        }
        let mut seq = serializer.serialize_seq(None)?;
        for segment in self.segments() {
            seq.serialize_element(&segment)?;
        }
        seq.end()
    }

    /// The rendering, taken (rendered first if it was not yet).
    pub fn into_value(self) -> Value {
        self.value();
        self.rendered.into_inner().unwrap_or_default()
    }

    /// Values at a key path: positional for the IDoc notation, else JSONPath on the rendering.
    pub fn values(&self, path: &KeyPath) -> Vec<Value> {
        match path {
            KeyPath::Idoc(p) => segments::values(self.segments(), p),
            KeyPath::Json(_) => crate::eval::values(self.value(), path),
        }
    }
}

/// Two messages are equal when their envelopes and renderings are (not
/// their places in the interchanges they came in).
impl PartialEq for EdiMessage {
    fn eq(&self, other: &Self) -> bool {
        self.header == other.header && self.value() == other.value()
    }
}
