//! Finding the IDocs in a parsed body, and telling IDoc JSON from plain JSON.
//!
//! An IDoc-XML file has a root named after the IDoc type holding one or more
//! `IDOC` elements (a packet); a file whose root *is* `IDOC` holds one IDoc
//! and has no type name outside its control record. SAP's IDoc SOAP binding
//! wraps that root in `Envelope`/`Body`; since names are compared locally,
//! SOAP 1.1 and 1.2 and any prefixes unwrap the same way.
//!
//! JSON is an IDoc only in the two shapes converters write —
//! `{"ORDERS05":{"IDOC":…}}` and `{"IDOC":…}` — after setting aside a
//! top-level `idempotencyKey`; anything else is a plain JSON message. The
//! key is removed from the document so it never changes a content
//! fingerprint. A JSON IDoc is normalised into the same rendering the XML
//! parser builds (see `render`), so both syntaxes give identical values.
//!
//! SAP's other form, the fixed-width flat file of file ports, is read in
//! `flat` with the record layouts of `layout` and, to split segment data
//! into fields, the IDoc type descriptions of `description`.
//!
//! The IDocs of a large XML body are deferred: checked in full but
//! rendered only when asked (see `deferred`).

pub(crate) mod deferred;
pub(crate) mod description;
pub(crate) mod flat;
pub(crate) mod layout;

use std::borrow::Cow;

use bytes::Bytes;
use deferred::{DEFER_FROM, DeferredIdoc, SharedText};
use serde_json::{Map, Value};

use crate::body_format::BodyFormat;
use crate::document::{CONTROL_RECORD, Document, PacketPosition};
use crate::parsed::ParsedBody;
use crate::xml::{self, DEFERRED_MEMBER, Deferral, Deferred, Root, SoapBody};
use crate::{CoreError, json, render};

/// Name of the element that holds one IDoc.
const IDOC: &str = "IDOC";

/// Documents of an IDoc-XML text (SOAP envelope unwrapped); those of a
/// text of [`DEFER_FROM`] bytes or more are deferred. A text borrowed from
/// `body` (a UTF-8 body) is kept as a slice of it, so a large body is held
/// once; a text decoded from another charset is kept as decoded.
///
/// A deferred text of more than `max_idocs` IDocs is refused
/// ([`CoreError::TooManyMessages`]) at the first `IDOC` over, before the
/// rest are noted: each costs a few kilobytes once read, so a large body of
/// tiny IDocs would take many times its size before a count after the
/// parse could refuse it. A smaller text is rendered whole and counted by
/// the caller.
pub(crate) fn from_xml(
    text: Cow<'_, str>,
    body: Option<&Bytes>,
    max_idocs: usize,
) -> Result<Vec<Document>, CoreError> {
    if text.len() < DEFER_FROM {
        return from_root(xml::parse(&text)?, None);
    }
    let root = xml::parse_deferring(&text, deferral(max_idocs))?;
    from_root(root, Some(&SharedText::of(text, body)))
}

/// [`from_xml`] with every IDoc deferred, whatever the text's size.
#[cfg(test)]
pub(crate) fn from_xml_deferred(text: &str) -> Result<Vec<Document>, CoreError> {
    let root = xml::parse_deferring(text, deferral(usize::MAX))?;
    from_root(root, Some(&SharedText::of(Cow::Borrowed(text), None)))
}

/// What a deferring parse keeps of each `IDOC` element, its control
/// record, and how many it reads at most.
fn deferral(max_idocs: usize) -> Deferral<'static> {
    Deferral { container: IDOC, kept: CONTROL_RECORD, limit: max_idocs }
}

/// The documents of a parsed XML text; with `text`, those its parse
/// deferred are answered from it.
fn from_root(mut root: Root, text: Option<&SharedText>) -> Result<Vec<Document>, CoreError> {
    let mut deferred: Vec<Option<Deferred>> =
        std::mem::take(&mut root.deferred).into_iter().map(Some).collect();
    let (name, value) = unwrap_soap(root)?;
    let (root_name, mut idocs) = if name == IDOC {
        (None, vec![value])
    } else {
        // Repeated `IDOC` children were merged into one array in document
        // order; a single element never renders as an array.
        let idocs = match value {
            Value::Object(mut members) => match members.remove(IDOC) {
                Some(Value::Array(items)) => items,
                Some(one) => vec![one],
                None => Vec::new(),
            },
            _ => Vec::new(),
        };
        if idocs.is_empty() {
            return Err(CoreError::NoIdoc(name));
        }
        (Some(name), idocs)
    };
    let marks: Vec<Option<usize>> = idocs.iter_mut().map(take_mark).collect();
    // Each document is deferred as it is made, so the rendering it was
    // checked with goes then, not once every IDoc's document is made.
    let defer = |index: usize, document: Document| {
        let found = marks[index].and_then(|i| deferred.get_mut(i)).and_then(Option::take);
        match (text, found) {
            (Some(text), Some(found)) => document.deferring_to(DeferredIdoc::new(text.clone(), found)),
            _ => document,
        }
    };
    documents(root_name, idocs, defer)
}

/// Takes the [`DEFERRED_MEMBER`] out of an `IDOC` rendering: the index of
/// its deferred element, if it was deferred.
fn take_mark(idoc: &mut Value) -> Option<usize> {
    let mark = idoc.as_object_mut()?.remove(DEFERRED_MEMBER)?;
    mark.as_u64().and_then(|i| usize::try_from(i).ok())
}

/// Takes the single element out of `Envelope/Body`; other roots pass through.
fn unwrap_soap(root: Root) -> Result<(String, Value), CoreError> {
    if root.name != xml::SOAP_ENVELOPE {
        return Ok((root.name, root.value));
    }
    match root.soap_body {
        None => Err(CoreError::SoapNoBody),
        Some(SoapBody::One(name, value)) => Ok((name, value)),
        Some(SoapBody::Count(0)) => Err(CoreError::SoapBodyEmpty),
        Some(SoapBody::Count(n)) => Err(CoreError::SoapBodyMultiple(n)),
    }
}

/// One document per rendered `IDOC` element, each passed through `finish`
/// with its index as soon as it is made; each must carry exactly one
/// `EDI_DC40` with at most one of each field.
fn documents(
    root: Option<String>,
    idocs: Vec<Value>,
    mut finish: impl FnMut(usize, Document) -> Document,
) -> Result<Vec<Document>, CoreError> {
    let total = idocs.len();
    let document = |(i, idoc)| {
        let document = Document::idoc(root.clone(), idoc, PacketPosition { index: i + 1, total })?;
        Ok(finish(i, document))
    };
    idocs.into_iter().enumerate().map(document).collect()
}

/// Refuses `\u0000` anywhere in strings or member names: valid JSON, but
/// neither PostgreSQL text nor jsonb can hold it, and in a key field it is
/// never business data.
fn refuse_nul(v: &Value) -> Result<(), CoreError> {
    let bad = |s: &str| s.contains('\0');
    let found = match v {
        Value::String(s) => bad(s),
        Value::Array(items) => return items.iter().try_for_each(refuse_nul),
        Value::Object(map) => {
            for (k, item) in map {
                if bad(k) {
                    return Err(nul_error());
                }
                refuse_nul(item)?;
            }
            false
        }
        _ => false,
    };
    if found { Err(nul_error()) } else { Ok(()) }
}

fn nul_error() -> CoreError {
    CoreError::InvalidJson("a string contains U+0000 (NUL), which is not accepted".to_string())
}

/// Parses a JSON text (already checked to be UTF-8) into a body.
pub(crate) fn from_json(text: &str) -> Result<ParsedBody, CoreError> {
    let mut value = json::parse(text)?;
    refuse_nul(&value)?;
    let idempotency_key = match value.as_object_mut().and_then(|m| m.remove("idempotencyKey")) {
        None => None,
        Some(Value::String(key)) => Some(key),
        Some(_) => return Err(CoreError::IdempotencyKeyNotString),
    };
    let Value::Object(mut members) = value else {
        return Err(CoreError::PlainJsonNotObject);
    };
    if let Some((root, idoc)) = idoc_shape(&mut members) {
        let idocs = render::normalise(IDOC, idoc.take())?;
        if idocs.is_empty() {
            return Err(CoreError::InvalidIdocJson("`IDOC` is null or an empty array".to_string()));
        }
        return Ok(ParsedBody {
            format: BodyFormat::IdocJson,
            documents: documents(root.map(str::to_string), idocs, |_, document| document)?,
            idempotency_key,
            interchange: None,
            envelope: None,
        });
    }
    Ok(ParsedBody {
        format: BodyFormat::PlainJson,
        documents: vec![Document::plain(Value::Object(members))],
        idempotency_key,
        interchange: None,
        envelope: None,
    })
}

/// The root name (if any) and `IDOC` value when the object has an IDoc
/// shape; the value is borrowed mutably so it can be moved out.
fn idoc_shape(members: &mut Map<String, Value>) -> Option<(Option<&str>, &mut Value)> {
    if members.len() != 1 {
        return None;
    }
    let (name, inner) = members.iter_mut().next()?;
    if name == IDOC {
        return Some((None, inner));
    }
    Some((Some(name.as_str()), inner.as_object_mut()?.get_mut(IDOC)?))
}

#[cfg(test)]
mod tests;
