//! `edihub fingerprint FILE`: explains how a document is (or would be)
//! deduplicated, using the message types of the configuration file. This is
//! the offline answer to "why was my order blocked?": the same code computes
//! the fingerprint here and in the server.

use std::path::PathBuf;
use std::process::ExitCode;

use edihub_core::{FingerprintSpec, parse_body};
use edihub_server::Config;
use edihub_server::catalog::{Catalog, seed_rows};
use edihub_store::GLOBAL_TENANT;

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
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn content_type_for(file: &std::path::Path) -> Option<&'static str> {
    match file.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("xml") => Some("application/xml"),
        Some("json") => Some("application/json"),
        _ => None,
    }
}

/// Runs the subcommand; exit code 1 when the file cannot be read or used.
pub fn run(config: &Config, args: &Args) -> ExitCode {
    match explain(config, args) {
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

fn explain(config: &Config, args: &Args) -> Result<String, String> {
    let bytes = std::fs::read(&args.file).map_err(|e| e.to_string())?;
    let parsed = parse_body(&bytes, content_type_for(&args.file)).map_err(|e| e.to_string())?;
    // The server's own catalog, loaded from the config's seed rows: the same
    // tenant → global → default resolution as a live decision.
    let catalog = Catalog::default();
    catalog.replace(&seed_rows(config, edihub_server::ingest::now()));
    let tenant = args.tenant.as_deref().unwrap_or(GLOBAL_TENANT);
    let configured = |t: &str| catalog.is_configured(tenant, t);
    let total = parsed.documents.len();
    let mut reports = Vec::new();
    let mut text = format!("{}: {:?}, {total} document(s)\n", args.file.display(), parsed.format);
    for (i, doc) in parsed.documents.iter().enumerate() {
        let message_type =
            doc.message_type(args.message_type.as_deref(), &configured).map_err(|e| e.to_string())?;
        let rule = catalog.rule(tenant, &message_type);
        let spec = FingerprintSpec {
            message_type: &message_type,
            key_fields: &rule.key_fields,
            exclude_fields: &rule.exclude_fields,
        };
        let fp = edihub_core::fingerprint(doc, &spec);
        let control = doc.control();
        let field = |f: fn(&edihub_core::ControlRecord) -> &Option<String>| {
            control.and_then(|c| f(c).clone()).unwrap_or_else(|| "-".into())
        };
        text.push_str(&format!("\ndocument {} of {total}\n", i + 1));
        text.push_str(&format!("  message type : {message_type}\n"));
        text.push_str(&format!("  MESTYP       : {}\n", doc.mestyp().unwrap_or("-")));
        text.push_str(&format!("  DOCNUM       : {}\n", doc.docnum().unwrap_or("-")));
        text.push_str(&format!(
            "  sender       : MANDT={} SNDPOR={} SNDPRN={}\n",
            field(|c| &c.mandt),
            field(|c| &c.sndpor),
            field(|c| &c.sndprn)
        ));
        text.push_str(&format!("  window       : {}s\n", rule.window_seconds));
        if fp.key_values.is_empty() {
            text.push_str("  key fields   : none configured (DOCNUM with sender and client)\n");
        }
        for kv in &fp.key_values {
            let shown = if kv.values.is_empty() {
                "missing".to_string()
            } else {
                kv.values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
            };
            text.push_str(&format!("  {:<13}= {shown}\n", kv.path));
        }
        text.push_str(&format!("  basis        : {}\n", serde_json::to_value(fp.basis).unwrap_or_default()));
        text.push_str(&format!(
            "  fingerprint  : {}\n",
            fp.hex.as_deref().unwrap_or("none (not deduplicated)")
        ));
        reports.push(serde_json::json!({
            "message_type": message_type,
            "mestyp": doc.mestyp(),
            "docnum": doc.docnum(),
            "control": control,
            "window_seconds": rule.window_seconds,
            "fingerprint": fp,
        }));
    }
    if args.json {
        return serde_json::to_string_pretty(&reports).map_err(|e| e.to_string());
    }
    Ok(text.trim_end().to_string())
}
