//! Flat files read into the IDoc rendering, and every refusal naming its record.

use serde_json::json;

use super::*;
use crate::idoc::layout::CONTROL_FIELDS;
use crate::{parse_body, parse_body_with};

/// `value` left-justified in `len` characters (it must fit).
fn pad(value: &str, len: usize) -> String {
    assert!(value.chars().count() <= len, "{value} does not fit in {len}");
    format!("{value:<len$}")
}

/// A control record with these fields (TABNAM EDI_DC40 unless given).
fn control(fields: &[(&str, &str)]) -> String {
    CONTROL_FIELDS
        .iter()
        .map(|(name, len)| {
            let value = fields.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
            pad(value.unwrap_or(if *name == "TABNAM" { "EDI_DC40" } else { "" }), *len)
        })
        .collect()
}

fn order_control(docnum: &str) -> String {
    control(&[
        ("MANDT", "100"),
        ("DOCNUM", docnum),
        ("IDOCTYP", "ORDERS05"),
        ("MESTYP", "ORDERS"),
        ("SNDPOR", "SAPQ01"),
        ("SNDPRT", "LS"),
        ("SNDPRN", "Q01CLNT100"),
        ("RCVPRN", "EDIHUB"),
    ])
}

/// A data record: header fields, then `sdata` padded to 1000 characters.
fn data(segnam: &str, docnum: &str, segnum: &str, psgnum: &str, sdata: &str) -> String {
    let header = [(segnam, 30), ("100", 3), (docnum, 16), (segnum, 6), (psgnum, 6), ("02", 2)];
    let mut record: String = header.iter().map(|(v, len)| pad(v, *len)).collect();
    record.push_str(&pad(sdata, SDATA_LEN));
    record
}

fn file(records: &[String]) -> Vec<u8> {
    (records.join("\n") + "\n").into_bytes()
}

fn parse(bytes: &[u8]) -> Result<ParsedBody, CoreError> {
    parse_body(bytes, Some("text/plain"))
}

fn description() -> IdocDescriptions {
    let mut all = IdocDescriptions::new();
    let json = r#"{"idoc_type": "ORDERS05", "segments": [
      {"name": "E1EDK01", "definition": "E2EDK01005", "fields": [
        {"name": "ACTION", "offset": 0, "length": 3}, {"name": "BELNR", "offset": 3, "length": 35}]},
      {"name": "E1EDP01", "definition": "E2EDP01011", "fields": [{"name": "POSEX", "offset": 0, "length": 6}]},
      {"name": "E1EDP19", "fields": [
        {"name": "QUALF", "offset": 0, "length": 3}, {"name": "IDTNR", "offset": 3, "length": 35}]}]}"#;
    all.insert(IdocDescription::read(json).unwrap()).unwrap();
    all
}

/// An order: a header segment and two items, each with a material number child.
fn order(docnum: &str) -> Vec<String> {
    vec![
        order_control(docnum),
        data("E2EDK01005", docnum, "000001", "000000", &format!("000{}", pad("4500012345", 35))),
        data("E2EDP01011", docnum, "000002", "000000", "000010"),
        data("E1EDP19", docnum, "000003", "000002", "002MAT-100200"),
        data("E2EDP01011", docnum, "000004", "000000", "000020"),
        data("E1EDP19", docnum, "000005", "000004", "002MAT-100300"),
    ]
}

#[test]
fn a_described_file_renders_as_its_xml_form_would() {
    let body = parse_body_with(&file(&order("0000000000004711")), None, &description()).unwrap();
    assert_eq!(body.format, BodyFormat::IdocFlat);
    let doc = &body.documents[0];
    let expected = json!({
        "@BEGIN": "1",
        "EDI_DC40": {"@SEGMENT": "1", "TABNAM": "EDI_DC40", "MANDT": "100", "DOCNUM": "0000000000004711",
            "IDOCTYP": "ORDERS05", "MESTYP": "ORDERS", "SNDPOR": "SAPQ01", "SNDPRT": "LS",
            "SNDPRN": "Q01CLNT100", "RCVPRN": "EDIHUB"},
        "E1EDK01": {"@SEGMENT": "1", "ACTION": "000", "BELNR": "4500012345"},
        "E1EDP01": [
            {"@SEGMENT": "1", "POSEX": "000010", "E1EDP19": {"@SEGMENT": "1", "QUALF": "002", "IDTNR": "MAT-100200"}},
            {"@SEGMENT": "1", "POSEX": "000020", "E1EDP19": {"@SEGMENT": "1", "QUALF": "002", "IDTNR": "MAT-100300"}},
        ],
    });
    assert_eq!(doc.value(), &expected);
    assert_eq!(doc.message_type(None, &|_| false).unwrap(), "ORDERS05");
    assert_eq!((doc.docnum(), doc.mestyp()), (Some("0000000000004711"), Some("ORDERS")));
    assert_eq!(doc.control().unwrap().rcvprn.as_deref(), Some("EDIHUB"));
    assert_eq!(doc.root_name(), None);
}

#[test]
fn without_a_description_segments_keep_their_name_and_raw_sdata() {
    let body = parse(&file(&order("4711"))).unwrap();
    let value = body.documents[0].value();
    assert_eq!(value["E2EDK01005"], json!({"@SEGMENT": "1", "SDATA": format!("000{}", "4500012345")}));
    assert_eq!(value["E2EDP01011"][1]["E1EDP19"], json!({"@SEGMENT": "1", "SDATA": "002MAT-100300"}));
    // Control record paths work as they do for XML.
    assert_eq!(value["EDI_DC40"]["SNDPRN"], json!("Q01CLNT100"));
    // A type that no description names is read raw even when others are described.
    let invoice =
        file(&[control(&[("IDOCTYP", "INVOIC02"), ("DOCNUM", "9")]), data("E2EDK01005", "9", "1", "", "X")]);
    let doc = &parse_body_with(&invoice, None, &description()).unwrap().documents[0];
    assert_eq!(doc.value()["E2EDK01005"]["SDATA"], json!("X"));
}

#[test]
fn several_idocs_in_one_file_are_a_packet() {
    let mut records = order("4711");
    records.extend(order("4712"));
    records.push(control(&[("IDOCTYP", "ORDERS05"), ("DOCNUM", "4713"), ("TABNAM", "EDI_DC40_U")]));
    let body = parse(&file(&records)).unwrap();
    let docnums: Vec<_> = body.documents.iter().map(|d| d.docnum().unwrap()).collect();
    assert_eq!(docnums, ["4711", "4712", "4713"]);
    // A Unicode system's TABNAM names the same layout; the rendering says EDI_DC40.
    assert_eq!(body.documents[2].value()["EDI_DC40"]["TABNAM"], json!("EDI_DC40"));
    assert_eq!(body.documents[2].value().as_object().unwrap().len(), 2);
}

#[test]
fn line_breaks_blank_edges_and_non_ascii_characters() {
    let records = order("4711");
    let crlf = format!("\r\n\n{}\r\n\r\n\n", records.join("\r\n"));
    assert_eq!(
        parse(crlf.as_bytes()).unwrap().documents[0].value(),
        parse(&file(&records)).unwrap().documents[0].value()
    );
    // A field holding `ü` is 1063 characters, not bytes, long.
    let umlaut = [order_control("1"), data("E2EDK01005", "1", "1", "", "000Müller")];
    let body = parse_body_with(&file(&umlaut), Some("text/plain; charset=utf-8"), &description()).unwrap();
    assert_eq!(body.documents[0].value()["E1EDK01"]["BELNR"], json!("Müller"));
    // The same file in ISO-8859-1, so declared.
    let latin1: Vec<u8> = String::from_utf8(file(&umlaut)).unwrap().chars().map(|c| c as u8).collect();
    let body = parse_body_with(&latin1, Some("text/plain; charset=ISO-8859-1"), &description()).unwrap();
    assert_eq!(body.documents[0].value()["E1EDK01"]["BELNR"], json!("Müller"));
}

#[test]
fn the_flat_type_is_sniffed_or_named() {
    let bytes = file(&order("4711"));
    for content_type in
        [None, Some("text/plain"), Some("application/octet-stream"), Some("application/x-sap-idoc-flat")]
    {
        assert_eq!(
            parse_body(&bytes, content_type).unwrap().format,
            BodyFormat::IdocFlat,
            "{content_type:?}"
        );
    }
    assert!(crate::looks_like_message(&bytes));
    let named = parse_body(b"<ORDERS05/>", Some("Application/X-SAP-IDoc-Flat; charset=utf-8")).unwrap_err();
    assert_eq!(
        named.to_string(),
        "flat-file IDoc record 1 (<ORDERS05/>) is a data record before any control record EDI_DC40"
    );
    assert_eq!(named.class(), crate::ErrorClass::Unusable);
}

/// The error of a flat file with these records (no description).
fn refusal(records: &[String]) -> CoreError {
    parse_body(&file(records), Some("application/x-sap-idoc-flat")).unwrap_err()
}

#[test]
fn records_of_the_wrong_length_are_refused_by_name() {
    let mut short_control = order("4711");
    short_control[0].pop();
    let e = refusal(&short_control);
    assert_eq!(
        e.to_string(),
        "flat-file IDoc record 1 (EDI_DC40) has 523 characters; an EDI_DC40 control record has 524"
    );
    assert_eq!(e.class(), crate::ErrorClass::Unusable);
    let mut long_data = order("4711");
    long_data[2].push(' ');
    assert_eq!(
        refusal(&long_data).to_string(),
        "flat-file IDoc record 3 (E2EDP01011) has 1064 characters; an EDI_DD40 data record has 1063"
    );
    // Trailing blanks cut off (by an editor) make a record short too.
    let mut trimmed = order("4711");
    trimmed[1] = trimmed[1].trim_end().to_string();
    assert_eq!(
        refusal(&trimmed).to_string(),
        "flat-file IDoc record 2 (E2EDK01005) has 76 characters; an EDI_DD40 data record has 1063"
    );
    let mut release3 = order("4711");
    release3[0] = format!("EDI_DC    {}", &release3[0][10..]);
    assert_eq!(
        refusal(&release3).to_string(),
        "flat-file IDoc record 1 is a control record EDI_DC; only EDI_DC40, the layout of SAP release 4.0 and later, is read"
    );
}

#[test]
fn structural_faults_are_refused_by_record() {
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            order("4711")[1..].to_vec(),
            "record 1 (E2EDK01005) is a data record before any control record EDI_DC40",
        ),
        (
            [order("0000000000004711"), order("4711")].concat(),
            "record 7 is a second control record for IDoc 4711 (its first is record 1)",
        ),
        (
            vec![order_control("4711"), data("E2EDK01005", "4712", "1", "", "X")],
            "record 2 (E2EDK01005) has DOCNUM 4712, but its control record (record 1) is IDoc 4711",
        ),
        (
            vec![control(&[("IDOCTYP", "ORDERS05")]), data("E2EDK01005", "4712", "1", "", "X")],
            "record 2 (E2EDK01005) has DOCNUM 4712, but its control record (record 1) has no DOCNUM",
        ),
        (
            vec![order_control("4711"), data("E1EDP19", "4711", "1", "000009", "X")],
            "record 2 (E1EDP19) names parent segment 000009, which is not an earlier segment of its IDoc",
        ),
        (
            vec![
                order_control("4711"),
                data("E1EDP01", "", "1", "", "X"),
                data("E1EDP01", "", "000001", "", "Y"),
            ],
            "record 3 (E1EDP01) repeats segment number 000001 of record 2",
        ),
        (
            vec![order_control("4711"), data("", "", "1", "", "X")],
            "record 2 is a data record without a segment name (SEGNAM)",
        ),
        (
            vec![order_control("4711"), String::new(), data("E1EDP01", "", "1", "", "X")],
            "record 2 is empty: records follow each other on consecutive lines",
        ),
        (
            vec![order_control("4711"), data("E1EDP01", "", "1", "", "A\u{0}B")],
            "record 2 has the control character U+0000 at column 65",
        ),
    ];
    for (records, detail) in cases {
        let e = refusal(&records);
        assert_eq!(e.to_string(), format!("flat-file IDoc {detail}"));
        assert_eq!(e.class(), crate::ErrorClass::Unusable, "{detail}");
    }
}

#[test]
fn a_description_refuses_what_it_does_not_describe() {
    let unknown = [order_control("1"), data("E2EDKA1003", "1", "1", "", "AG")];
    let e = parse_body_with(&file(&unknown), None, &description()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "flat-file IDoc record 2 has segment E2EDKA1003, which the description of ORDERS05 does not name"
    );
    let outside = [order_control("1"), data("E2EDP01011", "1", "1", "", "000010   X")];
    let e = parse_body_with(&file(&outside), None, &description()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "flat-file IDoc record 2 (E1EDP01) has data at SDATA offset 9, outside every field the description gives it"
    );
}

#[test]
fn mixed_encodings_are_refused_at_their_record() {
    // Record 2 written in ISO-8859-1 inside a UTF-8 file: `ü` is the lone
    // byte 0xFC, after 525 bytes of record 1 and 67 of record 2.
    let mut bytes = file(&[order_control("1")]);
    let latin1_record: Vec<u8> =
        data("E2EDK01005", "1", "1", "", "000Müller").chars().map(|c| c as u8).collect();
    bytes.extend(latin1_record);
    let e = parse(&bytes).unwrap_err();
    assert_eq!(e.to_string(), "flat-file IDoc record 2: invalid UTF-8 at byte 592");
    assert_eq!(e.class(), crate::ErrorClass::Malformed);
    // UTF-8 read as ISO-8859-1: `ü` becomes two characters and the record is too long.
    let utf8 = file(&[order_control("1"), data("E2EDK01005", "1", "1", "", "000Müller")]);
    let e = parse_body(&utf8, Some("text/plain; charset=ISO-8859-1")).unwrap_err();
    assert!(e.to_string().starts_with("flat-file IDoc record 2 (E2EDK01005) has 1064 characters"), "{e}");
}

#[test]
fn deep_nesting_is_refused_before_it_can_hurt() {
    let mut records = vec![order_control("1")];
    for i in 1..=300 {
        records.push(data("E1X", "1", &i.to_string(), &(i - 1).to_string(), "X"));
    }
    assert_eq!(
        refusal(&records).to_string(),
        format!("flat-file IDoc record {} (E1X) nests segments deeper than 254", 256)
    );
    let fine = &records[..200];
    assert_eq!(parse(&file(fine)).unwrap().documents.len(), 1);
}

#[test]
fn an_empty_or_blank_file_is_empty() {
    assert_eq!(parse_body(b"\n\n", Some("application/x-sap-idoc-flat")).unwrap_err(), CoreError::EmptyBody);
}

proptest::proptest! {
    /// Any lines after a control record end in documents or an error, never a panic.
    #[test]
    fn any_records_end_in_a_result(lines in proptest::collection::vec("(?s).{0,1100}", 0..6)) {
        let mut text = order_control("1");
        for line in &lines {
            text.push('\n');
            text.push_str(line);
        }
        let _ = parse(text.as_bytes());
    }

    /// Whatever printable SDATA a record holds, the raw reading keeps it without trailing blanks.
    #[test]
    fn raw_sdata_is_kept_as_written(sdata in "[ -~äöüß€]{0,1000}") {
        let body = parse(&file(&[order_control("1"), data("E1X", "1", "1", "", &sdata)])).unwrap();
        let kept = body.documents[0].value()["E1X"].get("SDATA").and_then(|v| v.as_str()).unwrap_or("");
        proptest::prop_assert_eq!(kept, sdata.trim_end());
    }
}

/// A file of more IDocs than the caller accepts stops at the first control
/// record over: the broken IDoc after it is never reached, and with a limit
/// that takes it in, the same file is refused for that IDoc instead.
#[test]
fn a_file_over_the_limit_stops_at_the_first_idoc_over() {
    let mut records: Vec<String> = (1..=12).flat_map(|n| order(&format!("{n:016}"))).collect();
    // The twelfth IDoc's first data record is a character short.
    let twelfth_data = 11 * 6 + 1;
    records[twelfth_data].pop();
    let body = file(&records);
    let read =
        |limit| crate::parse_bytes_with(&body.clone().into(), Some("text/plain"), &description(), limit);
    for limit in [10, 11] {
        assert_eq!(read(limit).unwrap_err(), CoreError::TooManyMessages { limit }, "limit {limit}");
    }
    let broken = read(12).unwrap_err();
    assert!(
        broken.to_string().starts_with("flat-file IDoc record 68 (E2EDK01005) has 1062 characters"),
        "{broken}"
    );
    records[twelfth_data].push(' ');
    assert_eq!(
        crate::parse_bytes_with(&file(&records).into(), None, &description(), 12).unwrap().documents.len(),
        12
    );
}
