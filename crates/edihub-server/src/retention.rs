//! Background retention: releases fingerprints whose window has passed,
//! drops whole expired partitions (PostgreSQL) and purges the old messages,
//! keys and audit events left, in batches, and with the messages the AS2
//! Message-IDs received as long ago. Event ids of an integration with
//! `event_id_days` follow that period instead of `keys_days`.
//!
//! Drop what is whole, delete the stragglers in batches: on PostgreSQL a
//! day (or week) of messages, their deliveries and attempts, or of audit
//! events, goes in one `DETACH` and `DROP` once its whole range is past the
//! cutoff and nothing in it is kept (see `edihub_store`'s `partition_drop`);
//! every row left past the cutoff (SQLite, a table's first partition, a kept
//! partition) is deleted as before. Each delete step deletes at most
//! `batch_size` rows per statement, so no statement holds a table-wide lock.
//! The run waits `retention.pause_ms` after each statement (each batch,
//! and the drop of the expired partitions), and `detach_pause_ms` between
//! the detaches of one period: on a machine that ingest keeps busy, a
//! run's statements back to back, and the replanning each detach causes in
//! every connection, take a visible part of one second from it; spread
//! out, a small part of several (BENCHMARKS.md, scenario T). A message is
//! never purged while its fingerprint still blocks repeats. Each run first
//! creates the partitions of the coming periods. After a failed run the
//! task waits twice as long each time, up to an hour, and goes back to
//! `interval_secs` once a run succeeds. The task stops at the shutdown
//! token.

use std::time::Duration;

use chrono::{DateTime, Utc};
use edihub_store::{KeyPurge, Pace, RetentionStep, StoreError};
use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// Rows changed by one run, per step.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RunReport {
    /// Fingerprints released.
    pub released: u64,
    /// Partitions (periods) dropped, each with its deliveries and attempts.
    pub partitions: u64,
    /// Messages deleted.
    pub messages: u64,
    /// Keys deleted.
    pub keys: u64,
    /// Audit events deleted.
    pub audit: u64,
    /// AS2 messages (received Message-IDs and their MDNs) deleted.
    pub as2_messages: u64,
    /// SAP status changes deleted (those a status message carried).
    pub sap_status: u64,
}

fn days_before(now: DateTime<Utc>, days: u32) -> Option<DateTime<Utc>> {
    (days > 0).then(|| now - chrono::Duration::days(i64::from(days)))
}

/// Waits `retention.pause_ms` after a statement, or less if `shutdown` comes.
async fn pause(state: &AppState, shutdown: &CancellationToken) {
    let pause = Duration::from_millis(state.config.retention.pause_ms);
    Pace { pause, stop: shutdown.clone() }.wait().await;
}

/// Runs `statement` (one batch of at most `batch_size` rows, which it is
/// given) until a batch comes back short or `shutdown` comes, pausing after
/// each; returns the rows changed.
async fn drain<F, Fut>(
    state: &AppState,
    shutdown: &CancellationToken,
    statement: F,
) -> Result<u64, StoreError>
where
    F: Fn(i64) -> Fut,
    Fut: Future<Output = Result<u64, StoreError>>,
{
    let batch = i64::from(state.config.retention.batch_size.max(1));
    let mut total = 0;
    loop {
        let n = statement(batch).await?;
        total += n;
        pause(state, shutdown).await;
        if n < batch as u64 || shutdown.is_cancelled() {
            return Ok(total);
        }
    }
}

/// The batches of one retention `step`.
async fn drain_step(
    state: &AppState,
    step: RetentionStep,
    cutoff: DateTime<Utc>,
    now: DateTime<Utc>,
    shutdown: &CancellationToken,
) -> Result<u64, StoreError> {
    drain(state, shutdown, |batch| state.store.retention_step(step, cutoff, now, batch)).await
}

/// Deletes request keys: every key after `keys_days`, except the event ids
/// of integrations with their own `event_id_days`, which go after that.
async fn purge_keys(
    state: &AppState,
    now: DateTime<Utc>,
    shutdown: &CancellationToken,
) -> Result<u64, StoreError> {
    let own: Vec<(String, u32)> =
        state.integrations.all().iter().filter_map(|i| Some((i.id.clone(), i.event_id_days?))).collect();
    let except: Vec<String> = own.iter().map(|(id, _)| id.clone()).collect();
    let mut total = 0;
    let mut purges = vec![(KeyPurge::AllExcept(&except), state.config.retention.keys_days)];
    purges.extend(own.iter().map(|(id, days)| (KeyPurge::EventIdsOf(id), *days)));
    for (which, days) in purges {
        if let Some(cutoff) = days_before(now, days) {
            total += drain(state, shutdown, |batch| state.store.purge_keys(which, cutoff, batch)).await?;
        }
    }
    Ok(total)
}

/// One retention run at `now`.
pub async fn run_once(
    state: &AppState,
    now: DateTime<Utc>,
    shutdown: &CancellationToken,
) -> Result<RunReport, StoreError> {
    let policy = &state.config.retention;
    let mut report = RunReport {
        released: drain_step(state, RetentionStep::ReleaseFingerprints, now, now, shutdown).await?,
        ..RunReport::default()
    };
    let (messages, audit) = (days_before(now, policy.messages_days), days_before(now, policy.audit_days));
    let pace = Pace { pause: Duration::from_millis(policy.detach_pause_ms), stop: shutdown.clone() };
    report.partitions = state.store.drop_partitions(messages, audit, &pace).await?;
    pause(state, shutdown).await;
    if let Some(cutoff) = messages {
        report.messages = drain_step(state, RetentionStep::PurgeMessages, cutoff, now, shutdown).await?;
        // A received Message-ID goes with the messages it stored.
        report.as2_messages =
            drain_step(state, RetentionStep::PurgeAs2Messages, cutoff, now, shutdown).await?;
        // So does the status sent back for them.
        report.sap_status = drain_step(state, RetentionStep::PurgeSapStatus, cutoff, now, shutdown).await?;
    }
    report.keys = purge_keys(state, now, shutdown).await?;
    if let Some(cutoff) = audit {
        report.audit = drain_step(state, RetentionStep::PurgeAudit, cutoff, now, shutdown).await?;
    }
    for (step, rows) in [
        ("release_fingerprints", report.released),
        ("drop_partitions", report.partitions),
        ("purge_messages", report.messages),
        ("purge_keys", report.keys),
        ("purge_audit", report.audit),
        ("purge_as2_messages", report.as2_messages),
        ("purge_sap_status", report.sap_status),
    ] {
        state.metrics.retention(step, rows);
    }
    Ok(report)
}

/// Longest pause after failed runs (unless `interval_secs` is longer).
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// The pause before the next run after `failures` failed runs in a row:
/// the interval, doubled for each failure, up to [`MAX_BACKOFF`]. A run
/// that fails (a statement cancelled by an operator or a timeout, the
/// database under pressure) would otherwise start its whole scan again
/// every interval, however often it fails.
fn pause_after(failures: u32, every: Duration) -> Duration {
    let doubled = every.saturating_mul(1u32.checked_shl(failures.min(16)).unwrap_or(u32::MAX));
    doubled.min(MAX_BACKOFF.max(every))
}

/// Runs retention every `interval_secs` until `shutdown`, backing off
/// after failed runs (`pause_after`).
pub async fn run(state: AppState, shutdown: CancellationToken) {
    let every = Duration::from_secs(state.config.retention.interval_secs.max(1));
    let mut failures = 0;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(pause_after(failures, every)) => {}
        }
        if let Err(e) = state.store.create_partitions(crate::ingest::now()).await {
            tracing::warn!(error = %e, "creating partitions ahead failed; will retry");
        }
        match run_once(&state, crate::ingest::now(), &shutdown).await {
            Ok(r) => {
                failures = 0;
                tracing::info!(
                    released = r.released,
                    partitions = r.partitions,
                    messages = r.messages,
                    keys = r.keys,
                    audit = r.audit,
                    "retention run finished"
                );
            }
            Err(e) => {
                failures += 1;
                let next = pause_after(failures, every);
                tracing::warn!(error = %e, failures, retry_in_secs = next.as_secs(), "retention run failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_runs_back_off_up_to_an_hour() {
        let minute = Duration::from_secs(60);
        let pauses: Vec<u64> = (0..8).map(|n| pause_after(n, minute).as_secs()).collect();
        assert_eq!(pauses, [60, 120, 240, 480, 960, 1920, 3600, 3600]);
        assert_eq!(pause_after(40, minute), MAX_BACKOFF, "many failures stay capped");
        let day = Duration::from_secs(86_400);
        assert_eq!(pause_after(3, day), day, "an interval past the cap is kept");
        assert_eq!(pause_after(0, Duration::from_secs(1)).as_secs(), 1);
    }
}
