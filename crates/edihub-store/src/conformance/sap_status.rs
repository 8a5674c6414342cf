//! Status owed to SAP senders (`Store::record_sap_statuses` and the
//! batcher's statements): 39 when stored, 41 once delivered to every
//! destination, 40 with the reason when a delivery fails for good; a
//! re-sent IDoc gets its message's current status; one pending status per
//! IDoc number and state, also when re-sends race; a batch is carried by
//! one status message, stored with its deliveries; a refused IDoc gets a
//! 40 with the refusal's reason, about no message.

use chrono::Duration;

use super::outbox::{attempt, destination};
use super::support::*;
use crate::{
    FinishedAttempt, NewSapStatus, SAP_CREATED, SAP_IN_TARGET, SAP_NOT_CREATED, SapRefusal, SapStatusRow,
    SapStatusState, Verdict,
};

/// How many re-sends race.
pub const SAP_RACERS: usize = 16;

const DOCNUM: &str = "0000000000004711";

fn change(message_id: uuid::Uuid, docnum: &str, state: SapStatusState) -> NewSapStatus {
    NewSapStatus { message_id, docnum: docnum.into(), mestyp: "ORDERS".into(), state }
}

/// Stores one message of `scope` and records its 39.
async fn stored_idoc(store: &StoreRef, scope: &Scope, fingerprint: &str, docnum: &str) -> uuid::Uuid {
    let out = processed(ingest_at(store, scope, None, vec![message(Some(fingerprint))], now()).await);
    let id = outcome_id(&out[0]);
    let added = store.record_sap_statuses(scope, &[change(id, docnum, SapStatusState::Stored)], now()).await;
    assert_eq!(added.expect("record"), 1);
    id
}

/// Claims `dest`'s deliveries and records `verdict` for each.
async fn finish_all(
    store: &StoreRef,
    dest: &str,
    verdict: Verdict,
    status: Option<i32>,
    error: Option<&str>,
) {
    let claimed = store.claim_deliveries(dest, now(), now() + Duration::seconds(30), 100).await.unwrap();
    assert!(!claimed.is_empty(), "{dest} has deliveries");
    for c in claimed {
        let done = FinishedAttempt {
            message_id: c.message_id,
            destination_id: dest.into(),
            attempt: attempt(status, error),
            verdict,
            lease_until: c.lease_until,
            sap_status: true,
        };
        store.finish_delivery(&done).await.unwrap();
    }
}

fn statuses(rows: &[SapStatusRow]) -> Vec<(&str, &str)> {
    rows.iter().map(|r| (r.docnum.as_str(), r.status.as_str())).collect()
}

/// 39 when stored; 41 only once every destination has it; 40 with the
/// destination and its answer (a NUL in it stored as U+FFFD) when one
/// fails for good; nothing for a message without a 39.
pub async fn sap_status_follows_deliveries(store: StoreRef) {
    let scope = fresh_scope();
    let rows = [destination("erp", &scope, None, true), destination("wms", &scope, None, true)];
    store.seed_destinations(&rows).await.unwrap();
    let id = stored_idoc(&store, &scope, "ss-1", DOCNUM).await;
    let plain = processed(ingest_at(&store, &scope, None, vec![message(Some("ss-plain"))], now()).await);
    let pending = store.pending_sap_statuses(&scope, 100).await.unwrap();
    assert_eq!(statuses(&pending), [(DOCNUM, SAP_IN_TARGET)]);
    assert_eq!(pending[0].message_id, Some(id));
    assert_eq!(pending[0].mestyp, "ORDERS");
    assert_eq!(pending[0].text, "IDoc stored by edihub as message &1");
    assert_eq!(pending[0].params.0, [id.to_string()]);
    assert_eq!(pending[0].batch_message_id, None);

    finish_all(&store, "erp", Verdict::Delivered, Some(200), None).await;
    let pending = store.pending_sap_statuses(&scope, 100).await.unwrap();
    assert_eq!(statuses(&pending), [(DOCNUM, SAP_IN_TARGET)], "wms still owes its delivery");
    finish_all(&store, "wms", Verdict::Delivered, Some(200), None).await;
    let pending = store.pending_sap_statuses(&scope, 100).await.unwrap();
    assert_eq!(statuses(&pending), [(DOCNUM, SAP_IN_TARGET), (DOCNUM, SAP_CREATED)]);
    assert_eq!(pending[1].message_id, Some(id));
    assert_eq!(pending[1].text, "IDoc delivered by edihub to every destination");
    assert!(
        store.sap_statuses_of(outcome_id(&plain[0])).await.unwrap().is_empty(),
        "a message without a 39 gets no status from its deliveries"
    );

    let failing = stored_idoc(&store, &scope, "ss-2", "0000000000004712").await;
    let claimed = store.claim_deliveries("erp", now(), now() + Duration::seconds(30), 10).await.unwrap();
    let c = claimed.iter().find(|c| c.message_id == failing).expect("claimed");
    let done = FinishedAttempt {
        message_id: failing,
        destination_id: "erp".into(),
        attempt: attempt(Some(503), Some("HTTP 503 Service Unavailable \0")),
        verdict: Verdict::Failed,
        lease_until: c.lease_until,
        sap_status: true,
    };
    store.finish_delivery(&done).await.unwrap();
    let of = store.sap_statuses_of(failing).await.unwrap();
    assert_eq!(statuses(&of), [("0000000000004712", SAP_IN_TARGET), ("0000000000004712", SAP_NOT_CREATED)]);
    assert_eq!(
        of[1].text, "Delivery to erp failed: HTTP 503 Service Unavailable \u{FFFD}",
        "a NUL stored as U+FFFD"
    );
    assert_eq!(of[1].params.0, ["erp", "503"]);
}

/// A re-send while the first status is pending adds nothing; once carried,
/// a re-send (same or another IDoc number) gets the message's current
/// status. A batch is carried by one message, stored with its deliveries;
/// carrying it again stores nothing.
pub async fn sap_status_of_resent_idocs(store: StoreRef) {
    let scope = fresh_scope();
    let rows =
        [destination("sap", &scope, Some(&["ALEAUD01"]), true), destination("erp", &scope, None, true)];
    store.seed_destinations(&rows).await.unwrap();
    let id = stored_idoc(&store, &scope, "rs-1", DOCNUM).await;
    let resend = [change(id, DOCNUM, SapStatusState::Current)];
    assert_eq!(
        store.record_sap_statuses(&scope, &resend, now()).await.unwrap(),
        0,
        "the 39 is still pending"
    );

    let pending = store.pending_sap_statuses(&scope, 100).await.unwrap();
    let ids: Vec<i64> = pending.iter().map(|r| r.id).collect();
    let mut status = message(None);
    status.message_type = "ALEAUD01".into();
    status.mestyp = Some("ALEAUD".into());
    let before = store.count_messages(&scope).await.unwrap();
    assert!(store.store_sap_status_message(&scope, &status, &ids, now()).await.unwrap());
    assert_eq!(store.count_messages(&scope).await.unwrap(), before + 1);
    let reports = store.deliveries_of(status.id).await.unwrap();
    let to: Vec<&str> = reports.iter().map(|r| r.delivery.destination_id.as_str()).collect();
    assert_eq!(to, ["erp", "sap"], "the status message has the deliveries of its type");
    assert!(store.pending_sap_statuses(&scope, 100).await.unwrap().is_empty());
    let carried = store.sap_statuses_of(status.id).await.unwrap();
    assert_eq!(statuses(&carried), [(DOCNUM, SAP_IN_TARGET)]);
    assert_eq!(carried[0].batch_message_id, Some(status.id));

    let mut twice = message(None);
    twice.message_type = "ALEAUD01".into();
    assert!(!store.store_sap_status_message(&scope, &twice, &ids, now()).await.unwrap(), "carried already");
    assert!(store.get_message(twice.id).await.unwrap().is_none(), "nothing stored");
    assert_eq!(store.count_messages(&scope).await.unwrap(), before + 1);

    let again = store.record_sap_statuses(&scope, &resend, now()).await.unwrap();
    assert_eq!(again, 1, "carried: the re-send gets its status again");
    finish_all(&store, "erp", Verdict::Delivered, Some(200), None).await;
    let resent_as = "0000000000004799";
    let renumbered = [change(id, resent_as, SapStatusState::Current)];
    assert_eq!(store.record_sap_statuses(&scope, &renumbered, now()).await.unwrap(), 1);
    let pending = store.pending_sap_statuses(&scope, 100).await.unwrap();
    assert_eq!(
        statuses(&pending),
        [(DOCNUM, SAP_IN_TARGET), (DOCNUM, SAP_CREATED), (resent_as, SAP_CREATED)],
        "a re-send under a new number gets the message's current status, 41"
    );
    assert!(pending.iter().all(|r| r.message_id == Some(id)));
    assert!(
        store.sap_statuses_of(status.id).await.unwrap().len() == 1,
        "a status message's own delivery records no status"
    );

    // Retention deletes what a status message carried, never what is still owed.
    let purge =
        store.retention_step(crate::RetentionStep::PurgeSapStatus, now() + Duration::seconds(1), now(), 100);
    assert_eq!(purge.await.unwrap(), 1, "the carried 39");
    assert!(store.sap_statuses_of(status.id).await.unwrap().is_empty());
    assert_eq!(store.pending_sap_statuses(&scope, 100).await.unwrap().len(), 3, "the pending ones stay");
}

/// Re-sends of one IDoc racing while its status is pending queue one
/// status; batchers racing for the same changes store one status message.
pub async fn racing_resends_queue_one_status(store: StoreRef) {
    let scope = fresh_scope();
    let out = processed(ingest_at(&store, &scope, None, vec![message(Some("race-1"))], now()).await);
    let id = outcome_id(&out[0]);
    let mut tasks = Vec::new();
    for i in 0..SAP_RACERS {
        let (store, scope) = (store.clone(), scope.clone());
        let state = if i % 2 == 0 { SapStatusState::Stored } else { SapStatusState::Current };
        tasks.push(tokio::spawn(async move {
            store.record_sap_statuses(&scope, &[change(id, DOCNUM, state)], now()).await.expect("record")
        }));
    }
    let mut added = 0;
    for t in tasks {
        added += t.await.expect("task");
    }
    assert_eq!(added, 1, "one pending status per IDoc and state");
    let pending = store.pending_sap_statuses(&scope, 100).await.unwrap();
    assert_eq!(statuses(&pending), [(DOCNUM, SAP_IN_TARGET)]);

    let ids: Vec<i64> = pending.iter().map(|r| r.id).collect();
    let mut tasks = Vec::new();
    for _ in 0..SAP_RACERS {
        let (store, scope, ids) = (store.clone(), scope.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            let mut m = message(None);
            m.message_type = "ALEAUD01".into();
            store.store_sap_status_message(&scope, &m, &ids, now()).await.expect("store")
        }));
    }
    let mut stored = 0;
    for t in tasks {
        stored += usize::from(t.await.expect("task"));
    }
    assert_eq!(stored, 1, "one status message carries the changes");
    assert_eq!(store.count_messages(&scope).await.unwrap(), 2, "the IDoc and one status message");
}

/// How many rounds the verdicts and the 39 of one message race.
pub const SAP_VERDICT_ROUNDS: usize = 24;

/// Stores one message of `scope` without recording a status.
async fn unrecorded_idoc(store: &StoreRef, scope: &Scope, fingerprint: &str) -> uuid::Uuid {
    let out = processed(ingest_at(store, scope, None, vec![message(Some(fingerprint))], now()).await);
    outcome_id(&out[0])
}

/// Records the 39 of message `id`, IDoc `docnum`; returns how many changes were added.
async fn record_stored(store: &StoreRef, scope: &Scope, id: uuid::Uuid, docnum: &str) -> u64 {
    let changes = [change(id, docnum, SapStatusState::Stored)];
    store.record_sap_statuses(scope, &changes, now()).await.expect("record")
}

/// A destination that delivers (or fails) before the 39 is recorded: the
/// 39's recording records the 41 (or the 40 with the verdict's text) the
/// deliveries earned, after the 39; a re-send while both are pending adds
/// nothing; a delivery still pending has earned nothing.
pub async fn sap_status_after_an_early_verdict(store: StoreRef) {
    let scope = fresh_scope();
    store.seed_destinations(&[destination("erp", &scope, None, true)]).await.unwrap();
    let id = unrecorded_idoc(&store, &scope, "ev-1").await;
    finish_all(&store, "erp", Verdict::Delivered, Some(200), None).await;
    assert!(store.sap_statuses_of(id).await.unwrap().is_empty(), "no 39 yet: the verdict records nothing");
    let added = record_stored(&store, &scope, id, DOCNUM).await;
    assert_eq!(added, 2, "the 39 and the 41 it earned");
    let of = store.sap_statuses_of(id).await.unwrap();
    assert_eq!(statuses(&of), [(DOCNUM, SAP_IN_TARGET), (DOCNUM, SAP_CREATED)]);
    assert_eq!(of[1].text, "IDoc delivered by edihub to every destination");
    assert!(of[1].params.0.is_empty());
    assert!(
        of.iter().all(|r| r.message_id == Some(id) && r.mestyp == "ORDERS" && r.batch_message_id.is_none())
    );
    let resend = [change(id, DOCNUM, SapStatusState::Current)];
    assert_eq!(store.record_sap_statuses(&scope, &resend, now()).await.unwrap(), 0, "both still pending");

    let failing_docnum = "0000000000004712";
    let failing = unrecorded_idoc(&store, &scope, "ev-2").await;
    finish_all(&store, "erp", Verdict::Failed, Some(503), Some("HTTP 503 Service Unavailable")).await;
    let added = record_stored(&store, &scope, failing, failing_docnum).await;
    assert_eq!(added, 2, "the 39 and the 40 it earned");
    let of = store.sap_statuses_of(failing).await.unwrap();
    assert_eq!(statuses(&of), [(failing_docnum, SAP_IN_TARGET), (failing_docnum, SAP_NOT_CREATED)]);
    assert_eq!(of[1].text, "Delivery to erp failed: HTTP 503 Service Unavailable");
    assert_eq!(of[1].params.0, ["erp", "503"]);

    let waiting = unrecorded_idoc(&store, &scope, "ev-3").await;
    let added = record_stored(&store, &scope, waiting, "0000000000004713").await;
    assert_eq!(added, 1, "a delivery still pending has earned nothing");
    assert_eq!(
        statuses(&store.sap_statuses_of(waiting).await.unwrap()),
        [("0000000000004713", SAP_IN_TARGET)]
    );
}

/// The verdicts of a message's two destinations and the recording of its
/// 39 run at the same time, round after round: every round ends with the
/// 39 and then one 41, whichever commits first.
pub async fn racing_verdicts_and_status_record_the_41(store: StoreRef) {
    let scope = fresh_scope();
    let rows = [destination("erp", &scope, None, true), destination("wms", &scope, None, true)];
    store.seed_destinations(&rows).await.unwrap();
    for round in 0..SAP_VERDICT_ROUNDS {
        let id = unrecorded_idoc(&store, &scope, &format!("rv-{round}")).await;
        let docnum = format!("{:016}", 5000 + round);
        let mut claimed = Vec::new();
        for dest in ["erp", "wms"] {
            let c = store.claim_deliveries(dest, now(), now() + Duration::seconds(30), 10).await.unwrap();
            assert_eq!(c.len(), 1, "{dest} has the round's delivery");
            claimed.extend(c);
        }
        let mut verdicts = Vec::new();
        for c in claimed {
            let store = store.clone();
            verdicts.push(tokio::spawn(async move {
                let done = FinishedAttempt {
                    message_id: c.message_id,
                    destination_id: c.destination_id.clone(),
                    attempt: attempt(Some(200), None),
                    verdict: Verdict::Delivered,
                    lease_until: c.lease_until,
                    sap_status: true,
                };
                store.finish_delivery(&done).await.expect("verdict")
            }));
        }
        let (s, sc, d) = (store.clone(), scope.clone(), docnum.clone());
        let record = tokio::spawn(async move {
            s.record_sap_statuses(&sc, &[change(id, &d, SapStatusState::Stored)], now())
                .await
                .expect("record")
        });
        for v in verdicts {
            v.await.expect("task");
        }
        record.await.expect("task");
        let of = store.sap_statuses_of(id).await.unwrap();
        assert_eq!(
            statuses(&of),
            [(docnum.as_str(), SAP_IN_TARGET), (docnum.as_str(), SAP_CREATED)],
            "round {round}"
        );
    }
}

/// One verdict batch (one transaction) mixing delivered, retried and
/// failed attempts of IDocs with a 39: a 41 only for the IDoc whose every
/// delivery is delivered, a 40 per IDoc with a delivery failed for good
/// (the first failure's text), nothing for a retry, and nothing for an
/// attempt the server did not mark as one of a reporting environment.
pub async fn a_mixed_verdict_batch_records_the_right_statuses(store: StoreRef) {
    let scope = fresh_scope();
    let rows = [destination("erp", &scope, None, true), destination("wms", &scope, None, true)];
    store.seed_destinations(&rows).await.unwrap();
    let docnums =
        ["0000000000006001", "0000000000006002", "0000000000006003", "0000000000006004", "0000000000006005"];
    let mut ids = Vec::new();
    for (i, docnum) in docnums.iter().enumerate() {
        ids.push(stored_idoc(&store, &scope, &format!("mix-{i}"), docnum).await);
    }
    let retry = Verdict::RetryAt(now() + Duration::minutes(5));
    let plan = [
        (Verdict::Delivered, Verdict::Delivered, true),
        (Verdict::Delivered, retry, true),
        (Verdict::Failed, Verdict::Delivered, true),
        (Verdict::Failed, Verdict::Failed, true),
        (Verdict::Delivered, Verdict::Delivered, false),
    ];
    let mut batch = Vec::new();
    for dest in ["erp", "wms"] {
        let claimed = store.claim_deliveries(dest, now(), now() + Duration::seconds(30), 10).await.unwrap();
        assert_eq!(claimed.len(), ids.len(), "{dest} has every IDoc's delivery");
        for c in claimed {
            let i = ids.iter().position(|id| *id == c.message_id).expect("one of ours");
            let (verdict, marked) = match dest {
                "erp" => (plan[i].0, plan[i].2),
                _ => (plan[i].1, plan[i].2),
            };
            let failed = verdict == Verdict::Failed;
            batch.push(FinishedAttempt {
                message_id: c.message_id,
                destination_id: dest.into(),
                attempt: if failed { attempt(Some(503), Some("HTTP 503")) } else { attempt(Some(200), None) },
                verdict,
                lease_until: c.lease_until,
                sap_status: marked,
            });
        }
    }
    let recorded = store.finish_deliveries(&batch).await.unwrap();
    assert!(recorded.iter().all(|r| *r == crate::Recorded::Applied), "{recorded:?}");
    let mut got = Vec::new();
    for id in &ids {
        let of = store.sap_statuses_of(*id).await.unwrap();
        got.push(of.iter().map(|r| (r.status.clone(), r.text.clone())).collect::<Vec<_>>());
    }
    let stored = || (SAP_IN_TARGET.to_string(), "IDoc stored by edihub as message &1".to_string());
    let created = (SAP_CREATED.to_string(), "IDoc delivered by edihub to every destination".to_string());
    let erp_failed = (SAP_NOT_CREATED.to_string(), "Delivery to erp failed: HTTP 503".to_string());
    assert_eq!(got[0], [stored(), created], "both delivered: one 41");
    assert_eq!(got[1], [stored()], "wms retries: nothing yet");
    assert_eq!(got[2], [stored(), erp_failed.clone()], "erp failed: 40, no 41");
    assert_eq!(got[3], [stored(), erp_failed], "both failed: one 40, the first failure's");
    assert_eq!(got[4], [stored()], "not marked: no status");
}

/// A status message of `scope` (ALEAUD01).
fn status_message() -> crate::NewMessage {
    let mut m = message(None);
    m.message_type = "ALEAUD01".into();
    m.mestyp = Some("ALEAUD".into());
    m
}

/// Carrying is all or nothing: changes of which one is carried already
/// store no status message and mark none of the others; no changes store
/// none either.
pub async fn carrying_is_all_or_nothing(store: StoreRef) {
    let scope = fresh_scope();
    stored_idoc(&store, &scope, "ca-1", "0000000000007001").await;
    stored_idoc(&store, &scope, "ca-2", "0000000000007002").await;
    let pending = store.pending_sap_statuses(&scope, 100).await.unwrap();
    let (a, b) = (pending[0].id, pending[1].id);
    let first = status_message();
    assert!(store.store_sap_status_message(&scope, &first, &[a], now()).await.unwrap());
    let before = store.count_messages(&scope).await.unwrap();

    let late = status_message();
    assert!(!store.store_sap_status_message(&scope, &late, &[a, b], now()).await.unwrap(), "a is carried");
    assert!(store.get_message(late.id).await.unwrap().is_none(), "nothing stored");
    let pending = store.pending_sap_statuses(&scope, 100).await.unwrap();
    assert_eq!(
        pending.iter().map(|r| (r.id, r.batch_message_id)).collect::<Vec<_>>(),
        [(b, None)],
        "b unmarked"
    );
    let carried = store.sap_statuses_of(first.id).await.unwrap();
    assert_eq!(carried.iter().map(|r| r.id).collect::<Vec<_>>(), [a], "a stays the first message's");

    let empty = status_message();
    assert!(!store.store_sap_status_message(&scope, &empty, &[], now()).await.unwrap(), "carries nothing");
    assert!(store.get_message(empty.id).await.unwrap().is_none(), "nothing stored");
    assert_eq!(store.count_messages(&scope).await.unwrap(), before);

    let next = status_message();
    assert!(store.store_sap_status_message(&scope, &next, &[b], now()).await.unwrap());
    assert!(store.pending_sap_statuses(&scope, 100).await.unwrap().is_empty());
    assert_eq!(store.count_messages(&scope).await.unwrap(), before + 1);
}

/// A refusal of an IDoc of a SAP sender's (`docnum`), answered with 422.
fn refusal(docnum: &str) -> SapRefusal {
    SapRefusal {
        docnum: docnum.into(),
        mestyp: "ORDERS".into(),
        code: 422,
        reason: format!("the sender (EDI_DC40.SNDPRN) of IDoc {docnum} is {}", "x".repeat(120)),
    }
}

/// A refused IDoc records a 40 with the whole reason and the HTTP status,
/// about no message; one still pending takes no second; once carried, a
/// new refusal of it records one again, and the status message lists what
/// it carries.
pub async fn sap_refusals_are_recorded_without_a_message(store: StoreRef) {
    let scope = fresh_scope();
    let (a, b) = ("0000000000008001", "0000000000008002");
    let refusals = [refusal(a), refusal(b)];
    assert_eq!(store.record_sap_refusals(&scope, &refusals, now()).await.unwrap(), 2);
    let pending = store.pending_sap_statuses(&scope, 100).await.unwrap();
    assert_eq!(statuses(&pending), [(a, SAP_NOT_CREATED), (b, SAP_NOT_CREATED)]);
    for (row, r) in pending.iter().zip(&refusals) {
        assert_eq!(row.message_id, None, "no message holds a refused IDoc");
        assert_eq!(row.mestyp, "ORDERS");
        assert_eq!(row.text, format!("IDoc refused by edihub: {}", r.reason), "the whole reason");
        assert_eq!(row.params.0, ["422"]);
        assert_eq!(row.batch_message_id, None);
    }
    assert_eq!(store.count_messages(&scope).await.unwrap(), 0, "nothing stored as a message");

    // Sent again while its 40 is pending: nothing added.
    assert_eq!(store.record_sap_refusals(&scope, &[refusal(a)], now()).await.unwrap(), 0);
    assert_eq!(store.pending_sap_statuses(&scope, 100).await.unwrap().len(), 2);

    let carrier = status_message();
    let ids: Vec<i64> = pending.iter().map(|r| r.id).collect();
    assert!(store.store_sap_status_message(&scope, &carrier, &ids, now()).await.unwrap());
    let carried = store.sap_statuses_of(carrier.id).await.unwrap();
    assert_eq!(statuses(&carried), [(a, SAP_NOT_CREATED), (b, SAP_NOT_CREATED)]);
    assert!(carried.iter().all(|r| r.message_id.is_none() && r.batch_message_id == Some(carrier.id)));

    // Refused again after its status left: a new 40 is owed.
    assert_eq!(store.record_sap_refusals(&scope, &[refusal(a)], now()).await.unwrap(), 1);
    let pending = store.pending_sap_statuses(&scope, 100).await.unwrap();
    assert_eq!(statuses(&pending), [(a, SAP_NOT_CREATED)]);
    assert_eq!(store.count_messages(&scope).await.unwrap(), 1, "the status message only");
}
