//! Retention by dropping partitions (PostgreSQL): what is whole goes in
//! one `DETACH` and `DROP`, the stragglers are deleted in batches by
//! [`crate::retention`].
//!
//! A partition of the messages family (see [`crate::partitions`]) is
//! dropped, with the deliveries and attempts partitions of the same range,
//! when its whole range ends by the cutoff and nothing in it is kept by
//! today's rules: no claim points into it (a window longer than the
//! retention), no message outside it points to a body inside it (a packet's
//! shared body), and no row in it was received after the cutoff. Those
//! rows, and everything in a table's first partition (`_p_initial`, which
//! also holds what an upgrade found), stay for the batched `DELETE`, so a
//! message is purged under the same rules either way. Audit partitions go
//! by `occurred_at` alone.
//!
//! `DETACH … CONCURRENTLY` waits for the queries using the partition
//! instead of locking the parent against them; it cannot run inside a
//! transaction block, so it is sent alone on a plain connection, never
//! inside the `BEGIN; DEALLOCATE ALL` of a transaction pooler's unit of work
//! (through PgBouncer in transaction mode one statement is its own
//! transaction, which is all it needs). A detach interrupted by a crash is
//! left pending; the next run completes it with `DETACH … FINALIZE`. A
//! period whose tables a crash left partly detached or dropped is finished
//! by the next run, which detaches only what is still attached.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, PgConnection, Postgres};

use crate::Result;
use crate::partitions::{self, Family, Partition};
use crate::session::Sessions;

/// How a partition drop is paced: it waits `pause` between a period's
/// detaches and after each period, and stops at `stop` (a period it leaves
/// half done is finished by the next run).
#[derive(Debug, Clone, Default)]
pub struct Pace {
    /// The wait between two statements.
    pub pause: std::time::Duration,
    /// Ends the drop early, at its next pause.
    pub stop: tokio_util::sync::CancellationToken,
}

impl Pace {
    /// Waits `pause` (a zero pause only yields); false if `stop` came
    /// first (or had come).
    pub async fn wait(&self) -> bool {
        if self.pause.is_zero() {
            tokio::task::yield_now().await;
            return !self.stop.is_cancelled();
        }
        tokio::select! {
            () = self.stop.cancelled() => false,
            () = tokio::time::sleep(self.pause) => !self.stop.is_cancelled(),
        }
    }
}

/// Whether something in `p` (a messages partition) keeps it: a claim
/// pointing into it, a body a message outside it points to, or a row
/// received at or after `cutoff`.
///
/// A body is shared only among one request's messages, whose ids the hub
/// mints together when it parses the request, so a sibling outside `p` is
/// at most a request's time from it: the probe looks one day either side,
/// never further. That lets PostgreSQL plan it over the two neighbouring
/// partitions alone; over all of them, a connection that has not opened
/// them yet spends long enough planning it to stall the retention run
/// (BENCHMARKS.md, scenario T).
async fn kept(conn: &mut PgConnection, p: &Partition, cutoff: DateTime<Utc>) -> Result<bool> {
    let (Some(from), Some(to)) = (p.from, p.to) else { return Ok(true) };
    let day = chrono::Duration::days(1);
    let (lo, hi) = (partitions::first_id_at(from), partitions::first_id_at(to));
    let (before, after) = (partitions::first_id_at(from - day), partitions::first_id_at(to + day));
    let sql = format!(
        "SELECT EXISTS (SELECT 1 FROM message_claims WHERE message_id >= $1 AND message_id < $2) \
         OR EXISTS (SELECT 1 FROM messages WHERE payload_message_id >= $1 AND payload_message_id < $2 \
                    AND ((id >= $4 AND id < $1) OR (id >= $2 AND id < $5))) \
         OR EXISTS (SELECT 1 FROM {} WHERE received_at >= $3)",
        p.name
    );
    let (kept,): (bool,) = sqlx::query_as(AssertSqlSafe(sql))
        .bind(lo)
        .bind(hi)
        .bind(cutoff)
        .bind(before)
        .bind(after)
        .persistent(false)
        .fetch_one(&mut *conn)
        .await?;
    Ok(kept)
}

/// The partitions of `family` whose whole range ends by `cutoff` (never a
/// first partition, which starts at MINVALUE).
async fn expired(
    sessions: &Sessions<Postgres>,
    family: Family,
    cutoff: DateTime<Utc>,
) -> Result<Vec<Partition>> {
    let mut session = sessions.session().await?;
    let mut parts = partitions::list(&mut session, family, family.tables()[0]).await?;
    parts.retain(|p| p.from.is_some() && p.to.is_some_and(|to| to <= cutoff));
    let mut droppable = Vec::with_capacity(parts.len());
    for p in parts {
        if family == Family::Audit || !kept(&mut session, &p, cutoff).await? {
            droppable.push(p);
        }
    }
    session.done(droppable).await
}

/// Completes the detaches a crash left pending, then drops those tables.
async fn finalize_pending(sessions: &Sessions<Postgres>) -> Result<()> {
    let pending: Vec<(String, String)> = {
        let mut session = sessions.session().await?;
        let rows = sqlx::query_as(
            "SELECT p.relname::text, c.relname::text FROM pg_inherits i \
             JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent \
             WHERE i.inhdetachpending",
        )
        .persistent(false)
        .fetch_all(&mut *session)
        .await?;
        session.done(rows).await?
    };
    for (parent, part) in pending {
        alone(sessions, format!("ALTER TABLE {parent} DETACH PARTITION {part} FINALIZE")).await?;
        alone(sessions, format!("DROP TABLE {part}")).await?;
        tracing::info!(partition = %part, "pending partition detach finished and dropped");
    }
    Ok(())
}

/// Runs one statement alone, outside any transaction block.
async fn alone(sessions: &Sessions<Postgres>, sql: String) -> Result<()> {
    let mut conn = sessions.pool.acquire().await?;
    sqlx::raw_sql(AssertSqlSafe(sql)).execute(&mut *conn).await?;
    Ok(())
}

/// What one period's drop did: whether it finished (a `stop` ends it at a
/// pause), and how long its statements took, pauses excluded.
struct PeriodDrop {
    finished: bool,
    working: std::time::Duration,
}

/// Runs `sql` alone and adds its time to `working`.
async fn timed(sessions: &Sessions<Postgres>, sql: String, working: &mut std::time::Duration) -> Result<()> {
    let started = std::time::Instant::now();
    alone(sessions, sql).await?;
    *working += started.elapsed();
    Ok(())
}

/// Detaches one period's partitions of `family`'s tables, the leader last
/// (its outbox never outlives it), and drops them in one `DROP`:
/// PostgreSQL then scans its shared buffers once for all their files, not
/// once per table. Each detach makes every session that uses the parent
/// plan its statements again, so `pace` waits between the detaches: the
/// replanning of a busy hub's connections is spread over several seconds
/// instead of taken from one (BENCHMARKS.md, scenario T).
/// A table a crashed or stopped run already detached (or dropped) is
/// skipped, so the next run finishes the period instead of failing on it.
async fn drop_period(
    sessions: &Sessions<Postgres>,
    family: Family,
    suffix: &str,
    pace: &Pace,
) -> Result<PeriodDrop> {
    let parts: Vec<(&str, String)> =
        family.tables().iter().rev().map(|t| (*t, format!("{t}{suffix}"))).collect();
    let names: Vec<&str> = parts.iter().map(|(_, part)| part.as_str()).collect();
    let attached: Vec<String> = {
        let mut session = sessions.session().await?;
        let rows = sqlx::query_scalar(
            "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
             WHERE c.relname = ANY($1)",
        )
        .bind(&names)
        .persistent(false)
        .fetch_all(&mut *session)
        .await?;
        session.done(rows).await?
    };
    let mut working = std::time::Duration::ZERO;
    for (i, (table, part)) in parts.iter().filter(|(_, part)| attached.contains(part)).enumerate() {
        // Never between the leader's detach and the drop: a period stopped
        // there would no longer be listed, and its tables never dropped.
        if i > 0 && !pace.wait().await {
            return Ok(PeriodDrop { finished: false, working });
        }
        timed(sessions, format!("ALTER TABLE {table} DETACH PARTITION {part} CONCURRENTLY"), &mut working)
            .await?;
    }
    timed(sessions, format!("DROP TABLE IF EXISTS {}", names.join(", ")), &mut working).await?;
    Ok(PeriodDrop { finished: true, working })
}

/// Detaches and drops the expired partitions of the messages family (when
/// `messages` has a cutoff) and of the audit log (when `audit` has one),
/// paced by `pace`; returns how many periods were dropped.
pub(crate) async fn drop_expired(
    sessions: &Sessions<Postgres>,
    messages: Option<DateTime<Utc>>,
    audit: Option<DateTime<Utc>>,
    pace: &Pace,
) -> Result<u64> {
    // The first period's span starts here, so that it holds the listing
    // and the keep checks; each later one starts after the pause before it.
    let mut started = std::time::Instant::now();
    finalize_pending(sessions).await?;
    let mut dropped = 0;
    for (family, cutoff) in [(Family::Messages, messages), (Family::Audit, audit)] {
        let Some(cutoff) = cutoff else { continue };
        for p in expired(sessions, family, cutoff).await? {
            let Some(suffix) = p.name.strip_prefix(family.tables()[0]) else { continue };
            let period = drop_period(sessions, family, suffix, pace).await?;
            if !period.finished {
                return Ok(dropped);
            }
            // `make bench` (scenario T) reads these: the detaches' and the
            // drop's time, and the span of the period's work.
            let (elapsed_ms, span_ms) = (period.working.as_millis(), started.elapsed().as_millis());
            tracing::info!(partition = %p.name, elapsed_ms, span_ms, "expired partition dropped");
            dropped += 1;
            if !pace.wait().await {
                return Ok(dropped);
            }
            started = std::time::Instant::now();
        }
    }
    Ok(dropped)
}
