//! A fixed SQLite ingest workload for instruction counts: wall-clock
//! benchmarks on a shared machine are too noisy to see a few per cent,
//! instruction counts under `valgrind --tool=callgrind` are not.
//!
//! ```text
//! cargo build --release -p edihub-store --example sqlite_ingest
//! target/release/examples/sqlite_ingest /tmp/ingest.db 0      # migrate only
//! target/release/examples/sqlite_ingest /tmp/ingest.db 4096   # 4,096 messages
//! ```
//!
//! It migrates the database at the path (a no-op when it is already
//! migrated, so a copy can be altered first, e.g. a trigger dropped), then
//! stores `count` distinct 5 KB ORDERS05-like messages in waves of 64
//! concurrent single-message requests, so they take the group insert as S3's
//! requests do. The runtime has one thread: each wave is queued before the
//! dispatcher runs, which keeps the batches the same from run to run. The
//! cost of the ingest is the difference between a run with `count` and one
//! with 0 on a copy of the same migrated file.

use std::sync::Arc;

use edihub_store::{IngestOutcome, IngestRequest, MessageOutcome, NewMessage, PoolSettings, Scope, Store};

/// Requests sent at once, as many as one group-insert statement takes.
const WAVE: usize = 64;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(count)) = (args.next(), args.next()) else {
        eprintln!("usage: sqlite_ingest <database file> <messages>");
        std::process::exit(2);
    };
    let count: usize = count.parse().expect("<messages> is a number");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(run(&format!("sqlite://{path}"), count));
}

async fn run(url: &str, count: usize) {
    let store: Arc<dyn Store> = edihub_store::connect(url, &PoolSettings::default()).await.expect("connect");
    store.migrate().await.expect("migrate");
    let scope = Scope::new("acme", "prod");
    for wave in 0..count.div_ceil(WAVE) {
        let requests = (wave * WAVE..count.min((wave + 1) * WAVE)).map(|n| {
            let (store, scope) = (Arc::clone(&store), scope.clone());
            tokio::spawn(async move { ingest_one(store.as_ref(), &scope, n).await })
        });
        let requests: Vec<_> = requests.collect();
        for request in requests {
            request.await.expect("request task");
        }
    }
    assert_eq!(store.count_messages(&scope).await.expect("count"), count as i64);
    store.close().await;
}

async fn ingest_one(store: &dyn Store, scope: &Scope, n: usize) {
    let now = chrono::Utc::now();
    let request =
        IngestRequest { scope, key: None, messages: vec![message(n)], now, envelope: None, lease: None };
    match store.ingest(request).await.expect("ingest") {
        IngestOutcome::Processed(answer) => {
            assert!(matches!(answer.outcomes[..], [MessageOutcome::Accepted(_)]), "message {n}: {answer:?}")
        }
        other => panic!("message {n}: {other:?}"),
    }
}

/// Message `n`: its own PO number, fingerprint and a 5 KB body, like S1's.
fn message(n: usize) -> NewMessage {
    let belnr = format!("45{n:08}");
    let items: String = (0..48)
        .map(|i| format!("<E1EDP01 SEGMENT=\"1\"><POSEX>{i:06}</POSEX><MENGE>{}</MENGE><MATNR>MAT-{n}-{i}</MATNR></E1EDP01>", n % 97 + i))
        .collect();
    let payload = format!(
        "<ORDERS05><IDOC BEGIN=\"1\"><EDI_DC40 SEGMENT=\"1\"><DOCNUM>{n:016}</DOCNUM><MESTYP>ORDERS</MESTYP></EDI_DC40>\
         <E1EDK01 SEGMENT=\"1\"><BELNR>{belnr}</BELNR></E1EDK01>{items}</IDOC></ORDERS05>"
    );
    NewMessage {
        id: uuid::Uuid::now_v7(),
        message_type: "ORDERS05".into(),
        mestyp: Some("ORDERS".into()),
        docnum: Some(format!("{n:016}")),
        sender: Some("Q01CLNT100".into()),
        fingerprint: Some(format!("{:064x}", n as u128 * 0x9e37_79b9_7f4a_7c15)),
        fingerprint_basis: "key_fields".into(),
        window_seconds: 86_400,
        key_values: serde_json::json!([{ "path": "E1EDK01.BELNR", "values": [belnr] }]),
        idempotency_key: None,
        provider_event_id: None,
        packet_index: 0,
        content_type: Some("application/xml".into()),
        payload: bytes::Bytes::from(payload),
    }
}
