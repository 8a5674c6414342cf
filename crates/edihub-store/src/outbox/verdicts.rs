//! Recording attempts and their verdicts, a batch in three statements.
//!
//! The delivery worker hands over the verdicts of the attempts that ended
//! together (see `edihub_server`'s recorder). Written one by one they cost
//! two statements each, and on partitioned PostgreSQL each statement was
//! planned afresh: the prepared plan covers every partition, so PostgreSQL
//! keeps choosing a plan made for the one id. A batch is instead one insert
//! of its attempts and one update of its deliveries, both planned with their
//! message ids known, so only those partitions are read; then the audit
//! events of the deliveries that failed for good.
//!
//! An update applies only while the attempt's lease is still the
//! delivery's (and names each delivery once, see [`rounds`]): a verdict whose lease passed to another attempt (its worker
//! was too slow, the delivery was claimed again) changes nothing, and its
//! attempt is still recorded.
//!
//! What a receiver answered is stored as text it cannot make unstorable:
//! a NUL (which PostgreSQL's `text` and `jsonb` refuse) becomes U+FFFD
//! ([`crate::storable_text`]) before anything is written, so one answer
//! cannot make the statements of its batch fail.

use chrono::{DateTime, Utc};
use sqlx::{Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};
use uuid::Uuid;

use super::model::{DELIVERED, FAILED, PENDING};
use super::{FinishedAttempt, Recorded, Verdict};
use crate::Result;
use crate::audit::DELIVERY_FAILED;
use crate::ingest::statements::IngestSql;
use crate::queries::QuerySql;

const INSERT_ATTEMPTS: &str = "INSERT INTO delivery_attempts \
    (message_id, destination_id, attempted_at, status_code, latency_ms, error, response_prefix) ";
const FINISH_HEAD: &str = "WITH v (message_id, destination_id, status, next_attempt_at, last_status_code, \
    last_error, lease_until) AS (";
/// Clears the lease with the verdict; a retry moves the due time. The
/// `IN` list of message ids that follows lets the plan read only their
/// partitions.
const FINISH_TAIL: &str = ") UPDATE deliveries SET attempts = deliveries.attempts + 1, status = v.status, \
    next_attempt_at = COALESCE(v.next_attempt_at, deliveries.next_attempt_at), lease_until = NULL, \
    last_status_code = v.last_status_code, last_error = v.last_error, updated_at = ";
const FINISH_WHERE: &str = " FROM v WHERE deliveries.message_id = v.message_id \
    AND deliveries.destination_id = v.destination_id AND deliveries.lease_until = v.lease_until \
    AND deliveries.message_id IN (";
const FINISH_RETURNING: &str =
    " RETURNING deliveries.message_id, deliveries.destination_id, deliveries.attempts";

/// The status a verdict leaves and, for a retry, when it is due.
fn status_of(verdict: Verdict) -> (&'static str, Option<DateTime<Utc>>) {
    match verdict {
        Verdict::Delivered => (DELIVERED, None),
        Verdict::RetryAt(at) => (PENDING, Some(at)),
        Verdict::Failed => (FAILED, None),
    }
}

/// Records `done` (attempts and verdicts) at `now`, in the caller's
/// transaction; a delivery failed for good is audited `delivery.failed`.
/// Returns what became of each, in order: applied, or superseded (its
/// lease passed to another attempt).
pub(crate) async fn record<DB>(
    conn: &mut DB::Connection,
    done: &[FinishedAttempt],
    now: DateTime<Utc>,
) -> Result<Vec<Recorded>>
where
    DB: IngestSql + QuerySql + sqlx::database::HasStatementCache,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> &'e str: Encode<'e, DB> + Type<DB>,
    for<'e> Option<String>: Encode<'e, DB> + Type<DB>,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'e> i64: Encode<'e, DB> + Type<DB>,
    for<'e> Option<i32>: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'e> Option<DateTime<Utc>>: Encode<'e, DB> + Type<DB>,
    for<'r> (Uuid, String, i32): FromRow<'r, DB::Row>,
{
    if done.is_empty() {
        return Ok(Vec::new());
    }
    let done: Vec<FinishedAttempt> =
        done.iter().map(|d| FinishedAttempt { attempt: d.attempt.storable(), ..d.clone() }).collect();
    let mut q = QueryBuilder::<DB>::new(INSERT_ATTEMPTS);
    q.push_values(&done, |mut b, d| {
        let a = &d.attempt;
        b.push_bind(d.message_id)
            .push_bind(d.destination_id.clone())
            .push_bind(a.attempted_at)
            .push_bind(a.status_code)
            .push_bind(a.latency_ms)
            .push_bind(a.error.clone())
            .push_bind(a.response_prefix.clone());
    });
    q.build().persistent(false).execute(&mut *conn).await?;

    let mut recorded = vec![Recorded::Superseded; done.len()];
    for round in rounds(&done) {
        let finished = finish(conn, &round, now).await?;
        for (i, d) in round {
            let applied =
                finished.iter().find(|(m, dest, _)| *m == d.message_id && *dest == d.destination_id);
            let Some((_, _, attempts)) = applied else {
                tracing::info!(message_id = %d.message_id, destination = %d.destination_id,
                    "delivery: the lease passed to another attempt; this verdict is not recorded");
                continue;
            };
            recorded[i] = Recorded::Applied;
            if d.verdict == Verdict::Failed {
                let details = serde_json::json!({
                    "destination": d.destination_id,
                    "attempts": attempts,
                    "last_status_code": d.attempt.status_code,
                    "last_error": d.attempt.error,
                });
                super::audit_delivery::<DB>(conn, DELIVERY_FAILED, d.message_id, details, now).await?;
            }
        }
    }
    Ok(recorded)
}

/// `done` in rounds (each attempt with its place in `done`), each naming
/// a delivery at most once, in batch order: a stalled attempt's verdict
/// and the newer one's for the same delivery go to successive updates, as
/// if written one after the other, so what each update returns says which
/// verdict took. Almost always one round.
fn rounds(done: &[FinishedAttempt]) -> Vec<Vec<(usize, &FinishedAttempt)>> {
    let mut rounds: Vec<Vec<(usize, &FinishedAttempt)>> = Vec::new();
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

/// The update of the batch's deliveries; returns (message, destination,
/// attempts) of each one whose lease was still the attempt's.
async fn finish<DB>(
    conn: &mut DB::Connection,
    done: &[(usize, &FinishedAttempt)],
    now: DateTime<Utc>,
) -> Result<Vec<(Uuid, String, i32)>>
where
    DB: sqlx::Database + sqlx::database::HasStatementCache,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> &'e str: Encode<'e, DB> + Type<DB>,
    for<'e> Option<String>: Encode<'e, DB> + Type<DB>,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'e> Option<i32>: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'e> Option<DateTime<Utc>>: Encode<'e, DB> + Type<DB>,
    for<'r> (Uuid, String, i32): FromRow<'r, DB::Row>,
{
    let mut q = QueryBuilder::<DB>::new(FINISH_HEAD);
    q.push_values(done, |mut b, (_, d)| {
        let (status, next) = status_of(d.verdict);
        b.push_bind(d.message_id)
            .push_bind(d.destination_id.clone())
            .push_bind(status)
            .push_bind(next)
            .push_bind(d.attempt.status_code)
            .push_bind(d.attempt.error.clone())
            .push_bind(d.lease_until);
    });
    q.push(FINISH_TAIL).push_bind(now).push(FINISH_WHERE);
    crate::queries::push_ids(&mut q, done.iter().map(|(_, d)| d.message_id));
    q.push(FINISH_RETURNING);
    Ok(q.build_query_as().persistent(false).fetch_all(&mut *conn).await?)
}
