//! The real `edihub` binary as a child process: a TOML config written per
//! test, logs (JSON lines) captured in a file that survives restarts, and
//! SIGKILL / SIGTERM on demand.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Admin token of every fault-test hub.
pub const ADMIN_TOKEN: &str = "faults-admin-token";
/// Sender key of acme/prod (`on_key_reuse = "reject"`).
pub const PROD_KEY: &str = "faults-acme-prod-key";
/// Sender key of globex/prod.
pub const GLOBEX_KEY: &str = "faults-globex-prod-key";

/// SHA-256 hex of a secret, as the config stores it.
pub fn sha256_hex(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A fresh directory under the target's temp dir (removed by [`TempDir`]'s drop).
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `CARGO_TARGET_TMPDIR/faults-<name>-<uuid>`.
    pub fn new(name: &str) -> TempDir {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("faults-{name}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    /// A path inside.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Keep the logs and databases of a failed run for the post-mortem.
            eprintln!("fault test failed; its files are kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// What varies between the hubs of the fault tests.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// `sqlite://…` or `postgres://…`.
    pub database_url: String,
    /// `request_timeout_secs`.
    pub request_timeout_secs: u64,
    /// `database_acquire_timeout_secs`.
    pub acquire_timeout_secs: u64,
    /// `database_max_connections`.
    pub max_connections: u32,
    /// `max_connections` (client connections); `None` = edihub's default.
    pub max_client_connections: Option<usize>,
    /// `max_connections_per_address`; `None` = edihub's default.
    pub max_connections_per_address: Option<usize>,
    /// `header_read_timeout_secs`; `None` = edihub's default.
    pub header_read_timeout_secs: Option<u64>,
    /// `shutdown_grace_secs`; `None` = edihub's default.
    pub shutdown_grace_secs: Option<u64>,
    /// `database_pooler` (`"transaction"` behind PgBouncer); `None` = edihub's default.
    pub database_pooler: Option<String>,
    /// TOML appended to the file (integrations, …).
    pub extra_toml: String,
    /// Environment variables of the process (integration secrets, log level).
    pub env: Vec<(String, String)>,
}

impl HubConfig {
    /// Defaults for `database_url`.
    pub fn new(database_url: &str) -> HubConfig {
        HubConfig {
            database_url: database_url.to_string(),
            request_timeout_secs: 10,
            acquire_timeout_secs: 2,
            max_connections: 16,
            max_client_connections: None,
            max_connections_per_address: None,
            header_read_timeout_secs: None,
            shutdown_grace_secs: None,
            database_pooler: None,
            extra_toml: String::new(),
            env: Vec::new(),
        }
    }

    fn toml(&self, listen: &str) -> String {
        let mut optional = String::new();
        if let Some(n) = self.max_client_connections {
            optional.push_str(&format!("max_connections = {n}\n"));
        }
        if let Some(n) = self.max_connections_per_address {
            optional.push_str(&format!("max_connections_per_address = {n}\n"));
        }
        if let Some(n) = self.header_read_timeout_secs {
            optional.push_str(&format!("header_read_timeout_secs = {n}\n"));
        }
        if let Some(n) = self.shutdown_grace_secs {
            optional.push_str(&format!("shutdown_grace_secs = {n}\n"));
        }
        if let Some(p) = &self.database_pooler {
            optional.push_str(&format!("database_pooler = \"{p}\"\n"));
        }
        format!(
            r#"
listen = "{listen}"
database_url = "{url}"
log_format = "json"
request_timeout_secs = {timeout}
database_acquire_timeout_secs = {acquire}
database_max_connections = {max_conn}
catalog_refresh_secs = 3600
{optional}

[retention]
interval_secs = 3600

[admin]
token_sha256 = "{admin}"

[[tenants]]
id = "acme"
  [[tenants.environments]]
  id = "prod"
  api_keys_sha256 = ["{prod}"]
  on_key_reuse = "reject"

[[tenants]]
id = "globex"
  [[tenants.environments]]
  id = "prod"
  api_keys_sha256 = ["{globex}"]

[[message_types]]
id = "ORDERS05"
duplicate_key_fields = ["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"]
duplicate_window_hours = 168
{extra}
"#,
            extra = self.extra_toml,
            url = self.database_url,
            timeout = self.request_timeout_secs,
            acquire = self.acquire_timeout_secs,
            max_conn = self.max_connections,
            admin = sha256_hex(ADMIN_TOKEN),
            prod = sha256_hex(PROD_KEY),
            globex = sha256_hex(GLOBEX_KEY),
        )
    }
}

/// One `edihub serve` process (restartable on the same port).
#[derive(Debug)]
pub struct Hub {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The port, kept across restarts.
    pub port: u16,
    name: String,
    config: HubConfig,
    dir: PathBuf,
    child: Option<Child>,
    /// Wrap the binary in `prlimit --nofile=N:N` (F5's descriptor exhaustion).
    nofile: Option<u64>,
    /// How many times this hub was started.
    pub starts: u32,
}

impl Hub {
    /// Starts `edihub serve` with `config`, logging to `<dir>/<name>.log`, and
    /// waits until `/healthz` answers.
    pub async fn start(dir: &Path, name: &str, config: HubConfig) -> Hub {
        Self::start_limited(dir, name, config, None).await
    }

    /// Like [`Hub::start`], with the process's open-file limit set to `nofile`.
    pub async fn start_limited(dir: &Path, name: &str, config: HubConfig, nofile: Option<u64>) -> Hub {
        let mut hub = Hub {
            url: String::new(),
            port: 0,
            name: name.to_string(),
            config,
            dir: dir.to_path_buf(),
            child: None,
            nofile,
            starts: 0,
        };
        hub.spawn();
        // Port 0 on the first start: the hub logs the port it got.
        let port = hub.wait_for_listen_line(Duration::from_secs(60)).await;
        hub.port = port;
        hub.url = format!("http://127.0.0.1:{port}");
        hub.wait_healthy(Duration::from_secs(30)).await;
        hub
    }

    /// The log file (JSON lines of every start of this hub).
    pub fn log_path(&self) -> PathBuf {
        self.dir.join(format!("{}.log", self.name))
    }

    /// The whole log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Log lines whose message (the `fields.message` member) equals `message`.
    pub fn log_lines_with(&self, message: &str) -> Vec<serde_json::Value> {
        self.log()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["fields"]["message"] == message)
            .collect()
    }

    /// The process id of the running child.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("hub running").id()
    }

    /// Writes the config file (listening on `listen`) and returns its path.
    pub fn write_config(&self, listen: &str) -> PathBuf {
        let config_path = self.dir.join(format!("{}.toml", self.name));
        std::fs::write(&config_path, self.config.toml(listen)).expect("write config");
        config_path
    }

    fn spawn(&mut self) {
        let listen =
            if self.port == 0 { "127.0.0.1:0".to_string() } else { format!("127.0.0.1:{}", self.port) };
        let config_path = self.write_config(&listen);
        let log: File =
            OpenOptions::new().create(true).append(true).open(self.log_path()).expect("open hub log");
        let bin = env!("CARGO_BIN_EXE_edihub");
        let mut cmd = match self.nofile {
            Some(n) => {
                let mut c = Command::new("prlimit");
                c.arg(format!("--nofile={n}:{n}")).arg("--").arg(bin);
                c
            }
            None => Command::new(bin),
        };
        cmd.arg("--config").arg(&config_path).arg("serve");
        // Nothing from the test environment (DATABASE_URL, EDIHUB_*, proxies) leaks in.
        cmd.env_clear();
        cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd.env("EDIHUB_LOG", "info");
        cmd.env("RUST_BACKTRACE", "1");
        for (k, v) in &self.config.env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null());
        cmd.stdout(log.try_clone().expect("log fd"));
        cmd.stderr(log);
        self.child = Some(cmd.spawn().expect("spawn edihub"));
        self.starts += 1;
    }

    async fn wait_for_listen_line(&mut self, limit: Duration) -> u16 {
        let start = Instant::now();
        loop {
            for line in self.log_lines_with("edihub serving") {
                if let Some(port) = line["fields"]["listen"].as_str().and_then(|a| a.rsplit(':').next())
                    && let Ok(p) = port.parse::<u16>()
                {
                    return p;
                }
            }
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("edihub exited at start ({status}):\n{}", self.log());
            }
            assert!(start.elapsed() < limit, "edihub did not start within {limit:?}:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Polls `/healthz` until it answers 200.
    pub async fn wait_healthy(&mut self, limit: Duration) {
        let client = super::client(Duration::from_secs(2));
        let start = Instant::now();
        loop {
            if let Ok(res) = client.get(format!("{}/healthz", self.url)).send().await
                && res.status().as_u16() == 200
            {
                return;
            }
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("edihub exited ({status}):\n{}", self.log());
            }
            assert!(start.elapsed() < limit, "edihub not healthy within {limit:?}:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL, and reap the process.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Points the next (re)start at another database (a promoted standby).
    pub fn set_database_url(&mut self, url: &str) {
        self.config.database_url = url.to_string();
    }

    /// Starts the process again on the same port and waits until it is healthy.
    pub async fn restart(&mut self) {
        assert!(self.child.is_none(), "restart of a running hub");
        self.spawn();
        self.wait_healthy(Duration::from_secs(60)).await;
    }

    /// Sends SIGTERM (graceful shutdown).
    pub fn terminate(&self) {
        let status =
            Command::new("kill").arg("-TERM").arg(self.pid().to_string()).status().expect("kill -TERM");
        assert!(status.success(), "kill -TERM failed");
    }

    /// Waits up to `limit` for the process to exit; `None` when it is still running.
    pub async fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        loop {
            let child = self.child.as_mut().expect("hub started");
            if let Some(status) = child.try_wait().expect("try_wait") {
                self.child = None;
                return Some(status);
            }
            if start.elapsed() >= limit {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.kill();
    }
}
