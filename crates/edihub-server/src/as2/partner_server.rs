//! pyas2lib's AS2 server (`tests/as2/pyas2_receiver.py`) as a partner the
//! tests send to: an independent AS2 implementation that opens what edihub
//! sends and answers with its own MDN. Test support behind the `testing`
//! feature; never in the release binary.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use super::partner::Security;

/// The script, beside the AS2 tests.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/as2/pyas2_receiver.py");

/// pyas2lib serving AS2 on a free loopback port; stopped and its files
/// removed when dropped.
pub struct PartnerServer {
    child: Child,
    dir: PathBuf,
    /// Where it takes AS2 messages.
    pub url: String,
}

impl PartnerServer {
    /// Starts the partner with its key and certificate (`partner_pem`: both
    /// as PEM), verifying edihub's signatures with `edihub_cert_pem` and
    /// expecting the protections of `security` (SHA-256, AES-256).
    pub fn start(partner_pem: &[u8], edihub_cert_pem: &[u8], security: Security) -> PartnerServer {
        let dir = std::env::temp_dir().join(format!("edihub-pyas2-server-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let case = serde_json::json!({
            "sign": security.signed, "encrypt": security.encrypted, "compress": security.compressed,
            "enc_alg": "aes_256_cbc", "digest_alg": "sha256",
        });
        for (name, bytes) in [
            ("partner.pem", partner_pem),
            ("edihub.pem", edihub_cert_pem),
            ("case.json", &case.to_string().into_bytes()),
        ] {
            std::fs::write(dir.join(name), bytes).expect("the partner's files");
        }
        let mut child = Command::new("python3")
            .arg(SCRIPT)
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("the port");
        let port: u16 = line.trim().parse().unwrap_or_else(|_| {
            panic!(
                "pyas2_receiver.py did not start (is pyas2lib installed? `make test` installs it): {line:?}"
            )
        });
        PartnerServer { child, dir, url: format!("http://127.0.0.1:{port}/as2") }
    }

    /// The payload pyas2lib processed as the `n`th message (from 1), if it did.
    pub fn payload(&self, n: usize) -> Option<Vec<u8>> {
        std::fs::read(self.dir.join(format!("received-{n}.payload"))).ok()
    }

    /// What pyas2lib reported of the `n`th message (status, error,
    /// Message-ID, MIC), once it has one.
    pub fn report(&self, n: usize) -> Option<serde_json::Value> {
        let bytes = std::fs::read(self.dir.join(format!("received-{n}.json"))).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

impl Drop for PartnerServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
