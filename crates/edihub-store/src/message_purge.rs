//! The retention step that deletes old messages one batch at a time: the
//! one retention statement whose shape differs between the backends.
//!
//! A message goes once it was received before the cutoff, its fingerprint
//! no longer blocks repeats, and no packet sibling points to its body. On
//! SQLite that is one `DELETE … WHERE id IN (SELECT … LIMIT n)`. On
//! PostgreSQL `messages` is partitioned by its id's time, and such a
//! statement is planned (and its executor started) over every partition of
//! the retention period, about 90 of them: some 20 ms of CPU each time,
//! taken from the ingest beside it, although a run usually finds nothing
//! left to delete once the expired partitions are dropped. So PostgreSQL
//! first selects the batch's ids (one read of each partition's
//! `received_at` index);
//! when there are none, that is all; otherwise it deletes exactly those
//! ids, a statement planned with them, which PostgreSQL prunes to the
//! partitions that hold them. The delete checks the conditions again, so a
//! row that changed between the two statements is left for the next run.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::Result;

/// The PostgreSQL batch's ids: `$1` cutoff, `$2` now, `$3` batch size.
/// Oldest first, so the partitions' `received_at` indexes are read whatever
/// the statistics say: a run often comes soon after midnight, when today's
/// partition is filling and not yet analysed, and PostgreSQL's default
/// guess for it (a third of its rows before the cutoff) made it read that
/// partition whole, in parallel, and hash every body reference for the
/// second check. `OFFSET 0` keeps each `NOT EXISTS` a probe per candidate
/// (an index lookup) instead of a join that reads its whole table.
const PG_CANDIDATES: &str = "SELECT m.id FROM messages m WHERE m.received_at < $1 \
    AND NOT EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = m.id AND c.expires_at > $2 OFFSET 0) \
    AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.payload_message_id = m.id OFFSET 0) \
    ORDER BY m.received_at LIMIT $3";
/// Deletes the listed ids (`$1`) that still qualify (`$2` cutoff, `$3` now).
/// The delete trigger takes an expired claim left on a purged message.
const PG_DELETE_LISTED: &str = "DELETE FROM messages m WHERE m.id = ANY($1) AND m.received_at < $2 \
    AND NOT EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = m.id AND c.expires_at > $3 OFFSET 0) \
    AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.payload_message_id = m.id OFFSET 0)";
/// SQLite's batch in one statement: `$1` cutoff, `$2` now, `$3` batch size.
const SQLITE_PURGE: &str = "DELETE FROM messages WHERE id IN \
    (SELECT m.id FROM messages m WHERE m.received_at < $1 \
     AND (m.fingerprint IS NULL OR m.fingerprint_expires_at <= $2) \
     AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.payload_message_id = m.id) LIMIT $3)";

/// One batch of the message purge.
pub(crate) trait MessagePurgeSql: sqlx::Database {
    /// Deletes up to `batch` messages received before `cutoff`, never one
    /// whose claim still blocks at `now` nor one whose body a packet sibling
    /// still points to; returns how many it deleted.
    fn purge_messages(
        conn: &mut Self::Connection,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> impl Future<Output = Result<u64>> + Send;
}

// Both statements are unnamed (`persistent(false)`): planned each time with
// their values known, which is what lets PostgreSQL prune by the ids, and
// what keeps a generic plan's guess for `received_at < $1` from reading
// whole partitions.
impl MessagePurgeSql for sqlx::Postgres {
    async fn purge_messages(
        conn: &mut sqlx::PgConnection,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        let ids: Vec<Uuid> = sqlx::query_scalar(PG_CANDIDATES)
            .bind(cutoff)
            .bind(now)
            .bind(batch)
            .persistent(false)
            .fetch_all(&mut *conn)
            .await?;
        if ids.is_empty() {
            return Ok(0);
        }
        let done = sqlx::query(PG_DELETE_LISTED)
            .bind(&ids)
            .bind(cutoff)
            .bind(now)
            .persistent(false)
            .execute(&mut *conn)
            .await?;
        Ok(done.rows_affected())
    }
}

impl MessagePurgeSql for sqlx::Sqlite {
    async fn purge_messages(
        conn: &mut sqlx::SqliteConnection,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
        batch: i64,
    ) -> Result<u64> {
        let done = sqlx::query(SQLITE_PURGE).bind(cutoff).bind(now).bind(batch).execute(&mut *conn).await?;
        Ok(done.rows_affected())
    }
}
