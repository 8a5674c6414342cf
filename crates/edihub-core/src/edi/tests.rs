use serde_json::json;

use crate::{BodyFormat, CoreError, ErrorClass, KeyPath, parse_body};

/// A one-message EDIFACT interchange around `body` segments (UNT counted).
fn edifact(una: &str, body: &[&str]) -> String {
    let mut s = format!("{una}UNB+UNOC:3+SENDER:14+RECEIVER:14+240101:1200+IC1'UNH+M1+ORDERS:D:96A:UN'");
    for seg in body {
        s.push_str(seg);
    }
    s.push_str(&format!("UNT+{}+M1'UNZ+1+IC1'", body.len() + 2));
    s
}

fn x12(isa12: &str, isa11: char, body: &str, n: usize) -> String {
    format!(
        "ISA*00*          *00*          *ZZ*SENDER         *ZZ*RECEIVER       *240101*1200*{isa11}*{isa12}*000000001*0*P*>~\n\
         GS*PO*S*R*20240101*1200*77*X*004010~\nST*850*0001~\n{body}SE*{}*0001~\nGE*1*77~\nIEA*1*000000001~\n",
        n + 2
    )
}

fn one(body: &str, ct: &str) -> crate::Document {
    let mut parsed = parse_body(body.as_bytes(), Some(ct)).unwrap_or_else(|e| panic!("{e}\n{body}"));
    assert_eq!(parsed.documents.len(), 1);
    parsed.documents.remove(0)
}

fn vals(doc: &crate::Document, path: &str) -> Vec<serde_json::Value> {
    doc.values(&KeyPath::parse(path).unwrap())
}

fn err(body: &str) -> CoreError {
    parse_body(body.as_bytes(), None).expect_err("must fail")
}

#[test]
fn edifact_release_character_and_components() {
    let doc =
        one(&edifact("", &["BGM+220+PO?+1?'X+9'", "RFF+ON:4711'", "RFF+VN:99'"]), "application/EDIFACT");
    assert_eq!(doc.value()[0], json!(["BGM", "220", "PO+1'X", "9"]));
    assert_eq!(vals(&doc, "BGM.02"), vec![json!("PO+1'X")]);
    assert_eq!(vals(&doc, "RFF[01.01=ON].01.02"), vec![json!("4711")]);
    assert_eq!(vals(&doc, "RFF.01.01"), vec![json!("ON"), json!("VN")]);
    // A simple value read as a composite's first component.
    assert_eq!(vals(&doc, "BGM.01.01"), vec![json!("220")]);
    assert_eq!(doc.message_type(None, &|_| false).unwrap(), "EDIFACT.ORDERS");
    let h = doc.edi_header().unwrap();
    assert_eq!((h.version.as_str(), h.control_number.as_str()), ("D96A", "M1"));
    assert_eq!(doc.docnum(), Some("M1"));
}

#[test]
fn una_announces_other_separators() {
    let body = edifact("", &["BGM+220+A:B'"]).replace('+', "*").replace(':', "|");
    let body = format!("UNA|*.? '{body}");
    let doc = one(&body, "text/plain");
    assert_eq!(doc.value()[0], json!(["BGM", "220", ["A", "B"]]));
    assert_eq!(doc.edi_header().unwrap().interchange.sender.id, "SENDER");
}

#[test]
fn latin1_and_utf8_syntax_identifiers() {
    let mut latin1 = edifact("", &["FTX+AAI+++M#'"]).into_bytes();
    let at = latin1.iter().position(|b| *b == b'#').unwrap();
    latin1[at] = 0xFC; // ü in ISO 8859-1
    let doc = &parse_body(&latin1, None).unwrap().documents[0];
    assert_eq!(vals(doc, "FTX.04"), vec![json!("Mü")]);

    let utf8 = edifact("", &["FTX+AAI+++Mü'"]).replace("UNOC", "UNOW");
    assert_eq!(vals(&one(&utf8, "application/edifact"), "FTX.04"), vec![json!("Mü")]);
    let bad = edifact("", &["FTX+AAI+++M'"]).replace("UNOC", "UNOY").into_bytes();
    let bad = [&bad[..bad.len() - 20], &[0xFF], &bad[bad.len() - 20..]].concat();
    assert!(matches!(parse_body(&bad, None), Err(CoreError::InvalidText { encoding: "UTF-8", .. })));
    let e = err(&edifact("", &[]).replace("UNOC", "UNOD"));
    assert!(e.to_string().contains("UNB 0001 syntax identifier `UNOD`"), "{e}");
}

#[test]
fn x12_separators_repetition_and_glued_paths() {
    let doc = one(
        &x12("00501", '^', "BEG*00*NE*PO-1**20240101~\nREF*PO*A^B~REF*CR*C>D~\n", 3),
        "application/EDI-X12",
    );
    assert_eq!(vals(&doc, "BEG03"), vec![json!("PO-1")]);
    assert_eq!(vals(&doc, "REF[01=PO].02"), vec![json!("A"), json!("B")]);
    assert_eq!(vals(&doc, "REF[01=CR].02.02"), vec![json!("D")]);
    assert_eq!(doc.value()[1], json!(["REF", "PO", {"repeat": ["A", "B"]}]));
    // Before 00402 ISA11 is `U`, not a separator.
    let doc = one(&x12("00401", 'U', "REF*PO*AUB~\n", 1), "application/edi-x12");
    assert_eq!(vals(&doc, "REF02"), vec![json!("AUB")]);
    let h = doc.edi_header().unwrap();
    assert_eq!(
        (h.hub_type().as_str(), h.version.as_str(), h.group_control.as_deref()),
        ("X12.850", "004010", Some("77"))
    );
    assert_eq!(h.interchange.control_number, "000000001");
}

#[test]
fn counts_and_references_that_disagree_are_unusable() {
    let cases = [
        (x12("00401", 'U', "BEG*00~\n", 1).replace("SE*3*", "SE*4*"), "SE01 of transaction set 0001 says 4"),
        (
            x12("00401", 'U', "BEG*00~\n", 1).replace("SE*3*0001", "SE*3*0002"),
            "SE02 `0002` does not match ST02 `0001`",
        ),
        (x12("00401", 'U', "", 0).replace("GE*1*77", "GE*2*77"), "GE01 of group 77 says 2"),
        (x12("00401", 'U', "", 0).replace("GE*1*77", "GE*1*78"), "GE02 `78` does not match GS06 `77`"),
        (x12("00401", 'U', "", 0).replace("IEA*1*", "IEA*3*"), "IEA01 says 3"),
        (x12("00401", 'U', "", 0).replace("IEA*1*000000001", "IEA*1*9"), "IEA02 `9` does not match ISA13"),
        (edifact("", &["BGM+220'"]).replace("UNT+3", "UNT+4"), "UNT 0074 of message M1 says 4"),
        (edifact("", &[]).replace("UNT+2+M1", "UNT+2+M2"), "UNT 0062 `M2` does not match UNH 0062 `M1`"),
        (edifact("", &[]).replace("UNZ+1", "UNZ+2"), "UNZ 0036 says 2 messages"),
        (edifact("", &[]).replace("UNZ+1+IC1", "UNZ+1+IC2"), "UNZ 0020 `IC2` does not match UNB 0020 `IC1`"),
    ];
    for (body, want) in cases {
        let e = err(&body);
        assert_eq!(e.class(), ErrorClass::Unusable, "{e}");
        assert!(e.to_string().contains(want), "{e} should name {want}");
    }
}

#[test]
fn groups_are_checked() {
    let body = edifact("", &[])
        .replace("UNH", "UNG+ORDERS+S+R+240101:1200+G7+UN+D:96A'UNH")
        .replace("UNZ", "UNE+1+G7'UNZ");
    let doc = one(&body, "application/edifact");
    assert_eq!(doc.edi_header().unwrap().group_control.as_deref(), Some("G7"));
    let e = err(&body.replace("UNE+1+G7", "UNE+1+G8"));
    assert!(e.to_string().contains("UNE 0048 `G8` does not match UNG 0048 `G7`"), "{e}");
    let e = err(&body.replace("UNE+1+G7", "UNE+2+G7"));
    assert_eq!(e.class(), ErrorClass::Unusable);
}

#[test]
fn syntax_errors_are_malformed_and_name_the_segment() {
    let cases = [
        (edifact("", &["BGM+220"]).replace("UNT", "UNX"), "segment"),
        (edifact("", &[]).trim_end_matches('\'').to_string(), "is not terminated"),
        (edifact("", &[]).replace("UNT+2+M1'", ""), "UNZ) inside message M1"),
        (edifact("", &[]).replace("UNZ+1+IC1'", ""), "ends without UNZ"),
        (edifact("", &["bgm+1'"]), "segment 3 has no valid tag"),
        (edifact("", &[]).replace("UNT+2", "UNT+two"), "UNT 0074 (number of segments) must be a number"),
        (format!("{}UNH+X'", edifact("", &[])), "after UNZ"),
        ("UNA:+".to_string(), "six ASCII service characters"),
        ("UNA::.? 'UNB".to_string(), "one character for two roles"),
        ("ISA*00*  ~".to_string(), "ISA is truncated"),
        (x12("00401", 'U', "", 0).replace("ST*850*0001~\n", "").replace("GE*1", "ST*850*1~GE*1"), "ST*850*1"),
        (x12("00401", 'U', "", 0).replace("GS*", "XX*"), "out of place"),
    ];
    for (body, want) in cases {
        let e = err(&body);
        assert_eq!(e.class(), ErrorClass::Malformed, "{e} for {body}");
        if want != "ST*850*1" {
            assert!(e.to_string().contains(want), "{e} should contain {want}");
        }
    }
}

#[test]
fn sniffing_and_formats() {
    let parsed = parse_body(format!("\u{feff}\r\n{}", edifact("", &[])).as_bytes(), None).unwrap();
    assert_eq!(parsed.format, BodyFormat::Edifact);
    assert_eq!(parsed.interchange.unwrap().control_number, "IC1");
    let parsed = parse_body(x12("00401", 'U', "", 0).as_bytes(), Some("application/octet-stream")).unwrap();
    assert_eq!(parsed.format, BodyFormat::X12);
    assert!(crate::looks_like_message(b"UNB+UNOA:1"));
    // The type wins over the bytes.
    let e = parse_body(x12("00401", 'U', "", 0).as_bytes(), Some("application/EDIFACT")).unwrap_err();
    assert!(e.to_string().contains("must start with UNB"), "{e}");
    let e = parse_body(edifact("", &[]).as_bytes(), Some("application/edi-x12")).unwrap_err();
    assert!(e.to_string().contains("must start with ISA"), "{e}");
}

#[test]
fn hostile_inputs_end_in_results_or_short_errors() {
    // A 10 MB single segment parses; unterminated, its error stays short.
    let big = "A".repeat(10 * 1024 * 1024);
    let doc = one(&edifact("", &[&format!("FTX+AAI+++{big}'")]), "application/edifact");
    assert_eq!(vals(&doc, "FTX.04")[0].as_str().map(str::len), Some(big.len()));
    let e = err(&format!("UNB+UNOC:3+S+R+1+IC'UNH+1+ORDERS:D:96A'FTX+{big}"));
    assert!(e.to_string().contains("segment 3 (FTX) is not terminated") && e.to_string().len() < 200, "{e}");
    // A million empty elements in one segment: over the limits, refused
    // with a short error naming the segment.
    let many = format!("BGM{}'", "+".repeat(1_000_000));
    let e = parse_body(edifact("", &[&many]).as_bytes(), Some("application/edifact")).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Unusable, "{e}");
    assert!(
        e.to_string().contains("segment 3 (BGM) has more than 99 elements") && e.to_string().len() < 300,
        "{e}"
    );
    // ISA16 equal to the element separator.
    let e = err(&x12("00401", 'U', "", 0).replace("*P*>~", "*P**~"));
    assert!(e.to_string().contains("one character for two roles"), "{e}");
    // A terminator that never comes: the whole X12 body is one segment.
    let text = x12("00401", 'U', "", 0);
    let (isa, rest) = text.split_at(text.find('~').unwrap() + 1);
    let e = err(&format!("{isa}{}", rest.replace(['~', '\n'], "")));
    assert!(e.to_string().contains("segment 2 (GS) is not terminated by `~`"), "{e}");
}

#[test]
fn a_text_over_the_offsets_limit_is_refused_before_tokenizing() {
    // Parts hold 32-bit offsets; the check is by length, so no 2 GiB body is needed.
    use super::segments::{MAX_TEXT, too_large};
    assert!(too_large(super::EdiSyntax::X12, MAX_TEXT).is_none());
    let e = too_large(super::EdiSyntax::Edifact, MAX_TEXT + 1).expect("refused");
    assert_eq!(e.class(), ErrorClass::Malformed, "{e}");
    assert_eq!(
        e.to_string(),
        format!("EDIFACT syntax error: the interchange is larger than {MAX_TEXT} bytes")
    );
}

#[test]
fn white_space_after_the_last_terminator_is_ignored() {
    let x = x12("00401", 'U', "BEG*00~\n", 1);
    for tail in [" ".repeat(79), "\r\n".into(), "\t \r\n\n".into()] {
        let doc = one(&format!("{x}{tail}"), "application/EDI-X12");
        assert_eq!(doc.docnum(), Some("0001"), "{tail:?}");
    }
    // A line break that is the terminator stays one; the lines after it are ignored.
    let lines = x.replace("~\n", "\n");
    let lines = format!("{}\n\n  \n", lines.trim_end());
    assert_eq!(one(&lines, "application/EDI-X12").docnum(), Some("0001"));
    let e = edifact("", &["BGM+220'"]);
    for tail in ["   ", "\r\n", "\n\t\n"] {
        assert_eq!(one(&format!("{e}{tail}"), "application/EDIFACT").docnum(), Some("M1"), "{tail:?}");
    }
    // Anything else after the trailer is still refused, and an unterminated
    // last segment is named as such, not as white space.
    let e2 = err(&format!("{x}  X"));
    assert!(e2.to_string().contains("is not terminated"), "{e2}");
    let e3 = err(&format!("{}   ", e.trim_end_matches('\'')));
    assert!(e3.to_string().contains("segment 5 (UNZ) is not terminated"), "{e3}");
}

#[test]
fn an_isa_of_the_wrong_width_is_refused_naming_the_field() {
    let x = x12("00401", 'U', "BEG*00~\n", 1);
    let cases = [
        // 105 characters: ISA06 one short.
        (
            x.replace("*SENDER         *", "*SENDER        *"),
            "ISA06 has 14 characters; X12 fixes it at 15",
            6,
        ),
        // 107 characters: ISA13 one long.
        (x.replace("*000000001*0*P*", "*0000000001*0*P*"), "ISA13 has 10 characters; X12 fixes it at 9", 13),
        // A line break inside the ISA.
        (
            x.replace("*ZZ*RECEIVER       *", "*ZZ*RECEIVER\n       *"),
            "ISA08 has 16 characters, with a line break",
            8,
        ),
        // A line break in place of a padding space: 106 characters, still refused.
        (
            x.replace("*ZZ*RECEIVER       *", "*ZZ*RECEIVER      \n*"),
            "ISA08 has 15 characters, with a line break",
            8,
        ),
    ];
    for (body, want, element) in cases {
        let e = err(&body);
        assert_eq!(e.class(), ErrorClass::Malformed, "{e}");
        assert!(e.to_string().contains(want), "{e} should say {want}");
        let refusal = crate::refusal(body.as_bytes(), None).expect("the ISA is read");
        assert_eq!(refusal.fault, super::refusal::Fault::Header { element, component: 1 });
        assert_eq!(refusal.envelope().interchange.control_number.trim_start_matches('0'), "1");
    }
}

#[test]
fn repeated_control_numbers_refuse_the_interchange() {
    let two_sets = x12("00401", 'U', "BEG*00*A~\n", 1)
        .replace("GE*1*77~", "ST*850*0001~\nBEG*00*B~\nSE*3*0001~\nGE*2*77~");
    let e = err(&two_sets);
    assert_eq!(e.class(), ErrorClass::Unusable, "{e}");
    assert!(e.to_string().contains("ST02 `0001` (segment 6) repeats the control number"), "{e}");
    // The same number in two groups is two sets, but GS06 repeated is refused.
    let group = "GS*PO*S*R*20240101*1200*77*X*004010~\nST*850*0001~\nBEG*00*B~\nSE*3*0001~\nGE*1*77~\n";
    let two_groups = x12("00401", 'U', "BEG*00*A~\n", 1).replace("IEA*1*", &format!("{group}IEA*2*"));
    let e = err(&two_groups);
    assert!(
        e.to_string().contains("GS06 `77` (segment 7) repeats the control number of an earlier group"),
        "{e}"
    );
    let other_group = two_groups
        .replace("*77*X*004010~\nST*850*0001~\nBEG*00*B", "*78*X*004010~\nST*850*0001~\nBEG*00*B")
        .replace("GE*1*77~\nIEA*2", "GE*1*78~\nIEA*2");
    assert_eq!(parse_body(other_group.as_bytes(), None).expect("two groups").documents.len(), 2);

    let two_messages =
        edifact("", &["BGM+220+A'"]).replace("UNZ+1", "UNH+M1+ORDERS:D:96A:UN'BGM+220+B'UNT+3+M1'UNZ+2");
    let e = err(&two_messages);
    assert_eq!(e.class(), ErrorClass::Unusable, "{e}");
    assert!(e.to_string().contains("UNH 0062 `M1` (segment 5) repeats the reference"), "{e}");
    // 0062 is unique within the interchange: in another group too.
    let grouped = |g2: &str| {
        format!(
            "UNB+UNOC:3+S:14+R:14+240101:1200+IC1'UNG+ORDERS+S+R+240101:1200+G1+UN+D:96A'UNH+M1+ORDERS:D:96A:UN'\
             UNT+2+M1'UNE+1+G1'UNG+ORDERS+S+R+240101:1200+{g2}+UN+D:96A'UNH+M2+ORDERS:D:96A:UN'UNT+2+M2'UNE+1+{g2}'UNZ+2+IC1'"
        )
    };
    assert_eq!(parse_body(grouped("G2").as_bytes(), None).expect("two groups").documents.len(), 2);
    let e = err(&grouped("G1"));
    assert!(
        e.to_string().contains("UNG 0048 `G1` (segment 6) repeats the reference of an earlier group"),
        "{e}"
    );
    let e = err(&grouped("G2").replace("M2", "M1"));
    assert!(e.to_string().contains("UNH 0062 `M1` (segment 7) repeats"), "{e}");
}

/// An X12 interchange of `sets` transaction sets in one group (ST02 `1`,
/// `2`, …), the last one's ST02 replaced by `last`.
fn x12_sets(sets: usize, last: usize) -> String {
    let mut s = String::from(
        "ISA*00*          *00*          *ZZ*SENDER         *ZZ*RECEIVER       *240101*1200*U*00401*000000001*0*P*>~\n\
         GS*PO*S*R*20240101*1200*77*X*004010~\n",
    );
    for i in 1..=sets {
        let control = if i == sets { last } else { i };
        s.push_str(&format!("ST*850*{control}~\nBEG*00*SA*PO-{i}**20240101~\nSE*3*{control}~\n"));
    }
    s.push_str(&format!("GE*{sets}*77~\nIEA*1*000000001~\n"));
    s
}

/// Control numbers are kept in a set per group and interchange: a large
/// interchange is one probe per message (a scan of the earlier messages
/// cost n² comparisons), and a repeat far from its original is still found.
#[test]
fn a_repeat_among_thousands_of_messages_is_found() {
    let sets = 20_000;
    assert_eq!(parse_body(x12_sets(sets, sets).as_bytes(), None).expect("unique").documents.len(), sets);
    let e = err(&x12_sets(sets, 1));
    assert_eq!(e.class(), ErrorClass::Unusable, "{e}");
    let st = 2 + 3 * (sets - 1) + 1;
    assert!(e.to_string().contains(&format!("ST02 `1` (segment {st}) repeats the control number")), "{e}");

    let mut messages = String::from("UNB+UNOC:3+S:14+R:14+240101:1200+IC1'");
    for i in 1..=sets {
        let reference = if i == sets { 7 } else { i };
        messages.push_str(&format!("UNH+{reference}+ORDERS:D:96A:UN'BGM+220+PO-{i}'UNT+3+{reference}'"));
    }
    messages.push_str(&format!("UNZ+{sets}+IC1'"));
    let e = err(&messages);
    let unh = 1 + 3 * (sets - 1) + 1;
    assert!(e.to_string().contains(&format!("UNH 0062 `7` (segment {unh}) repeats the reference")), "{e}");
    let unique = messages.replacen(
        &format!("UNH+7+ORDERS:D:96A:UN'BGM+220+PO-{sets}'UNT+3+7'"),
        &format!("UNH+{sets}+ORDERS:D:96A:UN'BGM+220+PO-{sets}'UNT+3+{sets}'"),
        1,
    );
    assert_eq!(parse_body(unique.as_bytes(), None).expect("unique").documents.len(), sets);
}

#[test]
fn a_unb_without_syntax_version_is_refused() {
    let body = edifact("", &[]).replace("UNOC:3", "UNOC");
    let e = err(&body);
    assert_eq!(e.class(), ErrorClass::Malformed, "{e}");
    assert!(e.to_string().contains("S001 0002 (syntax version number) is missing"), "{e}");
    let refusal = crate::refusal(body.as_bytes(), None).expect("the UNB is read");
    assert_eq!(refusal.fault, super::refusal::Fault::Header { element: 1, component: 2 });
}

#[test]
fn segments_within_the_shape_limits_parse() {
    // 99 elements, 99 components, 999 repetitions: the largest shapes kept.
    let elements = format!("REF{}~", "*A".repeat(99));
    let components = format!("REF*{}~", vec!["C"; 99].join(">"));
    let repeats = format!("REF*{}~", vec!["R>1"; 999].join("^"));
    let body = format!("{elements}\n{components}\n{repeats}\n");
    let doc = one(&x12("00501", '^', &body, 3), "application/EDI-X12");
    let segments = doc.value().as_array().unwrap();
    assert_eq!(segments[0].as_array().map(Vec::len), Some(100));
    assert_eq!(segments[1][1].as_array().map(Vec::len), Some(99));
    assert_eq!(segments[2][1]["repeat"].as_array().map(Vec::len), Some(999));
    assert_eq!(vals(&doc, "REF99"), vec![json!("A")]);
}

#[test]
fn segments_over_the_shape_limits_are_unusable_and_name_the_segment() {
    let limits = "a segment may have at most 99 elements, an element 99 components and 999 repetitions";
    let cases = [
        (format!("REF{}~", "*A".repeat(100)), "segment 4 (REF) has more than 99 elements"),
        (
            format!("REF*1*{}~", vec!["C"; 100].join(">")),
            "segment 4 (REF) has more than 99 components in element 2",
        ),
        (
            format!("REF*{}~", vec!["R"; 1000].join("^")),
            "segment 4 (REF) has more than 999 repetitions of element 1",
        ),
        // 7.5 million components in one element stop at the hundredth.
        (
            format!("BEG*00*SA*{}~", vec!["A"; 7_500_000].join(">")),
            "segment 4 (BEG) has more than 99 components in element 3",
        ),
    ];
    for (segment, want) in cases {
        let body = x12("00501", '^', &segment, 1);
        let e = parse_body(body.as_bytes(), Some("application/EDI-X12")).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Unusable, "{e}");
        assert_eq!(e.to_string(), format!("X12 interchange over the hub's limits: {want}; {limits}"));
        // The ISA was read: the refusal can be acknowledged.
        assert!(crate::refusal(body.as_bytes(), Some("application/EDI-X12")).is_some(), "{want}");
    }
    let composite = format!("RFF+{}'", vec!["ON"; 100].join(":"));
    let e = parse_body(edifact("", &[&composite]).as_bytes(), None).unwrap_err();
    assert!(e.to_string().contains("segment 3 (RFF) has more than 99 components in element 1"), "{e}");
    assert_eq!(e.class(), ErrorClass::Unusable);
}

#[test]
fn a_nul_character_is_a_syntax_error_wherever_it_stands() {
    let x = |body: &str| x12("00401", 'U', body, 1);
    let cases = [
        (x("BEG*00*SA*P\0O~"), "segment 4 (BEG) has a NUL character (U+0000) in element 3", true),
        (
            x("").replace("ST*850", "ST*85\0"),
            "segment 3 (ST) has a NUL character (U+0000) in element 1",
            true,
        ),
        (
            x("").replace("*X*004010", "*X*0040\0"),
            "segment 2 (GS) has a NUL character (U+0000) in element 8",
            true,
        ),
        (
            x("").replace("SENDER ", "SEND\0R"),
            "segment 1 (ISA) has a NUL character (U+0000) in element 6",
            false,
        ),
        (x("B\0G*00~"), "segment 4 has a NUL character (U+0000) in its tag", true),
        (
            edifact("", &["BGM+220+P\0O+9'"]),
            "segment 3 (BGM) has a NUL character (U+0000) in element 2",
            true,
        ),
        // Escaped by the release character, it is still refused.
        (
            edifact("", &["BGM+220+P?\0O+9'"]),
            "segment 3 (BGM) has a NUL character (U+0000) in element 2",
            true,
        ),
        (
            edifact("", &[]).replace("ORDERS:", "ORD\0RS:"),
            "segment 2 (UNH) has a NUL character (U+0000) in element 2",
            true,
        ),
        (
            edifact("", &[]).replace("SENDER", "SE\0DER"),
            "segment 1 (UNB) has a NUL character (U+0000) in element 2",
            false,
        ),
    ];
    for (body, want, acknowledged) in cases {
        let e = err(&body);
        assert_eq!(e.class(), ErrorClass::Malformed, "{e}");
        assert!(e.to_string().ends_with(&format!("{want}; no EDI character set has it")), "{e}");
        // After a readable header the refusal is acknowledged as a syntax error.
        assert_eq!(crate::refusal(body.as_bytes(), None).is_some(), acknowledged, "{want}");
    }
}

/// The rendering written segment by segment ([`crate::Document::json`]) is
/// the JSON of the rendering built as a value: components, repeats, empty
/// and missing elements, escapes, before and after the value is built.
#[test]
fn streamed_rendering_is_the_value_s_json() {
    let edifact_doc = one(
        &edifact("", &["BGM+220+PO?+1?'X+9'", "RFF+ON:4711'", "FTX+AAI+++a:b:c+d'", "NAD+BY++++\"q\"\\'"]),
        "application/EDIFACT",
    );
    let x12_doc = one(
        &x12("00501", '^', "BEG*00*SA*PO1**20240101~REF*ZZ*a^b>c^^d>e>~N1*ST*\"x\"~PER***~\n", 4),
        "application/EDI-X12",
    );
    for doc in [edifact_doc, x12_doc] {
        let streamed = serde_json::to_string(&doc.json()).expect("serializes");
        let built = doc.value().to_string();
        assert_eq!(streamed, built);
        assert_eq!(serde_json::to_string(&doc.json()).expect("serializes"), built, "once built too");
    }
    let plain = one(r#"{"docnum":"1","a":[1,{"b":null}]}"#, "application/json");
    assert_eq!(serde_json::to_string(&plain.json()).unwrap(), plain.value().to_string());
}
