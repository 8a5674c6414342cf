//! Two edihub processes' delivery workers sharing one database (as two
//! replicas do), on both backends: every message is delivered, and no
//! delivery is attempted by both (each message reaches the receiver once,
//! with one recorded attempt).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::support::receiver::Receiver;
use crate::support::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const MESSAGES: usize = 40;

async fn replicas_share_the_queue(backend: Backend) {
    let receiver = Receiver::start().await;
    let extra = format!(
        "[delivery]\npoll_interval_ms = 20\nmax_in_flight_per_destination = 3\n\n\
         [[destinations]]\nid = \"erp\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{}\"\n",
        receiver.url("erp")
    );
    let app = TestApp::start(backend, TestConfig::new().delivery_toml(&extra)).await;
    let mut ids = HashSet::new();
    for i in 0..MESSAGES {
        let body = json!({ "order": { "id": format!("rep-{i}") } }).to_string();
        let res = app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await;
        ids.insert(accepted(&res)["id"].as_str().expect("id").to_string());
    }
    // A second process on the same database, then both workers at once.
    let config = app.state.config.clone();
    let store = edihub_store::connect(&config.database_url, &edihub_server::pool_settings(&config))
        .await
        .expect("second pool");
    let other = edihub_server::prepare_with(store, config).await.expect("second replica");
    let stop = CancellationToken::new();
    for state in [app.state.clone(), other] {
        tokio::spawn(edihub_server::delivery::run(state, stop.clone()));
    }
    for _ in 0..1200 {
        if receiver.received("erp").len() >= MESSAGES {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = receiver.received("erp");
    let mut per_id: HashMap<String, usize> = HashMap::new();
    for r in &got {
        *per_id.entry(r.header("webhook-id").to_string()).or_default() += 1;
    }
    assert_eq!(per_id.keys().cloned().collect::<HashSet<_>>(), ids, "every message delivered");
    assert!(per_id.values().all(|n| *n == 1), "no message sent twice: {per_id:?}");
    for id in &ids {
        let uuid = uuid::Uuid::parse_str(id).expect("uuid");
        let mut recorded = None;
        for _ in 0..1200 {
            let reports = app.state.store.deliveries_of(uuid).await.expect("deliveries");
            if reports[0].delivery.status == "delivered" {
                recorded = Some(reports[0].delivery.attempts);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(recorded, Some(1), "{id}: delivered after one attempt");
    }
    stop.cancel();
}

backend_tests!(replicas_share_the_queue);
