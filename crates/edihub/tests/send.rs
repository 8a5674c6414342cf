//! `edihub send` end to end: the real hub (config from TOML, SQLite in a
//! temporary directory, the real router) serves a port-0 listener in this
//! process, and the built `edihub` binary posts fixture files to it. The
//! tests check the exact summary, the per-file lines, the exit code and what
//! the hub stored.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use edihub_server::{AppState, Config};
use edihub_store::Scope;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Sender key of acme/prod (`on_key_reuse = "reject"`).
const PROD_KEY: &str = "send-test-prod-key";
/// Sender key of acme/qa (`on_key_reuse = "replay"`).
const QA_KEY: &str = "send-test-qa-key";

/// A hub serving on 127.0.0.1, with its database in `dir`.
struct Hub {
    url: String,
    state: AppState,
    dir: PathBuf,
    shutdown: CancellationToken,
    tasks: TaskTracker,
    server: tokio::task::JoinHandle<()>,
}

fn sha256_hex(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

impl Hub {
    async fn start() -> Hub {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("send-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let toml = format!(
            r#"
listen = "127.0.0.1:0"
database_url = "sqlite://{db}"

[admin]
token_sha256 = "{admin}"

[[tenants]]
id = "acme"
  [[tenants.environments]]
  id = "prod"
  api_keys_sha256 = ["{prod}"]
  on_key_reuse = "reject"

  [[tenants.environments]]
  id = "qa"
  api_keys_sha256 = ["{qa}"]
  on_key_reuse = "replay"

[[message_types]]
id = "ORDERS05"
duplicate_key_fields = ["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"]
duplicate_window_hours = 168
"#,
            db = dir.join("edihub.db").display(),
            admin = sha256_hex("send-test-admin"),
            prod = sha256_hex(PROD_KEY),
            qa = sha256_hex(QA_KEY),
        );
        let config = Config::from_toml(&toml).expect("valid test config");
        let state = edihub_server::prepare(config).await.expect("hub starts");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (shutdown, tasks) = (CancellationToken::new(), TaskTracker::new());
        let server = tokio::spawn({
            let (state, shutdown, tasks) = (state.clone(), shutdown.clone(), tasks.clone());
            async move { edihub_server::serve(listener, state, shutdown, &tasks).await.expect("hub serves") }
        });
        Hub { url, state, dir, shutdown, tasks, server }
    }

    /// A fresh directory under the hub's temporary directory.
    fn files_dir(&self, name: &str, files: &[(&str, Vec<u8>)]) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::create_dir_all(&path).unwrap();
        for (file, bytes) in files {
            std::fs::write(path.join(file), bytes).unwrap();
        }
        path
    }

    async fn count(&self, environment: &str) -> i64 {
        self.state.store.count_messages(&Scope::new("acme", environment)).await.unwrap()
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.server.await.unwrap();
        self.tasks.close();
        self.tasks.wait().await;
        self.state.store.close().await;
        std::fs::remove_dir_all(&self.dir).unwrap();
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/idoc").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// Runs `edihub send ARGS…` off the runtime's worker threads; returns the
/// output with stdout as text.
async fn send(args: &[&str]) -> (Output, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_edihub"));
    cmd.arg("send").args(args);
    // Talk to the hub directly, whatever the test environment's proxies are.
    for var in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "EDIHUB_URL", "EDIHUB_KEY"] {
        cmd.env_remove(var);
    }
    let output = tokio::task::spawn_blocking(move || cmd.output()).await.unwrap().expect("edihub runs");
    let stdout = String::from_utf8(output.stdout.clone()).expect("UTF-8 output");
    (output, stdout)
}

/// The last `n` lines of `stdout`.
fn tail(stdout: &str, n: usize) -> Vec<&str> {
    let lines: Vec<&str> = stdout.lines().collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_a_directory_then_reports_everything_as_duplicate() {
    let hub = Hub::start().await;
    let valid = [
        ("orders05.xml", fixture("orders05.xml")),
        ("orders05.json", fixture("orders05.json")),
        ("packet-3.xml", fixture("packet-3.xml")),
    ];
    let dir = hub.files_dir("drop", &valid);
    std::fs::write(dir.join("broken.xml"), b"<ORDERS05><IDOC BEGIN=\"1\"><EDI_DC40").unwrap();
    let dir_arg = dir.to_str().unwrap();

    let (out, stdout) = send(&[dir_arg, "--url", &hub.url, "--key", PROD_KEY]).await;
    assert_eq!(out.status.code(), Some(1), "a failed file fails the run:\n{stdout}");
    assert_eq!(
        tail(&stdout, 2),
        [
            "4 files: 2 accepted, 1 duplicate, 1 failed",
            "messages (packet IDocs counted one by one): 4 accepted, 1 duplicate",
        ],
        "{stdout}"
    );
    assert_eq!(stdout.lines().count(), 6, "one line per file and the summary:\n{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("failed    broken.xml  400 ")), "{stdout}");
    assert!(stdout.contains("accepted  packet-3.xml  packet of 3: 3 accepted, 0 duplicate"), "{stdout}");
    // The XML and the JSON file are the same IDoc: whichever the hub took first is the original.
    let same: Vec<&str> = stdout.lines().filter(|l| l.contains(" orders05.")).collect();
    assert_eq!(same.len(), 2, "{stdout}");
    assert!(same.iter().any(|l| l.starts_with("accepted ") && l.contains("docnum=0000000000004711")));
    assert!(same.iter().any(|l| l.starts_with("duplicate ") && l.ends_with("(detected_by=fingerprint)")));
    assert_eq!(hub.count("prod").await, 4, "one order and three packet IDocs");

    std::fs::remove_file(dir.join("broken.xml")).unwrap();
    let (out, stdout) = send(&[dir_arg, "--url", &hub.url, "--key", PROD_KEY, "--concurrency", "2"]).await;
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(
        tail(&stdout, 2),
        [
            "3 files: 0 accepted, 3 duplicate, 0 failed",
            "messages (packet IDocs counted one by one): 0 accepted, 5 duplicate",
        ]
    );
    assert!(stdout.contains("duplicate packet-3.xml  packet of 3: 0 accepted, 3 duplicate"), "{stdout}");
    assert_eq!(hub.count("prod").await, 4, "nothing new stored");
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_auth_and_idempotency_key_from_the_name_replay() {
    let hub = Hub::start().await;
    let dir = hub.files_dir("single", &[("orders05.xml", fixture("orders05.xml"))]);
    let file = dir.join("orders05.xml");
    let args = [
        file.to_str().unwrap(),
        "--url",
        &hub.url,
        "--key",
        QA_KEY,
        "--basic-user",
        "sap",
        "--idempotency-key-from-name",
    ];

    let (out, stdout) = send(&args).await;
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.starts_with("accepted  orders05.xml  id="), "{stdout}");
    assert_eq!(tail(&stdout, 1), ["1 files: 1 accepted, 0 duplicate, 0 failed"]);

    let (out, stdout) = send(&args).await;
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.starts_with("replayed  orders05.xml  id="), "{stdout}");
    assert!(stdout.contains("(Idempotency-Replayed, first accepted)"), "{stdout}");
    assert_eq!(tail(&stdout, 1), ["1 files: 0 accepted, 1 duplicate (1 replayed), 0 failed"]);
    assert_eq!(hub.count("qa").await, 1);
    assert_eq!(hub.count("prod").await, 0, "the key chose the environment");
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_key_and_unreachable_hub_fail_with_exit_code_1() {
    let hub = Hub::start().await;
    let dir = hub.files_dir("one", &[("orders05.idoc", fixture("orders05.xml"))]);
    let dir_arg = dir.to_str().unwrap();

    let (out, stdout) = send(&[dir_arg, "--url", &hub.url, "--key", "not-a-key"]).await;
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.starts_with("failed    orders05.idoc  401 "), "{stdout}");
    assert_eq!(tail(&stdout, 1), ["1 files: 0 accepted, 0 duplicate, 1 failed"]);

    // A port nobody listens on any more.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (out, stdout) = send(&[dir_arg, "--url", &url, "--key", PROD_KEY]).await;
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.starts_with("failed    orders05.idoc  error: "), "{stdout}");
    assert_eq!(tail(&stdout, 1), ["1 files: 0 accepted, 0 duplicate, 1 failed"]);

    let (out, _) = send(&["/no/such/path", "--url", &hub.url, "--key", PROD_KEY]).await;
    assert_eq!(out.status.code(), Some(2), "nothing to send is a usage error");
    assert_eq!(hub.count("prod").await, 0);
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_sends_only_what_looks_like_a_message_and_names_the_rest() {
    let hub = Hub::start().await;
    // The repository's own fixture directory holds a README and a script next to the IDocs.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/idoc");
    let (out, stdout) = send(&[fixtures.to_str().unwrap(), "--url", &hub.url, "--key", PROD_KEY]).await;
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("skipped 2 file(s) that do not look like XML or JSON (choose with --include GLOB): README.md, make_fixtures.py"),
        "{stderr}"
    );
    assert!(!stdout.contains("README.md") && !stdout.contains("make_fixtures.py"), "{stdout}");
    assert!(tail(&stdout, 2)[0].starts_with("9 files: "), "{stdout}");

    // --include chooses by name: only the README, which the hub refuses.
    let (out, stdout) =
        send(&[fixtures.to_str().unwrap(), "--url", &hub.url, "--key", PROD_KEY, "--include", "*.md"]).await;
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.starts_with("failed    README.md  415 "), "{stdout}");
    assert_eq!(tail(&stdout, 1), ["1 files: 0 accepted, 0 duplicate, 1 failed"]);
    assert!(stderr.contains("skipped 10 file(s) that match no --include"), "{stderr}");
    hub.stop().await;
}
