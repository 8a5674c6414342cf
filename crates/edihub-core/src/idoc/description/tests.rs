//! Descriptions read from both forms, and every refusal naming what is wrong.

use super::*;

const PARSER: &str = "BEGIN_RECORD_SECTION
  BEGIN_CONTROL_RECORD
    BEGIN_FIELDS
      NAME                TABNAM
      LENGTH              000010
      CHARACTER_FIRST     000001
      CHARACTER_LAST      000010
    END_FIELDS
  END_CONTROL_RECORD
END_RECORD_SECTION
BEGIN_SEGMENT_SECTION
  BEGIN_IDOC          ORDERS05
    EXTENSION           ZORDERS05
    BEGIN_GROUP                  1
      LEVEL               02
      BEGIN_SEGMENT       E2EDK01005
        SEGMENTTYPE         E1EDK01
        QUALIFIED
        LEVEL               02
        BEGIN_FIELDS
          NAME                ACTION
          TEXT                Action code for the whole EDI message
          TYPE                CHARACTER
          LENGTH              000003
          FIELD_POS           0001
          CHARACTER_FIRST     000064
          CHARACTER_LAST      000066

          NAME                BELNR
          TYPE                CHARACTER
          LENGTH              000035
          FIELD_POS           0002
          CHARACTER_FIRST     000067
          CHARACTER_LAST      000101
        END_FIELDS
      END_SEGMENT
      BEGIN_SEGMENT       E1EDK14
        BEGIN_FIELDS
          NAME                QUALF
          CHARACTER_FIRST     000064
          CHARACTER_LAST      000066
        END_FIELDS
      END_SEGMENT
    END_GROUP
  END_IDOC
END_SEGMENT_SECTION
";

const JSON: &str = r#"{"idoc_type": "ORDERS05", "extension": "ZORDERS05", "segments": [
  {"name": "E1EDK01", "definition": "E2EDK01005",
   "fields": [{"name": "ACTION", "offset": 0, "length": 3}, {"name": "BELNR", "offset": 3, "length": 35}]},
  {"name": "E1EDK14", "fields": [{"name": "QUALF", "offset": 0, "length": 3}]}]}"#;

fn field(name: &str, offset: usize, length: usize) -> FieldLayout {
    FieldLayout { name: name.into(), offset, length }
}

#[test]
fn both_forms_read_to_the_same_description() {
    let parsed = IdocDescription::read(PARSER).unwrap();
    assert_eq!(parsed, IdocDescription::read(JSON).unwrap());
    assert_eq!(
        (parsed.idoc_type(), parsed.extension(), parsed.name()),
        ("ORDERS05", Some("ZORDERS05"), "ZORDERS05")
    );
    let k01 = parsed.segment("E2EDK01005").unwrap();
    assert_eq!(parsed.segment("E1EDK01"), Some(k01));
    assert_eq!(k01.definition.as_deref(), Some("E2EDK01005"));
    assert_eq!(k01.fields, [field("ACTION", 0, 3), field("BELNR", 3, 35)]);
    // An older release names the segment type after BEGIN_SEGMENT.
    let k14 = parsed.segment("E1EDK14").unwrap();
    assert_eq!((k14.segment_type.as_str(), k14.definition.as_deref()), ("E1EDK14", None));
    assert_eq!((parsed.position("E2EDK01005"), parsed.position("E1EDK14")), (Some(0), Some(1)));
    assert_eq!(parsed.segment("E1EDP01"), None);
}

#[test]
fn the_registry_prefers_the_extension() {
    let mut all = IdocDescriptions::new();
    assert!(all.is_empty());
    all.insert(IdocDescription::read(JSON).unwrap()).unwrap();
    let basic = JSON.replace(r#""extension": "ZORDERS05", "#, "");
    all.insert(IdocDescription::read(&basic).unwrap()).unwrap();
    assert_eq!(all.for_types(Some("ZORDERS05"), Some("ORDERS05")).unwrap().name(), "ZORDERS05");
    assert_eq!(all.for_types(Some("ZOTHER"), Some("ORDERS05")).unwrap().name(), "ORDERS05");
    assert_eq!(all.for_types(None, Some("ORDERS05")).unwrap().name(), "ORDERS05");
    assert!(all.for_types(None, Some("INVOIC02")).is_none());
    let again = all.insert(IdocDescription::read(&basic).unwrap()).unwrap_err();
    assert_eq!(again.to_string(), "invalid IDoc type description: ORDERS05 is described twice");
}

fn refused(text: &str) -> String {
    IdocDescription::read(text).unwrap_err().to_string()
}

#[test]
fn bad_json_descriptions_are_refused_by_name() {
    let cases = [
        (r#"{"idoc_type": "ORDERS05", "segments": []}"#, "ORDERS05 describes no segment"),
        (
            r#"{"idoc_type": "ORDERS05", "segments": [{"name": "E1", "fields": [{"name": "A", "offset": 990, "length": 11}]}]}"#,
            "E1.A: offset 990 and length 11 do not fit in the 1000 characters of SDATA",
        ),
        (
            r#"{"idoc_type": "ORDERS05", "segments": [{"name": "E1", "fields": [{"name": "A", "offset": 0, "length": 5}, {"name": "B", "offset": 4, "length": 2}]}]}"#,
            "E1: fields A and B overlap",
        ),
        (
            r#"{"idoc_type": "ORDERS05", "segments": [{"name": "E1", "fields": [{"name": "A", "offset": 0, "length": 1}, {"name": "A", "offset": 1, "length": 1}]}]}"#,
            "E1 has field A twice",
        ),
        (
            r#"{"idoc_type": "ORDERS05", "segments": [{"name": "E1", "fields": []}, {"name": "E2", "definition": "E1", "fields": []}]}"#,
            "segment name E1 is used twice",
        ),
        (
            r#"{"idoc_type": "ORDERS05", "segments": [{"name": "E1 X", "fields": []}]}"#,
            "segment name `E1 X` contains white space or a control character",
        ),
        (
            r#"{"idoc_type": "THIS_NAME_IS_LONGER_THAN_THIRTY_CHARS", "segments": []}"#,
            "IDoc type name `THIS_NAME_IS_LONGER_THAN_THIRTY_CHARS` must have 1 to 30 characters",
        ),
    ];
    for (text, detail) in cases {
        assert_eq!(refused(text), format!("invalid IDoc type description: {detail}"));
    }
    assert!(
        refused(r#"{"idoc_type": "X", "segments": [], "segmants": []}"#).contains("unknown field `segmants`")
    );
    assert!(
        refused(r#"{"idoc_type": "X", "idoc_type": "Y", "segments": []}"#).contains("duplicate JSON member")
    );
}

#[test]
fn bad_parser_format_is_refused_with_its_line() {
    let no_idoc = "BEGIN_SEGMENT_SECTION\nEND_SEGMENT_SECTION\n";
    assert_eq!(
        refused(no_idoc),
        "invalid IDoc type description: parser format: no BEGIN_IDOC in a BEGIN_SEGMENT_SECTION"
    );
    let cases = [
        (
            PARSER.replace("CHARACTER_LAST      000101", "CHARACTER_LAST      0001x1"),
            "line 34: `0001x1` is not a number",
        ),
        (
            PARSER.replace("LENGTH              000035", "LENGTH              000034"),
            "line 29: field BELNR: LENGTH does not match 67 to 101",
        ),
        (
            PARSER.replace(
                "CHARACTER_FIRST     000064\n          CHARACTER_LAST      000066\n\n",
                "CHARACTER_FIRST     000060\n          CHARACTER_LAST      000066\n\n",
            ),
            "line 21: field ACTION spans 60 to 66, not inside SDATA (64 and after)",
        ),
        (
            PARSER.replace("          CHARACTER_LAST      000101\n", ""),
            "line 29: field BELNR has no CHARACTER_FIRST and CHARACTER_LAST",
        ),
        (
            PARSER.replace(
                "      END_SEGMENT\n      BEGIN_SEGMENT       E1EDK14",
                "      BEGIN_SEGMENT       E1EDK14",
            ),
            "line 36: BEGIN_SEGMENT inside a segment",
        ),
    ];
    for (text, detail) in cases {
        assert_eq!(refused(&text), format!("invalid IDoc type description: parser format, {detail}"));
    }
}
