//! A private PostgreSQL cluster that a test may stop hard and start again
//! (F1), started from the installed binaries like `scripts/test.sh` does:
//! `initdb` and `pg_ctl` as the `postgres` user when we are root, in a temp
//! directory that user owns, on a port of its own, loopback only. A cluster
//! can get a streaming standby (`pg_basebackup -R`) that a test promotes
//! (F10).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running (or stopped) private cluster; stopped and removed on drop.
#[derive(Debug)]
pub struct PgCluster {
    bin: PathBuf,
    dir: PathBuf,
    /// The TCP port it listens on.
    pub port: u16,
    as_postgres: bool,
    /// Extra `-c name=value` options of this cluster's server.
    options: String,
}

fn find_bin() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists() && b.join("pg_ctl").exists())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn id_of(flag: &str, user: &str) -> u32 {
    let out = Command::new("id").arg(flag).arg(user).output().expect("id");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or_else(|_| panic!("no user {user}"))
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("bind port 0").port()
}

impl PgCluster {
    /// initdb + start; panics with the logs when that fails (a fault test
    /// without its database proves nothing).
    pub fn start() -> PgCluster {
        Self::start_with("")
    }

    /// Like [`PgCluster::start`], with extra server options (`-c name=value …`,
    /// read by a shell: quote values with single quotes).
    pub fn start_with(options: &str) -> PgCluster {
        let mut cluster = Self::empty(options);
        let data = cluster.data();
        let out = cluster
            .run("initdb", &["-D", data.to_str().unwrap(), "-U", "postgres", "-A", "trust", "--no-sync"]);
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        cluster.start_on_a_free_port();
        cluster
    }

    /// A streaming standby of `primary`: `pg_basebackup -R` (which writes
    /// `standby.signal` and `primary_conninfo`), started on a port of its own.
    pub fn standby_of(primary: &PgCluster, options: &str) -> PgCluster {
        let mut standby = Self::empty(options);
        let data = standby.data();
        let port = primary.port.to_string();
        let out = standby.run(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-D",
                data.to_str().unwrap(),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
            ],
        );
        assert!(out.status.success(), "pg_basebackup failed: {}", String::from_utf8_lossy(&out.stderr));
        standby.start_on_a_free_port();
        standby
    }

    /// `pg_ctl promote -w`: the standby ends recovery and accepts writes.
    pub fn promote(&self) {
        let data = self.data();
        let out = self.run("pg_ctl", &["-D", data.to_str().unwrap(), "-w", "-t", "60", "promote"]);
        assert!(out.status.success(), "pg_ctl promote failed: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// A cluster directory owned by the postgres user (when root), nothing in it yet.
    fn empty(options: &str) -> PgCluster {
        let bin = find_bin()
            .expect("PostgreSQL binaries under /usr/lib/postgresql/*/bin (make test installs them)");
        let as_postgres = is_root();
        // Not under target/: the postgres user must be able to reach it.
        let dir = std::env::temp_dir().join(format!("edihub-faults-pg-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("cluster dir");
        if as_postgres {
            std::os::unix::fs::chown(&dir, Some(id_of("-u", "postgres")), Some(id_of("-g", "postgres")))
                .expect("chown cluster dir to postgres");
        }
        PgCluster { bin, dir, port: 0, as_postgres, options: options.to_string() }
    }

    fn start_on_a_free_port(&mut self) {
        for _ in 0..5 {
            self.port = free_port();
            if self.pg_ctl_start().status.success() {
                return;
            }
        }
        panic!("could not start a private PostgreSQL:\n{}", self.server_log());
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        cmd.args(args).current_dir(&self.dir).output().unwrap_or_else(|e| panic!("{tool}: {e}"))
    }

    fn pg_ctl_start(&self) -> Output {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off {}",
            self.port,
            self.dir.display(),
            self.options
        );
        let log = self.dir.join("server.log");
        let data = self.data();
        self.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-w",
                "-t",
                "60",
                "-o",
                &opts,
                "start",
            ],
        )
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// `pg_ctl stop -m immediate`: every backend dies at once, no checkpoint;
    /// the next start runs crash recovery.
    pub fn stop_immediate(&self) {
        let data = self.data();
        let out = self.run("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
        assert!(out.status.success(), "pg_ctl stop failed: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Starts the cluster again on the same port (waits until it accepts connections).
    pub fn restart(&self) {
        let out = self.pg_ctl_start();
        assert!(out.status.success(), "pg_ctl start failed:\n{}", self.server_log());
    }

    /// The server log.
    pub fn server_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// The cluster directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self.run("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
