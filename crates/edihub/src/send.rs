//! `edihub send FILE|DIR`: posts files (of a DIR, those that look like a
//! message, see [`files`]) to a hub's receive endpoint, a few at a time,
//! prints one line per file as its answer arrives and a summary at the end;
//! exits 1 when any file failed (HTTP error, connection error, unreadable
//! file), 2 when nothing could be sent (bad URL, missing path).
//!
//! The command needs no configuration file: it talks to a hub over HTTP(S)
//! like any SAP system would. HTTPS uses rustls with the ring provider,
//! trusting the platform's certificate store.

mod files;
mod outcome;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Client, Url};
use tokio::sync::{Semaphore, mpsc};

use files::Item;
use outcome::{FileResult, Tally};

/// The hub's receive endpoint, relative to `--url`.
const RECEIVE_PATH: &str = "/api/edi-hub/receive-message";

/// Arguments of `edihub send`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A file, or a directory whose regular files are sent in name order.
    path: PathBuf,
    /// Base URL of the hub (http or https).
    #[arg(long, env = "EDIHUB_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// Sender API key: sent as `Authorization: Bearer`, or as the Basic password with --basic-user.
    #[arg(long, env = "EDIHUB_KEY", hide_env_values = true)]
    key: String,
    /// Send HTTP Basic credentials (this user, the key as password) instead of Bearer.
    #[arg(long, value_name = "USER")]
    basic_user: Option<String>,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    concurrency: u16,
    /// Of a DIR, send the files whose name matches this glob (`*`, `?`; repeatable)
    /// instead of those that look like XML or JSON.
    #[arg(long, value_name = "GLOB")]
    include: Vec<String>,
    /// Also send the files of subdirectories (names relative to DIR).
    #[arg(long, short = 'r')]
    recursive: bool,
    /// Send each file's name (relative to DIR) as its Idempotency-Key.
    #[arg(long)]
    idempotency_key_from_name: bool,
    /// Message type to send as X-Message-Type instead of letting the hub detect it.
    #[arg(long, value_name = "TYPE")]
    message_type: Option<String>,
    /// Seconds one request may take (connecting, sending, answering).
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
}

/// What every request shares.
struct Sender {
    client: Client,
    endpoint: Url,
    key: String,
    basic_user: Option<String>,
    message_type: Option<String>,
    key_from_name: bool,
    concurrency: usize,
}

/// Runs `edihub send`.
pub async fn run(args: Args) -> ExitCode {
    let (sender, items) = match prepare(args) {
        Ok(ready) => ready,
        Err(e) => {
            eprintln!("edihub send: {e}");
            return ExitCode::from(2);
        }
    };
    if items.is_empty() {
        eprintln!("edihub send: no files to send");
    }
    let tally = send_all(Arc::new(sender), items).await;
    print_line(&tally.summary());
    if let Some(messages) = tally.message_summary() {
        print_line(&messages);
    }
    if tally.failed() == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Checks the arguments, lists the files and builds the HTTP client.
fn prepare(args: Args) -> Result<(Sender, Vec<Item>), String> {
    let base = args.url.trim_end_matches('/');
    let endpoint =
        Url::parse(&format!("{base}{RECEIVE_PATH}")).map_err(|e| format!("--url {}: {e}", args.url))?;
    if !matches!(endpoint.scheme(), "http" | "https") {
        return Err(format!("--url {}: only http and https are supported", args.url));
    }
    if args.key.trim().is_empty() {
        return Err("--key (or EDIHUB_KEY) is empty".into());
    }
    let found =
        files::collect(&args.path, files::Choice { recursive: args.recursive, include: &args.include })?;
    if !found.skipped.is_empty() {
        let why = if args.include.is_empty() {
            "that do not look like XML or JSON (choose with --include GLOB)"
        } else {
            "that match no --include"
        };
        eprintln!("edihub send: skipped {} file(s) {why}: {}", found.skipped.len(), found.skipped.join(", "));
    }
    let items = found.items;
    // reqwest is built with `rustls-no-provider`: choose ring for the process.
    // An error means a provider is already installed, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = Client::builder()
        .user_agent(concat!("edihub-send/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(args.timeout.min(10)))
        .timeout(Duration::from_secs(args.timeout))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", error_chain(&e)))?;
    let sender = Sender {
        client,
        endpoint,
        key: args.key,
        basic_user: args.basic_user,
        message_type: args.message_type,
        key_from_name: args.idempotency_key_from_name,
        concurrency: usize::from(args.concurrency),
    };
    Ok((sender, items))
}

/// Sends every item, at most `sender.concurrency` at a time, starting them in
/// name order (so `--concurrency 1` sends strictly in order), and prints each
/// result as it arrives, above the progress bar.
async fn send_all(sender: Arc<Sender>, items: Vec<Item>) -> Tally {
    let total = items.len();
    let bar = progress_bar(total);
    let (results, mut arrived) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let limit = Arc::new(Semaphore::new(sender.concurrency));
        for item in items {
            // The semaphore is never closed, so acquiring cannot fail.
            let Ok(permit) = Arc::clone(&limit).acquire_owned().await else { return };
            let (sender, results) = (Arc::clone(&sender), results.clone());
            tokio::spawn(async move {
                let result = sender.send(&item).await;
                drop(permit);
                let _ = results.send((item.name, result));
            });
        }
    });
    let mut tally = Tally::default();
    while let Some((name, result)) = arrived.recv().await {
        bar.suspend(|| print_line(&result.line(&name)));
        bar.set_message(name);
        bar.inc(1);
        tally.add(&result);
    }
    bar.finish_and_clear();
    // Only a panicking task loses its result; it still counts.
    for _ in tally.files()..total {
        let lost = FileResult::failed("internal error: the request task ended without a result");
        print_line(&lost.line("?"));
        tally.add(&lost);
    }
    tally
}

/// A bar on stderr, or a hidden one when stderr is not a terminal.
fn progress_bar(len: usize) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} files [{elapsed}] {wide_msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

impl Sender {
    /// Reads and posts one file; every failure becomes a failed result.
    async fn send(&self, item: &Item) -> FileResult {
        let path = item.path.clone();
        let body = match tokio::task::spawn_blocking(move || std::fs::read(path)).await {
            Ok(Ok(body)) => body,
            Ok(Err(e)) => return FileResult::failed(format!("cannot read the file: {e}")),
            Err(e) => return FileResult::failed(format!("cannot read the file: {e}")),
        };
        let mut request =
            self.client.post(self.endpoint.clone()).header(CONTENT_TYPE, item.content_type()).body(body);
        request = match &self.basic_user {
            Some(user) => request.basic_auth(user, Some(&self.key)),
            None => request.bearer_auth(&self.key),
        };
        if let Some(message_type) = &self.message_type {
            request = request.header("x-message-type", message_type);
        }
        if self.key_from_name {
            request = request.header("idempotency-key", &item.name);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return FileResult::failed(format!("error: {}", error_chain(&e.without_url()))),
        };
        let status = response.status().as_u16();
        let replayed = response.headers().get("idempotency-replayed").is_some_and(|v| v == "true");
        match response.bytes().await {
            Ok(body) => outcome::classify(status, replayed, &body),
            Err(e) => FileResult::failed(format!("{status} reading the answer failed: {}", error_chain(&e))),
        }
    }
}

/// Prints a line on stdout; a closed pipe (`edihub send … | head`) is not
/// worth a panic, and the exit code still tells how the run went.
fn print_line(line: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// An error with its sources: reqwest's own message alone hides the cause
/// ("error sending request"), the chain names it ("Connection refused").
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
