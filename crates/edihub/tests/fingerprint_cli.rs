//! `edihub fingerprint FILE`: the offline answer to "why was my order
//! blocked?", run as the real binary against the demo configuration.

use std::process::Command;

const DEMO_SECRETS: [(&str, &str); 5] = [
    ("SHOP_SECRET", "dev-shop-secret"),
    ("GITHUB_SECRET", "dev-github-secret"),
    ("STD_WEBHOOK_SECRET", "whsec_ZGV2LXN0ZC13ZWJob29rLXNlY3JldA=="),
    ("STRIPE_SECRET", "whsec_dev_stripe_secret"),
    ("GUBEE_SECRET", "dev-gubee-secret"),
];

fn repo(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs `edihub --config config/edihub.toml fingerprint <args>`; (exit code, stdout, stderr).
fn fingerprint(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_edihub"))
        .arg("--config")
        .arg(repo("config/edihub.toml"))
        .arg("fingerprint")
        .args(args)
        .envs(DEMO_SECRETS)
        .output()
        .expect("run edihub");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8 output");
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

fn json_report(file: &str, extra: &[&str]) -> serde_json::Value {
    let path = repo(file);
    let mut args = vec![path.as_str(), "--json"];
    args.extend_from_slice(extra);
    let (code, out, err) = fingerprint(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("--json prints JSON")
}

#[test]
fn explains_type_mestyp_docnum_each_key_and_the_fingerprint() {
    let (code, out, err) = fingerprint(&[&repo("fixtures/idoc/orders05.xml")]);
    assert_eq!(code, 0, "{err}");
    for expected in [
        "message type : ORDERS05",
        "MESTYP       : ORDERS",
        "DOCNUM       : 0000000000004711",
        "SNDPRN=Q01CLNT100",
        "E1EDK01.BELNR",
        "\"4500012345\"",
        "E1EDK02[QUALF=001].BELNR",
        "\"PO-77881\"",
        "key_fields",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
    let fp = out.lines().find_map(|l| l.strip_prefix("  fingerprint  : ")).expect("a fingerprint line");
    assert_eq!(fp.len(), 64, "{fp}");
}

#[test]
fn the_same_idoc_in_every_form_has_one_fingerprint_and_a_reissue_matches() {
    let fp = |file: &str| json_report(file, &[])[0]["fingerprint"]["hex"].as_str().expect("hex").to_string();
    let original = fp("fixtures/idoc/orders05.xml");
    for other in [
        "orders05.json",
        "orders05-soap.xml",
        "orders05-latin1.xml",
        "orders05-utf16.xml",
        "orders05-reissued.xml",
    ] {
        assert_eq!(fp(&format!("fixtures/idoc/{other}")), original, "{other}");
    }
    assert_ne!(fp("fixtures/idoc/ordchg05.xml"), original, "ORDCHG is not its ORDERS");
}

#[test]
fn a_missing_key_field_says_missing_and_falls_back_to_docnum() {
    // LOIWCS03 has no configured type and no DOCNUM; ORDERS05 read as an
    // INVOIC02 lacks the invoice number (QUALF 009).
    let report = json_report("fixtures/idoc/real/sapdm_LOIWCS03.xml", &[]);
    assert_eq!(report[0]["fingerprint"]["basis"], "none", "no fields, no DOCNUM: not deduplicated");
    let (code, out, _) = fingerprint(&[&repo("fixtures/idoc/real/sapdm_LOIWCS03.xml")]);
    assert_eq!(code, 0);
    assert!(out.contains("none (not deduplicated)"), "{out}");
    let (code, out, _) = fingerprint(&[&repo("fixtures/idoc/orders05.xml"), "--type", "INVOIC02"]);
    assert_eq!(code, 0);
    assert!(out.contains("E1EDK02[QUALF=009].BELNR= missing"), "{out}");
}

#[test]
fn a_packet_is_explained_per_idoc_and_bad_input_fails() {
    let report = json_report("fixtures/idoc/packet-3.xml", &[]);
    let docnums: Vec<&str> =
        report.as_array().unwrap().iter().map(|r| r["docnum"].as_str().unwrap()).collect();
    assert_eq!(docnums.len(), 3);
    let (code, _, err) = fingerprint(&[&repo("fixtures/bad/manifest.json")]);
    assert_eq!(code, 1, "a plain JSON document without a type cannot be explained");
    assert!(err.contains("message type"), "{err}");
    let (code, _, err) = fingerprint(&["/nonexistent/file.xml"]);
    assert_eq!(code, 1);
    assert!(err.contains("No such file"), "{err}");
}
