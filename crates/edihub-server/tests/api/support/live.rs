//! Running edihub outside the in-process harness: a test configuration on
//! any database URL, the real server on a port-0 TCP listener (for a real
//! browser), and a throwaway PostgreSQL cluster that a test may stop and
//! start (for readiness). Everything is torn down on drop, also when the
//! test panics.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;

use axum::Router;
use edihub_server::AppState;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::TestConfig;

/// An application with `config` on `database_url`: connected with the
/// configured pool settings, migrated, seeded; returns its state and the
/// real router.
pub async fn app_on(database_url: &str, config: TestConfig) -> (AppState, Router) {
    let state = edihub_server::prepare(config.build(database_url)).await.expect("prepare");
    let router = edihub_server::router(state.clone());
    (state, router)
}

/// The real server (`edihub_server::serve`) on 127.0.0.1 and a free port.
pub struct LiveServer {
    /// Where it listens.
    pub addr: SocketAddr,
    shutdown: CancellationToken,
    tracker: TaskTracker,
}

impl LiveServer {
    /// Starts serving `state`; stops when dropped.
    pub async fn start(state: AppState) -> LiveServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a port-0 listener");
        let addr = listener.local_addr().expect("local address");
        let shutdown = CancellationToken::new();
        let tracker = TaskTracker::new();
        let (token, tasks) = (shutdown.clone(), tracker.clone());
        tracker.spawn(async move {
            edihub_server::serve(listener, state, token, &tasks).await.expect("serve");
        });
        LiveServer { addr, shutdown, tracker }
    }

    /// Stops accepting, lets in-flight requests finish, waits for the tasks.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.tracker.close();
        tokio::time::timeout(std::time::Duration::from_secs(30), self.tracker.wait())
            .await
            .expect("server tasks end after shutdown");
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A PostgreSQL cluster of its own (initdb into a temp dir, a free port),
/// started from the installed binaries like `scripts/test.sh` does; as root
/// it runs as the `postgres` user. Stopped and deleted on drop.
pub struct PgCluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
}

fn pg_bin() -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs.into_iter()
        .rev()
        .find(|d| d.join("initdb").exists())
        .expect("PostgreSQL binaries under /usr/lib/postgresql/*/bin (install the postgresql package)")
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

impl PgCluster {
    /// Creates and starts the cluster (blocking; takes a few seconds).
    pub fn start() -> PgCluster {
        let dir = std::env::temp_dir().join(format!("edihub-pg-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("cluster dir");
        let cluster = PgCluster { bin: pg_bin(), dir, port: free_port() };
        if is_root() {
            if !Command::new("id").arg("postgres").output().is_ok_and(|o| o.status.success()) {
                cluster.run(Command::new("useradd").args(["--system", "--no-create-home", "postgres"]));
            }
            cluster.run(Command::new("chown").arg("postgres").arg(&cluster.dir));
        }
        let data = cluster.dir.join("data");
        cluster.run(cluster.pg("initdb").arg("-D").arg(&data).args(["-U", "postgres", "-A", "trust"]));
        cluster.start_again();
        cluster
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// `pg_ctl start -w` on the same data directory and port.
    pub fn start_again(&self) {
        let opts =
            format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", self.port, self.dir.display());
        let (data, log) = (self.dir.join("data"), self.dir.join("server.log"));
        self.run(self.pg("pg_ctl").arg("-D").arg(data).arg("-l").arg(log).args(["-w", "-o", &opts, "start"]));
    }

    /// `pg_ctl stop -m immediate`: the server dies without a clean shutdown.
    pub fn stop_immediate(&self) {
        self.run(self.pg("pg_ctl").arg("-D").arg(self.dir.join("data")).args([
            "-m",
            "immediate",
            "-w",
            "stop",
        ]));
    }

    /// A command for a PostgreSQL binary, as `postgres` when we are root.
    fn pg(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    fn run(&self, cmd: &mut Command) {
        let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        assert!(
            out.status.success(),
            "{cmd:?} failed: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
        );
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = self.pg("pg_ctl").arg("-D").arg(data).args(["-m", "immediate", "-w", "stop"]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
