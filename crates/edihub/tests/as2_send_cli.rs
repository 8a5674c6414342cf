//! `edihub as2 send FILE --partner ID`, run as the real binary with a
//! configuration of one station and one partner, against pyas2lib's AS2
//! server (`crates/edihub-server/tests/as2/pyas2_receiver.py`): a file
//! pyas2lib reads byte for byte and confirms exits 0 and prints the MIC; a
//! partner that cannot verify the signature exits 1 with the reason; an
//! unknown partner exits 2 before anything is sent.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use edihub_server::as2::partner::Security;
use edihub_server::as2::partner_server::PartnerServer;

const X12: &[u8] = b"ISA*00*          *00*          *ZZ*EDIHUB         *ZZ*PARTNER        *240101*1200*U*00401*000000009*0*P*>~\r\nGS*PO*EDIHUB*PARTNER*20240101*1200*9*X*004010~\r\nST*850*0001~\r\nBEG*00*SA*PO-9**20240101~\r\nSE*3*0001~\r\nGE*1*9~\r\nIEA*1*000000009~\r\n";

const ADMIN_SHA: &str = "ca4822ad34afb4cf7d32beabed6d8fd80ba2d29b05690c67464b0227c6475074";

/// A temporary directory, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("edihub-as2-cli-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A key and self-signed certificate from the `openssl` command: `NAME.key`, `NAME.crt`.
fn identity(dir: &Dir, name: &str) {
    let status = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj"])
        .arg(format!("/CN={name}.test"))
        .arg("-keyout")
        .arg(dir.path(&format!("{name}.key")))
        .arg("-out")
        .arg(dir.path(&format!("{name}.crt")))
        .stderr(Stdio::null())
        .status()
        .expect("the openssl command runs");
    assert!(status.success());
}

/// pyas2lib's AS2 server as the partner, verifying edihub's signatures with `edihub_cert`.
fn receiver(dir: &Dir, edihub_cert: &Path) -> PartnerServer {
    let read = |p: PathBuf| std::fs::read(p).unwrap();
    let partner = [read(dir.path("partner.key")), read(dir.path("partner.crt"))].concat();
    let security = Security { signed: true, encrypted: true, compressed: false };
    PartnerServer::start(&partner, &read(edihub_cert.to_path_buf()), security)
}

/// A configuration with station `EDIHUB` and partner `PARTNER` at `url`.
fn config(dir: &Dir, url: &str) -> PathBuf {
    let text = format!(
        "[admin]\ntoken_sha256 = \"{ADMIN_SHA}\"\n[delivery]\nallow_private_destinations = true\n\
         [[tenants]]\nid = \"acme\"\n  [[tenants.environments]]\n  id = \"prod\"\n\
         [[as2.stations]]\nas2_id = \"EDIHUB\"\ntenant = \"acme\"\nenvironment = \"prod\"\n\
         key = {{ file = \"{}\" }}\ncertificate = {{ file = \"{}\" }}\n\
         [[as2.partners]]\nas2_id = \"PARTNER\"\nstation = \"EDIHUB\"\ncertificate = {{ file = \"{}\" }}\n\
         url = \"{url}\"\n",
        dir.path("edihub.key").display(),
        dir.path("edihub.crt").display(),
        dir.path("partner.crt").display(),
    );
    let path = dir.path("edihub.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `edihub --config CONFIG as2 send <args>`; (exit code, stdout, stderr).
fn as2_send(config: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_edihub"))
        .arg("--config")
        .arg(config)
        .args(["as2", "send"])
        .args(args)
        .env("EDIHUB_DATABASE_URL", "sqlite::memory:")
        .output()
        .expect("run edihub");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8 output");
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

fn setup() -> Dir {
    let dir = Dir::new();
    identity(&dir, "edihub");
    identity(&dir, "partner");
    identity(&dir, "stranger");
    std::fs::write(dir.path("po.x12"), X12).unwrap();
    dir
}

#[test]
fn a_confirmed_send_exits_0_with_the_mic_and_the_partner_reads_the_file() {
    let dir = setup();
    let receiver = receiver(&dir, &dir.path("edihub.crt"));
    let config = config(&dir, &receiver.url);
    let file = dir.path("po.x12");
    let (code, out, err) = as2_send(&config, &[file.to_str().unwrap(), "--partner", "PARTNER"]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("from EDIHUB to PARTNER"), "{out}");
    assert!(out.contains("confirmed: processed (MIC matches)"), "{out}");
    assert!(out.contains("MDN signature verified (sha-256)"), "{out}");
    let mic = out.lines().find_map(|l| l.strip_prefix("  MIC        : ")).expect("the MIC is printed");
    assert!(mic.ends_with(", sha-256"), "{mic}");
    let received = receiver.payload(1).expect("pyas2lib processed the message");
    assert_eq!(received, X12);
}

#[test]
fn a_negative_mdn_exits_1_naming_it() {
    let dir = setup();
    // pyas2lib verifies edihub's signature with another certificate.
    let receiver = receiver(&dir, &dir.path("stranger.crt"));
    let config = config(&dir, &receiver.url);
    let file = dir.path("po.x12");
    let (code, out, err) = as2_send(&config, &[file.to_str().unwrap(), "--partner", "PARTNER"]);
    assert_eq!(code, 1, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("not confirmed: the partner answered"), "{out}");
    assert!(receiver.payload(1).is_none(), "pyas2lib kept nothing");
}

#[test]
fn an_unknown_partner_or_missing_file_exits_2_before_sending() {
    let dir = setup();
    let receiver = receiver(&dir, &dir.path("edihub.crt"));
    let config = config(&dir, &receiver.url);
    let file = dir.path("po.x12");
    let (code, out, err) = as2_send(&config, &[file.to_str().unwrap(), "--partner", "NOBODY"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("no partner `NOBODY`"), "{err}");
    let (code, _, err) = as2_send(&config, &["/nonexistent/po.x12", "--partner", "PARTNER"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/po.x12"), "{err}");
    assert!(receiver.report(1).is_none(), "nothing reached the partner");
}
