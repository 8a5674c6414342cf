//! The SQLite store: the embedded default, one file, no server to run.
//!
//! Settings, and why:
//! - WAL journal: readers never block the writer.
//! - `synchronous = NORMAL`: a commit survives a crash of edihub (the WAL is
//!   written before we answer); only a power loss can lose the last commits.
//! - every write transaction starts with `BEGIN IMMEDIATE`, taking the write
//!   lock up front, so concurrent requests queue on `busy_timeout` instead of
//!   failing when a read transaction tries to upgrade.
//! - one group insert in flight at a time (see [`crate::ingest::group`]): SQLite has
//!   one writer, so the new messages of concurrent requests queue in edihub
//!   and go in together, one statement and one commit per batch, instead of
//!   each request waiting for the lock on its own.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use sqlx::Sqlite;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use crate::backend::{Backend, SqlStore};
use crate::ingest::group::{Batchers, STATEMENT_CACHE};
use crate::ingest::statements::ScopedHolder;
use crate::session::Sessions;
use crate::{PartitionLayout, Result, Scope, StoreError};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

/// A [`crate::Store`] on an SQLite file.
pub type SqliteStore = SqlStore<Sqlite>;

impl SqlStore<Sqlite> {
    /// Opens (creating if needed, with its folder) the database at `url` (`sqlite://path`).
    pub async fn connect(url: &str, opts: &crate::PoolSettings) -> Result<Self> {
        if opts.pooler != crate::Pooler::None {
            return Err(StoreError::PoolerWithoutServer);
        }
        let connect = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(opts.acquire_timeout.max(std::time::Duration::from_secs(5)))
            .foreign_keys(true);
        if let Some(dir) = connect.get_filename().parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(sqlx::Error::Io)?;
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(opts.max_connections.clamp(1, 8))
            .acquire_timeout(opts.acquire_timeout)
            .connect_with(connect.clone())
            .await?;
        // SQLite has one writer: one group-insert batch in flight, of either
        // kind, on connections of its own (the second is for the reads after
        // a keyed batch's commit, the third the group audit's).
        let batch_pool = SqlitePoolOptions::new()
            .max_connections(3)
            .acquire_timeout(opts.acquire_timeout)
            .connect_with(connect.statement_cache_capacity(STATEMENT_CACHE))
            .await?;
        let begin = <Sqlite as Backend>::BEGIN;
        let batch_db = Sessions::direct(batch_pool, begin);
        let batchers = Batchers::spawn(batch_db.clone(), 1, None);
        Ok(Self { db: Sessions::direct(pool, begin), batch_db, batchers, layout: opts.partitions })
    }
}

/// The packet lookup's fingerprints as one JSON array (SQLite's planner
/// keeps no generic plans, so the statement is prepared as usual).
const PACKET_HOLDERS: &str = "SELECT tenant_id, environment_id, id, message_type, mestyp, docnum, \
    key_fingerprint AS fingerprint, received_at, fingerprint_expires_at FROM messages \
    WHERE tenant_id = $1 AND environment_id = $2 AND fingerprint IN (SELECT value FROM json_each($3))";

/// The feed's page: every committed row is final (the one writer numbers
/// rows in commit order). The inner select examines at most `$7` rows in
/// (key, id) order along `messages_feed`; of those, the ones of the type
/// asked for and the last one examined come back, at most `$6`. A body's
/// size is read without reading the body (SQLite takes a BLOB's length
/// from its record header).
const FEED_PAGE: &str = "SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, \
    sender, fingerprint, fingerprint_basis, fingerprint_expires_at, fingerprint_active, idempotency_key, \
    provider_event_id, packet_index, content_type, received_at, feed_major, payload_message_id, \
    body_bytes, wanted, n = examined AS last_examined, examined FROM (SELECT s.*, \
    row_number() OVER (ORDER BY feed_major, id) AS n, count(*) OVER () AS examined FROM (\
    SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, \
    sender, key_fingerprint AS fingerprint, fingerprint_basis, fingerprint_expires_at, \
    (fingerprint IS NOT NULL) AS fingerprint_active, idempotency_key, provider_event_id, \
    packet_index, content_type, received_at, feed_seq AS feed_major, payload_message_id, \
    CASE WHEN payload_message_id IS NULL THEN octet_length(payload) END AS body_bytes, \
    ($5 IS NULL OR message_type = $5) AS wanted FROM messages \
    WHERE tenant_id = $1 AND environment_id = $2 AND (feed_seq, id) > ($3, $4) \
    ORDER BY feed_seq, id LIMIT $7) AS s) AS t \
    WHERE wanted OR n = examined ORDER BY feed_major, id LIMIT $6";

impl Backend for Sqlite {
    const ONE_STATEMENT_KEYED_BATCH: bool = false;
    const BEGIN: &'static str = "BEGIN IMMEDIATE";
    const FEED_PAGE: &'static str = FEED_PAGE;
    const CLAIM_DELIVERIES: &'static str = "UPDATE deliveries SET lease_until = $3 \
        WHERE (message_id, destination_id) IN (SELECT message_id, destination_id FROM deliveries \
        WHERE destination_id = $1 AND status = 'pending' AND next_attempt_at <= $2 \
        AND (lease_until IS NULL OR lease_until <= $2) ORDER BY next_attempt_at LIMIT $4) \
        RETURNING message_id, destination_id, attempts, lease_until, created_at";
    const CLAIM_RECENT_DELIVERIES: &'static str = "UPDATE deliveries SET lease_until = $3 \
        WHERE (message_id, destination_id) IN (SELECT message_id, destination_id FROM deliveries \
        WHERE destination_id = $1 AND status = 'pending' AND next_attempt_at <= $2 \
        AND (lease_until IS NULL OR lease_until <= $2) AND message_id >= {since} \
        ORDER BY next_attempt_at LIMIT $4) \
        RETURNING message_id, destination_id, attempts, lease_until, created_at";
    const CLAIM_LINE_HEAD: &'static str = "UPDATE deliveries SET lease_until = $3 \
        WHERE (message_id, destination_id) IN (SELECT message_id, destination_id FROM deliveries \
        WHERE destination_id = $1 AND status IN ('pending', 'failed') \
        ORDER BY created_at, message_id LIMIT 1) \
        AND status = 'pending' AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until <= $2) \
        RETURNING message_id, destination_id, attempts, lease_until, created_at";

    /// A message id is stored as its 16 bytes, which compare in time order.
    fn id_literal(id: uuid::Uuid) -> String {
        format!("X'{}'", id.simple())
    }

    fn migrator() -> &'static sqlx::migrate::Migrator {
        &MIGRATOR
    }

    /// Never called: an SQLite store is never behind a pooler (its
    /// `connect` refuses one).
    async fn migrate_in(_conn: &mut Self::Connection) -> Result<()> {
        Err(StoreError::PoolerWithoutServer)
    }

    async fn packet_holders(
        conn: &mut Self::Connection,
        scope: &Scope,
        fingerprints: &[&str],
    ) -> Result<Vec<ScopedHolder>> {
        let list = serde_json::to_string(fingerprints)?;
        Ok(sqlx::query_as(PACKET_HOLDERS)
            .bind(&scope.tenant_id)
            .bind(&scope.environment_id)
            .bind(list)
            .fetch_all(&mut *conn)
            .await?)
    }

    async fn lock_fingerprints(_: &mut Self::Connection, _: &Scope, _: &[&str]) -> Result<()> {
        Ok(())
    }

    async fn create_missing_partition(
        _: &Sessions<Self>,
        _: &StoreError,
        _: PartitionLayout,
    ) -> Result<bool> {
        Ok(false)
    }

    async fn create_partitions_ahead(
        _: &Sessions<Self>,
        _: DateTime<Utc>,
        _: PartitionLayout,
    ) -> Result<u64> {
        Ok(0)
    }

    async fn drop_expired_partitions(
        _: &Sessions<Self>,
        _: Option<DateTime<Utc>>,
        _: Option<DateTime<Utc>>,
        _: &crate::Pace,
    ) -> Result<u64> {
        Ok(0)
    }
}
