//! The keyed batches of the group insert: requests with an
//! Idempotency-Key, a provider's event id or an interchange, whose key
//! claim, message and kept answer commit together (see [`super`]).

use uuid::Uuid;

use super::audits::{AuditWriter, Events};
use super::queued::{Queued, Verdict};
use super::settle::row;
use crate::backend::Backend;
use crate::ingest::decide::{duplicate_of, kept, repeat};
use crate::ingest::insert_answer::Inserted;
use crate::ingest::keys::{Claim, KeySql};
use crate::ingest::statements::{IngestSql, Row};
use crate::session::Sessions;
use crate::{Answer, DetectedBy, IngestOutcome, MessageOutcome, Result, StoreError};

/// Settles one batch of requests with keys. Where the backend has one
/// (PostgreSQL, `Backend::claim_and_insert`), the batch is first one
/// statement (unless a key has a window); what it leaves (requests whose
/// fingerprint has a holder) is settled as a batch of its own by the
/// transaction, as every keyed batch is on SQLite and when the statement
/// fails.
pub(super) async fn with_keys<DB: Backend>(
    pool: &Sessions<DB>,
    audits: &AuditWriter,
    items: &[&Queued],
) -> Vec<Verdict> {
    // A claim with a window (an interchange's) may have to release an
    // expired claim first, which only the transaction does.
    let windowed = items.iter().any(|q| q.key.as_ref().is_some_and(|k| k.window_seconds.is_some()));
    if !windowed {
        let mut verdicts = vec![Verdict::Undecided; items.len()];
        match claimed_in_one_statement(pool, items, &mut verdicts).await {
            Ok(Some(claimed)) => {
                settle_unclaimed(pool, audits, items, &claimed, &mut verdicts).await;
                let left: Vec<usize> =
                    (0..items.len()).filter(|i| verdicts[*i] == Verdict::Undecided).collect();
                if !left.is_empty() {
                    let rest: Vec<&Queued> = left.iter().map(|i| items[*i]).collect();
                    let settled = in_one_transaction(pool, audits, &rest).await;
                    left.into_iter().zip(settled).for_each(|(i, v)| verdicts[i] = v);
                }
                return verdicts;
            }
            Ok(None) => {}
            // A holder committed meanwhile (or any other failure): the
            // statement kept nothing, and the transaction settles the batch.
            Err(e) => tracing::debug!(error = %e, rows = items.len(), "keyed batch statement failed"),
        }
    }
    in_one_transaction(pool, audits, items).await
}

/// Claims, messages, duplicates and kept answers in one transaction; then
/// the repeats of keys claimed before, read after the commit. An error
/// leaves everything undecided.
async fn in_one_transaction<DB: Backend>(
    pool: &Sessions<DB>,
    audits: &AuditWriter,
    items: &[&Queued],
) -> Vec<Verdict> {
    let mut verdicts = vec![Verdict::Undecided; items.len()];
    match claimed_in_one_transaction(pool, items, &mut verdicts).await {
        Ok(claimed) => settle_unclaimed(pool, audits, items, &claimed, &mut verdicts).await,
        Err(e) => {
            // Nothing was committed; each request runs its own transaction.
            tracing::debug!(error = %e, rows = items.len(), "keyed group insert failed");
        }
    }
    verdicts
}

/// The items that did not claim their key: repeats of a claim committed by
/// now (an earlier request's, or this batch's), answered from it. One whose
/// key has no kept answer stays undecided.
async fn settle_unclaimed<DB: Backend>(
    pool: &Sessions<DB>,
    audits: &AuditWriter,
    items: &[&Queued],
    claimed: &[bool],
    verdicts: &mut [Verdict],
) {
    let repeats: Vec<usize> = (0..items.len()).filter(|i| !claimed[*i]).collect();
    if !repeats.is_empty()
        && let Err(e) = settle_repeats(pool, audits, items, &repeats, verdicts).await
    {
        // The claimed requests are committed; the repeats run their own
        // transactions.
        tracing::debug!(error = %e, "group key lookup failed");
    }
}

/// The answer each item expects (its message accepted), with what its key
/// keeps of it (`kept`: the answer's text and message id).
type Expected = (Vec<Answer>, Vec<(String, Option<Uuid>)>);

fn expected_answers(items: &[&Queued]) -> Result<Expected> {
    let accepted: Vec<Answer> = items
        .iter()
        .map(|q| Answer {
            outcomes: vec![MessageOutcome::Accepted(q.message.summary(q.now))],
            envelope: q.envelope.clone(),
        })
        .collect();
    let kept = accepted.iter().map(kept).collect::<Result<Vec<_>>>()?;
    Ok((accepted, kept))
}

/// The claims of `items`, each with its expected answer (`kept` text and id).
fn claims<'a>(items: &[&'a Queued], expected: &'a [(String, Option<Uuid>)]) -> Result<Vec<Claim<'a>>> {
    items
        .iter()
        .zip(expected)
        .map(|(q, (text, id))| {
            let key =
                q.key.as_ref().ok_or_else(|| StoreError::Invariant("keyed batch without a key".into()))?;
            Ok(Claim { scope: &q.scope, key, now: q.now, expected: Some((text.as_str(), *id)) })
        })
        .collect()
}

/// A keyed batch as one autocommit statement, where the backend has one
/// (`None` where not): each key
/// claimed with the answer of a new message, and the claimed requests'
/// messages inserted, together or not at all. A request whose fingerprint
/// has a visible holder is not claimed here: finding no kept answer for its
/// key after the commit, it stays undecided and runs its own transaction.
/// A holder committed while the statement runs fails it, so a key is never
/// kept with an answer its message did not get; such a batch is settled by
/// the transaction instead. Any other unclaimed key is a repeat, settled
/// after.
async fn claimed_in_one_statement<DB: Backend>(
    pool: &Sessions<DB>,
    items: &[&Queued],
    verdicts: &mut [Verdict],
) -> Result<Option<Vec<bool>>> {
    let (accepted, expected) = expected_answers(items)?;
    let claims = claims(items, &expected)?;
    let rows: Vec<Row<'_>> = items.iter().map(|q| row(q)).collect();
    let Some(inserted) = DB::claim_and_insert(pool, &claims, &rows).await? else { return Ok(None) };
    let claimed: Vec<bool> = items.iter().map(|q| inserted.contains(&q.message.id)).collect();
    for ((verdict, answer), claimed) in verdicts.iter_mut().zip(accepted).zip(&claimed) {
        if *claimed {
            *verdict = Verdict::Outcome(IngestOutcome::Processed(answer));
        }
    }
    Ok(Some(claimed))
}

/// The transaction of a keyed batch; returns which items claimed their key
/// and sets their verdicts once committed. Each key is claimed with the
/// answer of a new message already in it, so the common batch (all new) is
/// a claim and an insert; only a key whose message turns out a duplicate
/// has its answer rewritten before the commit. An expired window or a
/// vanished holder rolls the batch back and leaves it to each request's
/// transaction.
async fn claimed_in_one_transaction<DB: Backend>(
    pool: &Sessions<DB>,
    items: &[&Queued],
    verdicts: &mut [Verdict],
) -> Result<Vec<bool>> {
    let (accepted, expected) = expected_answers(items)?;
    let claims = claims(items, &expected)?;
    let mut tx = pool.begin().await?;
    tx.release_expired_keys(&claims).await?;
    let claimed = tx.claim_keys(&claims).await?;
    let winners: Vec<usize> = (0..items.len()).filter(|i| claimed[*i]).collect();
    if winners.is_empty() {
        tx.commit().await?;
        return Ok(claimed);
    }
    let rows: Vec<Row<'_>> = winners.iter().map(|i| row(items[*i])).collect();
    let inserted = tx.insert_messages(&rows).await?;
    let unsettled: Vec<usize> =
        winners.iter().copied().filter(|i| !inserted.ids.contains(&items[*i].message.id)).collect();
    let Some(duplicates) = settle_duplicates::<DB>(&mut tx, items, &unsettled, inserted).await? else {
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

/// The claimed items at `unsettled`, whose message `inserted` did not
/// insert (it names the holders it saw): each
/// a duplicate of a live holder, audited, its key's answer rewritten; `None`
/// when one cannot be settled here (the batch then rolls back).
async fn settle_duplicates<DB: Backend>(
    conn: &mut DB::Connection,
    items: &[&Queued],
    unsettled: &[usize],
    inserted: Inserted,
) -> Result<Option<Vec<(usize, Answer)>>> {
    if unsettled.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let claims: Vec<_> = unsettled
        .iter()
        .filter_map(|i| Some((&items[*i].scope, items[*i].message.fingerprint.as_deref()?)))
        .collect();
    let holders = if claims.is_empty() { Vec::new() } else { inserted.holders_of(conn, &claims).await? };
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
    conn.insert_audits(&events).await?;
    conn.finish_keys(&finished).await?;
    Ok(Some(answers))
}

/// Answers the items at `repeats` from their keys' kept answers, auditing
/// each repeat through the group audit.
async fn settle_repeats<DB: Backend>(
    pool: &Sessions<DB>,
    audits: &AuditWriter,
    items: &[&Queued],
    repeats: &[usize],
    verdicts: &mut [Verdict],
) -> Result<()> {
    let mut session = pool.session().await?;
    let keys: Vec<_> =
        repeats.iter().filter_map(|i| Some((&items[*i].scope, items[*i].key.as_ref()?))).collect();
    let states = session.key_states(&keys).await?;
    session.done(()).await?;
    let mut decided: Vec<(usize, IngestOutcome)> = Vec::new();
    let mut events: Events = Vec::new();
    for &i in repeats {
        let q = items[i];
        let Some(key) = &q.key else { continue };
        if let Some((outcome, event)) = repeat(&q.scope, key, &states)? {
            events.push((q.now, event));
            decided.push((i, outcome));
        }
    }
    audits.append(events).await?;
    decided.into_iter().for_each(|(i, outcome)| verdicts[i] = Verdict::Outcome(outcome));
    Ok(())
}
