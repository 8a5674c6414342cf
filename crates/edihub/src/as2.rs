//! `edihub as2 send FILE --partner ID`: sends one file to a trading partner
//! over AS2 with the configuration's station and partner profile (signed,
//! encrypted, compressed as the profile says), and reports the partner's
//! MDN: whether it confirms the message with the MIC of what was sent. It
//! tests a partner link before real traffic flows over it.
//!
//! Exit codes: 0 when a synchronous MDN confirms the message (or, for a
//! partner with `mdn = "async"`, when the partner took the request: its
//! MDN goes to the station's `async_mdn_url`); 1 when it does not (a
//! negative MDN, another MIC, no MDN, no answer); 2 when nothing could be
//! sent (an unknown partner, a partner without `url`, an unreadable file).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use edihub_server::Config;
use edihub_server::as2::Registry;
use edihub_server::as2::id::As2Id;
use edihub_server::as2::outbound::Payload;
use edihub_server::as2::partner::PartnerProfile;
use edihub_server::as2::send::{SendOutcome, send};

/// `edihub as2 …`.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Send a file to a partner over AS2 and report its MDN.
    Send(SendArgs),
}

/// Arguments of `edihub as2 send`.
#[derive(Debug, clap::Args)]
pub struct SendArgs {
    /// The file to send, as it is (an X12 or EDIFACT interchange, an IDoc, …).
    file: PathBuf,
    /// The partner's AS2 id (`as2.partners[].as2_id`).
    #[arg(long)]
    partner: String,
    /// The station to send from, when the partner id is configured for several.
    #[arg(long)]
    station: Option<String>,
    /// The payload's Content-Type.
    #[arg(long, default_value = "application/edi-x12")]
    content_type: String,
    /// The Subject header (default: the file's name).
    #[arg(long)]
    subject: Option<String>,
    /// Seconds to wait for the partner's answer.
    #[arg(long, default_value_t = 60)]
    timeout_secs: u64,
}

/// Runs `edihub as2 <command>`.
pub async fn run(config: &Config, command: Command) -> ExitCode {
    match command {
        Command::Send(args) => match send_file(config, &args).await {
            Ok(code) => code,
            Err(e) => {
                eprintln!("edihub: {e}");
                ExitCode::from(2)
            }
        },
    }
}

async fn send_file(config: &Config, args: &SendArgs) -> Result<ExitCode, String> {
    let registry = Registry::from_config(config).map_err(|e| format!("invalid configuration: {e}"))?;
    let partner = find_partner(&registry, &args.partner, args.station.as_deref())?;
    let station = registry.station(&partner.station).ok_or("the partner's station is not configured")?;
    let bytes = std::fs::read(&args.file).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let name = args.file.file_name().map(|n| n.to_string_lossy().into_owned());
    let subject = args.subject.clone().or_else(|| name.clone()).unwrap_or_else(|| "EDI".into());
    let payload = Payload {
        bytes: &bytes,
        content_type: &args.content_type,
        filename: name.as_deref(),
        subject: &subject,
    };
    let client =
        edihub_server::delivery::client(edihub_server::delivery::AddressPolicy::of(&config.delivery))
            .map_err(|e| format!("HTTP client: {e}"))?;
    let timeout = Duration::from_secs(args.timeout_secs);
    let sent = send(&client, &payload, station, partner, timeout).await.map_err(|e| e.to_string())?;
    println!(
        "sent {} ({} bytes) from {} to {} at {}",
        args.file.display(),
        bytes.len(),
        station.as2_id,
        partner.as2_id,
        partner.url.as_deref().unwrap_or_default()
    );
    println!("  Message-ID : {}", sent.message.message_id);
    println!("  MIC        : {}", sent.message.mic);
    Ok(report(&sent.outcome, station.async_mdn_url.as_deref()))
}

/// The partner `id`, of `station` when given; an id configured for
/// several stations needs `--station`.
fn find_partner<'a>(
    registry: &'a Registry,
    id: &str,
    station: Option<&str>,
) -> Result<&'a PartnerProfile, String> {
    let id = As2Id::new(id).map_err(|r| format!("--partner: {r}"))?;
    let station = station.map(As2Id::new).transpose().map_err(|r| format!("--station: {r}"))?;
    let matching: Vec<&PartnerProfile> = registry
        .partners()
        .filter(|p| p.as2_id == id && station.as_ref().is_none_or(|s| &p.station == s))
        .collect();
    match matching.as_slice() {
        [one] => Ok(one),
        [] => Err(format!("no partner `{id}` in the configuration's as2.partners")),
        _ => Err(format!("partner `{id}` is configured for several stations: choose one with --station")),
    }
}

/// Prints what the partner answered; the exit code.
fn report(outcome: &SendOutcome, async_mdn_url: Option<&str>) -> ExitCode {
    match outcome {
        SendOutcome::Confirmed(mdn) => {
            println!("confirmed: {} (MIC matches)", mdn.disposition);
            if let Some(algorithm) = mdn.signed {
                println!("  MDN signature verified ({algorithm})");
            }
            ExitCode::SUCCESS
        }
        SendOutcome::AwaitingMdn { status } => {
            println!(
                "accepted with HTTP {status}; the partner posts its MDN to {}",
                async_mdn_url.unwrap_or("the station's async_mdn_url")
            );
            ExitCode::SUCCESS
        }
        SendOutcome::Unconfirmed(mdn, reason) => {
            println!("not confirmed: {reason} (disposition: {})", mdn.disposition);
            ExitCode::FAILURE
        }
        SendOutcome::NotAnMdn { status, detail } => {
            println!("not confirmed: HTTP {status} without a readable MDN: {detail}");
            ExitCode::FAILURE
        }
        SendOutcome::NoAnswer(reason) => {
            println!("not confirmed: no answer: {reason}");
            ExitCode::FAILURE
        }
    }
}
