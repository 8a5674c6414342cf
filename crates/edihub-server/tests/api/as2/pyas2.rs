//! pyas2lib as the partner over real HTTP: it builds each message, the
//! test posts it to `POST /as2` as is, and pyas2lib verifies the MDN
//! edihub answered (sync) or posted to its `Receipt-Delivery-Option` URL
//! (async), signed or unsigned as it asked; every combination of signed,
//! encrypted and compressed, with old and new algorithms, carrying X12 and
//! EDIFACT interchanges by turns.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::support::receiver::Receiver;

/// One message pyas2lib sends.
struct Case {
    name: String,
    sign: bool,
    encrypt: bool,
    compress: bool,
    enc_alg: &'static str,
    digest_alg: &'static str,
    asynchronous: bool,
    signed_mdn: bool,
}

/// Every combination of the protections, each with a sync and an async
/// MDN; the algorithms and the MDN's signature vary between them.
fn cases() -> Vec<Case> {
    let algorithms = [("aes_256_cbc", "sha256"), ("aes_128_cbc", "sha512"), ("tripledes_192_cbc", "sha1")];
    let mut cases = Vec::new();
    for bits in 0..8u8 {
        for asynchronous in [false, true] {
            let (enc_alg, digest_alg) = algorithms[(usize::from(bits) + usize::from(asynchronous)) % 3];
            let (sign, encrypt, compress) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
            let signed_mdn = bits % 3 != 0;
            let name = format!(
                "s{}e{}c{}-{}-{enc_alg}-{digest_alg}-{}",
                u8::from(sign),
                u8::from(encrypt),
                u8::from(compress),
                if asynchronous { "async" } else { "sync" },
                if signed_mdn { "signed" } else { "unsigned" }
            );
            cases.push(Case { name, sign, encrypt, compress, enc_alg, digest_alg, asynchronous, signed_mdn });
        }
    }
    cases
}

/// Runs the pyas2lib helper; a missing pyas2lib fails with the reason.
fn helper(command: &str, dir: &Path) -> BTreeMap<String, Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/as2/pyas2_partner.py");
    let out = Command::new("python3").arg(script).arg(command).arg(dir).output().expect("python3 runs");
    assert!(
        out.status.success(),
        "pyas2_partner.py {command} failed (is pyas2lib installed? `make test` installs it):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the helper prints JSON")
}

fn read_http(dir: &Path, stem: &str) -> (Headers, Vec<u8>) {
    let pairs: Vec<(String, String)> =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{stem}.headers.json"))).unwrap()).unwrap();
    (pairs.into_iter().collect(), std::fs::read(dir.join(format!("{stem}.body"))).unwrap())
}

fn write_http(dir: &TempDir, stem: &str, headers: &Headers, body: &[u8]) {
    let pairs: Vec<(&str, &str)> = headers.iter().collect();
    dir.write(&format!("{stem}.headers.json"), serde_json::to_string(&pairs).unwrap().as_bytes());
    dir.write(&format!("{stem}.body"), body);
}

/// An EDIFACT order interchange with its own control number and order number.
fn edifact(control: u32) -> Vec<u8> {
    format!(
        "UNB+UNOA:2+PARTNER:ZZ+EDIHUB:ZZ+240101:1200+{control}'UNH+1+ORDERS:D:96A:UN'BGM+220+PO-{control}+9'\
         UNT+3+1'UNZ+1+{control}'"
    )
    .into_bytes()
}

/// The shared directory: keys, certificates, the cases and their payloads.
fn setup(dir: &TempDir, cases: &[Case], receiver: &Receiver) {
    let i = ids();
    dir.write("partner.pem", &[i.them.key_pem(), i.them.cert_pem()].concat());
    dir.write("edihub.pem", &i.us.cert_pem());
    let mut list = Vec::new();
    for (n, c) in cases.iter().enumerate() {
        let control = 100 + u32::try_from(n).unwrap();
        let (payload, content_type) = if n % 2 == 0 {
            (x12(control), "application/edi-x12")
        } else {
            (edifact(control), "application/edifact")
        };
        dir.write(&format!("{}.payload", c.name), &payload);
        let mut case = json!({
            "name": c.name, "sign": c.sign, "encrypt": c.encrypt, "compress": c.compress,
            "enc_alg": c.enc_alg, "digest_alg": c.digest_alg,
            "mdn_mode": if c.asynchronous { "ASYNC" } else { "SYNC" },
            "mdn_url": receiver.url(&c.name), "content_type": content_type,
        });
        if !c.signed_mdn {
            case["mdn_digest_alg"] = Value::Null;
        }
        list.push(case);
    }
    dir.write("cases.json", serde_json::to_string(&list).unwrap().as_bytes());
}

/// The MDN posted to `path` of `receiver`, waiting for it.
async fn posted(receiver: &Receiver, path: &str) -> (Headers, Vec<u8>) {
    for _ in 0..100 {
        if let Some(r) = receiver.received(path).pop() {
            let headers = r
                .headers
                .iter()
                .map(|(n, v)| (n.as_str().to_string(), v.to_str().unwrap_or_default().to_string()))
                .collect();
            return (headers, r.body.to_vec());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no MDN was posted to {path}");
}

async fn pyas2lib_sends_and_verifies_the_mdns(backend: Backend) {
    let hub = As2Hub::start_with(backend, |c| c.delivery.poll_interval_ms = 100).await;
    let receiver = Receiver::start().await;
    let cases = cases();
    setup(&hub.dir, &cases, &receiver);
    let built = helper("build", hub.dir.path());
    for case in &cases {
        let (headers, body) = read_http(hub.dir.path(), &format!("{}.msg", case.name));
        let answer = hub.post(&headers, body).await;
        assert_eq!(answer.status, 200, "{}: {}", case.name, String::from_utf8_lossy(&answer.body));
        let (mdn_headers, mdn_body) = if case.asynchronous {
            assert!(answer.body.is_empty(), "{}: an async MDN is not in the answer", case.name);
            posted(&receiver, &case.name).await
        } else {
            (answer.headers, answer.body)
        };
        let signed = mdn_headers.get("content-type").is_some_and(|t| t.starts_with("multipart/signed"));
        assert_eq!(signed, case.signed_mdn, "{}: signed as asked", case.name);
        write_http(&hub.dir, &format!("{}.mdn", case.name), &mdn_headers, &mdn_body);
        let expected = &built[&case.name];
        let sent = json!({"message_id": expected["message_id"], "mic": expected["mic"]});
        hub.dir.write(&format!("{}.sent.json", case.name), sent.to_string().as_bytes());
    }
    let verdicts = helper("verify-mdns", hub.dir.path());
    for case in &cases {
        assert_eq!(
            verdicts[&case.name],
            json!(["processed", null]),
            "{}: pyas2lib on edihub's MDN",
            case.name
        );
    }
    assert_eq!(hub.app.count_prod().await, i64::try_from(cases.len()).unwrap(), "one message per case");
    let received = hub.received().await;
    assert_eq!(received.len(), cases.len());
    let mut types = BTreeMap::new();
    for row in &received {
        assert_eq!(row.partner, "PARTNER");
        let id = row.stored_message_id.unwrap_or_else(|| panic!("stored: {row:?}"));
        let stored = hub.app.state.store.get_message(id).await.unwrap().expect("the message");
        *types.entry(stored.meta.message_type.clone()).or_insert(0) += 1;
    }
    let half = cases.len() / 2;
    assert_eq!(types, BTreeMap::from([("EDIFACT.ORDERS".to_string(), half), ("X12.850".to_string(), half)]));
}

backend_tests!(pyas2lib_sends_and_verifies_the_mdns);
