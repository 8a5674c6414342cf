//! `edihub fingerprint FILE`: the answer to "why was my order blocked?", run
//! as the real binary against the demo configuration: with the rules of the
//! hub's database when it exists (and saying so), without webhook secrets.

mod demo;

use std::path::PathBuf;
use std::process::Command;

use edihub_server::{Config, SecretSource};
use edihub_store::{Json, MessageTypeRow};

use demo::{DEMO_SECRETS, repo};

/// A database the tests never create: the file's rules apply.
const NO_DATABASE: &str = "sqlite:///nonexistent-edihub-dir/edihub.db";

/// Runs `edihub --config config/edihub.toml <args>` with `env` and no webhook
/// secret; (exit code, stdout, stderr).
fn edihub(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_edihub"));
    cmd.arg("--config").arg(repo("config/edihub.toml")).args(args);
    for (var, _) in DEMO_SECRETS {
        cmd.env_remove(var);
    }
    let out =
        cmd.env("EDIHUB_DATABASE_URL", NO_DATABASE).envs(env.iter().copied()).output().expect("run edihub");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8 output");
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

/// Runs `edihub --config config/edihub.toml fingerprint <args>`; (exit code, stdout, stderr).
fn fingerprint(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["fingerprint"];
    all.extend_from_slice(args);
    edihub(&all, &[])
}

/// The `label : value` rows of a text report, each with its colon's column.
fn rows(out: &str) -> Vec<(usize, String, String)> {
    out.lines()
        .filter(|l| l.starts_with("  "))
        .filter_map(|l| l.find(" : ").map(|at| (at, l[..at].trim().to_string(), l[at + 3..].to_string())))
        .collect()
}

fn value<'a>(rows: &'a [(usize, String, String)], label: &str) -> &'a str {
    rows.iter().find(|(_, l, _)| l == label).map(|(_, _, v)| v.as_str()).unwrap_or_else(|| panic!("{label}"))
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
    assert!(out.lines().next().unwrap().ends_with(": IDoc-XML, 1 document(s)"), "{out}");
    let rows = rows(&out);
    for (label, expected) in [
        ("message type", "ORDERS05"),
        ("MESTYP", "ORDERS"),
        ("DOCNUM", "0000000000004711"),
        ("sender", "MANDT=100 SNDPOR=SAPQ01 SNDPRN=Q01CLNT100"),
        ("E1EDK01.BELNR", "\"4500012345\""),
        ("E1EDK02[QUALF=001].BELNR", "\"PO-77881\""),
        ("basis", "\"key_fields\""),
    ] {
        assert_eq!(value(&rows, label), expected, "{out}");
    }
    assert_eq!(value(&rows, "fingerprint").len(), 64, "{out}");
    assert!(rows.iter().all(|(at, _, _)| *at == rows[0].0), "the colons line up:\n{out}");
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
    assert_eq!(value(&rows(&out), "E1EDK02[QUALF=009].BELNR"), "missing", "{out}");
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

#[test]
fn needs_no_webhook_secret_while_check_config_and_serve_do() {
    // `edihub` runs every command here without the integrations' secrets.
    let (code, out, err) = fingerprint(&[&repo("fixtures/idoc/orders05.xml")]);
    assert_eq!(code, 0, "fingerprint verifies no signature:\n{err}");
    assert!(out.contains("fingerprint"), "{out}");
    for command in ["check-config", "serve"] {
        let (code, _, err) = edihub(&[command], &[("EDIHUB_LISTEN", "127.0.0.1:0")]);
        assert_eq!(code, 2, "{command} without secrets must refuse to start:\n{err}");
        assert!(err.contains("SHOP_SECRET is not set"), "{command}: {err}");
    }
    let (code, out, err) = edihub(&["check-config"], &DEMO_SECRETS);
    assert_eq!(code, 0, "with the secrets: {out}{err}");
}

#[test]
fn a_missing_configuration_file_names_where_its_path_came_from() {
    let run = |args: &[&str], env: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_edihub"));
        cmd.current_dir(std::env::temp_dir()).env_remove("EDIHUB_CONFIG").args(args);
        if let Some(path) = env {
            cmd.env("EDIHUB_CONFIG", path);
        }
        let out = cmd.output().expect("run edihub");
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    let (code, err) = run(&["--config", "/no/such/edihub.toml", "check-config"], Some("/also/missing.toml"));
    assert_eq!(code, Some(2));
    assert!(err.contains("/no/such/edihub.toml not found (given with --config)"), "{err}");
    assert!(!err.contains("EDIHUB_CONFIG"), "--config was given: {err}");
    let (code, err) = run(&["check-config"], Some("/also/missing.toml"));
    assert_eq!(code, Some(2));
    assert!(err.contains("/also/missing.toml not found (given by EDIHUB_CONFIG)"), "{err}");
    let (code, err) = run(&["check-config"], None);
    assert_eq!(code, Some(2));
    assert!(err.contains("config/edihub.toml not found (the default; give --config FILE"), "{err}");
    assert!(err.contains("relative to "), "{err}");
}

/// A hub's database in a fresh directory, seeded from the demo config, with
/// ORDERS05 then changed as an admin would (BELNR only, 15 minutes).
async fn database_with_an_admin_change() -> (PathBuf, String) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fp-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("edihub.db").display());
    let toml = std::fs::read_to_string(repo("config/edihub.toml")).unwrap();
    let toml = toml.replace("sqlite://data/edihub.db", &url);
    let secrets =
        SecretSource::Fixed(DEMO_SECRETS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    let config = Config::from_toml_with_secrets(&toml, secrets).expect("demo config");
    let state = edihub_server::prepare(config).await.expect("hub starts");
    let row = MessageTypeRow {
        tenant_id: String::new(),
        id: "ORDERS05".into(),
        duplicate_key_fields: Json(vec!["E1EDK01.BELNR".into()]),
        exclude_fields: Json(Vec::new()),
        duplicate_window_seconds: 900,
        fingerprint_scope: Json(Vec::new()),
        source: "admin".into(),
        updated_at: chrono::Utc::now(),
    };
    state.store.put_message_type(&row).await.expect("admin change");
    state.store.close().await;
    (dir, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uses_the_rules_of_the_hubs_database_and_says_which() {
    let (dir, url) = database_with_an_admin_change().await;
    let file = repo("fixtures/idoc/orders05.xml");
    let run = move |extra: &'static [&'static str], url: String| {
        let file = file.clone();
        tokio::task::spawn_blocking(move || {
            let mut args = vec!["fingerprint", file.as_str()];
            args.extend_from_slice(extra);
            edihub(&args, &[("EDIHUB_DATABASE_URL", &url)])
        })
    };
    let (code, db_out, err) = run(&[], url.clone()).await.unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(db_out.contains(&format!("rules from the database: {url}")), "{db_out}");
    let db_rows = rows(&db_out);
    assert_eq!(value(&db_rows, "window"), "900s", "the admin's window, not the file's:\n{db_out}");
    assert!(!db_rows.iter().any(|(_, l, _)| l.starts_with("E1EDK02")), "the admin's key fields:\n{db_out}");

    let (code, file_out, err) = run(&["--file-rules"], url.clone()).await.unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(file_out.contains("rules from the file: ") && file_out.contains("(--file-rules)"), "{file_out}");
    let file_rows = rows(&file_out);
    assert_eq!(value(&file_rows, "window"), "604800s", "{file_out}");
    assert_ne!(value(&file_rows, "fingerprint"), value(&db_rows, "fingerprint"));

    // A database that does not exist yet: the file's rules, and nothing created.
    let missing = dir.join("never.db");
    let (code, out, err) = run(&["--json"], format!("sqlite://{}", missing.display())).await.unwrap();
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report[0]["rules"]["from"], "file", "{out}");
    assert!(report[0]["rules"]["location"].as_str().unwrap().contains("does not exist yet"), "{out}");
    assert!(!missing.exists(), "explaining must not create a database");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unreachable_database_is_an_error_that_names_the_way_out() {
    let file = repo("fixtures/idoc/orders05.xml");
    let env = [
        ("EDIHUB_DATABASE_URL", "postgres://edihub:s3cret@127.0.0.1:1/edihub"),
        ("EDIHUB_DATABASE_ACQUIRE_TIMEOUT_SECS", "1"),
    ];
    let (code, out, err) = edihub(&["fingerprint", &file], &env);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("cannot open database postgres://edihub:***@127.0.0.1:1/edihub"), "{err}");
    assert!(err.contains("give --file-rules") && !err.contains("s3cret"), "{err}");
    let (code, out, err) = edihub(&["fingerprint", &file, "--file-rules"], &env);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("rules from the file"), "{out}");
}

#[test]
fn explains_each_message_of_an_x12_interchange() {
    let report = json_report("fixtures/edifact/real/staedi_invoice810_po850_dual.edi", &[]);
    let docs = report.as_array().expect("one report per message");
    let types: Vec<&str> = docs.iter().map(|d| d["message_type"].as_str().unwrap()).collect();
    assert_eq!(types, ["X12.810", "X12.810", "X12.850"]);
    let po = &docs[2];
    assert_eq!(po["docnum"], "000191240");
    assert_eq!(po["envelope"]["interchange"]["control_number"], "000000020");
    assert_eq!(po["envelope"]["version"], "003010");
    // The demo rules key X12.850 on BEG03; the 810s have no rule.
    assert_eq!(po["fingerprint"]["basis"], "key_fields");
    assert_eq!(po["fingerprint"]["key_values"][0]["values"][0], "S115921858");
    assert_eq!(docs[0]["fingerprint"]["basis"], "docnum");

    let (code, out, err) = fingerprint(&[&repo("fixtures/edifact/real/staedi_invoice810_po850_dual.edi")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("X12 interchange 000000020 from SENDERISA to RECEIVERISA"), "{out}");
    assert!(out.contains("none configured (control numbers with sender and receiver)"), "{out}");
}
