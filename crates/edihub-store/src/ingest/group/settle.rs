//! Settling one batch of the group insert: the statements of
//! [`crate::ingest::statements`] over the whole batch, then each request
//! decided by [`crate::ingest::decide`], in the same terms as the ingest
//! transaction.
//!
//! A statement that fails leaves its requests [`Verdict::Undecided`]: nothing
//! it did was committed, and each request runs its own transaction, so one
//! bad row cannot fail its neighbours' requests.

use chrono::{DateTime, Utc};
use sqlx::Pool;
use uuid::Uuid;

use super::{Queued, Verdict};
use crate::backend::Backend;
use crate::ingest::decide::{duplicate_of, kept, repeat};
use crate::ingest::statements::{Claim, Row};
use crate::{Answer, DetectedBy, IngestOutcome, MessageOutcome, NewAuditEvent, Result, Scope, StoreError};

fn row(q: &Queued) -> Row<'_> {
    Row { scope: &q.scope, now: q.now, message: &q.message, payload_holder: None }
}

/// The (scope, fingerprint) claims of the items whose row was not inserted.
fn unsettled_claims<'a>(items: &[&'a Queued], inserted: &[Uuid]) -> Vec<(&'a Scope, &'a str)> {
    items
        .iter()
        .filter(|q| !inserted.contains(&q.message.id))
        .filter_map(|q| Some((&q.scope, q.message.fingerprint.as_deref()?)))
        .collect()
}

/// Settles one batch of requests without a key: the insert in autocommit,
/// then their plain duplicates.
pub(super) async fn without_keys<DB: Backend>(pool: &Pool<DB>, items: &[&Queued]) -> Vec<Verdict> {
    let mut verdicts = vec![Verdict::Undecided; items.len()];
    let settled = async {
        let mut conn = pool.acquire().await?;
        let rows: Vec<Row<'_>> = items.iter().map(|q| row(q)).collect();
        let inserted = DB::insert_messages(&mut conn, &rows).await?;
        for (q, v) in items.iter().zip(verdicts.iter_mut()) {
            if inserted.contains(&q.message.id) {
                *v = Verdict::Inserted;
            }
        }
        let claims = unsettled_claims(items, &inserted);
        if claims.is_empty() {
            return Ok(());
        }
        let holders = DB::holders(&mut conn, &claims).await?;
        let mut events = Vec::new();
        let mut duplicates = Vec::new();
        for (i, q) in items.iter().enumerate() {
            if verdicts[i] == Verdict::Undecided
                && let Some((existing, event)) = duplicate_of(&q.scope, &q.message, q.now, &holders)
            {
                events.push((q.now, event));
                duplicates.push((i, existing));
            }
        }
        if !events.is_empty() {
            // Until their events are written, the duplicates stay undecided.
            DB::insert_audits(&mut conn, &events).await?;
            duplicates.into_iter().for_each(|(i, existing)| verdicts[i] = Verdict::Duplicate(existing));
        }
        Ok::<_, crate::StoreError>(())
    };
    if let Err(e) = settled.await {
        // Inserted rows are committed and stay Inserted; the rest run their
        // own transactions.
        tracing::debug!(error = %e, rows = items.len(), "group insert left rows undecided");
    }
    verdicts
}

/// Settles one batch of requests with keys: claims, messages, duplicates
/// and kept answers in one transaction; then the repeats of keys claimed
/// before, read after the commit. An error leaves everything undecided.
pub(super) async fn with_keys<DB: Backend>(pool: &Pool<DB>, items: &[&Queued]) -> Vec<Verdict> {
    let mut verdicts = vec![Verdict::Undecided; items.len()];
    let claimed = match claimed_in_one_transaction(pool, items, &mut verdicts).await {
        Ok(claimed) => claimed,
        Err(e) => {
            // Nothing was committed; each request runs its own transaction.
            tracing::debug!(error = %e, rows = items.len(), "keyed group insert failed");
            return vec![Verdict::Undecided; items.len()];
        }
    };
    // Repeats: every claim they met is committed by now (an earlier
    // request's, or this batch's), with its answer.
    let repeats: Vec<usize> = (0..items.len()).filter(|i| !claimed[*i]).collect();
    if !repeats.is_empty()
        && let Err(e) = settle_repeats(pool, items, &repeats, &mut verdicts).await
    {
        // The claimed requests are committed; the repeats run their own
        // transactions.
        tracing::debug!(error = %e, "group key lookup failed");
    }
    verdicts
}

/// The transaction of a keyed batch; returns which items claimed their key
/// and sets their verdicts once committed. Each key is claimed with the
/// answer of a new message already in it, so the common batch (all new) is
/// a claim and an insert; only a key whose message turns out a duplicate
/// has its answer rewritten before the commit. An expired window or a
/// vanished holder rolls the batch back and leaves it to each request's
/// transaction.
async fn claimed_in_one_transaction<DB: Backend>(
    pool: &Pool<DB>,
    items: &[&Queued],
    verdicts: &mut [Verdict],
) -> Result<Vec<bool>> {
    let accepted: Vec<Answer> = items
        .iter()
        .map(|q| Answer {
            outcomes: vec![MessageOutcome::Accepted(q.message.summary(q.now))],
            envelope: q.envelope.clone(),
        })
        .collect();
    let expected = accepted.iter().map(kept).collect::<Result<Vec<_>>>()?;
    let claims = items
        .iter()
        .zip(&expected)
        .map(|(q, (text, id))| {
            let key =
                q.key.as_ref().ok_or_else(|| StoreError::Invariant("keyed batch without a key".into()))?;
            Ok(Claim { scope: &q.scope, key, now: q.now, expected: Some((text.as_str(), *id)) })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut tx = pool.begin_with(DB::BEGIN).await?;
    DB::release_expired_keys(&mut tx, &claims).await?;
    let claimed = DB::claim_keys(&mut tx, &claims).await?;
    let winners: Vec<usize> = (0..items.len()).filter(|i| claimed[*i]).collect();
    if winners.is_empty() {
        tx.commit().await?;
        return Ok(claimed);
    }
    let rows: Vec<Row<'_>> = winners.iter().map(|i| row(items[*i])).collect();
    let inserted = DB::insert_messages(&mut tx, &rows).await?;
    let unsettled: Vec<usize> =
        winners.iter().copied().filter(|i| !inserted.contains(&items[*i].message.id)).collect();
    let Some(duplicates) = settle_duplicates::<DB>(&mut tx, items, &unsettled).await? else {
        return Ok(vec![false; items.len()]);
    };
    tx.commit().await?;
    let mut accepted: Vec<Option<Answer>> = accepted.into_iter().map(Some).collect();
    for (i, answer) in duplicates {
        accepted[i] = Some(answer);
    }
    for &i in &winners {
        if let Some(answer) = accepted[i].take() {
            verdicts[i] = Verdict::Outcome(IngestOutcome::Processed(answer));
        }
    }
    Ok(claimed)
}

/// The claimed items at `unsettled`, whose message was not inserted: each
/// a duplicate of a live holder, audited, its key's answer rewritten; `None`
/// when one cannot be settled here (the batch then rolls back).
async fn settle_duplicates<DB: Backend>(
    conn: &mut DB::Connection,
    items: &[&Queued],
    unsettled: &[usize],
) -> Result<Option<Vec<(usize, Answer)>>> {
    if unsettled.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let claims: Vec<_> = unsettled
        .iter()
        .filter_map(|i| Some((&items[*i].scope, items[*i].message.fingerprint.as_deref()?)))
        .collect();
    let holders = if claims.is_empty() { Vec::new() } else { DB::holders(conn, &claims).await? };
    let (mut events, mut finished, mut answers) = (Vec::new(), Vec::new(), Vec::new());
    for &i in unsettled {
        let q = items[i];
        let (Some(key), Some((existing, event))) =
            (&q.key, duplicate_of(&q.scope, &q.message, q.now, &holders))
        else {
            return Ok(None);
        };
        events.push((q.now, event));
        let outcome = MessageOutcome::Duplicate { existing, detected_by: DetectedBy::Fingerprint };
        let answer = Answer { outcomes: vec![outcome], envelope: q.envelope.clone() };
        let (text, message_id) = kept(&answer)?;
        finished.push((&q.scope, key, text, message_id));
        answers.push((i, answer));
    }
    DB::insert_audits(conn, &events).await?;
    DB::finish_keys(conn, &finished).await?;
    Ok(Some(answers))
}

/// Answers the items at `repeats` from their keys' kept answers, auditing
/// each repeat.
async fn settle_repeats<DB: Backend>(
    pool: &Pool<DB>,
    items: &[&Queued],
    repeats: &[usize],
    verdicts: &mut [Verdict],
) -> Result<()> {
    let mut conn = pool.acquire().await?;
    let keys: Vec<_> =
        repeats.iter().filter_map(|i| Some((&items[*i].scope, items[*i].key.as_ref()?))).collect();
    let states = DB::key_states(&mut conn, &keys).await?;
    let mut decided: Vec<(usize, IngestOutcome)> = Vec::new();
    let mut events: Vec<(DateTime<Utc>, NewAuditEvent)> = Vec::new();
    for &i in repeats {
        let q = items[i];
        let Some(key) = &q.key else { continue };
        if let Some((outcome, event)) = repeat(&q.scope, key, &states)? {
            events.push((q.now, event));
            decided.push((i, outcome));
        }
    }
    if !events.is_empty() {
        DB::insert_audits(&mut conn, &events).await?;
    }
    decided.into_iter().for_each(|(i, outcome)| verdicts[i] = Verdict::Outcome(outcome));
    Ok(())
}
