//! The PostgreSQL store: production and multi-replica deployments.
//!
//! Transactions run at READ COMMITTED: the unique keys (of `message_claims`
//! and `idempotency_keys`) make concurrent claims wait for each other, and
//! each statement sees what committed before it, which is all the ingest
//! transaction needs (see [`crate::ingest`]). Its time partitions are in
//! [`crate::partitions`] and [`crate::partition_drop`].

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::Postgres;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::backend::{Backend, SqlStore};
use crate::ingest::group::{Batchers, STATEMENT_CACHE};
use crate::ingest::statements::ScopedHolder;
use crate::partitions::{self, Family};
use crate::session::Sessions;
use crate::{PartitionLayout, Pooler, Result, Scope, StoreError, partition_drop};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// Group-insert batches of each kind in flight at once (see [`crate::ingest::group`]).
/// Measured on 2 cores: 1 keyed batch at a time made larger but slower
/// batches (S2 4,354 against 5,450 req/s with 4).
const GROUP_INSERTS: usize = 4;

/// A [`crate::Store`] on PostgreSQL.
pub type PgStore = SqlStore<Postgres>;

impl SqlStore<Postgres> {
    /// Connects a pool to `url` (`postgres://…`).
    pub async fn connect(url: &str, opts: &crate::PoolSettings) -> Result<Self> {
        let connect: PgConnectOptions = url.parse()?;
        let pool_options = |max| {
            PgPoolOptions::new()
                .max_connections(max)
                // No ping before each use (a round trip per request): a
                // connection that died with the server fails its statement
                // instead, which is answered 503 and dropped from the pool.
                .test_before_acquire(false)
                .acquire_timeout(opts.acquire_timeout)
                .idle_timeout(Some(Duration::from_secs(300)))
        };
        let pinned = opts.pooler == Pooler::Transaction;
        // Behind a transaction pooler no statement is kept prepared: a cached
        // one would be missing on the next transaction's server connection.
        let (connect, batch_cache) =
            if pinned { (connect.statement_cache_capacity(0), 0) } else { (connect, STATEMENT_CACHE) };
        let pool = pool_options(opts.max_connections).connect_with(connect.clone()).await?;
        // The group insert has connections of its own: few, so their
        // statement caches hold every batch size and their buffers (sized
        // by the largest batch) are not copied into every connection: one
        // per batch slot of either kind, and the group audit's.
        let batch_pool = pool_options(GROUP_INSERTS as u32 * 2 + 1)
            .connect_with(connect.statement_cache_capacity(batch_cache))
            .await?;
        let sessions = |pool| {
            if pinned { Sessions::pinned(pool) } else { Sessions::direct(pool, <Postgres as Backend>::BEGIN) }
        };
        let (db, batch_db) = (sessions(pool), sessions(batch_pool));
        // A few batches of each kind in flight let PostgreSQL flush one
        // batch's WAL while the next is sent; more would only shrink them.
        let batchers = Batchers::spawn(batch_db.clone(), GROUP_INSERTS, Some(GROUP_INSERTS));
        Ok(Self { db, batch_db, batchers, layout: opts.partitions })
    }
}

/// The key of the advisory lock migrations take: the one sqlx's migrator
/// takes for `database` (`0x3d32ad9e` times the CRC-32 of its name), so a
/// replica connected directly and one behind a pooler exclude each other.
fn migration_lock_key(database: &str) -> i64 {
    0x3d32_ad9e * i64::from(crc32(database.as_bytes()))
}

/// CRC-32 (the IEEE polynomial, as in zlib), bit by bit: it runs once per
/// migration.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// The packet lookup's fingerprints as one `text[]`.
const PACKET_HOLDERS: &str = "SELECT c.tenant_id, c.environment_id, m.id, m.message_type, m.mestyp, \
    m.docnum, m.key_fingerprint AS fingerprint, m.received_at, m.fingerprint_expires_at \
    FROM message_claims c JOIN messages m ON m.id = c.message_id \
    WHERE c.tenant_id = $1 AND c.environment_id = $2 AND c.fingerprint = ANY($3)";

/// The class of the fingerprint locks (the two-key advisory lock space,
/// apart from the partition and migration locks' one-key space): "ed".
const FINGERPRINT_LOCK_CLASS: i32 = 0x6564;

/// [`Backend::lock_fingerprints`]: one lock per distinct hash of scope and
/// fingerprint, taken in hash order (the sorted, distinct subquery is not
/// flattened, so the outer select calls the lock function in its order). Two
/// fingerprints that share a hash only wait for each other.
const LOCK_FINGERPRINTS: &str = "SELECT pg_advisory_xact_lock($1, k) FROM \
    (SELECT DISTINCT hashtext($2 || '/' || $3 || '/' || f) AS k FROM unnest($4::text[]) AS f ORDER BY k) AS s";

/// The feed's page: rows whose transaction is older than the snapshot's
/// `xmin` (all such transactions have ended), in (transaction, id) order,
/// along the `messages_feed` index. The inner select examines at most `$7`
/// of them; of those, the ones of the type asked for and the last one
/// examined come back, at most `$6`. `$3` travels as a bigint (sqlx has no
/// `xid8` type); transaction ids stay far below 2^63. `octet_length` of a
/// stored body reads its size from the TOAST pointer, not the body.
const FEED_PAGE: &str = "SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, \
    sender, fingerprint, fingerprint_basis, fingerprint_expires_at, \
    EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = t.id) AS fingerprint_active, \
    idempotency_key, provider_event_id, packet_index, content_type, received_at, feed_major, \
    payload_message_id, body_bytes, wanted, n = examined AS last_examined, examined FROM (SELECT s.*, \
    row_number() OVER (ORDER BY feed_xid, id) AS n, count(*) OVER () AS examined FROM (\
    SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, \
    sender, key_fingerprint AS fingerprint, fingerprint_basis, fingerprint_expires_at, \
    idempotency_key, provider_event_id, packet_index, content_type, received_at, feed_xid, \
    feed_xid::text::bigint AS feed_major, payload_message_id, \
    CASE WHEN payload_message_id IS NULL THEN octet_length(payload)::bigint END AS body_bytes, \
    ($5::text IS NULL OR message_type = $5) AS wanted FROM messages \
    WHERE tenant_id = $1 AND environment_id = $2 AND (feed_xid, id) > ($3::bigint::text::xid8, $4) \
    AND feed_xid < pg_snapshot_xmin(pg_current_snapshot()) \
    ORDER BY feed_xid, id LIMIT $7) AS s) AS t \
    WHERE wanted OR n = examined ORDER BY feed_xid, id LIMIT $6";

impl Backend for Postgres {
    const ONE_STATEMENT_KEYED_BATCH: bool = true;
    const BEGIN: &'static str = "BEGIN";
    const FEED_PAGE: &'static str = FEED_PAGE;
    /// Both claims select in a materialized CTE, evaluated once: as `x IN
    /// (SELECT … LIMIT n FOR UPDATE)` the planner may rescan the subquery
    /// and lease more rows than the limit (seen on a small table).
    /// The update finds the locked rows by `message_id = ANY (…)`, one
    /// index probe per partition: written as a join (`UPDATE … FROM due`),
    /// the generic plan guessed thousands of due rows and hashed every
    /// delivery of every partition per claim (41 ms for 64 rows of 100,000
    /// pending across 90 partitions, against 2.4 ms; docs/scale.md).
    const CLAIM_DELIVERIES: &'static str = "WITH due AS MATERIALIZED (SELECT message_id \
        FROM deliveries WHERE destination_id = $1 AND status = 'pending' AND next_attempt_at <= $2 \
        AND (lease_until IS NULL OR lease_until <= $2) ORDER BY next_attempt_at LIMIT $4 \
        FOR UPDATE SKIP LOCKED) \
        UPDATE deliveries d SET lease_until = $3 \
        WHERE d.destination_id = $1 AND d.message_id = ANY (ARRAY (SELECT message_id FROM due)) \
        RETURNING d.message_id, d.destination_id, d.attempts, d.lease_until, d.created_at";
    /// [`Self::CLAIM_DELIVERIES`] with the bound written into the text as a
    /// constant, so that PostgreSQL prunes at planning and its cached plan
    /// reads (and locks) the partitions from the bound on alone. A bound
    /// passed as a parameter prunes only at execution, after a generic plan
    /// has locked every partition and its indexes: the full claim cost
    /// 1.6 ms against 0.6 ms for this one with 90 daily partitions
    /// (BENCHMARKS.md, "Delivery: the recent claim").
    const CLAIM_RECENT_DELIVERIES: &'static str = "WITH due AS MATERIALIZED (SELECT message_id \
        FROM deliveries WHERE destination_id = $1 AND status = 'pending' AND next_attempt_at <= $2 \
        AND (lease_until IS NULL OR lease_until <= $2) AND message_id >= {since} \
        ORDER BY next_attempt_at LIMIT $4 FOR UPDATE SKIP LOCKED) \
        UPDATE deliveries d SET lease_until = $3 WHERE d.destination_id = $1 AND d.message_id >= {since} \
        AND d.message_id = ANY (ARRAY (SELECT message_id FROM due)) \
        RETURNING d.message_id, d.destination_id, d.attempts, d.lease_until, d.created_at";
    const CLAIM_LINE_HEAD: &'static str = "WITH head AS MATERIALIZED (SELECT message_id, destination_id \
        FROM deliveries WHERE destination_id = $1 AND status IN ('pending', 'failed') \
        ORDER BY created_at, message_id LIMIT 1 FOR UPDATE) \
        UPDATE deliveries d SET lease_until = $3 FROM head \
        WHERE d.message_id = head.message_id AND d.destination_id = head.destination_id \
        AND d.status = 'pending' AND d.next_attempt_at <= $2 AND (d.lease_until IS NULL OR d.lease_until <= $2) \
        RETURNING d.message_id, d.destination_id, d.attempts, d.lease_until, d.created_at";

    fn id_literal(id: uuid::Uuid) -> String {
        format!("'{id}'::uuid")
    }

    fn migrator() -> &'static sqlx::migrate::Migrator {
        &MIGRATOR
    }

    async fn migrate_in(conn: &mut Self::Connection) -> Result<()> {
        let (database,): (String,) =
            sqlx::query_as("SELECT current_database()").fetch_one(&mut *conn).await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(migration_lock_key(&database))
            .execute(&mut *conn)
            .await?;
        let mut migrator = sqlx::migrate::Migrator::with_migrations(MIGRATOR.iter().cloned().collect());
        migrator.set_locking(false);
        // `run_direct` is what `run` calls for a connection (public, though
        // hidden from sqlx's docs); `run` itself does not compile inside a
        // `Send` future here (sqlx's "`Acquire` is not general enough").
        Ok(migrator.run_direct(None, conn, false).await?)
    }

    async fn packet_holders(
        conn: &mut Self::Connection,
        scope: &Scope,
        fingerprints: &[&str],
    ) -> Result<Vec<ScopedHolder>> {
        // Not kept as a prepared statement: planned afresh for each lookup
        // (see `Backend::packet_holders`), which for one relation takes
        // well under a millisecond.
        Ok(sqlx::query_as(PACKET_HOLDERS)
            .bind(&scope.tenant_id)
            .bind(&scope.environment_id)
            .bind(fingerprints)
            .persistent(false)
            .fetch_all(&mut *conn)
            .await?)
    }

    async fn lock_fingerprints(
        conn: &mut Self::Connection,
        scope: &Scope,
        fingerprints: &[&str],
    ) -> Result<()> {
        sqlx::query(LOCK_FINGERPRINTS)
            .bind(FINGERPRINT_LOCK_CLASS)
            .bind(&scope.tenant_id)
            .bind(&scope.environment_id)
            .bind(fingerprints)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    async fn create_missing_partition(
        sessions: &Sessions<Self>,
        e: &StoreError,
        layout: PartitionLayout,
    ) -> Result<bool> {
        let Some((table, key)) = e.missing_partition() else { return Ok(false) };
        let Some(family) = Family::of(&table) else { return Ok(false) };
        let Some(at) = family.instant(&key) else { return Ok(false) };
        let mut tx = sessions.begin().await?;
        partitions::ensure(&mut tx, layout, family, at).await?;
        tx.commit().await?;
        // Created now or by another replica meanwhile: either way it exists.
        Ok(true)
    }

    async fn create_partitions_ahead(
        sessions: &Sessions<Self>,
        now: DateTime<Utc>,
        layout: PartitionLayout,
    ) -> Result<u64> {
        let mut created = 0;
        let mut tx = sessions.begin().await?;
        for at in partitions::wanted(layout, now) {
            for family in [Family::Messages, Family::Audit] {
                created += u64::from(partitions::ensure(&mut tx, layout, family, at).await?);
            }
        }
        tx.commit().await?;
        Ok(created)
    }

    async fn drop_expired_partitions(
        sessions: &Sessions<Self>,
        messages: Option<DateTime<Utc>>,
        audit: Option<DateTime<Utc>>,
        pace: &crate::Pace,
    ) -> Result<u64> {
        partition_drop::drop_expired(sessions, messages, audit, pace).await
    }
}

#[cfg(test)]
mod tests {
    use super::{crc32, migration_lock_key};

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn migration_lock_key_is_sqlxs() {
        // 0x3d32ad9e times zlib's crc32(b"postgres") = 0x156a8775, computed
        // apart from this code (Python's `zlib.crc32`).
        assert_eq!(migration_lock_key("postgres"), 368_907_709_894_077_238);
    }
}
