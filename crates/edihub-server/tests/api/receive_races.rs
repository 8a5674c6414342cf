//! Simultaneous deliveries: 48 identical requests at once (with and without
//! one Idempotency-Key) store exactly one message, answer one 202 and 47
//! duplicates/replays naming it, and audit all 47 blocked repeats; distinct
//! messages sent at once are all stored; packets racing in opposite order
//! neither deadlock nor store anything twice.
//!
//! Each request runs in its own tokio task on its own clone of the router.

use std::collections::HashSet;

use crate::support::*;

const N: usize = 48;

backend_tests!(
    identical_requests_at_once_store_one,
    one_idempotency_key_at_once_stores_one,
    distinct_requests_at_once_all_store,
    crossed_packets_at_once_store_each_idoc_once,
    one_key_two_payloads_at_once,
    expired_window_then_burst_stores_one,
);

fn orders_request(headers: &[(&str, &str)]) -> axum::http::Request<axum::body::Body> {
    receive_request(Some(&bearer(ACME_PROD)), Some("application/xml"), fixture("orders05.xml"), headers)
}

async fn identical_requests_at_once_store_one(backend: Backend) {
    let app = TestApp::new(backend).await;
    let answers = burst(&app, (0..N).map(|_| orders_request(&[])).collect()).await;
    let (new, dups): (Vec<_>, Vec<_>) = answers.iter().partition(|r| r.status.as_u16() == 202);
    let statuses: Vec<u16> = answers.iter().map(|r| r.status.as_u16()).collect();
    assert_eq!(new.len(), 1, "exactly one 202: {statuses:?}");
    let original = accepted(new[0]);
    let id = original["id"].as_str().unwrap();
    assert_eq!(dups.len(), N - 1);
    for res in dups {
        let dup = duplicate_of(res, id);
        assert_eq!(dup["detected_by"], "fingerprint");
        assert!(!res.replayed());
    }
    assert_eq!(app.count_prod().await, 1);
    let fp = original["fingerprint"].as_str().unwrap();
    let events = app.audit_events(&format!("action=message.duplicate_blocked&fingerprint={fp}")).await;
    assert_eq!(events.len(), N - 1);
    for e in &events {
        assert_eq!(e["detected_by"], "fingerprint");
        assert_eq!(e["original_message_id"], id);
        assert_eq!(e["tenant"], "acme");
        assert_eq!(e["environment"], "prod");
    }
}

async fn one_idempotency_key_at_once_stores_one(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "burst-key-1")];
    let answers = burst(&app, (0..N).map(|_| orders_request(&key)).collect()).await;
    assert_eq!(answers.len(), N);
    assert_one_keyed(&app, &answers, "idempotency_key", "burst-key-1").await;
}

async fn distinct_requests_at_once_all_store(backend: Backend) {
    let app = TestApp::new(backend).await;
    let template = String::from_utf8(fixture("orders05.xml")).unwrap();
    let requests = (0..N)
        .map(|i| {
            let body = template
                .replace("4500012345", &format!("45000{i:05}"))
                .replace("PO-77881", &format!("PO-{i}"));
            receive_request(Some(&bearer(ACME_PROD)), Some("application/xml"), body.into_bytes(), &[])
        })
        .collect();
    let answers = burst(&app, requests).await;
    let ids: HashSet<String> =
        answers.iter().map(|r| accepted(r)["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), N);
    assert_eq!(app.count_prod().await, N as i64);
    assert!(app.audit_events("").await.is_empty());
}

async fn crossed_packets_at_once_store_each_idoc_once(backend: Backend) {
    let app = TestApp::new(backend).await;
    let a = idoc_element(&fixture("orders05.xml"));
    let b = idoc_element(&fixture("ordchg05.xml"));
    let ab = format!("<ORDERS05>{a}{b}</ORDERS05>");
    let ba = format!("<ORDERS05>{b}{a}</ORDERS05>");
    let requests = (0..16)
        .map(|i| {
            let body = if i % 2 == 0 { ab.clone() } else { ba.clone() };
            receive_request(Some(&bearer(ACME_PROD)), Some("application/xml"), body.into_bytes(), &[])
        })
        .collect();
    let answers = burst(&app, requests).await;
    let mut accepted_ids = HashSet::new();
    for res in &answers {
        assert!(matches!(res.status.as_u16(), 200 | 202), "{}: {}", res.status, res.text());
        let body = res.json();
        let messages = body["messages"].as_array().expect("packet answer");
        assert_eq!(messages.len(), 2);
        for m in messages {
            if m["status"] == "accepted" {
                assert!(accepted_ids.insert(m["id"].as_str().unwrap().to_string()), "accepted twice: {m}");
            }
        }
    }
    assert_eq!(accepted_ids.len(), 2, "each IDoc accepted exactly once");
    assert_eq!(app.count_prod().await, 2);
    let blocked = app.audit_events("action=message.duplicate_blocked").await;
    assert_eq!(blocked.len(), 16 * 2 - 2);
}

async fn one_key_two_payloads_at_once(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "contested-key")];
    let payloads = [fixture("orders05.xml"), fixture("ordchg05.xml")];
    let requests = (0..16)
        .map(|i| {
            let body = payloads[i % 2].clone();
            receive_request(Some(&bearer(ACME_PROD)), Some("application/xml"), body, &key)
        })
        .collect();
    let answers = burst(&app, requests).await;
    let winners: Vec<_> = answers.iter().filter(|r| r.status.as_u16() == 202).collect();
    let statuses: Vec<u16> = answers.iter().map(|r| r.status.as_u16()).collect();
    assert_eq!(winners.len(), 1, "{statuses:?}");
    let winner = winners[0];
    let same_payload = if accepted(winner)["mestyp"] == "ORDERS" { "ORDERS" } else { "ORDCHG" };
    let replays = answers.iter().filter(|r| r.status.as_u16() == 200).count();
    let refused = answers.iter().filter(|r| r.status.as_u16() == 422).count();
    assert_eq!((replays, refused), (7, 8), "{same_payload} won: {statuses:?}");
    for res in &answers {
        match res.status.as_u16() {
            200 => assert!(res.replayed() && res.body == winner.body),
            422 => {
                res.expect_problem(422, "Idempotency-Key");
            }
            _ => {}
        }
    }
    assert_eq!(app.count_prod().await, 1);
    assert_eq!(app.audit_events("action=idempotency_key.mismatch").await.len(), 8);
    assert_eq!(app.audit_events("action=message.duplicate_blocked").await.len(), 7);
}

async fn expired_window_then_burst_stores_one(backend: Backend) {
    let app = TestApp::new(backend).await;
    let win = [("x-message-type", "WIN2S")];
    let old = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &win).await);
    tokio::time::sleep(std::time::Duration::from_millis(2600)).await;
    let requests = (0..24)
        .map(|_| {
            receive_request(Some(&bearer(ACME_PROD)), Some("application/xml"), fixture("orders05.xml"), &win)
        })
        .collect();
    let answers = burst(&app, requests).await;
    let statuses: Vec<u16> = answers.iter().map(|r| r.status.as_u16()).collect();
    let new: Vec<_> = answers.iter().filter(|r| r.status.as_u16() == 202).collect();
    assert_eq!(new.len(), 1, "one new original after the window: {statuses:?}");
    let new_id = accepted(new[0])["id"].as_str().unwrap().to_string();
    assert_ne!(new_id, old["id"].as_str().unwrap());
    for res in answers.iter().filter(|r| r.status.as_u16() != 202) {
        duplicate_of(res, &new_id);
    }
    assert_eq!(app.count_prod().await, 2);
}
