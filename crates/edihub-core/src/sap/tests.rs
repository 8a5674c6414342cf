//! Profiles, status IDocs field by field, the IDoc-XML written for them, and
//! the check a test receiver runs on it (including that it can fail).

use super::check::{Expected, check_idoc_xml, check_sap_client};
use super::status::cut;
use super::*;
use crate::idoc::description::IdocDescriptions;

fn profile() -> SapProfile {
    SapProfile {
        logical_system: "S4HCLNT100".into(),
        partner_type: "LS".into(),
        port: "SAPS4H".into(),
        client: "100".into(),
        hub_partner: "EDIHUB".into(),
        hub_partner_type: "LS".into(),
        hub_port: "EDIHUBXML".into(),
    }
}

fn at(time: &str) -> SapTimestamp {
    SapTimestamp::new("20240105", time).unwrap()
}

fn change(docnum: &str, mestyp: &str, status: SapStatus, text: &str) -> StatusChange {
    StatusChange {
        docnum: docnum.into(),
        mestyp: mestyp.into(),
        mescod: None,
        mesfct: None,
        status,
        text: StatusText { text: text.into(), params: Vec::new() },
        at: at("101500"),
        arckey: None,
        object_key: None,
    }
}

fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
}

#[test]
fn profiles_are_checked_against_the_control_record() {
    assert_eq!(profile().check(), Ok(()));
    let bad = |edit: fn(&mut SapProfile)| {
        let mut p = profile();
        edit(&mut p);
        p.check().unwrap_err().to_string()
    };
    assert_eq!(
        bad(|p| p.logical_system = "S4HCLNT1000".into()),
        "invalid SAP profile: logical_system `S4HCLNT1000` must have 1 to 10 characters (RCVPRN)"
    );
    assert_eq!(
        bad(|p| p.hub_partner_type = String::new()),
        "invalid SAP profile: hub_partner_type `` must have 1 to 2 characters (SNDPRT)"
    );
    assert_eq!(
        bad(|p| p.port = "SAP S4H".into()),
        "invalid SAP profile: port `SAP S4H` contains white space or a control character"
    );
    assert_eq!(bad(|p| p.client = "1a0".into()), "invalid SAP profile: client `1a0` must be three digits");
    assert!(SapTimestamp::new("20241301", "000000").is_err());
    assert!(SapTimestamp::new("20240101", "240000").is_err());
    assert!(SapTimestamp::new("2024011", "000000").is_err());
    assert_eq!(at("235959").time(), "235959");
}

/// The control record every status IDoc of [`profile`] carries.
fn status_control(docnum: &str, idoctyp: &str, mestyp: &str) -> Vec<(&'static str, String)> {
    [
        ("TABNAM", "EDI_DC40"),
        ("MANDT", "100"),
        ("DOCNUM", docnum),
        ("DIRECT", "2"),
        ("IDOCTYP", idoctyp),
        ("MESTYP", mestyp),
        ("SNDPOR", "EDIHUBXML"),
        ("SNDPRT", "LS"),
        ("SNDPRN", "EDIHUB"),
        ("RCVPOR", "SAPS4H"),
        ("RCVPRT", "LS"),
        ("RCVPRN", "S4HCLNT100"),
        ("CREDAT", "20240105"),
        ("CRETIM", "103000"),
    ]
    .iter()
    .map(|(n, v)| (*n, v.to_string()))
    .collect()
}

#[test]
fn aleaud01_groups_confirmations_by_logical_message() {
    let long =
        "Delivery to destination erp-prod failed finally after 12 attempts: HTTP 503 Service Unavailable";
    let mut refused = change("91109869", "INVOIC", SapStatus::NotCreated, long);
    refused.text.params =
        vec!["erp-prod".into(), "a parameter longer than twenty characters but under fifty".into()];
    let mut created = change("5220230", "ORDERS", SapStatus::Created, "Delivered to erp-prod");
    created.object_key = Some("0190d1e2-7c3b-7a55-9a4e-2f1d3c4b5a69".into());
    created.mescod = Some("FBK".into());
    let changes = [
        change("0000000000004711", "ORDERS", SapStatus::InTarget, "Stored by edihub"),
        refused,
        created,
        change("4712", "DELIVERY_NOTIFICATION", SapStatus::InTarget, ""),
    ];
    let idocs = status_idocs(StatusIdocType::Aleaud01, &profile(), &at("103000"), 7, &changes).unwrap();
    assert_eq!(idocs.len(), 1);
    let idoc = &idocs[0];
    assert_eq!(idoc.root, "ALEAUD01");
    assert_eq!(idoc.control, status_control("0000000000000007", "ALEAUD01", "ALEAUD"));
    let headers: Vec<_> =
        idoc.segments.iter().map(|s| (s.name.as_str(), s.fields.clone(), s.children.len())).collect();
    assert_eq!(
        headers,
        [
            ("E1ADHDR", fields(&[("MESTYP", "ORDERS"), ("MESTYP_LNG", "ORDERS")]), 1),
            ("E1ADHDR", fields(&[("MESTYP", "INVOIC"), ("MESTYP_LNG", "INVOIC")]), 1),
            ("E1ADHDR", fields(&[("MESTYP", "ORDERS"), ("MESCOD", "FBK"), ("MESTYP_LNG", "ORDERS")]), 1),
            // MESTYP holds six characters: a longer name is in MESTYP_LNG alone.
            ("E1ADHDR", fields(&[("MESTYP_LNG", "DELIVERY_NOTIFICATION")]), 1),
        ]
    );
    let state = |i: usize| &idoc.segments[i].children[0];
    assert_eq!(state(0).name, "E1STATE");
    assert_eq!(
        state(0).fields,
        fields(&[
            ("DOCNUM", "0000000000004711"),
            ("STATUS", "64"),
            ("STATXT", "Stored by edihub"),
            ("STATYP", "S")
        ])
    );
    assert_eq!(
        state(1).fields,
        fields(&[
            ("DOCNUM", "0000000091109869"),
            ("STATUS", "51"),
            ("STATXT", "Delivery to destination erp-prod failed finally after 12 attempts: HT…"),
            ("STAPA1", "erp-prod"),
            ("STAPA2", "a parameter longer …"),
            ("STATYP", "E"),
            ("STAPA1_LNG", "erp-prod"),
            ("STAPA2_LNG", "a parameter longer than twenty characters but und…"),
        ])
    );
    assert_eq!(state(1).fields[2].1.chars().count(), 70);
    assert_eq!(state(2).fields[1], ("STATUS".to_string(), "53".to_string()));
    assert_eq!(state(2).children.len(), 1);
    assert_eq!(state(2).children[0].name, "E1PRTOB");
    assert_eq!(
        state(2).children[0].fields,
        fields(&[("LOGSYS", "EDIHUB"), ("OBJKEY", "0190d1e2-7c3b-7a55-9a4e-2f1d3c4b5a69")])
    );
    assert_eq!(state(3).fields, fields(&[("DOCNUM", "0000000000004712"), ("STATUS", "64"), ("STATYP", "S")]));
}

#[test]
fn systat01_reports_the_sender_status_directly() {
    let mut c = change("4711", "ORDERS", SapStatus::Created, "Delivered\nto erp-prod");
    c.arckey = Some("urn:sap.com:msgid=F1E27A082FAC1EDEA3B91C676718B61E".into());
    c.text.params = vec!["0123456789012345678901234".into()];
    let idocs = status_idocs(StatusIdocType::Systat01, &profile(), &at("103000"), 1, &[c]).unwrap();
    assert_eq!(idocs[0].control, status_control("0000000000000001", "SYSTAT01", "STATUS"));
    let stats = &idocs[0].segments[0];
    assert_eq!(stats.name, "E1STATS");
    assert!(stats.children.is_empty());
    assert_eq!(
        stats.fields,
        fields(&[
            ("MANDT", "100"),
            ("DOCNUM", "0000000000004711"),
            ("LOGDAT", "20240105"),
            ("LOGTIM", "101500"),
            ("STATUS", "41"),
            ("STATXT", "Delivered to erp-prod"),
            ("STAPA1", "0123456789012345678…"),
            ("ARCKEY", "urn:sap.com:msgid=F1E27A082FAC1EDEA3B91C676718B61E"),
            ("STATYP", "S"),
        ])
    );
    let codes: Vec<_> = [SapStatus::InTarget, SapStatus::Created, SapStatus::NotCreated]
        .iter()
        .map(|s| (s.sender_status(), s.receiver_status()))
        .collect();
    assert_eq!(codes, [("39", "64"), ("41", "53"), ("40", "51")]);
}

#[test]
fn a_batch_over_sap_s_limit_is_split_and_numbered() {
    let changes: Vec<StatusChange> =
        (1..=1001).map(|i| change(&i.to_string(), "ORDERS", SapStatus::InTarget, "stored")).collect();
    let idocs = status_idocs(StatusIdocType::Aleaud01, &profile(), &at("103000"), 41, &changes).unwrap();
    let shape: Vec<_> = idocs
        .iter()
        .map(|i| (i.control_field("DOCNUM").unwrap().to_string(), i.segments[0].children.len()))
        .collect();
    assert_eq!(
        shape,
        [
            ("0000000000000041".to_string(), 500),
            ("0000000000000042".to_string(), 500),
            ("0000000000000043".to_string(), 1)
        ]
    );
    assert_eq!(idocs[2].segments[0].children[0].fields[0].1, "0000000000001001");
}

#[test]
fn texts_are_cut_to_sap_s_lengths() {
    let seventy = "x".repeat(70);
    assert_eq!(cut(&seventy, 70), seventy);
    assert_eq!(cut(&format!("{seventy}y"), 70), format!("{}…", "x".repeat(69)));
    assert_eq!(cut("ä".repeat(71).as_str(), 70).chars().count(), 70);
    assert_eq!(cut(" a\tb\r\n\u{0}c  ", 70), "a b c");
    let mut five = change("1", "ORDERS", SapStatus::InTarget, "x");
    five.text.params = vec!["p".into(); 5];
    let e = status_idocs(StatusIdocType::Aleaud01, &profile(), &at("103000"), 1, &[five]).unwrap_err();
    assert_eq!(e.to_string(), "cannot write the IDoc for SAP: a status has at most 4 parameters, not 5");
    for docnum in ["Avon", "", "12345678901234567"] {
        let e = status_idocs(
            StatusIdocType::Systat01,
            &profile(),
            &at("103000"),
            1,
            &[change(docnum, "X", SapStatus::InTarget, "")],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "cannot write the IDoc for SAP: DOCNUM `{docnum}` is not a SAP IDoc number (1 to 16 digits)"
            )
        );
    }
    let long_mestyp = change("1", &"M".repeat(31), SapStatus::InTarget, "");
    let e = status_idocs(StatusIdocType::Aleaud01, &profile(), &at("103000"), 1, &[long_mestyp]).unwrap_err();
    assert!(e.to_string().contains("E1ADHDR.MESTYP_LNG"), "{e}");
    let mut bad = profile();
    bad.client = "10".into();
    assert!(status_idocs(StatusIdocType::Aleaud01, &bad, &at("103000"), 1, &[]).is_err());
}

#[test]
fn status_idoc_xml_is_written_as_sap_reads_it() {
    let mut c = change("4711", "ORDERS", SapStatus::Created, "R&D <ok>");
    c.object_key = Some("m1".into());
    let idocs = status_idocs(StatusIdocType::Aleaud01, &profile(), &at("103000"), 7, &[c]).unwrap();
    let xml = idoc_xml(&idocs).unwrap();
    assert_eq!(
        xml,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ALEAUD01><IDOC BEGIN=\"1\"><EDI_DC40 SEGMENT=\"1\">\
         <TABNAM>EDI_DC40</TABNAM><MANDT>100</MANDT><DOCNUM>0000000000000007</DOCNUM><DIRECT>2</DIRECT>\
         <IDOCTYP>ALEAUD01</IDOCTYP><MESTYP>ALEAUD</MESTYP><SNDPOR>EDIHUBXML</SNDPOR><SNDPRT>LS</SNDPRT>\
         <SNDPRN>EDIHUB</SNDPRN><RCVPOR>SAPS4H</RCVPOR><RCVPRT>LS</RCVPRT><RCVPRN>S4HCLNT100</RCVPRN>\
         <CREDAT>20240105</CREDAT><CRETIM>103000</CRETIM></EDI_DC40><E1ADHDR SEGMENT=\"1\"><MESTYP>ORDERS</MESTYP>\
         <MESTYP_LNG>ORDERS</MESTYP_LNG><E1STATE SEGMENT=\"1\"><DOCNUM>0000000000004711</DOCNUM><STATUS>53</STATUS>\
         <STATXT>R&amp;D &lt;ok&gt;</STATXT><STATYP>S</STATYP><E1PRTOB SEGMENT=\"1\"><LOGSYS>EDIHUB</LOGSYS>\
         <OBJKEY>m1</OBJKEY></E1PRTOB></E1STATE></E1ADHDR></IDOC></ALEAUD01>"
    );
    let mut described = IdocDescriptions::new();
    described.insert(StatusIdocType::Aleaud01.description()).unwrap();
    let read =
        check_idoc_xml(xml.as_bytes(), &Expected { profile: &profile(), descriptions: &described }).unwrap();
    assert_eq!(read, idocs);
    // The hub's own reader agrees on the values.
    let body = crate::parse_body(xml.as_bytes(), Some("application/xml")).unwrap();
    assert_eq!(body.documents[0].value()["E1ADHDR"]["E1STATE"]["STATXT"], serde_json::json!("R&D <ok>"));
    assert_eq!(body.documents[0].control().unwrap().rcvprn.as_deref(), Some("S4HCLNT100"));
}

#[test]
fn a_packet_is_one_root_of_one_type() {
    let c = |d: &str| change(d, "ORDERS", SapStatus::InTarget, "");
    let aleaud = status_idocs(StatusIdocType::Aleaud01, &profile(), &at("103000"), 1, &[c("1")]).unwrap();
    let systat = status_idocs(StatusIdocType::Systat01, &profile(), &at("103000"), 2, &[c("2")]).unwrap();
    let packet = [aleaud.clone(), aleaud.clone()].concat();
    let xml = idoc_xml(&packet).unwrap();
    assert_eq!(xml.matches("<IDOC BEGIN=\"1\">").count(), 2);
    assert_eq!(xml.matches("<ALEAUD01>").count(), 1);
    let mixed = [aleaud, systat].concat();
    assert_eq!(
        idoc_xml(&mixed).unwrap_err().to_string(),
        "cannot write the IDoc for SAP: a packet holds one IDoc type: ALEAUD01 and SYSTAT01"
    );
    assert!(idoc_xml(&[]).is_err());
}

/// A valid ALEAUD01 with one confirmation, as text to break.
fn valid_xml() -> String {
    let c = change("4711", "ORDERS", SapStatus::Created, "ok");
    idoc_xml(&status_idocs(StatusIdocType::Aleaud01, &profile(), &at("103000"), 7, &[c]).unwrap()).unwrap()
}

fn problems(xml: &str) -> Vec<String> {
    let mut described = IdocDescriptions::new();
    described.insert(StatusIdocType::Aleaud01.description()).unwrap();
    check_idoc_xml(xml.as_bytes(), &Expected { profile: &profile(), descriptions: &described }).unwrap_err()
}

#[test]
fn the_check_finds_every_broken_rule() {
    let valid = valid_xml();
    let cases: Vec<(String, &str)> = vec![
        (valid.replace("<ALEAUD01>", "<ALEAUD02>").replace("</ALEAUD01>", "</ALEAUD02>"), "IDoc 1: the root <ALEAUD02> is not the IDoc type ALEAUD01"),
        (valid.replace("<IDOC BEGIN=\"1\">", "<IDOC>"), "<IDOC> under the root: only <IDOC BEGIN=\"1\"> belongs there"),
        (valid.replace("<EDI_DC40 SEGMENT=\"1\">", "<EDI_DC40>"), "<EDI_DC40> comes before <EDI_DC40 SEGMENT=\"1\">, which opens every IDOC"),
        (valid.replace("<DIRECT>2</DIRECT>", "<DIRECT>1</DIRECT>"), "IDoc 1: DIRECT is Some(\"1\"), not 2 (inbound to SAP)"),
        (valid.replace("<RCVPRN>S4HCLNT100</RCVPRN>", "<RCVPRN>Q01CLNT100</RCVPRN>"), "IDoc 1: RCVPRN is Some(\"Q01CLNT100\"), the profile says S4HCLNT100"),
        (valid.replace("<MANDT>100</MANDT>", "<MANDT>200</MANDT>"), "IDoc 1: MANDT is Some(\"200\"), the profile says 100"),
        (valid.replace("<TABNAM>EDI_DC40</TABNAM><MANDT>100</MANDT>", "<MANDT>100</MANDT><TABNAM>EDI_DC40</TABNAM>"), "EDI_DC40.TABNAM is out of the control record's order or repeated"),
        (valid.replace("<CRETIM>103000</CRETIM>", "<CRETIM>1030000</CRETIM>"), "EDI_DC40.CRETIM `1030000` is longer than its 6 characters"),
        (valid.replace("<CRETIM>", "<CREZEIT>x</CREZEIT><CRETIM>"), "EDI_DC40 has no field CREZEIT"),
        (valid.replace("<E1ADHDR SEGMENT=\"1\">", "<E1ADHDR>"), "segment <E1ADHDR> lacks exactly SEGMENT=\"1\""),
        (valid.replace("<MESTYP>ORDERS</MESTYP>", "<MESTYP Q=\"1\">ORDERS</MESTYP>"), "field <MESTYP> has attributes other than a segment's SEGMENT=\"1\""),
        (valid.replace("<STATYP>S</STATYP>", "<STATYP>S</STATYP>loose"), "text `loose` outside a field"),
        (valid.replace("<STATYP>S</STATYP>", "<STATYP>S</STATYP><STATYP>E</STATYP>"), "field STATYP appears twice in one segment"),
        (valid.replace("<STATYP>S</STATYP>", "<STATYP><X/></STATYP>"), "field <STATYP> holds an element <X>"),
        (valid.replace("<STATYP>S</STATYP>", "<STATYP>SS</STATYP>"), "IDoc 1, E1ADHDR, E1STATE: STATYP `SS` is longer than 1"),
        (valid.replace("<STATYP>S</STATYP>", "<STATUX>S</STATUX>"), "IDoc 1, E1ADHDR, E1STATE: E1STATE defines no field STATUX"),
        (valid.replace("<DOCNUM>0000000000004711</DOCNUM><STATUS>53</STATUS>", "<STATUS>53</STATUS><DOCNUM>0000000000004711</DOCNUM>"), "IDoc 1, E1ADHDR, E1STATE: field DOCNUM out of the definition's order"),
        (valid.replace("<E1STATE SEGMENT=\"1\">", "<E1STATX SEGMENT=\"1\">").replace("</E1STATE>", "</E1STATX>"), "IDoc 1, E1ADHDR, E1STATX: not a segment of ALEAUD01"),
        (valid.replace("</E1ADHDR></IDOC>", "</E1ADHDR><E1ADHDR SEGMENT=\"1\"></E1ADHDR><E1PRTOB SEGMENT=\"1\"></E1PRTOB><E1ADHDR SEGMENT=\"1\"></E1ADHDR></IDOC>"), "IDoc 1, E1ADHDR: out of the definition's order"),
        (valid.replace("encoding=\"UTF-8\"", "encoding=\"ISO-8859-1\""), "the XML declaration names an encoding other than UTF-8"),
        (valid.replace("?><ALEAUD01>", "?><!DOCTYPE ALEAUD01><ALEAUD01>"), "a DOCTYPE is not IDoc-XML"),
        (valid.replace("<ALEAUD01>", "<ns0:ALEAUD01 xmlns:ns0=\"urn:x\">").replace("</ALEAUD01>", "</ns0:ALEAUD01>"), "<ns0:ALEAUD01> has a namespace prefix"),
        (valid.replace("</EDI_DC40>", "</EDI_DC40><EDI_DC40 SEGMENT=\"1\"></EDI_DC40>"), "a second EDI_DC40 in one IDOC"),
        (valid.replace("</ALEAUD01>", ""), "the XML ends inside an element"),
        ("<?xml version=\"1.0\"?><ALEAUD01></ALEAUD01>".to_string(), "the root holds no IDOC"),
    ];
    let missed: Vec<String> = cases
        .iter()
        .filter_map(|(xml, problem)| {
            let found = problems(xml);
            (!found.iter().any(|p| p == problem)).then(|| format!("{problem:?} not in {found:?}"))
        })
        .collect();
    assert!(missed.is_empty(), "{missed:#?}");
    assert!(problems("").contains(&"no root element".to_string()));
}

#[test]
fn the_sap_client_parameter_is_the_profile_s() {
    assert_eq!(check_sap_client("sap-client=100", &profile()), Ok(()));
    assert_eq!(check_sap_client("a=b&sap-client=100", &profile()), Ok(()));
    assert_eq!(
        check_sap_client("sap-client=200", &profile()),
        Err("sap-client 200 is not the profile's client 100".into())
    );
    assert_eq!(check_sap_client("", &profile()), Err("no sap-client parameter".into()));
    assert_eq!(
        check_sap_client("sap-client=100&sap-client=100", &profile()),
        Err("sap-client given more than once".into())
    );
}

#[test]
fn status_idoc_types_are_named_in_one_place() {
    for t in StatusIdocType::ALL {
        assert_eq!(StatusIdocType::from_idoc_type(t.idoc_type()), Some(t));
        assert!(StatusIdocType::is_status_mestyp(t.mestyp()));
    }
    assert_eq!(StatusIdocType::from_idoc_type("ALEAUD01"), Some(StatusIdocType::Aleaud01));
    assert_eq!(StatusIdocType::from_idoc_type("SYSTAT01"), Some(StatusIdocType::Systat01));
    for other in ["aleaud01", "ALEAUD", "ORDERS05", ""] {
        assert_eq!(StatusIdocType::from_idoc_type(other), None, "{other}");
    }
    assert!(StatusIdocType::is_status_mestyp("ALEAUD"));
    assert!(StatusIdocType::is_status_mestyp("STATUS"));
    for other in ["ORDERS", "ALEAUD01", "status", ""] {
        assert!(!StatusIdocType::is_status_mestyp(other), "{other}");
    }
}
