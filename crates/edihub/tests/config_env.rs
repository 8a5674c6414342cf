//! Configuration from the environment, run as the real binary: unknown
//! `EDIHUB_*` variables are warned about and ignored (a deployment tool's
//! `EDIHUB_HOME` must not stop the service), and the start-up output says
//! which database is used and where its URL came from, password masked.

mod demo;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use demo::{DEMO_SECRETS, repo};

fn demo_config() -> String {
    repo("config/edihub.toml")
}

/// `edihub --config <demo> <args>` with only the demo secrets and `env` in
/// its environment (nothing inherited: the suite's own variables would
/// otherwise count); (exit code, stdout, stderr).
fn edihub(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_edihub"))
        .env_clear()
        .arg("--config")
        .arg(demo_config())
        .args(args)
        .envs(DEMO_SECRETS)
        .envs(env.iter().copied())
        .output()
        .expect("run edihub");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8 output");
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

#[test]
fn unknown_edihub_variables_are_named_and_ignored() {
    let (code, out, err) =
        edihub(&["check-config"], &[("EDIHUB_HOME", "/opt/edihub"), ("EDIHUB_VERSION", "1.2.3")]);
    assert_eq!(code, 0, "an unknown EDIHUB_* variable must not stop the hub:\n{err}");
    assert!(out.starts_with("configuration OK"), "{out}");
    for name in ["EDIHUB_HOME", "EDIHUB_VERSION"] {
        let warnings = err.lines().filter(|l| l.contains("warning") && l.contains(name)).count();
        assert_eq!(warnings, 1, "one warning naming {name}:\n{err}");
    }
}

#[test]
fn known_variables_still_override_and_bad_values_still_fail() {
    // A known nested key is applied (and validated), not ignored.
    let (code, _, err) = edihub(&["check-config"], &[("EDIHUB_RETENTION__BATCH_SIZE", "many")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("retention.batch_size"), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let (code, _, err) = edihub(&["check-config"], &[("EDIHUB_LOG_FORMAT", "xml")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("log_format"), "{err}");
}

#[test]
fn check_config_names_the_database_source_with_the_password_masked() {
    let source = |env: &[(&str, &str)]| {
        let (code, out, err) = edihub(&["check-config"], env);
        assert_eq!(code, 0, "{err}");
        out
    };
    assert!(source(&[]).contains("database sqlite://data/edihub.db (from config file)"));
    let pg = "postgres://edihub:s3cret@db.internal:5432/edihub";
    let out = source(&[("DATABASE_URL", pg)]);
    assert!(
        out.contains("database postgres://edihub:***@db.internal:5432/edihub (from DATABASE_URL)"),
        "{out}"
    );
    assert!(!out.contains("s3cret"), "{out}");
    let out = source(&[("DATABASE_URL", pg), ("EDIHUB_DATABASE_URL", "sqlite://other.db")]);
    assert!(out.contains("database sqlite://other.db (from EDIHUB_DATABASE_URL)"), "{out}");
}

#[test]
fn serve_starts_with_unknown_variables_and_logs_warning_and_database() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("config-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = format!("sqlite://{}/hub.db", dir.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_edihub"))
        .env_clear()
        .arg("--config")
        .arg(demo_config())
        .arg("serve")
        .envs(DEMO_SECRETS)
        .envs([("EDIHUB_LISTEN", "127.0.0.1:0"), ("EDIHUB_DATABASE_URL", db.as_str()), ("EDIHUB_HOME", "/x")])
        .envs([("EDIHUB_LOG_FORMAT", "json")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start edihub serve");
    // Read log lines until the hub says it serves (or the process ends).
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let done = line.contains("edihub serving");
            let _ = tx.send(line);
            if done {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) {
        let done = line.contains("edihub serving");
        lines.push(serde_json::from_str::<serde_json::Value>(&line).expect("JSON log line"));
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let message = |l: &serde_json::Value| l["fields"]["message"].as_str().unwrap_or_default().to_string();
    assert!(lines.iter().any(|l| message(l) == "edihub serving"), "the hub must start: {lines:#?}");
    let warning =
        lines.iter().find(|l| l["fields"]["variable"] == "EDIHUB_HOME").expect("a warning naming it");
    assert_eq!(warning["level"], "WARN");
    let database = lines.iter().find(|l| message(l) == "database").expect("a database line");
    assert_eq!(database["fields"]["database"], db.as_str());
    assert_eq!(database["fields"]["source"], "EDIHUB_DATABASE_URL");
}
