//! The keyed batches of the group insert: requests with an
//! Idempotency-Key, a provider's event id or an interchange, whose key
//! claim, message and kept answer commit together (see [`super`]).

use super::audits::{AuditWriter, Events};
use super::plain::row;
use super::queued::{Queued, Verdict};
use crate::backend::Backend;
use crate::ingest::decide::repeat;
use crate::ingest::keys::KeySql;
use crate::ingest::settle::{Pending, Settled, settle_in};
use crate::ingest::statements::Row;
use crate::session::Sessions;
use crate::{IngestOutcome, Result, StoreError};

/// Settles one batch of requests with keys. Where the backend has one
/// (PostgreSQL, `Backend::claim_and_insert`), the batch is first one
/// statement (unless a key has a window); what it leaves (requests whose
/// fingerprint has a holder) is settled as a batch of its own by the
/// settle transaction, as every keyed batch is on SQLite and when the
/// statement fails. The statement pays for itself: S7 reaches 0.74–0.78 ×
/// S1 with it against 0.67–0.69 × with the transaction alone
/// (BENCHMARKS.md, "Where the missed targets stand").
pub(super) async fn with_keys<DB: Backend>(
    pool: &Sessions<DB>,
    audits: &AuditWriter,
    items: &[&Queued],
) -> Vec<Verdict> {
    let mut verdicts = vec![Verdict::Undecided; items.len()];
    // A claim with a window (an interchange's) may have to release an
    // expired claim first, which only the transaction does.
    let windowed = items.iter().any(|q| q.key.as_ref().is_some_and(|k| k.window_seconds.is_some()));
    if !windowed {
        match claimed_in_one_statement(pool, items, &mut verdicts).await {
            Ok(Some(claimed)) => settle_unclaimed(pool, audits, items, &claimed, &mut verdicts).await,
            Ok(None) => {}
            // A holder committed meanwhile (or any other failure): the
            // statement kept nothing, and the transaction settles the batch.
            Err(e) => tracing::debug!(error = %e, rows = items.len(), "keyed batch statement failed"),
        }
    }
    let left: Vec<usize> = (0..items.len()).filter(|i| verdicts[*i] == Verdict::Undecided).collect();
    if !left.is_empty() {
        let rest: Vec<&Queued> = left.iter().map(|i| items[*i]).collect();
        let settled = in_one_transaction(pool, &rest).await;
        left.into_iter().zip(settled).for_each(|(i, v)| verdicts[i] = v);
    }
    verdicts
}

/// The batch as one settle transaction (see [`crate::ingest::settle`]):
/// claims, messages, duplicates, kept answers and repeats. An error leaves
/// everything undecided: nothing was committed, and each request runs its
/// own transaction.
async fn in_one_transaction<DB: Backend>(pool: &Sessions<DB>, items: &[&Queued]) -> Vec<Verdict> {
    let settled = async {
        let batch: Vec<Pending<'_>> = items.iter().map(|q| q.pending()).collect();
        let mut tx = pool.begin().await?;
        let settled = settle_in(&mut *tx, &batch).await?;
        tx.commit().await?;
        Ok::<_, StoreError>(settled)
    };
    match settled.await {
        Ok(settled) => settled
            .into_iter()
            .map(|s| match s {
                Settled::Whole(outcome) => Verdict::Outcome(outcome),
                Settled::Part { .. } => Verdict::Undecided,
            })
            .collect(),
        Err(e) => {
            tracing::debug!(error = %e, rows = items.len(), "keyed group insert failed");
            vec![Verdict::Undecided; items.len()]
        }
    }
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
    let batch: Vec<Pending<'_>> = items.iter().map(|q| q.pending()).collect();
    let expected = batch.iter().map(Pending::expected).collect::<Result<Vec<_>>>()?;
    let claims = batch
        .iter()
        .zip(&expected)
        .map(|(p, e)| {
            p.claim(e.as_ref()).ok_or_else(|| StoreError::Invariant("keyed batch without a key".into()))
        })
        .collect::<Result<Vec<_>>>()?;
    let rows: Vec<Row<'_>> = items.iter().map(|q| row(q)).collect();
    let Some(inserted) = DB::claim_and_insert(pool, &claims, &rows).await? else { return Ok(None) };
    let claimed: Vec<bool> = items.iter().map(|q| inserted.contains(&q.message.id)).collect();
    for ((verdict, expected), claimed) in verdicts.iter_mut().zip(expected).zip(&claimed) {
        if let (true, Some(e)) = (*claimed, expected) {
            *verdict = Verdict::Outcome(IngestOutcome::Processed(e.answer));
        }
    }
    Ok(Some(claimed))
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
