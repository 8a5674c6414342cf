//! `edihub`: the EDI message ingestion hub.
//!
//! A thin shell: it parses the command line, loads and validates the
//! configuration, wires signals to a shutdown token and hands over to the
//! `edihub-server` library. Everything testable lives in the libraries.
//!
//! # Layout
//!
//! - `main.rs`: the subcommands (`serve`, `migrate`, `check-config`,
//!   `fingerprint`, `send`, `listen`, `as2 send`), signals, exit codes.
//! - `config_file.rs`: where the configuration comes from (file, `EDIHUB_*`
//!   environment) and what is logged about it.
//! - `explain.rs`: `edihub fingerprint FILE`, why a message was or would be
//!   blocked.
//! - `send.rs`, `send/`: `edihub send FILE|DIR`, posting files to a hub with
//!   a progress bar.
//! - `listen.rs`: `edihub listen`, a tiny webhook receiver that prints (and
//!   verifies) deliveries: the demo destination.
//! - `as2.rs`: `edihub as2 send FILE --partner ID`, one AS2 message to a
//!   trading partner and its MDN judged, to test a partner link.

mod as2;
mod config_file;
mod explain;
mod listen;
mod send;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use edihub_server::config::{LogFormat, redact_url};
use edihub_server::{Config, SecretSource, StartError};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// mimalloc instead of glibc's allocator: parsing allocates many small
/// strings and maps per message, and glibc keeps freed memory in per-thread
/// arenas. Measured in BENCHMARKS.md: faster parsing and a lower peak RSS
/// under large IDocs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// EDI message ingestion hub: stores every business message exactly once.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Configuration file (TOML).
    #[arg(long, global = true, env = "EDIHUB_CONFIG", default_value = "config/edihub.toml")]
    config: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the HTTP API until SIGINT or SIGTERM.
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Validate the configuration and exit (non-zero when invalid).
    CheckConfig,
    /// Explain how a file would be deduplicated: type, MESTYP, DOCNUM, key values, fingerprint.
    Fingerprint(explain::Args),
    /// Post files (or a directory of files) to a hub, with a progress bar and a summary.
    Send(send::Args),
    /// Receive deliveries: print each one's webhook-id and body (verifying its signature when given the secret).
    Listen(listen::Args),
    /// AS2 with trading partners: `as2 send FILE --partner ID` tests a partner link.
    #[command(subcommand)]
    As2(as2::Command),
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("EDIHUB_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only for a person at a terminal, never in a file or a pipe.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_ansi(ansi);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // A client of a hub, and a receiver of its deliveries: need no configuration file.
    if let Command::Send(args) = cli.command {
        return send::run(args).await;
    }
    if let Command::Listen(args) = cli.command {
        let shutdown = CancellationToken::new();
        tokio::spawn(wait_for_signal(shutdown.clone()));
        return listen::run(args, shutdown).await;
    }
    if let Err(e) = config_file::check_exists(&cli.config, matches.value_source("config")) {
        eprintln!("edihub: {e}");
        return ExitCode::from(2);
    }
    // Only commands that verify signatures need the webhook secrets.
    let secrets = match cli.command {
        Command::Fingerprint(_) => SecretSource::Unread,
        _ => SecretSource::Environment,
    };
    let config = match Config::load_with_secrets(Some(&cli.config), secrets) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("edihub: invalid configuration: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::CheckConfig => {
            for name in &config.load_notes.ignored_env {
                eprintln!(
                    "edihub: warning: ignoring unknown environment variable {name} (not a configuration key)"
                );
            }
            let envs: usize = config.tenants.iter().map(|t| t.environments.len()).sum();
            println!(
                "configuration OK: {} tenant(s), {envs} environment(s), {} message type(s), database {} (from {})",
                config.tenants.len(),
                config.message_types.len(),
                redact_url(&config.database_url),
                config.load_notes.database_url_source,
            );
            Ok(())
        }
        Command::Fingerprint(args) => return explain::run(&config, &cli.config, &args).await,
        Command::As2(command) => return as2::run(&config, command).await,
        Command::Migrate => migrate(config).await,
        Command::Serve => serve(config).await,
        Command::Send(_) | Command::Listen(_) => unreachable!("handled before loading the configuration"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("edihub: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Logs what loading the configuration noticed: one warning per ignored
/// `EDIHUB_*` variable, and the database in use with where its URL came from.
fn log_load_notes(config: &Config) {
    for name in &config.load_notes.ignored_env {
        tracing::warn!(variable = %name, "unknown EDIHUB_* environment variable ignored (not a configuration key)");
    }
    tracing::info!(
        database = %redact_url(&config.database_url),
        source = %config.load_notes.database_url_source,
        "database"
    );
}

async fn migrate(config: Config) -> Result<(), StartError> {
    init_logging(config.log_format);
    log_load_notes(&config);
    let store = edihub_store::connect(&config.database_url, &edihub_server::pool_settings(&config)).await?;
    store.migrate().await?;
    tracing::info!(backend = store.backend(), "migrations applied");
    store.close().await;
    Ok(())
}

async fn serve(config: Config) -> Result<(), StartError> {
    init_logging(config.log_format);
    log_load_notes(&config);
    let listener = edihub_server::serve::bind(&config.listen).await?;
    let state = edihub_server::prepare(config).await?;
    let shutdown = CancellationToken::new();
    let tasks = TaskTracker::new();
    tokio::spawn(wait_for_signal(shutdown.clone()));
    tracing::info!(
        listen = %listener.local_addr()?,
        database = state.store.backend(),
        "edihub serving"
    );
    let store = state.store.clone();
    edihub_server::serve(listener, state, shutdown.clone(), &tasks).await?;
    shutdown.cancel();
    tasks.close();
    tasks.wait().await;
    store.close().await;
    tracing::info!("edihub stopped");
    Ok(())
}

/// Cancels `shutdown` on SIGINT or SIGTERM.
async fn wait_for_signal(shutdown: CancellationToken) {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutdown requested; finishing in-flight requests");
    shutdown.cancel();
}
