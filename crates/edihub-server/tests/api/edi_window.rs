//! The interchange window per environment: a repeated interchange control
//! number (same sender and receiver) is a duplicate of the whole interchange
//! (or, with other content, refused) within the environment's
//! `interchange_window`, and a new interchange after it, whatever
//! `retention.keys_days` keeps.

use crate::support::*;

backend_tests!(interchange_window_ends_per_environment);

/// An X12 850 interchange numbered `isa13` with one set numbered `st02`
/// (the set's fallback fingerprint has its group and set numbers).
fn x12(isa13: &str, st02: &str) -> String {
    [
        format!("ISA*00*          *00*          *ZZ*PARTNERA       *ZZ*ACME           *240301*1200*U*00401*{isa13}*0*P*>~"),
        "GS*PO*PARTNERA*ACME*20240301*1200*77*X*004010~".to_string(),
        format!("ST*850*{st02}~BEG*00*NE*PO-{st02}**20240301~SE*3*{st02}~"),
        "GE*1*77~".to_string(),
        format!("IEA*1*{isa13}~"),
    ]
    .concat()
}

async fn post(app: &TestApp, key: &str, body: String) -> TestResponse {
    app.post_receive(Some(&bearer(key)), Some("application/EDI-X12"), body, &[]).await
}

async fn interchange_window_ends_per_environment(backend: Backend) {
    // acme/prod: a two-second window; acme/qa: the default (30 days).
    let config = TestConfig::new().with(|c| {
        c.tenants[0].environments[0].interchange_window = Some("2s".into());
    });
    let app = TestApp::start(backend, config).await;
    for key in [ACME_PROD, ACME_QA] {
        post(&app, key, x12("000000501", "0001")).await.expect(202);
        // The same interchange again: a duplicate of the whole interchange.
        let again = post(&app, key, x12("000000501", "0001")).await;
        again.expect(200);
        assert!(again.replayed());
        // The same number with another set inside: refused within the window.
        post(&app, key, x12("000000501", "0002")).await.expect(422);
    }
    assert_eq!((app.count("acme", "prod").await, app.count("acme", "qa").await), (1, 1));
    let blocked = app.audit_events("action=interchange.duplicate_blocked").await;
    assert_eq!(blocked.len(), 2, "one per environment: {blocked:?}");
    assert!(blocked.iter().all(|e| e["idempotency_key"] == "X12|ZZ:PARTNERA|ZZ:ACME|000000501"));
    assert_eq!(app.audit_events("action=interchange.mismatch").await.len(), 2);

    tokio::time::sleep(std::time::Duration::from_millis(2600)).await;
    // prod: the window is over, the number makes a new interchange (its
    // set is new by its own numbers), and blocks again from now on.
    let after = post(&app, ACME_PROD, x12("000000501", "0003")).await;
    after.expect(202);
    assert!(!after.replayed());
    assert_outcome(&after.json()["messages"][0], "accepted");
    post(&app, ACME_PROD, x12("000000501", "0003")).await.expect(200);
    post(&app, ACME_PROD, x12("000000501", "0004")).await.expect(422);
    // qa: still within its 30 days.
    let qa = post(&app, ACME_QA, x12("000000501", "0001")).await;
    qa.expect(200);
    assert!(qa.replayed());
    assert_eq!((app.count("acme", "prod").await, app.count("acme", "qa").await), (2, 1));
    assert_eq!(app.audit_events("action=interchange.duplicate_blocked").await.len(), 4);
}
