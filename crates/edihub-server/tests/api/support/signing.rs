//! Signatures made by implementations independent of edihub, for checking
//! its verifiers: HMAC-SHA256 from the `openssl` command line and Standard
//! Webhooks signatures from the reference library for Python
//! (`standardwebhooks`, installed by `scripts/test.sh`). Used by the scheme
//! tests (`signature_schemes`) and by every webhook test over HTTP.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `cmd args` with `input` on stdin; panics with a clear message when it cannot.
pub fn run(cmd: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run `{cmd}` (is it installed?): {e}"));
    child.stdin.take().expect("stdin").write_all(input).expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "`{cmd} {args:?}` failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn openssl_mac(key: &[u8], data: &[u8], format: &str) -> Vec<u8> {
    let key = format!("hexkey:{}", hex::encode(key));
    run("openssl", &["dgst", "-sha256", "-mac", "HMAC", "-macopt", &key, format], data)
}

/// HMAC-SHA256 as lower-case hex, computed by `openssl dgst`.
pub fn openssl_hex(key: &[u8], data: &[u8]) -> String {
    let out = String::from_utf8(openssl_mac(key, data, "-hex")).expect("utf-8");
    out.trim().rsplit(' ').next().expect("digest").to_string()
}

/// HMAC-SHA256 as base64, computed by `openssl dgst -binary | base64`.
pub fn openssl_b64(key: &[u8], data: &[u8]) -> String {
    let b64 = run("base64", &["-w0"], &openssl_mac(key, data, "-binary"));
    String::from_utf8(b64).expect("utf-8").trim().to_string()
}

/// Standard Webhooks signatures (`v1,<base64>`) of `body` as message `msg_id`
/// at each of `timestamps`, made by the reference Python library. Fails the
/// test with instructions when python3 cannot import it.
pub fn python_sign(secret: &str, msg_id: &str, body: &str, timestamps: &[i64]) -> Vec<String> {
    const SCRIPT: &str = "import sys\n\
        from datetime import datetime, timezone\n\
        from standardwebhooks import Webhook\n\
        secret, msg_id = sys.argv[1:3]\n\
        body = sys.stdin.buffer.read().decode('utf-8')\n\
        for ts in sys.argv[3:]:\n\
        \x20   t = datetime.fromtimestamp(int(ts), tz=timezone.utc)\n\
        \x20   print(Webhook(secret).sign(msg_id=msg_id, timestamp=t, data=body))\n";
    let import = Command::new("python3").args(["-c", "import standardwebhooks"]).output();
    assert!(
        import.as_ref().is_ok_and(|o| o.status.success()),
        "python3 cannot import the Standard Webhooks reference library `standardwebhooks`; install it \
         with `python3 -m pip install standardwebhooks` (scripts/test.sh does): {import:?}"
    );
    let mut args = vec!["-c", SCRIPT, secret, msg_id];
    let ts: Vec<String> = timestamps.iter().map(i64::to_string).collect();
    args.extend(ts.iter().map(String::as_str));
    let out = String::from_utf8(run("python3", &args, body.as_bytes())).expect("utf-8");
    let sigs: Vec<String> = out.lines().map(str::to_string).collect();
    assert_eq!(sigs.len(), timestamps.len(), "one signature per timestamp: {out}");
    sigs
}
