//! `edihub fingerprint FILE`: explains how a document is (or would be)
//! deduplicated. This is the answer to "why was my order blocked?": the same
//! code computes the fingerprint here and in the server, with the same rules.
//!
//! The rules are the hub's: the message types in the database the
//! configuration points to, where admins' changes live. Only when that
//! database does not exist yet (a SQLite file never created; an in-memory
//! database) are they the configuration file's, which the hub seeds on its
//! first start; `--file-rules` asks for the file's rules explicitly. The
//! output says which were used. No webhook secret is needed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use edihub_core::parse_body;
use edihub_server::Config;
use edihub_server::catalog::{Catalog, seed_rows};
use edihub_server::config::redact_url;
use edihub_store::GLOBAL_TENANT;
use serde_json::json;

/// Arguments of `edihub fingerprint`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The document (IDoc XML or JSON, or plain JSON).
    file: PathBuf,
    /// Message type to use instead of the one in the document (as X-Message-Type would).
    #[arg(long = "type")]
    message_type: Option<String>,
    /// Tenant whose message type overrides apply.
    #[arg(long)]
    tenant: Option<String>,
    /// Use the configuration file's message types, not the database's.
    #[arg(long)]
    file_rules: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The message type rules in use and where they came from.
struct Rules {
    catalog: Catalog,
    /// `database` or `file`.
    from: &'static str,
    /// The database (password masked) or the file, and why.
    location: String,
}

fn content_type_for(file: &Path) -> Option<&'static str> {
    match file.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("xml") => Some("application/xml"),
        Some("json") => Some("application/json"),
        // `.edi` is used for both syntaxes: sniffed.
        Some("edifact") => Some("application/EDIFACT"),
        Some("x12") => Some("application/EDI-X12"),
        _ => None,
    }
}

/// Runs the subcommand; exit code 1 when the file or the rules cannot be read or used.
pub async fn run(config: &Config, config_path: &Path, args: &Args) -> ExitCode {
    let rules = match load_rules(config, config_path, args.file_rules).await {
        Ok(rules) => rules,
        Err(e) => {
            eprintln!("edihub fingerprint: {e}");
            return ExitCode::FAILURE;
        }
    };
    match explain(&rules, args) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("edihub fingerprint: {}: {e}", args.file.display());
            ExitCode::FAILURE
        }
    }
}

/// The SQLite file of `url`, or `None` for an in-memory database or another backend.
fn sqlite_file(url: &str) -> Option<Option<PathBuf>> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    Some((!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path)))
}

async fn load_rules(config: &Config, config_path: &Path, file_rules: bool) -> Result<Rules, String> {
    let db = redact_url(&config.database_url);
    let file = config_path.display();
    let from_file = |why: String| {
        let catalog = Catalog::default();
        catalog.replace(&seed_rows(config, edihub_server::ingest::now()));
        Ok(Rules { catalog, from: "file", location: format!("{file} ({why})") })
    };
    if file_rules {
        return from_file("--file-rules".into());
    }
    match sqlite_file(&config.database_url) {
        Some(Some(path)) if !path.exists() => {
            return from_file(format!(
                "database {db} does not exist yet; the hub seeds these rules when it starts"
            ));
        }
        Some(None) => return from_file(format!("in-memory database {db}")),
        _ => {}
    }
    let hint = "; give --file-rules to use the configuration file's rules";
    let store = edihub_store::connect(&config.database_url, &edihub_server::pool_settings(config))
        .await
        .map_err(|e| format!("cannot open database {db}: {e}{hint}"))?;
    let rows = store.list_message_types().await;
    store.close().await;
    let rows = rows.map_err(|e| format!("cannot read the message types of database {db}: {e}{hint}"))?;
    let catalog = Catalog::default();
    catalog.replace(&rows);
    Ok(Rules { catalog, from: "database", location: db })
}

/// `(label, value)` rows printed with their colons aligned.
fn aligned(rows: &[(String, String)]) -> String {
    let width = rows.iter().map(|(label, _)| label.chars().count()).max().unwrap_or(0);
    rows.iter().map(|(label, value)| format!("  {label:<width$} : {value}\n")).collect()
}

fn explain(rules: &Rules, args: &Args) -> Result<String, String> {
    let bytes = std::fs::read(&args.file).map_err(|e| e.to_string())?;
    let parsed = parse_body(&bytes, content_type_for(&args.file)).map_err(|e| e.to_string())?;
    let catalog = &rules.catalog;
    let tenant = args.tenant.as_deref().unwrap_or(GLOBAL_TENANT);
    let configured = |t: &str| catalog.is_configured(tenant, t);
    let total = parsed.documents.len();
    let mut reports = Vec::new();
    let mut text = format!(
        "{}: {}, {total} document(s)\nrules from the {}: {}\n",
        args.file.display(),
        parsed.format,
        rules.from,
        rules.location
    );
    for (i, doc) in parsed.documents.iter().enumerate() {
        let message_type =
            doc.message_type(args.message_type.as_deref(), &configured).map_err(|e| e.to_string())?;
        let rule = catalog.rule(tenant, &message_type);
        let fp = edihub_core::fingerprint(doc, &rule.spec(&message_type));
        let rows = document_rows(doc, &message_type, rule.window_seconds, &fp);
        text.push_str(&format!("\ndocument {} of {total}\n{}", i + 1, aligned(&rows)));
        reports.push(json!({
            "message_type": message_type,
            "mestyp": doc.mestyp(),
            "docnum": doc.docnum(),
            "control": doc.control(),
            "envelope": doc.edi_header(),
            "window_seconds": rule.window_seconds,
            "fingerprint": fp,
            "rules": { "from": rules.from, "location": rules.location },
        }));
    }
    if args.json {
        return serde_json::to_string_pretty(&reports).map_err(|e| e.to_string());
    }
    Ok(text.trim_end().to_string())
}

/// The table of one document: what identifies it, its envelope, the key
/// fields its rule reads and the fingerprint they make.
fn document_rows(
    doc: &edihub_core::Document,
    message_type: &str,
    window_seconds: i64,
    fp: &edihub_core::Fingerprint,
) -> Vec<(String, String)> {
    let control = doc.control();
    let field = |f: fn(&edihub_core::ControlRecord) -> &Option<String>| {
        control.and_then(|c| f(c).clone()).unwrap_or_else(|| "-".into())
    };
    let row = |label: &str, value: String| (label.to_string(), value);
    let mut rows = vec![
        row("message type", message_type.to_string()),
        row("MESTYP", doc.mestyp().unwrap_or("-").into()),
        row("DOCNUM", doc.docnum().unwrap_or("-").into()),
        row(
            "sender",
            format!(
                "MANDT={} SNDPOR={} SNDPRN={}",
                field(|c| &c.mandt),
                field(|c| &c.sndpor),
                field(|c| &c.sndprn)
            ),
        ),
        row("window", format!("{}s", window_seconds)),
    ];
    let edi = doc.edi_header();
    if let Some(h) = edi {
        let ic = &h.interchange;
        rows.insert(
            2,
            row(
                "envelope",
                format!(
                    "{} interchange {} from {} to {}, group {}, version {}",
                    ic.syntax.as_str(),
                    ic.control_number,
                    ic.sender.id,
                    ic.receiver.id,
                    h.group_control.as_deref().unwrap_or("-"),
                    h.version
                ),
            ),
        );
    }
    if fp.key_values.is_empty() {
        let fallback = if edi.is_some() {
            "none configured (control numbers with sender and receiver)"
        } else {
            "none configured (DOCNUM with sender and client)"
        };
        rows.push(row("key fields", fallback.into()));
    }
    for kv in &fp.key_values {
        let shown = if kv.values.is_empty() {
            "missing".to_string()
        } else {
            kv.values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
        };
        rows.push(row(&kv.path, shown));
    }
    rows.push(row("basis", serde_json::to_value(fp.basis).unwrap_or_default().to_string()));
    rows.push(row("fingerprint", fp.hex.clone().unwrap_or_else(|| "none (not deduplicated)".into())));
    rows
}
