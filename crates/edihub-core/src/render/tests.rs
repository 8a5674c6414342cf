//! The JSON shape of an IDoc, and reading that shape back.

use serde_json::json;

use super::*;
use crate::xml;

fn xml_json(text: &str) -> Value {
    to_json(&xml::parse(text).unwrap())
}

/// JSON read as elements and rendered again (what a JSON IDoc goes through).
fn normalised(name: &str, value: Value) -> Value {
    let elements = from_json(name, &value).unwrap();
    assert_eq!(elements.len(), 1);
    to_json(&elements[0])
}

#[test]
fn leaves_are_strings_segments_objects_repeats_arrays() {
    let v = xml_json(
        r#"<IDOC BEGIN="1">
             <E1EDK01 SEGMENT="1"><BELNR>1</BELNR><EMPTY/></E1EDK01>
             <E1EDK02><QUALF>001</QUALF></E1EDK02>
             <E1EDK02><QUALF>002</QUALF></E1EDK02>
             <E1EDK02><QUALF>003</QUALF></E1EDK02>
           </IDOC>"#,
    );
    assert_eq!(
        v,
        json!({
            "@BEGIN": "1",
            "E1EDK01": {"@SEGMENT": "1", "BELNR": "1", "EMPTY": ""},
            "E1EDK02": [{"QUALF": "001"}, {"QUALF": "002"}, {"QUALF": "003"}]
        })
    );
}

#[test]
fn repeated_fields_become_arrays_too() {
    let v = xml_json("<S><TDLINE>a</TDLINE><TDLINE>b</TDLINE></S>");
    assert_eq!(v, json!({"TDLINE": ["a", "b"]}));
}

#[test]
fn a_leaf_with_attributes_keeps_its_text_under_hash_text() {
    let v = xml_json(r#"<S><F unit="KG"> 12 </F></S>"#);
    assert_eq!(v, json!({"F": {"@unit": "KG", "#text": "12"}}));
}

#[test]
fn json_reads_back_into_the_same_shape() {
    let original = json!({
        "@BEGIN": "1",
        "E1EDK01": {"@SEGMENT": "1", "BELNR": "1"},
        "E1EDK02": [{"QUALF": "001"}, {"QUALF": "002"}]
    });
    assert_eq!(normalised("IDOC", original.clone()), original);
}

#[test]
fn json_is_normalised_like_xml() {
    let input = json!({
        "@BEGIN": 1,
        "@xmlns": "urn:x",
        "@xmlns:ns0": "urn:y",
        "E1EDK01": [{"BELNR": "  42 ", "MENGE": 3.5, "FLAG": true, "GONE": null}],
        "E1EDP01": [{"POSEX": 10}, null, {"POSEX": "20"}],
        "NOTHING": null
    });
    assert_eq!(
        normalised("IDOC", input),
        json!({
            "@BEGIN": "1",
            "E1EDK01": {"BELNR": "42", "MENGE": "3.5", "FLAG": "true"},
            "E1EDP01": [{"POSEX": "10"}, {"POSEX": "20"}]
        })
    );
}

#[test]
fn null_and_empty_array_are_absent() {
    assert!(from_json("X", &Value::Null).unwrap().is_empty());
    assert!(from_json("X", &json!([])).unwrap().is_empty());
    assert_eq!(from_json("X", &json!([1, 2])).unwrap().len(), 2);
}

#[test]
fn scalars_become_leaves() {
    let e = &from_json("F", &json!(" a ")).unwrap()[0];
    assert_eq!((e.name.as_str(), e.text.as_str()), ("F", "a"));
    assert_eq!(from_json("F", &json!(7)).unwrap()[0].text, "7");
    assert_eq!(from_json("F", &json!(false)).unwrap()[0].text, "false");
}

#[test]
fn text_member_round_trips() {
    let input = json!({"F": {"@unit": "KG", "#text": " 12 "}, "G": {"#text": null}});
    assert_eq!(normalised("S", input), json!({"F": {"@unit": "KG", "#text": "12"}, "G": ""}));
}

#[test]
fn nested_arrays_are_refused() {
    let err = from_json("IDOC", &json!({"E1EDP01": [[{"A": "1"}]]})).unwrap_err();
    assert_eq!(err.to_string(), "invalid IDoc JSON: `E1EDP01` holds an array inside an array");
}

#[test]
fn non_scalar_attributes_and_text_are_refused() {
    let err = from_json("S", &json!({"@SEGMENT": {"x": 1}})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid IDoc JSON: attribute `@SEGMENT` of `S` must be a string, number or boolean"
    );
    let err = from_json("S", &json!({"#text": [1]})).unwrap_err();
    assert!(matches!(err, CoreError::InvalidIdocJson(_)));
    assert_eq!(err.class(), crate::ErrorClass::Unusable);
}

#[test]
fn null_attributes_are_absent() {
    assert_eq!(normalised("S", json!({"@A": null, "F": "x"})), json!({"F": "x"}));
}
