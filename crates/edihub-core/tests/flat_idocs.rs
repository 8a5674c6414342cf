//! A flat-file IDoc and its XML twin (`fixtures/idoc/flat/`, made from the
//! real S/4HANA ORDRSP in `fixtures/idoc/real/` by `make_flat.py`): with the
//! IDoc type's description the flat file renders exactly as the XML does and
//! every fingerprint is equal; without it, control record paths and the
//! DOCNUM fallback still agree.

mod common;

use common::{fixture, paths};
use edihub_core::{
    Basis, BodyFormat, Document, FingerprintScope, FingerprintSpec, IdocDescription, IdocDescriptions,
    fingerprint, parse_body, parse_body_with,
};
use serde_json::json;

const FLAT: &str = "flat/sapb2bex_ordrsp.idoc";
const XML: &str = "real/sapb2bex_ordrsp-idoc.xml";

fn text(name: &str) -> String {
    String::from_utf8(fixture(name)).unwrap()
}

fn descriptions(file: &str) -> IdocDescriptions {
    let mut all = IdocDescriptions::new();
    all.insert(IdocDescription::read(&text(file)).unwrap()).unwrap();
    all
}

fn only(mut docs: Vec<Document>) -> Document {
    assert_eq!(docs.len(), 1);
    docs.remove(0)
}

fn xml_twin() -> Document {
    only(parse_body(&fixture(XML), Some("application/xml")).unwrap().documents)
}

fn flat(descriptions: &IdocDescriptions) -> Document {
    let body = parse_body_with(&fixture(FLAT), Some("text/plain"), descriptions).unwrap();
    assert_eq!(body.format, BodyFormat::IdocFlat);
    only(body.documents)
}

fn fp(doc: &Document, keys: &[&str], scope: FingerprintScope) -> edihub_core::Fingerprint {
    let key_fields = paths(keys);
    let spec =
        FingerprintSpec { message_type: "ORDERS05", key_fields: &key_fields, exclude_fields: &[], scope };
    fingerprint(doc, &spec)
}

#[test]
fn both_description_forms_are_one_description() {
    assert_eq!(
        IdocDescription::read(&text("flat/orders05-ordrsp.description.txt")).unwrap(),
        IdocDescription::read(&text("flat/orders05-ordrsp.description.json")).unwrap()
    );
}

#[test]
fn with_its_description_the_flat_file_is_its_xml_twin() {
    let xml = xml_twin();
    for file in ["flat/orders05-ordrsp.description.txt", "flat/orders05-ordrsp.description.json"] {
        let flat = flat(&descriptions(file));
        assert_eq!(flat.value(), xml.value(), "{file}");
        assert_eq!(flat.control(), xml.control());
        assert_eq!(flat.message_type(None, &|_| false).unwrap(), "ORDERS05");
        let receiver = FingerprintScope { sender: false, receiver: true };
        let specs: [(&[&str], Basis); 4] = [
            (&["E1EDK02[QUALF=001].BELNR", "E1EDK01.BELNR"], Basis::KeyFields),
            (&["E1EDP01.E1EDP19[QUALF=002].IDTNR"], Basis::KeyFields),
            (&["$"], Basis::Content),
            (&[], Basis::Docnum),
        ];
        for (keys, basis) in specs {
            for scope in [FingerprintScope::NONE, receiver] {
                let (f, x) = (fp(&flat, keys, scope), fp(&xml, keys, scope));
                assert_eq!(f, x, "{keys:?} {scope:?}");
                assert_eq!(f.basis, basis);
                assert!(f.hex.is_some());
            }
        }
    }
}

#[test]
fn without_a_description_the_control_record_still_identifies_the_idoc() {
    let (raw, xml) = (flat(&IdocDescriptions::new()), xml_twin());
    assert_eq!(raw.value()["EDI_DC40"], xml.value()["EDI_DC40"]);
    assert_eq!(raw.value()["E2EDK01005"]["SDATA"].as_str().map(|s| &s[..12]), Some("000 USD   1."));
    assert!(raw.value().get("E1EDK01").is_none());
    for keys in [&["EDI_DC40.RCVPRN"][..], &[][..]] {
        assert_eq!(
            fp(&raw, keys, FingerprintScope::NONE),
            fp(&xml, keys, FingerprintScope::NONE),
            "{keys:?}"
        );
    }
    // A path into a segment finds nothing in the raw reading: the DOCNUM fallback answers.
    let f = fp(&raw, &["E1EDK01.BELNR"], FingerprintScope::NONE);
    assert_eq!(f.basis, Basis::Docnum);
    assert_eq!(f.key_values[0].values, Vec::<serde_json::Value>::new());
    assert_eq!(
        fp(&xml, &["E1EDK01.BELNR"], FingerprintScope::NONE).key_values[0].values,
        vec![json!("0000347163")]
    );
}

#[test]
fn the_fixture_records_have_sap_s_lengths() {
    let text = text(FLAT);
    let lengths: Vec<usize> = text.lines().map(|l| l.chars().count()).collect();
    assert_eq!(lengths[0], 524);
    assert!(lengths[1..].iter().all(|&n| n == 1063));
    assert_eq!(lengths.len(), 53);
}
