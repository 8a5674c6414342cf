//! Acknowledgements of refused interchanges and the TA1 on request: exact
//! segments where the codes matter, every acknowledgement parsed back with
//! the hub's own parser.

use std::path::PathBuf;

use super::*;
use crate::{ParsedBody, parse_body, refusal};

const AT: AckTime = AckTime { year: 2026, month: 11, day: 30, hour: 9, minute: 5 };

fn real(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/edifact/real").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn x12_850() -> String {
    real("sapabh_O2C-ASCX12-004010_01a-SalesOrderRequest_X12-850.x12")
}

fn d96a() -> String {
    real("sapabh_O2C-UNEDIFACT-D96A_01a-SalesOrderRequest_ORDERS-D96A-EAN008.edi")
}

/// The acknowledgement of the refusal of `body`, which must be refused
/// with a readable header; also checks the body is refused by `parse_body`.
fn refused(body: &str, kind: AckKind) -> String {
    assert!(parse_body(body.as_bytes(), None).is_err(), "the body must be refused: {body}");
    let refusal = refusal(body.as_bytes(), None).unwrap_or_else(|| panic!("a readable header: {body}"));
    String::from_utf8(acknowledge_refusal(&refusal, kind, 8, AT).expect("kind fits")).unwrap()
}

fn parse_back(ack: &str) -> ParsedBody {
    parse_body(ack.as_bytes(), None).unwrap_or_else(|e| panic!("ack does not parse back: {e}\n{ack}"))
}

/// A 997 parses back; a TA1 alone is an interchange without a group,
/// which the hub's parser refuses as holding no message (422), not as
/// malformed.
fn ta1_parses_back(ack: &str) {
    let err = parse_body(ack.as_bytes(), None).expect_err("no message in a TA1 interchange");
    assert_eq!(err.class().http_status(), 422, "{err}: {ack}");
}

#[test]
fn x12_se01_count_rejects_the_set_with_ak3_ak4_ak5() {
    let text = refused(&x12_850().replace("SE*10*0001", "SE*9*0001"), AckKind::X12Functional);
    assert!(
        text.contains(
            "ST*997*0001~AK1*PO*6267~AK2*850*0001~AK3*SE*10**8~AK4*1*96*7*9~AK5*R*4~AK9*R*1*1*0~SE*8*0001~"
        ),
        "{text}"
    );
    assert!(text.ends_with("GE*1*8~IEA*1*000000008~"), "{text}");
    let back = parse_back(&text);
    assert_eq!(back.documents.len(), 1);
    assert_eq!(back.interchange.unwrap().control_number, "000000008");
}

#[test]
fn x12_999_se02_reference_rejects_with_ik3_ik4_ik5() {
    let text = refused(&x12_850().replace("SE*10*0001", "SE*10*0002"), AckKind::X12Implementation);
    assert!(text.contains("AK2*850*0001~IK3*SE*10**8~IK4*2*329*7*0002~IK5*R*3~AK9*R*1*1*0~"), "{text}");
    parse_back(&text);
}

#[test]
fn x12_group_errors_reject_every_set_read() {
    let two = x12_850().replace(
        "SE*10*0001~GE*1*6267~",
        "SE*10*0001~ST*850*0002~BEG*00*NE*X**20240228~SE*3*0002~GE*3*6267~",
    );
    let text = refused(&two, AckKind::X12Functional);
    assert!(text.contains("AK2*850*0001~AK5*R~AK2*850*0002~AK5*R~AK9*R*3*2*0*5~"), "{text}");
    parse_back(&text);
    let reference = refused(&x12_850().replace("GE*1*6267", "GE*1*6268"), AckKind::X12Functional);
    assert!(reference.contains("AK9*R*1*1*0*4~"), "{reference}");
}

#[test]
fn x12_interchange_errors_are_a_ta1_alone() {
    for (body, note) in [
        (x12_850().replace("IEA*1*", "IEA*2*"), "021"),
        (x12_850().replace("IEA*1*000006267", "IEA*1*000006268"), "001"),
        // A segment without its terminator, no IEA: premature end.
        (x12_850().replace("~IEA*1*000006267~", "~IEA*1*000006267"), "023"),
        (x12_850().replace("~IEA*1*000006267~", "~"), "023"),
        // A segment out of place.
        (x12_850().replace("~GS*", "~BEG*1~GS*"), "024"),
    ] {
        let text = refused(&body, AckKind::X12Functional);
        assert!(
            text.ends_with(&format!("~TA1*000006267*240229*0339*R*{note}~IEA*0*000000008~")),
            "{note}: {text}"
        );
        ta1_parses_back(&text);
    }
}

#[test]
fn unreadable_headers_and_sound_interchanges_have_no_refusal() {
    for body in ["ISA*00*short~", "UNB+UNOC:3+A+B+240101:1200'", "UNB+UNOC:3+A+B+240101:1200+'UNZ+0+'", "{}"]
    {
        assert_eq!(refusal(body.as_bytes(), None), None, "{body}");
    }
    assert_eq!(refusal(x12_850().as_bytes(), None), None);
    assert_eq!(refusal(d96a().as_bytes(), None), None);
}

#[test]
fn ta1_on_request_comes_before_the_997() {
    let asked = x12_850().replace("*000006267*0*P*", "*000006267*1*P*");
    let envelope = parse_body(asked.as_bytes(), None).unwrap().envelope.unwrap();
    let text =
        String::from_utf8(acknowledge(&envelope, AckKind::X12Functional, false, 4, AT).unwrap()).unwrap();
    assert!(text.contains("*000000004*0*P*>~TA1*000006267*240229*0339*A*000~GS*FA*"), "{text}");
    assert_eq!(parse_back(&text).documents.len(), 1);
    // A duplicate still gets the TA1 rejecting it, alone.
    let dup =
        String::from_utf8(acknowledge(&envelope, AckKind::X12Functional, true, 5, AT).unwrap()).unwrap();
    assert!(dup.ends_with("~TA1*000006267*240229*0339*R*025~IEA*0*000000005~"), "{dup}");
    // A refused set: the envelope was sound (A), the 997 rejects the set.
    let bad = refused(&asked.replace("SE*10*0001", "SE*9*0001"), AckKind::X12Functional);
    assert!(bad.contains("~TA1*000006267*240229*0339*A*000~GS*FA*") && bad.contains("AK5*R*4~"), "{bad}");
}

#[test]
fn contrl_of_a_message_error_names_message_segment_and_element() {
    let text = refused(&d96a().replace("UNT+15+1", "UNT+14+1"), AckKind::Contrl);
    assert!(
        text.contains(
            "UCI+36790+TP_UNEDIFACT_ID:ZZ+Company_UNEDIFACT_ID:ZZ+4'UCM+1+ORDERS:D:96A:UN:EAN008+4+29'UCS+15'UCD+29+1'UNT+6+1'"
        ),
        "{text}"
    );
    assert_eq!(parse_back(&text).documents.len(), 1);
    let reference = refused(&d96a().replace("UNT+15+1", "UNT+15+2"), AckKind::Contrl);
    assert!(reference.contains("+4+28'UCS+15'UCD+28+2'"), "{reference}");
}

#[test]
fn contrl_of_interchange_and_group_errors() {
    for (body, code) in [
        (d96a().replace("UNZ+1+", "UNZ+2+"), "29"),
        (d96a().replace("UNZ+1+36790", "UNZ+1+36791"), "28"),
        (d96a().replace("UNZ+1+36790'", "UNZ+1+36790"), "13"),
        (d96a().replace("UNS+S'", "UNS+S'UNB+X'"), "18"),
        ("UNB+UNOA:2+TP:ZZ+CO:ZZ+240311:0149+36790'UNZ+0+36790'".to_string(), "32"),
    ] {
        let text = refused(&body, AckKind::Contrl);
        assert!(
            text.contains("UCI+36790+TP") && text.contains(&format!("+4+{code}'UNT+3+1'")),
            "{code}: {text}"
        );
        parse_back(&text);
    }
    let grouped = "UNB+UNOA:3+5400110000009:14+5013546107732:14+010502:1237+27'\
                   UNG+ORDERS+5400110000009:14+5013546107732:14+010502:1237+1+UN+D:96A'\
                   UNH+1+ORDERS:D:96B:UN'BGM+220+C1'UNT+3+1'UNE+2+1'UNZ+1+27'";
    let text = refused(grouped, AckKind::Contrl);
    assert!(
        text.contains(
            "UCI+27+5400110000009:14+5013546107732:14+4'UCF+1+5400110000009:14+5013546107732:14+4+29'UNT+4+1'"
        ),
        "{text}"
    );
    parse_back(&text);
}

#[test]
fn x12_repeated_st02_rejects_the_repeat_with_code_23() {
    // Two more sets in the group, the third repeating the first's ST02;
    // GE01 says 4 (one set after the error, not read).
    let body = x12_850().replace(
        "SE*10*0001~GE*1*6267~",
        "SE*10*0001~ST*850*0002~BEG*00*NE*X**20240228~SE*3*0002~\
         ST*850*0001~BEG*00*NE*Y**20240228~SE*3*0001~ST*850*0003~BEG*00*NE*Z**20240228~SE*3*0003~GE*4*6267~",
    );
    let text = refused(&body, AckKind::X12Functional);
    assert!(
        text.contains("AK1*PO*6267~AK2*850*0001~AK5*R~AK2*850*0002~AK5*R~AK2*850*0001~AK5*R*23~AK9*R*4*3*0~"),
        "{text}"
    );
    parse_back(&text);
    let text = refused(&body, AckKind::X12Implementation);
    assert!(text.contains("AK2*850*0001~IK5*R*23~AK9*R*4*3*0~"), "{text}");
    parse_back(&text);
}

#[test]
fn x12_ak902_is_ge01_as_sent() {
    // SE01 of the first of two sets disagrees: the walk stops there, AK902
    // still gives GE01 (2), AK903 the one set read.
    let body = x12_850()
        .replace("SE*10*0001~GE*1*6267~", "SE*9*0001~ST*850*0002~BEG*00*NE*X**20240228~SE*3*0002~GE*2*6267~");
    let text = refused(&body, AckKind::X12Functional);
    assert!(text.contains("AK5*R*4~AK9*R*2*1*0~"), "{text}");
    // Without a GE in the interchange, the sets read.
    let no_ge = x12_850().replace("SE*10*0001~GE*1*6267~", "SE*9*0001~");
    assert!(refused(&no_ge, AckKind::X12Functional).contains("AK5*R*4~AK9*R*1*1*0~"));
}

#[test]
fn x12_repeated_gs06_rejects_the_group() {
    let second = "GS*PO*TPASCX12*012345678*20240229*0339*6267*X*004010~ST*850*0001~BEG*00*NE*X**20240228~SE*3*0001~GE*1*6267~";
    let body = x12_850().replace("GE*1*6267~IEA*1*", &format!("GE*1*6267~{second}IEA*2*"));
    // 004010 defines no code for it: the group is rejected without one.
    let text = refused(&body, AckKind::X12Functional);
    assert!(text.contains("ST*997*0002~AK1*PO*6267~AK2*850*0001~AK5*R~AK9*R*1*1*0~SE*6*0002~"), "{text}");
    parse_back(&text);
    // A 999 (005010) names it: AK905 19.
    let text = refused(&body, AckKind::X12Implementation);
    assert!(
        text.contains("ST*999*0002*005010X231A1~AK1*PO*6267*004010~AK2*850*0001~IK5*R~AK9*R*1*1*0*19~"),
        "{text}"
    );
    parse_back(&text);
}

#[test]
fn x12_isa_width_errors_are_a_ta1_with_the_fields_note() {
    for (from, to, note) in [
        ("*ZZ*TPASCX12       *", "*ZZ*TPASCX12      *", "006"),
        ("*240229*0339*", "*2402290*0339*", "014"),
        ("*000006267*0*P*", "*00006267*0*P*", "018"),
    ] {
        let body = x12_850().replace("*U*00400*", "*U*00401*");
        assert!(body.contains(from), "{from}");
        let text = refused(&body.replace(from, to), AckKind::X12Functional);
        assert!(text.contains(&format!("*R*{note}~IEA*0*000000008~")), "{note}: {text}");
        assert_eq!(text.find("~"), Some(105), "the TA1's ISA is 106 characters: {text}");
        ta1_parses_back(&text);
    }
}

#[test]
fn contrl_of_repeated_references_says_duplicate_detected() {
    let body = d96a().replace("UNZ+1+36790", "UNH+1+ORDERS:D:96A:UN:EAN008'BGM+220+X'UNT+3+1'UNZ+2+36790");
    let text = refused(&body, AckKind::Contrl);
    assert!(text.contains("Company_UNEDIFACT_ID:ZZ+4'UCM+1+ORDERS:D:96A:UN:EAN008+4+26'UNT+4+1'"), "{text}");
    parse_back(&text);
    let grouped = "UNB+UNOA:3+5400110000009:14+5013546107732:14+010502:1237+27'\
                   UNG+ORDERS+5400110000009:14+5013546107732:14+010502:1237+1+UN+D:96A'\
                   UNH+1+ORDERS:D:96B:UN'BGM+220+C1'UNT+3+1'UNE+1+1'\
                   UNG+ORDERS+5400110000009:14+5013546107732:14+010502:1237+1+UN+D:96A'\
                   UNH+2+ORDERS:D:96B:UN'BGM+220+C2'UNT+3+2'UNE+1+1'UNZ+2+27'";
    let text = refused(grouped, AckKind::Contrl);
    assert!(
        text.contains(
            "UCI+27+5400110000009:14+5013546107732:14+4'UCF+1+5400110000009:14+5013546107732:14+4+26'UNT+4+1'"
        ),
        "{text}"
    );
    parse_back(&text);
}

#[test]
fn contrl_of_a_unb_without_version_names_the_element() {
    let text = refused(&d96a().replace("UNB+UNOA:2+", "UNB+UNOA+"), AckKind::Contrl);
    assert!(text.starts_with("UNB+UNOA:3+"), "a version of its own: {text}");
    assert!(text.contains("+4+13+UNB+1:2'UNT+3+1'"), "{text}");
    parse_back(&text);
}
