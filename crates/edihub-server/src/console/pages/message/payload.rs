//! A payload made readable for the message page: XML indented, JSON
//! formatted, anything else shown as text; cut at [`MAX_SHOWN_BYTES`] (the
//! page links to the raw bytes for the rest).
//!
//! This is a view only: the stored bytes are never changed, and a payload
//! that does not parse is shown as it is. The result is plain text; the
//! page escapes it.

use quick_xml::events::Event;
use quick_xml::{Reader, Writer};

/// Most bytes of (pretty) text the page shows.
pub const MAX_SHOWN_BYTES: usize = 256 * 1024;

/// What the page shows of a payload.
#[derive(Debug, PartialEq, Eq)]
pub struct PayloadView {
    /// The readable text (at most [`MAX_SHOWN_BYTES`]).
    pub text: String,
    /// `XML`, `JSON` or `text`.
    pub format: &'static str,
    /// Whether `text` is only the beginning.
    pub truncated: bool,
}

/// The payload's text: UTF-8 as is, UTF-16 by its byte order mark, and any
/// other bytes as windows-1252 (a superset of the ISO-8859-1 SAP sends), so
/// nothing is lost to replacement characters.
fn decode(payload: &[u8]) -> String {
    if let Some((encoding, bom)) = encoding_rs::Encoding::for_bom(payload) {
        return encoding.decode_without_bom_handling(&payload[bom..]).0.into_owned();
    }
    match std::str::from_utf8(payload) {
        Ok(text) => text.to_string(),
        Err(_) => encoding_rs::WINDOWS_1252.decode_without_bom_handling(payload).0.into_owned(),
    }
}

/// XML re-indented by two spaces, or `None` when it does not parse.
fn indent_xml(text: &str) -> Option<String> {
    let mut reader = Reader::from_str(text);
    reader.config_mut().trim_text(true);
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    loop {
        match reader.read_event().ok()? {
            Event::Eof => break,
            event => writer.write_event(event).ok()?,
        }
    }
    String::from_utf8(writer.into_inner()).ok()
}

/// The view of `payload` received with `content_type`.
pub fn view(payload: &[u8], content_type: Option<&str>) -> PayloadView {
    let text = decode(payload);
    let body = text.trim_start_matches('\u{feff}').trim_start();
    let ct = content_type.unwrap_or_default().to_ascii_lowercase();
    let (pretty, format) = if body.starts_with('{') || body.starts_with('[') || ct.contains("json") {
        match serde_json::from_str::<serde_json::Value>(body) {
            Ok(v) => (serde_json::to_string_pretty(&v).unwrap_or(text.clone()), "JSON"),
            Err(_) => (text.clone(), "text"),
        }
    } else if body.starts_with('<') || ct.contains("xml") {
        indent_xml(body).map_or((text.clone(), "text"), |x| (x, "XML"))
    } else {
        (text.clone(), "text")
    };
    let truncated = pretty.len() > MAX_SHOWN_BYTES;
    let mut cut = MAX_SHOWN_BYTES.min(pretty.len());
    while !pretty.is_char_boundary(cut) {
        cut -= 1;
    }
    PayloadView { text: pretty[..cut].to_string(), format, truncated }
}

#[cfg(test)]
mod tests {
    use super::{MAX_SHOWN_BYTES, view};

    #[test]
    fn xml_is_indented() {
        let v = view(b"<A><B x=\"1\">t</B><C/></A>", Some("application/xml"));
        assert_eq!(v.format, "XML");
        assert_eq!(v.text, "<A>\n  <B x=\"1\">t</B>\n  <C/>\n</A>");
    }

    #[test]
    fn json_is_formatted_and_latin1_decoded() {
        let v = view(br#"{"a":[1,"x"]}"#, None);
        assert_eq!((v.format, v.text.as_str()), ("JSON", "{\n  \"a\": [\n    1,\n    \"x\"\n  ]\n}"));
        assert_eq!(view(b"M\xfcller", Some("text/plain")).text, "Müller");
    }

    #[test]
    fn broken_input_is_shown_as_is_and_large_input_is_cut() {
        let v = view(b"<A><B></A>", Some("application/xml"));
        assert_eq!((v.format, v.text.as_str()), ("text", "<A><B></A>"));
        let big = format!("<A>{}</A>", "é".repeat(MAX_SHOWN_BYTES));
        let v = view(big.as_bytes(), None);
        assert!(v.truncated && v.text.len() <= MAX_SHOWN_BYTES && v.text.starts_with("<A>"));
    }
}
