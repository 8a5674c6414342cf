//! Settling one batch of the group insert without keys: the statements of
//! [`crate::ingest::statements`] over the whole batch, then each request
//! decided by [`crate::ingest::decide`], in the same terms as the settle
//! transaction (the keyed batches are in `keyed`).
//!
//! A statement that fails leaves its requests [`Verdict::Undecided`]: nothing
//! it did was committed, and each request runs its own settle transaction, so one
//! bad row cannot fail its neighbours' requests.

use uuid::Uuid;

use super::audits::AuditWriter;
use super::queued::{Queued, Verdict};
use crate::Scope;
use crate::backend::Backend;
use crate::ingest::decide::duplicate_of;
use crate::ingest::statements::{IngestSql, Row};
use crate::session::Sessions;

pub(super) fn row(q: &Queued) -> Row<'_> {
    Row { scope: &q.scope, now: q.now, message: &q.message, payload_holder: None, lease: q.lease.as_ref() }
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
/// then their plain duplicates, whose events go to the group audit.
pub(super) async fn without_keys<DB: Backend>(
    pool: &Sessions<DB>,
    audits: &AuditWriter,
    items: &[&Queued],
) -> Vec<Verdict> {
    let mut verdicts = vec![Verdict::Undecided; items.len()];
    let settled = async {
        let mut session = pool.session().await?;
        let rows: Vec<Row<'_>> = items.iter().map(|q| row(q)).collect();
        let inserted = session.insert_messages(&rows).await?;
        // Committed before any row counts as stored (behind a pooler the
        // session is a transaction); the duplicates are a second one.
        let inserted = session.done(inserted).await?;
        for (q, v) in items.iter().zip(verdicts.iter_mut()) {
            if inserted.ids.contains(&q.message.id) {
                let leased = inserted.leased.iter().filter(|d| d.message_id == q.message.id);
                *v = Verdict::Inserted(leased.cloned().collect());
            }
        }
        let claims = unsettled_claims(items, &inserted.ids);
        if claims.is_empty() {
            return Ok(());
        }
        // A session only when the insert's answer missed a holder (always
        // on SQLite, whose insert names none).
        let holders = if inserted.unseen(&claims).is_empty() {
            inserted.holders
        } else {
            let mut session = pool.session().await?;
            let holders = inserted.holders_of(&mut *session, &claims).await?;
            session.done(holders).await?
        };
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
        // Until their events are committed, the duplicates stay undecided.
        audits.append(events).await?;
        duplicates.into_iter().for_each(|(i, existing)| verdicts[i] = Verdict::Duplicate(existing));
        Ok::<_, crate::StoreError>(())
    };
    if let Err(e) = settled.await {
        // Inserted rows are committed and stay Inserted; the rest run their
        // own transactions.
        tracing::debug!(error = %e, rows = items.len(), "group insert left rows undecided");
    }
    verdicts
}
