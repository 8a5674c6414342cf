//! The JSON shape of an IDoc, from XML and from JSON.

use serde_json::json;

use super::*;
use crate::xml;

fn xml_json(text: &str) -> Value {
    xml::parse(text).unwrap().value
}

/// JSON normalised as a JSON IDoc is.
fn normalised(name: &str, value: Value) -> Value {
    let mut values = normalise(name, value).unwrap();
    assert_eq!(values.len(), 1);
    values.remove(0)
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
    assert!(normalise("X", Value::Null).unwrap().is_empty());
    assert!(normalise("X", json!([])).unwrap().is_empty());
    assert!(normalise("X", json!([null])).unwrap().is_empty());
    assert_eq!(normalise("X", json!([1, 2])).unwrap(), vec![json!("1"), json!("2")]);
}

#[test]
fn scalars_become_leaves() {
    assert_eq!(normalise("F", json!(" a ")).unwrap(), vec![json!("a")]);
    assert_eq!(normalise("F", json!(7)).unwrap(), vec![json!("7")]);
    assert_eq!(normalise("F", json!(false)).unwrap(), vec![json!("false")]);
    // An object with nothing in it is an empty leaf, like `<F/>`.
    assert_eq!(normalise("F", json!({})).unwrap(), vec![json!("")]);
    assert_eq!(normalise("F", json!({"#text": " 1 "})).unwrap(), vec![json!("1")]);
}

#[test]
fn text_member_round_trips() {
    let input = json!({"F": {"@unit": "KG", "#text": " 12 "}, "G": {"#text": null}});
    assert_eq!(normalised("S", input), json!({"F": {"@unit": "KG", "#text": "12"}, "G": ""}));
}

#[test]
fn nested_arrays_are_refused() {
    let err = normalise("IDOC", json!({"E1EDP01": [[{"A": "1"}]]})).unwrap_err();
    assert_eq!(err.to_string(), "invalid IDoc JSON: `E1EDP01` holds an array inside an array");
}

#[test]
fn non_scalar_attributes_and_text_are_refused() {
    let err = normalise("S", json!({"@SEGMENT": {"x": 1}})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid IDoc JSON: attribute `@SEGMENT` of `S` must be a string, number or boolean"
    );
    let err = normalise("S", json!({"#text": [1]})).unwrap_err();
    assert!(matches!(err, CoreError::InvalidIdocJson(_)));
    assert_eq!(err.class(), crate::ErrorClass::Unusable);
}

#[test]
fn null_attributes_are_absent() {
    assert_eq!(normalised("S", json!({"@A": null, "F": "x"})), json!({"F": "x"}));
}

#[test]
fn the_first_error_in_member_order_is_reported() {
    // `@A` sorts before `B`, `B` before `C`: each error is found first in turn.
    let input = json!({"@A": [1], "B": [[1]], "C": {"#text": {}}});
    let err = normalise("S", input).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid IDoc JSON: attribute `@A` of `S` must be a string, number or boolean"
    );
    let err = normalise("S", json!({"B": [[1]], "C": {"#text": {}}})).unwrap_err();
    assert_eq!(err.to_string(), "invalid IDoc JSON: `B` holds an array inside an array");
    let err = normalise("S", json!({"C": {"#text": {}}})).unwrap_err();
    assert_eq!(err.to_string(), "invalid IDoc JSON: `#text` of `C` must be a string, number or boolean");
}

#[test]
fn members_are_sorted_by_name_whatever_the_insertion_order() {
    // `render` relies on this (serde_json without `preserve_order`): text is
    // inserted after the children it came between, attributes before them.
    // If this fails, the feature was turned on and mixed content would
    // change member order; revisit `element` before turning it on.
    let v = xml_json("<S b=\"1\"><Z/>t<A/></S>");
    let names: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(names, ["#text", "@b", "A", "Z"]);
}

#[test]
fn trim_is_str_trim() {
    let cases = [
        "",
        " ",
        "a",
        " a",
        "a ",
        "ab",
        " ab ",
        "a b",
        "\ta\r\n",
        "\u{a0}a",
        "a\u{a0}",
        "\u{3000}",
        "\u{85}x\u{85}",
        "é",
        "éa",
        "aé",
        "a\u{2029}",
        "\u{feff}a",
        "-",
        "~x~",
        "a\u{0}",
    ];
    for text in cases {
        assert_eq!(trim(text), text.trim(), "{text:?}");
    }
}
