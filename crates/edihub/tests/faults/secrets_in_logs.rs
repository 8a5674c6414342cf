//! Security review, end to end: no secret ever reaches edihub's output. The
//! real binary runs at `EDIHUB_LOG=debug` on PostgreSQL with a password in
//! its database URL and an HMAC-signed webhook integration; it is sent right
//! and wrong sender keys (Bearer and Basic), right and wrong admin tokens,
//! right and wrong signatures, and is stopped with SIGTERM. Its log, and the
//! output of `check-config` and `migrate` (also with a plaintext key where a
//! digest belongs), must contain none of the secrets or attempted secrets.

use std::process::Command;
use std::time::Duration;

use edihub_store::testing::{Backend, TestDb};
use sha2::{Digest, Sha256};

use crate::support::hub::{ADMIN_TOKEN, sha256_hex};
use crate::support::*;

const WEBHOOK_SECRET: &str = "whk-secret-value-7h2m";
const WRONG_KEY: &str = "wrong-sender-key-attempt-5q1";
const WRONG_ADMIN: &str = "wrong-admin-token-attempt-8z4";
const PLAINTEXT_KEY: &str = "plaintext-key-in-config-3c9";

/// HMAC-SHA256 (RFC 2104), hex.
fn hmac_hex(key: &[u8], msg: &[u8]) -> String {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |b: u8| k.iter().map(|x| x ^ b).collect::<Vec<u8>>();
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(msg).finalize();
    hex::encode(Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize())
}

/// The URL with a password (PostgreSQL's trust authentication ignores it), and that password.
fn with_password(url: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = url.split_once("://") else { return (url.to_string(), None) };
    let Some((userinfo, host)) = rest.split_once('@') else { return (url.to_string(), None) };
    match userinfo.split_once(':') {
        Some((_, pw)) => (url.to_string(), Some(pw.to_string())),
        None => {
            (format!("{scheme}://{userinfo}:pg-s3cret-pw-4k7@{host}"), Some("pg-s3cret-pw-4k7".to_string()))
        }
    }
}

fn basic(user: &str, password: &str) -> String {
    // Base64 without a dependency: enough for the test's ASCII credentials.
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let input = format!("{user}:{password}").into_bytes();
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    format!("Basic {out}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn secrets_never_reach_logs_or_output() {
    let _serial = serial().await;
    let dir = TempDir::new("secrets");
    let db = TestDb::new(Backend::Postgres).await;
    let (url, db_password) = with_password(&db.url);
    let mut config = HubConfig::new(&url);
    config.extra_toml = r#"
[[message_types]]
id = "shop.order"
duplicate_key_fields = ["$.id"]

[[integrations]]
id = "signed"
tenant = "acme"
environment = "prod"
message_type = "shop.order"
event_id = { header = "X-Event-Id" }
signature = { scheme = "hmac", secret_env = "LOGTEST_SECRET", header = "X-Sig", encoding = "hex" }
"#
    .to_string();
    config.env =
        vec![("LOGTEST_SECRET".into(), WEBHOOK_SECRET.into()), ("EDIHUB_LOG".into(), "debug".into())];
    let mut hub = Hub::start(&dir.0, "hub", config.clone()).await;
    let http = client(Duration::from_secs(10));
    let receive = format!("{}/api/edi-hub/receive-message", hub.url);
    let mut rng = Rng::from_env("secrets");
    let docs = make_docs(&mut rng, 4, false, 100);
    let mut statuses = Vec::new();
    for (i, auth) in [
        format!("Bearer {PROD_KEY}"),
        basic("sap", PROD_KEY),
        format!("Bearer {WRONG_KEY}"),
        basic("sap", WRONG_KEY),
        format!("Bearer {ADMIN_TOKEN}"),
    ]
    .iter()
    .enumerate()
    {
        let res = http
            .post(&receive)
            .header("authorization", auth)
            .header("content-type", "application/xml")
            .header("idempotency-key", docs[i % docs.len()].key.clone().unwrap_or_default())
            .body(docs[i % docs.len()].body.clone())
            .send()
            .await
            .expect("receive");
        statuses.push(res.status().as_u16());
    }
    for auth in [
        format!("Bearer {ADMIN_TOKEN}"),
        basic("admin", ADMIN_TOKEN),
        format!("Bearer {WRONG_ADMIN}"),
        format!("Bearer {PROD_KEY}"),
    ] {
        let res = http
            .get(format!("{}/admin/audit", hub.url))
            .header("authorization", auth)
            .send()
            .await
            .expect("audit");
        statuses.push(res.status().as_u16());
    }
    let body = r#"{"id":"evt-1","total":1}"#;
    for sig in
        [hmac_hex(WEBHOOK_SECRET.as_bytes(), body.as_bytes()), hmac_hex(b"not-the-secret", body.as_bytes())]
    {
        let res = http
            .post(format!("{}/api/webhook/signed", hub.url))
            .header("content-type", "application/json")
            .header("x-event-id", "evt-1")
            .header("x-sig", sig)
            .body(body)
            .send()
            .await
            .expect("webhook");
        statuses.push(res.status().as_u16());
    }
    assert_eq!(
        statuses,
        [202, 202, 401, 401, 401, 200, 200, 401, 401, 202, 401],
        "the requests did what they should"
    );
    hub.terminate();
    assert!(hub.wait_exit(Duration::from_secs(20)).await.is_some_and(|s| s.success()));

    // The other subcommands, on the same config, and on one with a plaintext key.
    let config_path = hub.write_config("127.0.0.1:0");
    let run = |args: &[&str], path: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_edihub"))
            .arg("--config")
            .arg(path)
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LOGTEST_SECRET", WEBHOOK_SECRET)
            .env("EDIHUB_LOG", "debug")
            .output()
            .expect("edihub runs");
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let check = run(&["check-config"], &config_path);
    assert!(check.contains("configuration OK"), "{check}");
    let migrate = run(&["migrate"], &config_path);
    let plaintext = dir.join("plaintext.toml");
    std::fs::write(
        &plaintext,
        std::fs::read_to_string(&config_path).unwrap().replace(&sha256_hex(PROD_KEY), PLAINTEXT_KEY),
    )
    .unwrap();
    let refused = run(&["check-config"], &plaintext);
    assert!(refused.contains("api_keys_sha256"), "{refused}");

    let log = hub.log();
    let debug_lines = log.lines().filter(|l| l.contains("\"level\":\"DEBUG\"")).count();
    result_line(
        "secrets",
        &format!(
            "{} log lines ({debug_lines} debug), check-config/migrate output checked; database password tested: {}",
            log.lines().count(),
            db_password.is_some()
        ),
    );
    let mut secrets = vec![
        PROD_KEY.to_string(),
        ADMIN_TOKEN.to_string(),
        WRONG_KEY.to_string(),
        WRONG_ADMIN.to_string(),
        WEBHOOK_SECRET.to_string(),
        PLAINTEXT_KEY.to_string(),
        basic("sap", PROD_KEY).trim_start_matches("Basic ").to_string(),
        basic("admin", ADMIN_TOKEN).trim_start_matches("Basic ").to_string(),
    ];
    secrets.extend(db_password);
    for (what, text) in [
        ("log", &log),
        ("check-config", &check),
        ("migrate", &migrate),
        ("check-config (plaintext key)", &refused),
    ] {
        for s in &secrets {
            assert!(!text.contains(s.as_str()), "{what} contains the secret {s:?}");
        }
    }
}
