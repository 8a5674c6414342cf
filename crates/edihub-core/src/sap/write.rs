//! IDoc-XML text for SAP's inbound HTTP service.
//!
//! UTF-8 with its declaration, no indentation, no namespaces: the root
//! named after the IDoc type, `<IDOC BEGIN="1">` per IDoc, `<EDI_DC40
//! SEGMENT="1">` first, segments with `SEGMENT="1"`, fields as elements.
//! Blank fields are left out, as SAP leaves them out of its own IDoc-XML.
//! Text escapes `&`, `<` and `>`; the tree was checked when it was built,
//! so names are plain SAP names and values hold no control character.

use super::tree::unwritable;
use super::{SapIdoc, SapSegment};
use crate::CoreError;
use crate::idoc::layout::CONTROL_RECORD;

/// One IDoc, or a packet of IDocs of one type, as IDoc-XML.
pub fn idoc_xml(idocs: &[SapIdoc]) -> Result<String, CoreError> {
    let Some(first) = idocs.first() else {
        return Err(unwritable("a packet needs at least one IDoc".into()));
    };
    if let Some(other) = idocs.iter().find(|i| i.root != first.root) {
        return Err(unwritable(format!("a packet holds one IDoc type: {} and {}", first.root, other.root)));
    }
    let mut out = String::with_capacity(1024);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    open(&mut out, &first.root, None);
    for idoc in idocs {
        open(&mut out, "IDOC", Some(("BEGIN", "1")));
        open(&mut out, CONTROL_RECORD, Some(("SEGMENT", "1")));
        for (name, value) in &idoc.control {
            field(&mut out, name, value);
        }
        close(&mut out, CONTROL_RECORD);
        for segment in &idoc.segments {
            write_segment(&mut out, segment);
        }
        close(&mut out, "IDOC");
    }
    close(&mut out, &first.root);
    Ok(out)
}

/// A segment and its children, depth first (depth is bounded when built).
fn write_segment(out: &mut String, segment: &SapSegment) {
    open(out, &segment.name, Some(("SEGMENT", "1")));
    for (name, value) in &segment.fields {
        field(out, name, value);
    }
    for child in &segment.children {
        write_segment(out, child);
    }
    close(out, &segment.name);
}

fn open(out: &mut String, name: &str, attribute: Option<(&str, &str)>) {
    out.push('<');
    out.push_str(name);
    if let Some((key, value)) = attribute {
        out.push(' ');
        out.push_str(key);
        out.push_str("=\"");
        out.push_str(value);
        out.push('"');
    }
    out.push('>');
}

fn close(out: &mut String, name: &str) {
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

fn field(out: &mut String, name: &str, value: &str) {
    open(out, name, None);
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    close(out, name);
}
