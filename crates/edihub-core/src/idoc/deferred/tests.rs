//! A deferred IDoc answers as the rendered one: documents, key values,
//! fingerprints and errors are those of the eager parse, for every XML
//! fixture and for the shapes the deferral must step around.

use std::borrow::Cow;
use std::path::PathBuf;

use bytes::Bytes;

use serde_json::json;

use super::super::{from_xml, from_xml_deferred};
use crate::{Basis, CoreError, Document, FingerprintScope, FingerprintSpec, KeyPath, fingerprint};

/// Paths of both notations, on segments, fields, attributes and the control record.
const PATHS: &[&str] = &[
    "E1EDK01.BELNR",
    "E1EDK02[QUALF=009].BELNR",
    "E1EDK02.BELNR",
    "E1EDP01.E1EDP19[QUALF=002].IDTNR",
    "E1EDP01",
    "EDI_DC40.DOCNUM",
    "EDI_DC40",
    "@BEGIN",
    "#text",
    "MISSING.FIELD",
    "$.E1EDK01.BELNR",
    "$..BELNR",
];

fn eager(text: &str) -> Result<Vec<Document>, CoreError> {
    assert!(text.len() < super::DEFER_FROM, "the eager parse is for small texts");
    from_xml(Cow::Borrowed(text), None, usize::MAX)
}

fn deferred(text: &str) -> Result<Vec<Document>, CoreError> {
    from_xml_deferred(text)
}

/// Both parses of `text` give equal documents (or the same error), equal
/// values at every path of [`PATHS`] and equal fingerprints.
fn assert_same(text: &str) {
    let (rendered, deferred) = (eager(text), deferred(text));
    let (rendered, deferred) = match (rendered, deferred) {
        (Ok(r), Ok(d)) => (r, d),
        (r, d) => {
            assert_eq!(r.err(), d.err(), "{text}");
            return;
        }
    };
    assert_eq!(rendered.len(), deferred.len());
    for (r, d) in rendered.iter().zip(&deferred) {
        assert!(d.deferred_idoc().is_some(), "a deferred parse defers every IDoc");
        for src in PATHS {
            let path = KeyPath::parse(src).unwrap();
            assert_eq!(r.values(&path), d.values(&path), "{src} in {text}");
            let keys = [path];
            let spec = FingerprintSpec {
                message_type: "T",
                key_fields: &keys,
                exclude_fields: &[],
                scope: FingerprintScope::NONE,
            };
            assert_eq!(fingerprint(r, &spec), fingerprint(d, &spec), "{src}");
        }
        let content = [KeyPath::parse("$").unwrap()];
        let spec = FingerprintSpec {
            message_type: "T",
            key_fields: &content,
            exclude_fields: &[],
            scope: FingerprintScope::NONE,
        };
        assert_eq!(fingerprint(r, &spec).basis, Basis::Content);
        assert_eq!(fingerprint(r, &spec), fingerprint(d, &spec));
        assert_eq!(r.value(), d.value());
        assert_eq!(serde_json::to_string(&r.json()).unwrap(), serde_json::to_string(&d.json()).unwrap());
        assert_eq!(r.clone().into_value(), d.clone().into_value());
    }
    assert_eq!(rendered, deferred);
}

#[test]
fn every_xml_fixture_reads_the_same_deferred() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut seen = 0;
    for dir in ["idoc", "idoc/real", "bad"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "xml") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let Ok(text) = crate::encoding::decode_xml(&bytes, None) else { continue };
            assert_same(&text);
            seen += 1;
        }
    }
    assert!(seen > 90, "only {seen} fixtures read");
}

#[test]
fn segments_interleaved_nested_and_escaped_read_the_same() {
    assert_same(
        "<?xml version=\"1.0\"?>\r\n<!-- head --><ns0:INVOIC02 xmlns:ns0=\"urn:x\">\r\n\
         <ns0:IDOC BEGIN=\" 1 \" ns0:X=\"&amp;&#x41;\">lead text\r\n\
           <EDI_DC40 SEGMENT=\"1\"><DOCNUM> 7 </DOCNUM><IDOCTYP>INVOIC02</IDOCTYP></EDI_DC40>\r\n\
           <E1EDK02 SEGMENT=\"1\"><QUALF>001</QUALF><BELNR>A</BELNR></E1EDK02>\r\n\
           <E1EDK01><BELNR><![CDATA[ B&<1> ]]></BELNR><!-- c --><?pi x?></E1EDK01>\r\n\
           <E1EDK02 SEGMENT=\"1\"><QUALF>009</QUALF><BELNR>C &lt;&#65;&gt;</BELNR></E1EDK02>\r\n\
           <E1EDP01><E1EDP19><QUALF>002</QUALF><IDTNR>M1</IDTNR></E1EDP19><E1EDP01>inner</E1EDP01></E1EDP01>\r\n\
           <E1EDP01/><ns0:E1EDP01 A=\"1\"/>\r\n\
           <E1EDK02><QUALF>009</QUALF><BELNR>D</BELNR><IDOC><EDI_DC40/></IDOC></E1EDK02>\r\n\
           trailing text\r\n\
         </ns0:IDOC></ns0:INVOIC02>",
    );
}

#[test]
fn packets_and_soap_envelopes_read_the_same() {
    let idoc = |n: u32| {
        format!(
            "<IDOC><EDI_DC40><DOCNUM>{n}</DOCNUM></EDI_DC40><E1EDK01><BELNR>B{n}</BELNR></E1EDK01></IDOC>"
        )
    };
    assert_same(&format!("<ORDERS05>{}<OTHER><IDOC/></OTHER>{}{}</ORDERS05>", idoc(1), idoc(2), idoc(3)));
    assert_same(&idoc(4));
    assert_same(&format!(
        "<s:Envelope xmlns:s=\"urn:soap\"><s:Header><IDOC/></s:Header>\
         <s:Body><ORDERS05>{}{}</ORDERS05></s:Body></s:Envelope>",
        idoc(5),
        idoc(6)
    ));
    assert_same(&format!("<s:Envelope xmlns:s=\"urn:soap\"><s:Body>{}</s:Body></s:Envelope>", idoc(7)));
}

#[test]
fn errors_inside_deferred_segments_are_the_errors_of_the_eager_parse() {
    let dc40 = "<EDI_DC40><DOCNUM>1</DOCNUM></EDI_DC40>";
    for bad in [
        format!("<X><IDOC>{dc40}<E1EDK01><BELNR>1</BELNR></IDOC></X>"),
        format!("<X><IDOC>{dc40}<E1EDK01><BELNR>1</BELNR></E1EDK01>"),
        format!("<X><IDOC>{dc40}<E1EDK01>&foo;</E1EDK01></IDOC></X>"),
        format!("<X><IDOC>{dc40}<E1EDK01 A=\"&foo;\"/></IDOC></X>"),
        format!("<X><IDOC>{dc40}<E1EDK01 A=\"1\" A=\"2\"/></IDOC></X>"),
        format!("<X><IDOC>{dc40}<E1EDK01>&#1;</E1EDK01></IDOC></X>"),
        format!("<X><IDOC>{dc40}<E1EDK01><!DOCTYPE x></E1EDK01></IDOC></X>"),
        format!("<X><IDOC>{dc40}</IDOC></X><Y/>"),
        format!("<X><IDOC>{dc40}{dc40}</IDOC></X>"),
        "<X><IDOC><EDI_DC40><DOCNUM>1</DOCNUM><DOCNUM>2</DOCNUM></EDI_DC40></IDOC></X>".to_string(),
        "<X><IDOC><E1EDK01/></IDOC></X>".to_string(),
        "<X><IDOC/></X>".to_string(),
        "<X><IDOC>text only</IDOC></X>".to_string(),
        format!("<X>{}</X>", "<E1EDK01>".repeat(300)),
    ] {
        let expected = eager(&bad).unwrap_err();
        assert_eq!(deferred(&bad).unwrap_err(), expected, "{bad}");
    }
}

#[test]
fn a_key_path_renders_only_the_segments_it_names() {
    let text = "<X><IDOC><EDI_DC40><DOCNUM>1</DOCNUM></EDI_DC40>\
                <E1EDK01><BELNR>B</BELNR></E1EDK01><E1EDP01><P>1</P></E1EDP01><E1EDP01><P>2</P></E1EDP01>\
                </IDOC></X>";
    let docs = deferred(text).unwrap();
    let idoc = docs[0].deferred_idoc().unwrap();
    assert_eq!(idoc.segments_named("E1EDP01"), Some(json!({"E1EDP01": [{"P": "1"}, {"P": "2"}]})));
    assert_eq!(idoc.segments_named("E1EDK01"), Some(json!({"E1EDK01": {"BELNR": "B"}})));
    assert_eq!(idoc.segments_named("NONE"), Some(json!({})));
    // Attributes and text are the whole element's.
    assert_eq!(idoc.segments_named("@BEGIN"), None);
    assert_eq!(idoc.segments_named("#text"), None);
    assert_eq!(docs[0].values(&KeyPath::parse("E1EDK01.BELNR").unwrap()), [json!("B")]);
}

#[test]
fn only_large_texts_are_deferred() {
    let head = "<X><IDOC><EDI_DC40><DOCNUM>1</DOCNUM></EDI_DC40>";
    let small = format!("{head}<E1EDK01><BELNR>B</BELNR></E1EDK01></IDOC></X>");
    assert!(eager(&small).unwrap()[0].deferred_idoc().is_none());
    let filler = "<E1EDP01><P>1</P></E1EDP01>".repeat(super::DEFER_FROM / 20);
    let large = format!("{head}{filler}<E1EDK01><BELNR>B</BELNR></E1EDK01></IDOC></X>");
    let docs = from_xml(Cow::Borrowed(&large), None, usize::MAX).unwrap();
    assert!(docs[0].deferred_idoc().is_some());
    assert_eq!(docs[0].values(&KeyPath::parse("E1EDK01.BELNR").unwrap()), [json!("B")]);
    assert_eq!(docs[0].docnum(), Some("1"));
}

/// A large UTF-8 body's IDocs answer from the body's own buffer (held
/// once), a text decoded from another charset from the decoded text; both
/// answer as the eager parse does.
#[test]
fn a_large_body_is_held_once() {
    let filler = "<E1EDP01><P>1</P></E1EDP01>".repeat(super::DEFER_FROM / 20);
    let text = format!(
        "<X><IDOC><EDI_DC40><DOCNUM>1</DOCNUM></EDI_DC40>{filler}<E1EDK01><BELNR>Ä</BELNR></E1EDK01></IDOC></X>"
    );
    let body = Bytes::from(format!("\u{feff}{text}"));
    let within = |held: &Bytes| body.as_ptr_range().contains(&held.as_ptr());
    let docs =
        from_xml(Cow::Borrowed(&std::str::from_utf8(&body).unwrap()[3..]), Some(&body), usize::MAX).unwrap();
    let idoc = docs[0].deferred_idoc().expect("deferred");
    assert!(within(&idoc.text.0), "the text is a slice of the body");
    assert_eq!(idoc.text.0.len(), text.len(), "the BOM is not part of the text");
    assert_eq!(docs[0].values(&KeyPath::parse("E1EDK01.BELNR").unwrap()), [json!("Ä")]);

    let decoded = from_xml(Cow::Owned(text.clone()), Some(&body), usize::MAX).unwrap();
    let idoc = decoded[0].deferred_idoc().expect("deferred");
    assert!(!within(&idoc.text.0), "a decoded text is its own buffer");
    assert_eq!(decoded, docs);
}

/// A large text of more IDocs than the caller accepts stops at the first
/// `IDOC` over: the broken IDoc after it is never reached, and with a limit
/// that takes it in, the same text is refused for that IDoc instead. A
/// small text is rendered whole and left to the caller's count.
#[test]
fn a_large_packet_over_the_limit_stops_at_the_first_idoc_over() {
    let idoc = |n: usize| {
        format!(
            "<IDOC BEGIN=\"1\"><EDI_DC40 SEGMENT=\"1\"><DOCNUM>{n:016}</DOCNUM></EDI_DC40>\
             <E1EDK01 SEGMENT=\"1\"><BELNR>P{n}</BELNR>{}</E1EDK01></IDOC>",
            " ".repeat(100_000)
        )
    };
    let mut idocs: Vec<String> = (1..=12).map(idoc).collect();
    idocs[11] = idocs[11].replace("</BELNR>", "</BELNX>");
    let text = format!("<ORDERS05>{}</ORDERS05>", idocs.concat());
    assert!(text.len() >= super::DEFER_FROM, "a deferred text");
    let read = |limit| from_xml(Cow::Borrowed(&text), None, limit);
    for limit in [10, 11] {
        assert_eq!(read(limit).unwrap_err(), CoreError::TooManyMessages { limit }, "limit {limit}");
    }
    let broken = read(12).unwrap_err();
    assert!(broken.to_string().contains("BELNX"), "the twelfth IDoc is read: {broken}");
    let whole = text.replace("</BELNX>", "</BELNR>");
    assert_eq!(from_xml(Cow::Borrowed(&whole), None, 12).unwrap().len(), 12);
    let small = format!(
        "<ORDERS05>{}</ORDERS05>",
        (1..=3).map(|n| idoc(n).replace(&" ".repeat(100_000), "")).collect::<String>()
    );
    assert_eq!(from_xml(Cow::Borrowed(&small), None, 2).unwrap().len(), 3, "read whole");
    let small = bytes::Bytes::from(small);
    let counted = crate::parse_bytes_with(&small, Some("application/xml"), &Default::default(), 2);
    assert_eq!(counted.unwrap_err(), CoreError::TooManyMessages { limit: 2 }, "then counted");
}
