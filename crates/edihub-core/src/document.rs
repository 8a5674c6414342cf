//! A received message, ready for dedup: one IDoc, one plain JSON object, or
//! one EDIFACT message / X12 transaction set with its envelope.
//!
//! An IDoc is kept as the JSON rendering of its `IDOC` element (see
//! `render`), plus its control record read out once, plus the name of the
//! root element it came under. Keeping the rendering rather than the XML
//! tree means every question asked of a document (key paths, JSONPath, the
//! content fingerprint) is answered from one value, the same for XML and
//! JSON input. An IDoc of a large XML body keeps its text instead and
//! renders the segments a key path names, or the whole element, when asked
//! (see `idoc::deferred`). An EDI message keeps its segments and renders
//! them on first use (see `edi`); its positional key paths read the segments.
//!
//! The message type follows the product contract: an explicit type from the
//! request wins; then the extension type `CIMTYP`, but only when a type of
//! that name is configured (otherwise every customer extension would be a
//! type with no dedup rules); then the basic type `IDOCTYP`; then the root
//! element's name, which is the IDoc type for files whose control record
//! omits `IDOCTYP`.

use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::edi::{EdiHeader, EdiMessage, Text};
use crate::idoc::deferred::DeferredIdoc;
use crate::path::KeyPath;
use crate::{CoreError, eval, render};

/// The IDoc control record fields the hub uses (from `EDI_DC40`).
///
/// Values are trimmed; empty or whitespace-only fields are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ControlRecord {
    /// Basic IDoc type, e.g. `ORDERS05`.
    pub idoctyp: Option<String>,
    /// Extension type, e.g. `ZORDERS05`.
    pub cimtyp: Option<String>,
    /// Logical message, e.g. `ORDERS`, `ORDCHG`, `ORDRSP`.
    pub mestyp: Option<String>,
    /// IDoc number (unique per sending system and client).
    pub docnum: Option<String>,
    /// Sending partner.
    pub sndprn: Option<String>,
    /// Sending port.
    pub sndpor: Option<String>,
    /// Client of the sending system.
    pub mandt: Option<String>,
    /// Partner type of the sender (`LS` for a logical system).
    pub sndprt: Option<String>,
    /// Receiving partner.
    pub rcvprn: Option<String>,
    /// Partner type of the receiver.
    pub rcvprt: Option<String>,
    /// Receiving port.
    pub rcvpor: Option<String>,
    /// Logical message code (a variant of MESTYP).
    pub mescod: Option<String>,
    /// Logical message function.
    pub mesfct: Option<String>,
    /// The sender's own reference (SAP CPI writes its message id here).
    pub arckey: Option<String>,
}

impl ControlRecord {
    /// Reads the control record from a rendered `EDI_DC40` value.
    pub(crate) fn from_value(dc40: &Value) -> ControlRecord {
        let mut record = ControlRecord::default();
        let Some(fields) = dc40.as_object() else {
            return record;
        };
        // One pass over the fields (each name once, a map's keys are
        // unique) instead of a lookup per field the record holds.
        for (name, value) in fields {
            let slot = match name.as_str() {
                "IDOCTYP" => &mut record.idoctyp,
                "CIMTYP" => &mut record.cimtyp,
                "MESTYP" => &mut record.mestyp,
                "DOCNUM" => &mut record.docnum,
                "SNDPRN" => &mut record.sndprn,
                "SNDPOR" => &mut record.sndpor,
                "MANDT" => &mut record.mandt,
                "SNDPRT" => &mut record.sndprt,
                "RCVPRN" => &mut record.rcvprn,
                "RCVPRT" => &mut record.rcvprt,
                "RCVPOR" => &mut record.rcvpor,
                "MESCOD" => &mut record.mescod,
                "MESFCT" => &mut record.mesfct,
                "ARCKEY" => &mut record.arckey,
                _ => continue,
            };
            *slot = value.as_str().map(render::trim).filter(|s| !s.is_empty()).map(str::to_string);
        }
        record
    }
}

/// Name of the IDoc control record segment.
pub(crate) const CONTROL_RECORD: &str = "EDI_DC40";

/// Where an IDoc sits in its packet (1-based), for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PacketPosition {
    /// 1-based position of the IDoc.
    pub index: usize,
    /// Number of IDocs in the packet.
    pub total: usize,
}

/// The first field of a control record that occurs more than once (a
/// repeated element renders as an array, in XML and JSON alike).
fn repeated_field(dc40: &Value) -> Option<String> {
    let fields = dc40.as_object()?;
    fields.iter().find(|(_, v)| v.is_array()).map(|(name, _)| name.clone())
}

/// One message: an IDoc (from XML or JSON), a plain JSON object, or an
/// EDIFACT message / X12 transaction set.
#[derive(Debug, Clone)]
pub struct Document {
    root: Option<String>,
    control: Option<ControlRecord>,
    /// The rendering of an IDoc or plain JSON; `Null` for EDI and deferred
    /// IDocs, which render their own.
    value: Value,
    plain_docnum: Option<String>,
    /// Boxed: IDocs, the hot path, do not pay for its size.
    edi: Option<Box<EdiMessage>>,
    /// The text of an IDoc of a large XML body (boxed, as `edi`).
    deferred: Option<Box<DeferredIdoc>>,
}

/// Two documents are equal when they say the same: their renderings are
/// compared, whether built or deferred.
impl PartialEq for Document {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
            && self.control == other.control
            && self.plain_docnum == other.plain_docnum
            && self.edi == other.edi
            && self.value() == other.value()
    }
}

impl Document {
    /// An IDoc from the rendering of its `IDOC` element, which must hold
    /// exactly one `EDI_DC40` with at most one of each field: a control
    /// record that says two things (two `DOCNUM`s, two records) is refused
    /// rather than read one way, since every choice would silently change
    /// the fingerprint. `at` is the IDoc's place in its packet, for errors.
    pub(crate) fn idoc(root: Option<String>, idoc: Value, at: PacketPosition) -> Result<Document, CoreError> {
        let dc40 = match idoc.get(CONTROL_RECORD) {
            None => return Err(CoreError::NoControlRecord { index: at.index, total: at.total }),
            Some(Value::Array(_)) => {
                return Err(CoreError::ControlRecordRepeated { index: at.index, total: at.total });
            }
            Some(single) => single,
        };
        if let Some(field) = repeated_field(dc40) {
            return Err(CoreError::ControlFieldRepeated { index: at.index, total: at.total, field });
        }
        let control = Some(ControlRecord::from_value(dc40));
        Ok(Document { root, control, value: idoc, plain_docnum: None, edi: None, deferred: None })
    }

    /// This IDoc answered from `deferred`, its element in the XML text,
    /// instead of the rendering it was checked with (which holds only the
    /// control record).
    pub(crate) fn deferring_to(self, deferred: DeferredIdoc) -> Document {
        Document { value: Value::Null, deferred: Some(Box::new(deferred)), ..self }
    }

    /// A plain JSON message (the caller checked it is an object).
    pub(crate) fn plain(value: Value) -> Document {
        let plain_docnum = match value.get("docnum") {
            Some(Value::String(s)) => Some(s.trim().to_string()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        }
        .filter(|s| !s.is_empty());
        Document { root: None, control: None, value, plain_docnum, edi: None, deferred: None }
    }

    /// An EDIFACT message or X12 transaction set: its envelope and its
    /// segments (rendered on first use, see `edi`).
    pub(crate) fn edi(header: EdiHeader, text: Arc<Text>, segments: Range<usize>) -> Document {
        Document {
            root: None,
            control: None,
            value: Value::Null,
            plain_docnum: None,
            edi: Some(Box::new(EdiMessage::new(header, text, segments))),
            deferred: None,
        }
    }

    /// The deferred element of an IDoc of a large XML body (for tests).
    #[cfg(test)]
    pub(crate) fn deferred_idoc(&self) -> Option<&DeferredIdoc> {
        self.deferred.as_deref()
    }

    /// The envelope of an EDIFACT message or X12 transaction set.
    pub fn edi_header(&self) -> Option<&EdiHeader> {
        self.edi.as_deref().map(|m| &m.header)
    }

    /// The IDoc control record; `None` for plain JSON.
    pub fn control(&self) -> Option<&ControlRecord> {
        self.control.as_ref()
    }

    /// Name of the root element the IDoc came under (`None` for a bare
    /// `IDOC` root and for plain JSON).
    pub fn root_name(&self) -> Option<&str> {
        self.root.as_deref()
    }

    /// Whether this document is an IDoc (as opposed to plain JSON).
    pub fn is_idoc(&self) -> bool {
        self.control.is_some()
    }

    /// The document as JSON: the rendered `IDOC` element, or the plain JSON
    /// object without its `idempotencyKey`. Content fingerprints hash this.
    pub fn value(&self) -> &Value {
        match (&self.edi, &self.deferred) {
            (Some(message), _) => message.value(),
            (None, Some(idoc)) => idoc.value(),
            (None, None) => &self.value,
        }
    }

    /// The document as JSON ([`Document::value`]) to serialize, without
    /// building the rendering of an EDI message first: its segments are
    /// written one by one, so rendering a message costs its output, not a
    /// `Value` per component as well.
    pub fn json(&self) -> DocumentJson<'_> {
        DocumentJson(self)
    }

    /// The document as JSON, taken rather than copied (see [`Document::value`]).
    pub fn into_value(self) -> Value {
        match (self.edi, self.deferred) {
            (Some(message), _) => message.into_value(),
            (None, Some(idoc)) => idoc.into_value(),
            (None, None) => self.value,
        }
    }

    /// Message type: explicit (from header/query) wins; else CIMTYP when
    /// `is_configured(cimtyp)`; else IDOCTYP; else root element name.
    ///
    /// Plain JSON without an explicit type is an error
    /// ([`CoreError::NoMessageType`]), as is an IDoc with no type anywhere.
    pub fn message_type(
        &self,
        explicit: Option<&str>,
        is_configured: &dyn Fn(&str) -> bool,
    ) -> Result<String, CoreError> {
        self.message_type_and_field(explicit, is_configured).map(|(t, _)| t)
    }

    /// [`Document::message_type`], with the field it was read from: `None`
    /// for an explicit type, else `ST01`, `UNH 0065`, `EDI_DC40.CIMTYP`,
    /// `EDI_DC40.IDOCTYP` or `the root element` (for the error of a type
    /// that does not pass the rules of a named one).
    pub fn message_type_and_field(
        &self,
        explicit: Option<&str>,
        is_configured: &dyn Fn(&str) -> bool,
    ) -> Result<(String, Option<&'static str>), CoreError> {
        if let Some(t) = explicit.map(str::trim).filter(|t| !t.is_empty()) {
            return Ok((t.to_string(), None));
        }
        if let Some(header) = self.edi_header() {
            let field = match header.interchange.syntax {
                crate::EdiSyntax::X12 => "ST01",
                crate::EdiSyntax::Edifact => "UNH 0065",
            };
            return Ok((header.hub_type(), Some(field)));
        }
        let Some(control) = &self.control else {
            return Err(CoreError::NoMessageType);
        };
        if let Some(cimtyp) = control.cimtyp.as_deref().filter(|c| is_configured(c)) {
            return Ok((cimtyp.to_string(), Some("EDI_DC40.CIMTYP")));
        }
        match (control.idoctyp.as_deref(), self.root.as_deref()) {
            (Some(idoctyp), _) => Ok((idoctyp.to_string(), Some("EDI_DC40.IDOCTYP"))),
            (None, Some(root)) => Ok((root.to_string(), Some("the root element"))),
            (None, None) => Err(CoreError::UnknownMessageType),
        }
    }

    /// Logical message (`EDI_DC40.MESTYP`), if any.
    pub fn mestyp(&self) -> Option<&str> {
        self.control.as_ref()?.mestyp.as_deref()
    }

    /// EDI_DC40.DOCNUM for IDocs, top-level "docnum" (string or number) for
    /// plain JSON, the message control number (ST02, UNH 0062) for EDI;
    /// trimmed, empty => None.
    pub fn docnum(&self) -> Option<&str> {
        if let Some(header) = self.edi_header() {
            return Some(&header.control_number);
        }
        match &self.control {
            Some(control) => control.docnum.as_deref(),
            None => self.plain_docnum.as_deref(),
        }
    }

    /// Values at a path in document order (empty vec when missing).
    ///
    /// Strings are trimmed and blank ones dropped; an IDoc path ending on a
    /// segment gives the segment as an object; repeated matches give one
    /// value each.
    /// On an EDI message an IDoc-notation path is read by position
    /// (`BEG03`, `RFF[01.01=ON].01.02`).
    pub fn values(&self, path: &KeyPath) -> Vec<Value> {
        if let Some(message) = &self.edi {
            return message.values(path);
        }
        if let Some(idoc) = &self.deferred {
            // An IDoc path is walked in the segments its first step names.
            let named = match path {
                KeyPath::Idoc(p) => p.steps.first().and_then(|step| idoc.segments_named(&step.name)),
                KeyPath::Json(_) => None,
            };
            return eval::values(named.as_ref().unwrap_or_else(|| idoc.value()), path);
        }
        eval::values(&self.value, path)
    }
}

#[cfg(test)]
mod tests;

/// [`Document::json`]: serializes as [`Document::value`] would.
#[derive(Debug, Clone, Copy)]
pub struct DocumentJson<'a>(&'a Document);

impl Serialize for DocumentJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0.edi {
            Some(message) => message.serialize_rendering(serializer),
            None => self.0.value().serialize(serializer),
        }
    }
}
