//! Re-sent Message-IDs: the first MDN again, byte for byte, nothing stored
//! twice, each repeat audited; another payload under a Message-ID refused;
//! concurrent re-sends processed once; the asynchronous MDN posted and
//! retried, visible in `GET /admin/as2/messages`.

use std::time::Duration;

use edihub_server::as2::mime::Headers;

use super::*;
use crate::support::receiver::{Receiver, Reply};
use crate::support::{ADMIN_TOKEN, bearer};

/// The same message twice: one message stored, the same MDN (body, type,
/// its own Message-ID) answered twice, the repeat audited.
async fn resent_message_id_gets_the_first_mdn(backend: Backend) {
    let hub = As2Hub::start(backend).await;
    let message = Sender::partner(SIGNED_ENCRYPTED).message(&x12(1));
    let first = hub.send(&message).await;
    let mdn = first.mdn();
    assert!(mdn.disposition.is_positive(), "{}", mdn.disposition);
    assert_eq!(mdn.mic.as_ref(), Some(&message.sent.mic), "the MIC of what was sent");
    assert!(mdn.signed.is_some(), "a signed MDN was asked for");
    let again = hub.send(&message).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body, first.body, "the MDN byte for byte");
    for name in ["content-type", "message-id", "as2-from", "as2-to", "date"] {
        assert_eq!(again.headers.get(name), first.headers.get(name), "{name}");
    }
    assert_eq!(hub.app.count_prod().await, 1, "stored once");
    let blocked = hub.app.audit_events("action=as2.duplicate_blocked").await;
    assert_eq!(blocked.len(), 1);
    assert_eq!(blocked[0]["idempotency_key"], message.sent.message_id.as_str());
    assert_eq!(blocked[0]["details"]["partner"], "PARTNER");
    let received = hub.received().await;
    assert_eq!(received.len(), 1);
    let stored = received[0].stored_message_id.expect("the message stored");
    assert_eq!(blocked[0]["original_message_id"], stored.to_string());
}

/// Another payload under a Message-ID received before: refused (422), the
/// first message alone stored, audited as `as2.message_id_reused`.
async fn message_id_with_another_payload_is_refused(backend: Backend) {
    let hub = As2Hub::start(backend).await;
    let sender = Sender::partner(SIGNED_ENCRYPTED);
    let first = sender.message(&x12(2));
    hub.send(&first).await.mdn();
    let other = sender.message(&x12(3));
    let reused: Headers = other
        .headers
        .iter()
        .map(|(n, v)| {
            let v = if n.eq_ignore_ascii_case("Message-ID") {
                first.sent.message_id.header_value()
            } else {
                v.into()
            };
            (n.to_string(), v)
        })
        .collect();
    let answer = hub.post(&reused, other.body.clone()).await;
    let detail = answer.problem(422);
    assert!(detail.contains("another payload") && detail.contains("new Message-ID"), "{detail}");
    assert_eq!(hub.app.count_prod().await, 1, "the other payload is not stored");
    let events = hub.app.audit_events("action=as2.message_id_reused").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["details"]["same_payload"], false);
    let received = hub.received().await;
    assert_eq!(received.len(), 1, "one AS2 message kept");
}

/// Eight copies of one message at once: all answered with the one MDN,
/// one message stored, seven repeats audited.
async fn concurrent_resends_are_processed_once(backend: Backend) {
    let hub = As2Hub::start(backend).await;
    let message = Sender::partner(SIGNED_ENCRYPTED).message(&x12(4));
    let mut copies = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (url, headers, body) = (hub.url(), message.headers.clone(), message.body.clone());
        copies.spawn(async move { post(&client(), &url, &headers, body).await });
    }
    let answers = copies.join_all().await;
    let bodies: std::collections::HashSet<&Vec<u8>> = answers.iter().map(|a| &a.body).collect();
    assert_eq!(bodies.len(), 1, "every copy gets the same MDN");
    assert!(answers[0].mdn().disposition.is_positive());
    assert_eq!(hub.app.count_prod().await, 1, "stored once");
    assert_eq!(hub.app.audit_events("action=as2.duplicate_blocked").await.len(), 7);
}

/// `Receipt-Delivery-Option`: an empty 200 at once, the MDN posted to the
/// URL, retried after a refusal on the delivery schedule, listed by the
/// admin API with its mode and status.
async fn async_mdn_is_posted_and_retried(backend: Backend) {
    let receiver = Receiver::start().await;
    receiver.script("mdn", &[Reply::Status(503)]);
    let hub = As2Hub::start_with(backend, |c| {
        c.delivery.retry_schedule = vec!["200ms".into(), "200ms".into()];
        c.delivery.poll_interval_ms = 100;
    })
    .await;
    let message = Sender::partner(SIGNED_ENCRYPTED).asking_async(&receiver.url("mdn")).message(&x12(5));
    let answer = hub.send(&message).await;
    assert_eq!((answer.status, answer.body.len()), (200, 0), "no MDN in the answer");
    let mut posted = Vec::new();
    for _ in 0..100 {
        posted = receiver.received("mdn");
        if posted.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(posted.len(), 2, "refused once, then posted again");
    assert_eq!(posted[0].body, posted[1].body, "the same MDN both times");
    let content_type = posted[1].header("content-type");
    let mdn = ReceivedMdn::read(content_type, &posted[1].body, &ids().us.certificate(), Utc::now()).unwrap();
    assert!(mdn.disposition.is_positive());
    assert_eq!(mdn.mic.as_ref(), Some(&message.sent.mic));
    assert_eq!(mdn.original_message_id, message.sent.message_id);
    let mut listed = serde_json::Value::Null;
    for _ in 0..50 {
        let page = hub.app.get("/admin/as2/messages", Some(&bearer(ADMIN_TOKEN))).await;
        page.expect(200);
        listed = page.json()["messages"][0].clone();
        if listed["mdn_status"] == "sent" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(listed["partner"], "PARTNER");
    assert_eq!(listed["message_id"], message.sent.message_id.as_str());
    assert_eq!(listed["mdn_mode"], "async");
    assert_eq!(listed["mdn_status"], "sent");
    assert_eq!(listed["mdn_attempts"], 2);
    assert!(listed["stored_message_id"].is_string());
    assert!(listed["received_at"].is_string());
    assert_eq!(hub.app.count_prod().await, 1);
    let unauthenticated = hub.app.get("/admin/as2/messages", None).await;
    unauthenticated.expect(401);
}

/// An asynchronous MDN to an address the delivery policy refuses is never
/// posted: retried, then `failed`, with the reason.
async fn async_mdn_follows_the_address_policy(backend: Backend) {
    let receiver = Receiver::start().await;
    let hub = As2Hub::start_with(backend, |c| {
        c.delivery.allow_private_destinations = false;
        c.delivery.retry_schedule = vec!["100ms".into()];
        c.delivery.poll_interval_ms = 100;
    })
    .await;
    let message = Sender::partner(SIGNED).asking_async(&receiver.url("mdn")).message(&x12(6));
    assert_eq!(hub.send(&message).await.status, 200);
    let mut row = None;
    for _ in 0..50 {
        row = hub.received().await.into_iter().find(|r| r.mdn_status == "failed");
        if row.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let row = row.expect("the MDN given up on");
    assert!(row.mdn_error.as_deref().unwrap_or_default().contains("allow_private_destinations"), "{row:?}");
    assert!(receiver.received("mdn").is_empty(), "nothing reached the loopback address");
}

/// A claim whose processing died (the process stopped between the claim
/// and the MDN) is taken over by a re-send once it is old: the re-send is
/// processed and answered, not told to wait for ever.
async fn abandoned_claim_is_taken_over(backend: Backend) {
    use sha2::{Digest, Sha256};
    let hub = As2Hub::start(backend).await;
    let payload = x12(7);
    let message = Sender::partner(SIGNED).message(&payload);
    let abandoned = edihub_store::NewAs2Message {
        key: edihub_store::As2Key {
            station: "EDIHUB".into(),
            partner: "PARTNER".into(),
            message_id: message.sent.message_id.as_str().into(),
        },
        scope: edihub_store::Scope::new("acme", "prod"),
        payload_sha256: hex::encode(Sha256::digest(&payload)),
        mdn_mode: "sync".into(),
        received_at: Utc::now() - chrono::Duration::minutes(10),
    };
    let claim = hub.app.state.store.claim_as2_message(&abandoned).await.unwrap();
    assert_eq!(claim, edihub_store::As2Claim::New);
    let answer = hub.send(&message).await;
    assert!(answer.mdn().disposition.is_positive());
    assert_eq!(hub.app.count_prod().await, 1);
    let received = hub.received().await;
    assert_eq!((received.len(), received[0].mdn_status.as_str()), (1, "sent"));
    assert!(received[0].received_at > abandoned.received_at, "the claim made anew");
}

backend_tests!(
    abandoned_claim_is_taken_over,
    resent_message_id_gets_the_first_mdn,
    message_id_with_another_payload_is_refused,
    concurrent_resends_are_processed_once,
    async_mdn_is_posted_and_retried,
    async_mdn_follows_the_address_policy,
);
