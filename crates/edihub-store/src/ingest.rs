//! The ingest transaction and the other [`crate::Store`] methods, written once
//! for both backends.
//!
//! The macro expands the same Rust code against `sqlx::Pool<Postgres>` and
//! `sqlx::Pool<Sqlite>`: generic code over `sqlx::Database` needs a wall of
//! higher-ranked bounds, while the statements themselves are identical (see
//! [`crate::sql`]). The only backend-specific piece is how a transaction
//! starts (`BEGIN` on PostgreSQL, `BEGIN IMMEDIATE` on SQLite so the write lock
//! is taken up front instead of failing on upgrade).
//!
//! A request with one small message first goes through the group insert
//! ([`crate::batch`]), which settles it together with concurrent requests:
//! without a key in autocommit statements, with a key in one transaction per
//! batch. Whatever the batch cannot decide (an expired window, a failed
//! statement), packets and large bodies run the transaction below (see
//! [`crate::transaction`]).
//!
//! Order of work inside one transaction:
//! 1. claim the request key (Idempotency-Key or provider event id). On
//!    PostgreSQL a concurrent claim of the same key waits on the unique index
//!    until the first transaction commits, then sees its stored response, so
//!    simultaneous repeats all get the first answer.
//! 2. for each message: insert with `ON CONFLICT … DO NOTHING`. The partial
//!    unique index is the only arbiter: the loser reads the holder and
//!    records a `message.duplicate_blocked` event; if the holder's window has
//!    passed, the loser releases it and inserts again, becoming the original.
//! 3. render the response, store it with the key, commit. Only then does the
//!    caller answer 2xx.

/// Implements [`crate::Store`] for `$ty`, whose `pool` and `batch_pool` fields
/// are `sqlx::Pool<$db>`s, whose `batchers` field queues the group insert and
/// whose `begin()` starts a write transaction (the statement `$begin`).
macro_rules! impl_sql_store {
    ($ty:ty, $db:ty, $migrator:expr, $begin:expr) => {
        $crate::admin_sql::admin_methods!($ty, $db);
        $crate::console::console_methods!($ty, $db);

        #[async_trait::async_trait]
        impl $crate::Store for $ty {
            fn backend(&self) -> &'static str {
                <$db as sqlx::Database>::NAME
            }

            fn pool_status(&self) -> (u32, usize) {
                (self.pool.size(), self.pool.num_idle())
            }

            async fn migrate(&self) -> $crate::Result<()> {
                $migrator.run(&self.pool).await?;
                Ok(())
            }

            async fn ping(&self) -> $crate::Result<()> {
                sqlx::query("SELECT 1").execute(&self.pool).await?;
                Ok(())
            }

            async fn close(&self) {
                self.batch_pool.close().await;
                self.pool.close().await;
            }

            async fn seed_message_types(&self, rows: &[$crate::MessageTypeRow]) -> $crate::Result<()> {
                self.db_seed_message_types(rows).await
            }

            async fn seed_integrations(&self, rows: &[$crate::IntegrationRow]) -> $crate::Result<()> {
                self.db_seed_integrations(rows).await
            }

            async fn list_integrations(&self) -> $crate::Result<Vec<$crate::IntegrationRow>> {
                self.db_list_integrations().await
            }

            async fn list_message_types(&self) -> $crate::Result<Vec<$crate::MessageTypeRow>> {
                self.db_list_message_types().await
            }

            async fn get_message(&self, id: uuid::Uuid) -> $crate::Result<Option<$crate::MessageRow>> {
                self.db_get_message(id).await
            }

            async fn count_messages(&self, scope: &$crate::Scope) -> $crate::Result<i64> {
                self.db_count_messages(scope).await
            }

            async fn insert_audit(&self, event: &$crate::NewAuditEvent) -> $crate::Result<()> {
                self.db_insert_audit(event).await
            }

            async fn list_audit(
                &self,
                filter: &$crate::AuditFilter,
            ) -> $crate::Result<Vec<$crate::AuditEvent>> {
                self.db_list_audit(filter).await
            }

            async fn put_message_type(
                &self,
                row: &$crate::MessageTypeRow,
            ) -> $crate::Result<Option<$crate::MessageTypeRow>> {
                self.db_put_message_type(row).await
            }

            async fn put_integration(
                &self,
                row: &$crate::IntegrationRow,
            ) -> $crate::Result<Option<$crate::IntegrationRow>> {
                self.db_put_integration(row).await
            }

            async fn find_messages(
                &self,
                f: &$crate::MessageQuery,
            ) -> $crate::Result<Vec<$crate::MessageMeta>> {
                self.db_find_messages(f).await
            }

            async fn activity(
                &self,
                since: chrono::DateTime<chrono::Utc>,
            ) -> $crate::Result<Vec<$crate::ActivityCount>> {
                self.db_activity(since).await
            }

            async fn activity_series(
                &self,
                bounds: &[chrono::DateTime<chrono::Utc>],
            ) -> $crate::Result<Vec<$crate::ActivityPoint>> {
                self.db_activity_series(bounds).await
            }

            async fn retention_step(
                &self,
                step: $crate::RetentionStep,
                cutoff: chrono::DateTime<chrono::Utc>,
                now: chrono::DateTime<chrono::Utc>,
                batch: i64,
            ) -> $crate::Result<u64> {
                self.db_retention_step(step, cutoff, now, batch).await
            }

            async fn purge_keys(
                &self,
                which: $crate::KeyPurge<'_>,
                cutoff: chrono::DateTime<chrono::Utc>,
                batch: i64,
            ) -> $crate::Result<u64> {
                self.db_purge_keys(which, cutoff, batch).await
            }

            async fn next_ack_number(&self, scope: &$crate::Scope, partner: &str) -> $crate::Result<i64> {
                $crate::ack_numbers::next_ack_number(&self.pool, scope, partner).await
            }

            async fn ingest(
                &self,
                mut req: $crate::IngestRequest<'_>,
            ) -> $crate::Result<$crate::IngestOutcome> {
                // The common case, one message, is one row of a group insert
                // (see `batch`); packets, large bodies and whatever the
                // batch could not decide run the transaction below.
                if $crate::batch::Batchers::eligible(&req)
                    && let Some(message) = req.messages.pop()
                {
                    let queued = $crate::batch::Queued {
                        scope: req.scope.clone(),
                        now: req.now,
                        key: req.key.clone(),
                        render: std::sync::Arc::clone(&req.render),
                        message,
                    };
                    let (queued, verdict) = self.batchers.insert(queued).await?;
                    let outcome = match verdict {
                        $crate::batch::Verdict::Inserted => {
                            $crate::MessageOutcome::Accepted(queued.message.summary(req.now))
                        }
                        $crate::batch::Verdict::Duplicate(existing) => $crate::MessageOutcome::Duplicate {
                            existing,
                            detected_by: $crate::DetectedBy::Fingerprint,
                        },
                        $crate::batch::Verdict::Outcome(outcome) => return Ok(outcome),
                        $crate::batch::Verdict::Undecided => {
                            req.messages.push(queued.message);
                            return self.ingest_tx(req).await;
                        }
                    };
                    let outcomes = vec![outcome];
                    let response = (req.render)(&outcomes);
                    return Ok($crate::IngestOutcome::Processed { outcomes, response });
                }
                self.ingest_tx(req).await
            }
        }

        impl $ty {
            /// The ingest transaction, retried on deadlocks and busy errors;
            /// a large packet whose key (if any) is new is stored in chunks.
            async fn ingest_tx(
                &self,
                req: $crate::IngestRequest<'_>,
            ) -> $crate::Result<$crate::IngestOutcome> {
                if req.messages.len() > $crate::packet::TX_CHUNK && !self.key_taken(&req).await? {
                    return self.ingest_packet(&req).await;
                }
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    let mut tx = self.begin().await?;
                    match ingest_in(&mut *tx, &req).await {
                        Ok(outcome) => {
                            tx.commit().await?;
                            return Ok(outcome);
                        }
                        Err(e) => {
                            drop(tx);
                            if !$crate::ingest::pause_before_retry(&e, attempt).await {
                                return Err(e);
                            }
                        }
                    }
                }
            }

            /// Whether an earlier request claimed this request's key (then
            /// the ordinary transaction replays or refuses it at once).
            async fn key_taken(&self, req: &$crate::IngestRequest<'_>) -> $crate::Result<bool> {
                let Some(key) = &req.key else { return Ok(false) };
                let row: Option<(String, i32, String, Option<uuid::Uuid>)> =
                    sqlx::query_as($crate::sql::LOAD_KEY)
                        .bind(&req.scope.tenant_id)
                        .bind(&req.scope.environment_id)
                        .bind(key.kind.as_str())
                        .bind(&key.key)
                        .fetch_optional(&self.pool)
                        .await?;
                Ok(row.is_some())
            }

            /// A large packet, one transaction per chunk (see [`crate::packet`]).
            async fn ingest_packet(
                &self,
                req: &$crate::IngestRequest<'_>,
            ) -> $crate::Result<$crate::IngestOutcome> {
                use $crate::packet::{Chunk, ChunkDone, Progress, TX_CHUNK};
                let mut earlier = Vec::with_capacity(req.messages.len());
                let mut progress = Progress::START;
                let count = req.messages.len().div_ceil(TX_CHUNK);
                for (i, messages) in req.messages.chunks(TX_CHUNK).enumerate() {
                    let chunk = Chunk { messages, progress, earlier: &earlier, last: i + 1 == count };
                    match self.packet_chunk_tx(req, chunk).await? {
                        ChunkDone::Stored { outcomes, progress: after } => {
                            earlier.extend(outcomes);
                            progress = after;
                        }
                        ChunkDone::Final(outcome) => return Ok(outcome),
                    }
                }
                Err($crate::StoreError::Invariant("a packet ended without its last chunk".into()))
            }

            /// One chunk's transaction, retried like the ingest transaction.
            async fn packet_chunk_tx(
                &self,
                req: &$crate::IngestRequest<'_>,
                chunk: $crate::packet::Chunk<'_>,
            ) -> $crate::Result<$crate::packet::ChunkDone> {
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    let turn = self.batchers.write_turn().await;
                    let mut tx = self.begin().await?;
                    match packet_chunk_in(&mut *tx, req, chunk).await {
                        Ok(done) => {
                            tx.commit().await?;
                            return Ok(done);
                        }
                        Err(e) => {
                            drop(tx);
                            drop(turn);
                            if !$crate::ingest::pause_before_retry(&e, attempt).await {
                                return Err(e);
                            }
                        }
                    }
                }
            }
        }

        $crate::batch_sql::group_insert_sql!($db, $begin);

        $crate::transaction::ingest_tx_fns!($db);
    };
}

pub(crate) use impl_sql_store;

/// Whether a failed write transaction should run again: deadlocks (two
/// packets claiming the same fingerprints in opposite order) and busy
/// errors are cured by running again, up to eight attempts. Transactions
/// that deadlocked together would collide again if all retried at once, so
/// this first waits a random few milliseconds, longer each time.
pub(crate) async fn pause_before_retry(e: &crate::StoreError, attempt: u64) -> bool {
    if !e.is_transient() || attempt >= 8 {
        return false;
    }
    tracing::warn!(error = %e, attempt, "retrying ingest transaction");
    let jitter = (uuid::Uuid::new_v4().as_u128() % 20) as u64 + 1;
    tokio::time::sleep(std::time::Duration::from_millis(jitter * attempt)).await;
    true
}
