//! Recording attempts and their verdicts, a batch in at most three
//! statements. Each backend writes them ([`VerdictSql`] in
//! `postgres/outbox.rs` and `sqlite/outbox.rs`); what a batch's rounds
//! are, what each verdict leaves, which attempts need a row of their own
//! and which are audited is decided here ([`record`]).
//!
//! The delivery worker hands over the verdicts of the attempts that ended
//! together (see `edihub_server`'s recorder). Written one by one they cost
//! two statements each, and on partitioned PostgreSQL each statement was
//! planned afresh: the prepared plan covers every partition, so PostgreSQL
//! keeps choosing a plan made for the one id. A batch is instead one update
//! of its deliveries and one insert of its attempts, both planned with their
//! message ids known, so only those partitions are read; then the audit
//! events of the deliveries that failed for good.
//!
//! A first attempt that delivers, which is what most deliveries are, is
//! recorded by the update itself, on the delivery row (`first_attempted_at`
//! and the columns beside it): the update knows, from the attempts it
//! counts, whether the attempt was the first. Only the other attempts (a
//! failure, a retry, a replay, a verdict whose lease had passed on) become
//! rows of `delivery_attempts`, so a batch of first-try successes is one
//! statement. [`crate::Store::deliveries_of`] lists the two as one log.
//!
//! An update applies only while the attempt's lease is still the
//! delivery's (and names each delivery once, see [`rounds`]): a verdict
//! whose lease passed to another attempt (its worker was too slow, the delivery was claimed again) changes nothing, and its
//! attempt is still recorded.
//!
//! What a receiver answered is stored as text it cannot make unstorable:
//! a NUL (which PostgreSQL's `text` and `jsonb` refuse) becomes U+FFFD
//! ([`crate::storable_text`]) before anything is written, so one answer
//! cannot make the statements of its batch fail.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::model::{DELIVERED, FAILED, PENDING};
use super::{FinishedAttempt, Recorded, Verdict};
use crate::audit::DELIVERY_FAILED;
use crate::{MessageRow, NewAuditEvent, Result};

/// The statements of a batch of verdicts, each backend's.
pub(crate) trait VerdictSql {
    /// Logs the attempts of `done` as rows of `delivery_attempts`.
    fn insert_attempts(&mut self, done: &[&FinishedAttempt]) -> impl Future<Output = Result<()>> + Send;
    /// Updates a round's deliveries, clearing each lease with its verdict
    /// (a retry moves the due time) and writing a first attempt that
    /// delivered into the row's `first_*` columns; returns (message,
    /// destination, attempts) of each one whose lease was still the
    /// attempt's.
    fn finish(
        &mut self,
        round: &Round<'_>,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<(Uuid, String, i32)>>> + Send;
    /// Audits a delivery given up on: its `delivery.failed` event
    /// ([`failed_event`]) under message `message_id`'s tenant, environment
    /// and type.
    fn audit_failed(
        &mut self,
        message_id: Uuid,
        details: serde_json::Value,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// Records `done` (attempts and verdicts) at `now`, in the caller's
/// transaction `conn`; a delivery failed for good is audited
/// `delivery.failed`. Returns what became of each, in order: applied, or
/// superseded (its lease passed to another attempt).
pub(crate) async fn record<C: VerdictSql + Send>(
    conn: &mut C,
    done: &[FinishedAttempt],
    now: DateTime<Utc>,
) -> Result<Vec<Recorded>> {
    if done.is_empty() {
        return Ok(Vec::new());
    }
    let done = storable(done);
    let mut recorded = vec![Recorded::Superseded; done.len()];
    let mut on_its_row = vec![false; done.len()];
    for round in rounds(&done) {
        let finished = conn.finish(&round, now).await?;
        for (message_id, details) in settle(&round, &finished, &mut recorded, &mut on_its_row) {
            conn.audit_failed(message_id, details, now).await?;
        }
    }
    let rows: Vec<&FinishedAttempt> =
        done.iter().zip(&on_its_row).filter(|(_, on)| !**on).map(|(d, _)| d).collect();
    if !rows.is_empty() {
        conn.insert_attempts(&rows).await?;
    }
    Ok(recorded)
}

/// The status a verdict leaves and, for a retry, when it is due.
pub(crate) fn status_of(verdict: Verdict) -> (&'static str, Option<DateTime<Utc>>) {
    match verdict {
        Verdict::Delivered => (DELIVERED, None),
        Verdict::RetryAt(at) => (PENDING, Some(at)),
        Verdict::Failed => (FAILED, None),
    }
}

/// `done` as written: what each receiver answered made storable.
fn storable(done: &[FinishedAttempt]) -> Vec<FinishedAttempt> {
    done.iter().map(|d| FinishedAttempt { attempt: d.attempt.storable(), ..d.clone() }).collect()
}

/// One round of a batch: attempts with their places in the batch.
pub(crate) type Round<'a> = Vec<(usize, &'a FinishedAttempt)>;

/// `done` in rounds (each attempt with its place in `done`), each naming
/// a delivery at most once, in batch order: a stalled attempt's verdict
/// and the newer one's for the same delivery go to successive updates, as
/// if written one after the other, so what each update returns says which
/// verdict took. Almost always one round.
fn rounds(done: &[FinishedAttempt]) -> Vec<Round<'_>> {
    let mut rounds: Vec<Round<'_>> = Vec::new();
    for (i, d) in done.iter().enumerate() {
        let same = |(_, x): &(usize, &FinishedAttempt)| {
            x.message_id == d.message_id && x.destination_id == d.destination_id
        };
        match rounds.iter_mut().find(|r| !r.iter().any(same)) {
            Some(round) => round.push((i, d)),
            None => rounds.push(vec![(i, d)]),
        }
    }
    rounds
}

/// Marks in `recorded` the attempts of `round` whose update applied
/// (`finished`: message, destination and attempts of each delivery whose
/// lease was still the attempt's), and in `on_its_row` those the update
/// wrote on the delivery row (a first attempt that delivered: the update
/// counted its first attempt); returns the message and the event details
/// of each delivery that failed for good, to audit.
fn settle(
    round: &Round<'_>,
    finished: &[(Uuid, String, i32)],
    recorded: &mut [Recorded],
    on_its_row: &mut [bool],
) -> Vec<(Uuid, serde_json::Value)> {
    let mut failed = Vec::new();
    for (i, d) in round {
        let applied = finished.iter().find(|(m, dest, _)| *m == d.message_id && *dest == d.destination_id);
        let Some((_, _, attempts)) = applied else {
            tracing::info!(message_id = %d.message_id, destination = %d.destination_id,
                "delivery: the lease passed to another attempt; this verdict is not recorded");
            continue;
        };
        recorded[*i] = Recorded::Applied;
        on_its_row[*i] = *attempts == 1 && d.verdict == Verdict::Delivered;
        if d.verdict == Verdict::Failed {
            failed.push((
                d.message_id,
                serde_json::json!({
                    "destination": d.destination_id,
                    "attempts": attempts,
                    "last_status_code": d.attempt.status_code,
                    "last_error": d.attempt.error,
                }),
            ));
        }
    }
    failed
}

/// The `delivery.failed` event of a delivery given up on.
pub(crate) fn failed_event(
    message_id: Uuid,
    message: Option<&MessageRow>,
    details: serde_json::Value,
) -> NewAuditEvent {
    super::delivery_event(DELIVERY_FAILED, message_id, message, details)
}
