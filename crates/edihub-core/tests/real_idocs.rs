//! The third-party IDocs in `fixtures/idoc/real/` (see its SOURCES.md):
//! every file parses, with the type, logical message and DOCNUM listed there,
//! and the business keys SOURCES.md names are found.

mod common;

use common::{fp, parse_fixture, single};
use edihub_core::{Basis, BodyFormat, KeyPath};
use serde_json::{Value, json};

/// What SOURCES.md says about one real file.
struct Expected {
    file: &'static str,
    message_type: &'static str,
    mestyp: &'static str,
    docnum: Option<&'static str>,
    sndprn: Option<&'static str>,
}

const fn row(
    file: &'static str,
    message_type: &'static str,
    mestyp: &'static str,
    docnum: Option<&'static str>,
    sndprn: Option<&'static str>,
) -> Expected {
    Expected { file, message_type, mestyp, docnum, sndprn }
}

const EXPECTED: &[Expected] = &[
    row("balsapjco_Avon.xml", "DELVRY03", "DESADV", Some("Avon"), Some("YOUR_SAP")),
    row(
        "sapabh_O2C-UNEDIFACT-D10B_03-Invoice_INVOIC02.xml",
        "INVOIC02",
        "INVOIC",
        Some("0000000091109869"),
        Some("Company_IDOC_ID"),
    ),
    row(
        "sapabh_O2C-UNEDIFACT-D96A_01b-SalesOrderResponse_ORDERS05-ORDRSP.xml",
        "ORDERS05",
        "ORDRSP",
        Some("0000000235556469"),
        Some("Company_IDOC_ID"),
    ),
    row(
        "sapabh_O2C-UNEDIFACT-D96A_02-DeliveryNotification_DELVRY07-DESADV.xml",
        "DELVRY07",
        "DESADV",
        Some("0000000106934172"),
        Some("Company_IDOC_ID"),
    ),
    row(
        "sapabh_O2C-UNEDIFACT-D96A_03-Invoice_INVOIC02.xml",
        "INVOIC02",
        "INVOIC",
        Some("0000000091109869"),
        Some("Company_IDOC_ID"),
    ),
    row("sapb2bex_ordrsp-idoc.xml", "ORDERS05", "ORDRSP", Some("5220230"), Some("HE4CLNT400")),
    row("sapdm_LOIPRO05.xml", "LOIPRO05", "LOIPRO", Some("0000000000007699"), Some("AX2012 Manu")),
    row("sapdm_LOIPRO05_Original.xml", "LOIPRO05", "LOIPRO", Some("0000000000430094"), Some("S4HCLNT100")),
    row("sapdm_LOIWCS03.xml", "LOIWCS03", "LOIWCS", None, Some("AX2012 Manu")),
    row("sapdm_R1CH01007_RAW_MAT_IDOC.xml", "MATMAS05", "MATMAS", None, Some("AX2012 Manu")),
    row("sapdm_S1SP02677_FINISHED_MAT_IDOC.xml", "MATMAS05", "MATMAS", None, Some("AX2012 Manu")),
];

fn values(file: &str, path: &str) -> Vec<Value> {
    single(&format!("real/{file}")).values(&KeyPath::parse(path).unwrap())
}

#[test]
fn every_real_file_is_listed_and_parses_as_documented() {
    let dir = common::fixture_path("real");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".xml"))
        .collect();
    on_disk.sort();
    let listed: Vec<&str> = EXPECTED.iter().map(|e| e.file).collect();
    assert_eq!(on_disk, listed, "a real fixture is missing from this table");

    for e in EXPECTED {
        let (file, message_type, mestyp, docnum, sndprn) =
            (e.file, e.message_type, e.mestyp, e.docnum, e.sndprn);
        let body = parse_fixture(&format!("real/{file}"));
        assert_eq!(body.format, BodyFormat::IdocXml, "{file}");
        assert_eq!(body.documents.len(), 1, "{file}");
        let doc = &body.documents[0];
        assert_eq!(doc.message_type(None, &|_| true).unwrap(), message_type, "{file}");
        assert_eq!(doc.mestyp(), Some(mestyp), "{file}");
        assert_eq!(doc.docnum(), docnum, "{file}");
        assert_eq!(doc.control().unwrap().sndprn.as_deref(), sndprn, "{file}");
        let f = fp(doc, &[], &[]);
        let expected_basis = if docnum.is_some() { Basis::Docnum } else { Basis::None };
        assert_eq!(f.basis, expected_basis, "{file}");
        assert_eq!(f.hex.is_some(), docnum.is_some(), "{file}");
    }
}

#[test]
fn loipro05_in_a_default_namespace_takes_its_type_from_the_root() {
    let doc = single("real/sapdm_LOIPRO05_Original.xml");
    let control = doc.control().unwrap();
    assert_eq!(control.idoctyp, None);
    assert_eq!(doc.root_name(), Some("LOIPRO05"));
    assert_eq!(doc.message_type(None, &|_| true).unwrap(), "LOIPRO05");
    assert_eq!((control.mandt.as_deref(), control.sndpor.as_deref()), (Some("100"), Some("SAPS4H")));
    let atbez = values("sapdm_LOIPRO05_Original.xml", "E1AFKOL.E1VCCHR.E1VCCHT.ATBEZ");
    assert!(atbez.contains(&json!("Montagereihenf. Luftschläuche")), "{atbez:?}");
}

#[test]
fn empty_control_fields_are_absent() {
    let doc = single("real/sapabh_O2C-UNEDIFACT-D96A_01b-SalesOrderResponse_ORDERS05-ORDRSP.xml");
    let control = doc.control().unwrap();
    assert_eq!((control.cimtyp.clone(), control.sndpor.clone()), (None, None));
    assert_eq!(control.mandt.as_deref(), Some("400"));
}

#[test]
fn business_keys_from_sources_md() {
    let ordrsp = "sapabh_O2C-UNEDIFACT-D96A_01b-SalesOrderResponse_ORDERS05-ORDRSP.xml";
    assert_eq!(values(ordrsp, "E1EDK01.BELNR"), [json!("2001319044")]);
    assert_eq!(values(ordrsp, "E1EDK02[QUALF=001].BELNR"), [json!("2C9YS43Z")]);
    assert_eq!(values(ordrsp, "E1EDK02[QUALF=002].BELNR"), [json!("2001319044")]);
    let invoice = "sapabh_O2C-UNEDIFACT-D96A_03-Invoice_INVOIC02.xml";
    assert_eq!(values(invoice, "E1EDK01.BELNR"), [json!("0123456789")]);
    assert_eq!(values(invoice, "E1EDK02[QUALF=009].BELNR"), [json!("0123456789")]);
    assert_eq!(values(invoice, "E1EDK02[QUALF=001].BELNR"), [json!("1DFYVN6W")]);
    let desadv = "sapabh_O2C-UNEDIFACT-D96A_02-DeliveryNotification_DELVRY07-DESADV.xml";
    assert_eq!(values(desadv, "E1EDL20.VBELN"), [json!("0123456789")]);
    assert!(values(desadv, "$..LADGR_BEZ").contains(&json!("Jeř.")));
    assert_eq!(values("balsapjco_Avon.xml", "E1EDL20.VBELN"), [json!("Avon")]);
    let b2b = "sapb2bex_ordrsp-idoc.xml";
    assert_eq!(values(b2b, "E1EDK01.BELNR"), [json!("0000347163")]);
    assert_eq!(values(b2b, "E1EDK02[QUALF=001].DATUM"), [json!("00000000")]);
    assert_eq!(values(b2b, "E1EDK03[IDDAT=012].DATUM"), [json!("20231004")]);
}

#[test]
fn material_masters_and_empty_fields() {
    let fin = "sapdm_S1SP02677_FINISHED_MAT_IDOC.xml";
    assert_eq!(values(fin, "E1MARAM.MATNR"), [json!("S1SP02677")]);
    assert!(values(fin, "E1MARAM.BRGEW").is_empty(), "<BRGEW/> is missing");
    assert_eq!(values(fin, "E1MARAM.CustomData.Data.attribute"), [json!("BURNOUTPROGRAMID")]);
    let raw = "sapdm_R1CH01007_RAW_MAT_IDOC.xml";
    assert_eq!(values(raw, "E1MARAM.MATNR"), [json!("R1CH01007")]);
    assert!(values(raw, "E1MARAM.NTGEW").is_empty(), "<NTGEW></NTGEW> is missing");
    let f = fp(&single(&format!("real/{raw}")), &["E1MARAM.MATNR"], &[]);
    assert_eq!(f.basis, Basis::KeyFields);
}

#[test]
fn repeated_segments_give_every_value_in_order() {
    let stat = values("sapdm_LOIPRO05.xml", "E1AFKOL.E1JSTKL.STAT");
    assert_eq!(stat, ["I0002", "I0028", "I0048", "I0215", "I0340"].map(|s| json!(s)));
    let forml = values("sapdm_LOIWCS03.xml", "E1CRHDL.E1CRCOL.FORML");
    assert_eq!(forml, ["QTB", "ST", "PT", "PPQ", "TT", "QTA"].map(|s| json!(s)));
    assert_eq!(values("sapdm_LOIWCS03.xml", "E1CRHDL.E1CRCOL[LANUM=004].FORML"), [json!("PPQ")]);
}

#[test]
fn loiwcs03_without_docnum_is_not_deduplicated_unless_fields_match() {
    let doc = single("real/sapdm_LOIWCS03.xml");
    let none = fp(&doc, &[], &[]);
    assert_eq!((none.hex, none.basis), (None, Basis::None));
    let missing = fp(&doc, &["E1CRHDL.NOPE"], &[]);
    assert_eq!((missing.hex, missing.basis), (None, Basis::None));
    let keyed = fp(&doc, &["E1CRHDL.OBJID"], &[]);
    assert_eq!(keyed.basis, Basis::KeyFields);
    assert!(keyed.hex.is_some());
}

#[test]
fn docnum_is_normalised_across_real_files() {
    let b2b = single("real/sapb2bex_ordrsp-idoc.xml");
    let f = fp(&b2b, &[], &[]);
    assert_eq!(f.basis, Basis::Docnum);
    let avon = fp(&single("real/balsapjco_Avon.xml"), &[], &[]);
    assert_eq!(avon.basis, Basis::Docnum, "a non-numeric DOCNUM is still a DOCNUM");
}

#[test]
fn the_two_invoices_share_a_docnum_but_not_their_content() {
    let d96a = single("real/sapabh_O2C-UNEDIFACT-D96A_03-Invoice_INVOIC02.xml");
    let d10b = single("real/sapabh_O2C-UNEDIFACT-D10B_03-Invoice_INVOIC02.xml");
    assert_eq!(d96a.docnum(), d10b.docnum());
    // Same sender, same DOCNUM: the docnum fallback treats them as one message.
    assert_eq!(fp(&d96a, &[], &[]).hex, fp(&d10b, &[], &[]).hex);
    // The content differs (STDVRS, RCVPRN), and so do the content fingerprints.
    assert_ne!(fp(&d96a, &["$"], &[]).hex, fp(&d10b, &["$"], &[]).hex);
    let same_without = ["EDI_DC40.STDVRS", "EDI_DC40.RCVPRN"];
    assert_eq!(fp(&d96a, &["$"], &same_without).hex, fp(&d10b, &["$"], &same_without).hex);
}

#[test]
fn real_files_match_the_checksums_in_sources_md() {
    use sha2::{Digest, Sha256};
    let sources = String::from_utf8(common::fixture("real/SOURCES.md")).unwrap();
    let sums: Vec<(&str, &str)> = sources
        .lines()
        .filter_map(|l| l.split_once("  "))
        .filter(|(hash, name)| hash.len() == 64 && name.ends_with(".xml"))
        .collect();
    assert_eq!(sums.len(), EXPECTED.len());
    for (hash, name) in sums {
        let actual = hex::encode(Sha256::digest(common::fixture(&format!("real/{name}"))));
        assert_eq!(actual, hash, "{name} differs from the copy described in SOURCES.md");
    }
}
