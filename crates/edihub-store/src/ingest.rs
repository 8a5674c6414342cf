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
//! A request with one message and no key first tries the group insert
//! ([`crate::batch`]): one row of a multi-row autocommit `INSERT`, shared
//! with other requests. If its row went in, that is the whole ingest. If not
//! (a fingerprint holder exists, or the statement failed), it runs the
//! transaction below like every other request.
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

/// Implements [`crate::Store`] for `$ty`, whose `pool` field is a `sqlx::Pool<$db>`
/// and whose `begin()` starts a write transaction.
macro_rules! impl_sql_store {
    ($ty:ty, $db:ty, $migrator:expr) => {
        $crate::admin_sql::admin_methods!($ty, $db);

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

            async fn list_audit(&self, filter: &$crate::AuditFilter) -> $crate::Result<Vec<$crate::AuditEvent>> {
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

            async fn find_messages(&self, f: &$crate::MessageQuery) -> $crate::Result<Vec<$crate::MessageMeta>> {
                self.db_find_messages(f).await
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

            async fn ingest(
                &self,
                mut req: $crate::IngestRequest<'_>,
            ) -> $crate::Result<$crate::IngestOutcome> {
                // The common case, one new message and no key, is one row of
                // a group insert (see `batch`); anything else, including a
                // message that met a fingerprint holder there, runs the
                // transaction below.
                if $crate::batch::Batcher::eligible(&req)
                    && let Some(message) = req.messages.pop()
                {
                    let queued = $crate::batch::Queued { scope: req.scope.clone(), now: req.now, message };
                    let (queued, inserted) = self.batcher.insert(queued).await?;
                    if inserted {
                        let outcomes = vec![$crate::MessageOutcome::Accepted(queued.message.summary(req.now))];
                        let response = (req.render)(&outcomes);
                        return Ok($crate::IngestOutcome::Processed { outcomes, response });
                    }
                    req.messages.push(queued.message);
                }
                // Deadlocks (two packets claiming the same fingerprints in
                // opposite order) and busy errors are cured by running again.
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    let mut tx = self.begin().await?;
                    match ingest_in(&mut *tx, &req).await {
                        Ok(outcome) => {
                            tx.commit().await?;
                            return Ok(outcome);
                        }
                        Err(e) if e.is_transient() && attempt < 5 => {
                            tracing::warn!(error = %e, attempt, "retrying ingest transaction");
                            drop(tx);
                        }
                        Err(e) => return Err(e),
                    }
                }
            }

        }

        #[async_trait::async_trait]
        impl $crate::batch::GroupInsert for sqlx::Pool<$db> {
            async fn insert_rows(&self, items: &[$crate::batch::Queued]) -> $crate::Result<Vec<uuid::Uuid>> {
                let mut q = sqlx::QueryBuilder::<$db>::new($crate::sql::INSERT_MESSAGES_HEAD);
                q.push_values(items, |mut row, item| {
                    let m = &item.message;
                    let expires = m
                        .fingerprint
                        .as_ref()
                        .map(|_| item.now + chrono::Duration::seconds(m.window_seconds));
                    row.push_bind(m.id)
                        .push_bind(&item.scope.tenant_id)
                        .push_bind(&item.scope.environment_id)
                        .push_bind(&m.message_type)
                        .push_bind(&m.mestyp)
                        .push_bind(&m.docnum)
                        .push_bind(&m.sender)
                        .push_bind(&m.fingerprint)
                        .push_bind(&m.fingerprint)
                        .push_bind(&m.fingerprint_basis)
                        .push_bind(expires)
                        .push_bind(sqlx::types::Json(&m.key_values))
                        .push_bind(&m.idempotency_key)
                        .push_bind(&m.provider_event_id)
                        .push_bind(m.packet_index)
                        .push_bind(&m.content_type)
                        .push_bind(&m.payload[..])
                        .push_bind(item.now)
                        .push_bind(None::<uuid::Uuid>);
                });
                q.push($crate::sql::INSERT_MESSAGES_TAIL);
                let rows: Vec<(uuid::Uuid,)> = q.build_query_as().fetch_all(self).await?;
                Ok(rows.into_iter().map(|(id,)| id).collect())
            }
        }

        type Conn = <$db as sqlx::Database>::Connection;

        async fn insert_audit(
            conn: &mut Conn,
            now: chrono::DateTime<chrono::Utc>,
            e: &$crate::NewAuditEvent,
        ) -> $crate::Result<()> {
            sqlx::query($crate::sql::INSERT_AUDIT)
                .bind(now)
                .bind(&e.action)
                .bind(&e.tenant_id)
                .bind(&e.environment_id)
                .bind(&e.message_type)
                .bind(&e.fingerprint)
                .bind(&e.idempotency_key)
                .bind(&e.detected_by)
                .bind(e.message_id)
                .bind(sqlx::types::Json(&e.details))
                .execute(&mut *conn)
                .await?;
            Ok(())
        }

        /// The body of the ingest transaction (see the module docs).
        async fn ingest_in(
            conn: &mut Conn,
            req: &$crate::IngestRequest<'_>,
        ) -> $crate::Result<$crate::IngestOutcome> {
            let scope = req.scope;
            if let Some(key) = &req.key {
                let claimed: Option<(String,)> = sqlx::query_as($crate::sql::CLAIM_KEY)
                    .bind(&scope.tenant_id)
                    .bind(&scope.environment_id)
                    .bind(key.kind.as_str())
                    .bind(&key.key)
                    .bind(&key.request_sha256)
                    .bind(req.now)
                    .fetch_optional(&mut *conn)
                    .await?;
                if claimed.is_none() {
                    return repeat_of_key(conn, req, key).await;
                }
            }
            let mut outcomes = Vec::with_capacity(req.messages.len());
            // The request body is stored once: by the first message stored,
            // which the packet's other stored messages point to.
            let mut holder: Option<uuid::Uuid> = None;
            for m in &req.messages {
                let outcome = store_message(conn, req, m, holder).await?;
                if let (None, $crate::MessageOutcome::Accepted(s)) = (holder, &outcome) {
                    holder = Some(s.id);
                }
                outcomes.push(outcome);
            }
            let response = (req.render)(&outcomes);
            if let Some(key) = &req.key {
                let first_id = outcomes.first().map(|o| match o {
                    $crate::MessageOutcome::Accepted(s) => s.id,
                    $crate::MessageOutcome::Duplicate { existing, .. } => existing.id,
                });
                sqlx::query($crate::sql::FINISH_KEY)
                    .bind(&scope.tenant_id)
                    .bind(&scope.environment_id)
                    .bind(key.kind.as_str())
                    .bind(&key.key)
                    .bind(i32::from(response.status))
                    .bind(&response.body)
                    .bind(first_id)
                    .execute(&mut *conn)
                    .await?;
            }
            Ok($crate::IngestOutcome::Processed { outcomes, response })
        }

        /// A key that was claimed before: replay its response, or refuse it.
        async fn repeat_of_key(
            conn: &mut Conn,
            req: &$crate::IngestRequest<'_>,
            key: &$crate::KeyClaim,
        ) -> $crate::Result<$crate::IngestOutcome> {
            let scope = req.scope;
            let (sha, status, body, message_id): (String, i32, String, Option<uuid::Uuid>) =
                sqlx::query_as($crate::sql::LOAD_KEY)
                    .bind(&scope.tenant_id)
                    .bind(&scope.environment_id)
                    .bind(key.kind.as_str())
                    .bind(&key.key)
                    .fetch_one(&mut *conn)
                    .await?;
            let same = sha == key.request_sha256;
            let replay = same || key.on_reuse == $crate::KeyReusePolicy::Replay;
            let original: Option<$crate::MessageSummary> = match message_id {
                Some(id) => sqlx::query_as($crate::sql::SUMMARY_BY_ID)
                    .bind(id)
                    .fetch_optional(&mut *conn)
                    .await?,
                None => None,
            };
            let event = $crate::NewAuditEvent {
                action: if replay { $crate::audit::DUPLICATE_BLOCKED } else { $crate::audit::KEY_MISMATCH }
                    .to_string(),
                tenant_id: Some(scope.tenant_id.clone()),
                environment_id: Some(scope.environment_id.clone()),
                message_type: original.as_ref().map(|o| o.message_type.clone()),
                fingerprint: original.as_ref().and_then(|o| o.fingerprint.clone()),
                idempotency_key: Some(key.key.clone()),
                detected_by: Some(key.kind.as_str().to_string()),
                message_id,
                details: serde_json::json!({ "same_payload": same, "request_sha256": key.request_sha256 }),
            };
            insert_audit(conn, req.now, &event).await?;
            let status = u16::try_from(status)
                .map_err(|_| $crate::StoreError::Invariant(format!("stored status {status}")))?;
            if status == 0 {
                return Err($crate::StoreError::Invariant("key claimed without a response".into()));
            }
            Ok(if replay {
                $crate::IngestOutcome::Replayed { response: $crate::StoredResponse { status, body } }
            } else {
                $crate::IngestOutcome::KeyMismatch
            })
        }

        /// Stores one message or finds the message whose fingerprint it repeats.
        async fn store_message(
            conn: &mut Conn,
            req: &$crate::IngestRequest<'_>,
            m: &$crate::NewMessage,
            payload_holder: Option<uuid::Uuid>,
        ) -> $crate::Result<$crate::MessageOutcome> {
            let payload: &[u8] = if payload_holder.is_some() { &[] } else { &m.payload[..] };
            let scope = req.scope;
            let expires = m
                .fingerprint
                .as_ref()
                .map(|_| req.now + chrono::Duration::seconds(m.window_seconds));
            // The common case is one statement: the insert. Only on a conflict
            // do we read the holder; if its window has passed we release it and
            // go round again. A holder can also lose its claim between our
            // insert and our read (a third request released it): again.
            for _ in 0..4 {
                let inserted: Option<(uuid::Uuid,)> = sqlx::query_as($crate::sql::INSERT_MESSAGE)
                    .bind(m.id)
                    .bind(&scope.tenant_id)
                    .bind(&scope.environment_id)
                    .bind(&m.message_type)
                    .bind(&m.mestyp)
                    .bind(&m.docnum)
                    .bind(&m.sender)
                    .bind(&m.fingerprint)
                    .bind(&m.fingerprint_basis)
                    .bind(expires)
                    .bind(sqlx::types::Json(&m.key_values))
                    .bind(&m.idempotency_key)
                    .bind(&m.provider_event_id)
                    .bind(m.packet_index)
                    .bind(&m.content_type)
                    .bind(payload)
                    .bind(req.now)
                    .bind(payload_holder)
                    .fetch_optional(&mut *conn)
                    .await?;
                if inserted.is_some() {
                    return Ok($crate::MessageOutcome::Accepted(m.summary(req.now)));
                }
                let Some(fp) = &m.fingerprint else {
                    return Err($crate::StoreError::Invariant("insert without fingerprint skipped".into()));
                };
                let holder: Option<$crate::model::Holder> = sqlx::query_as($crate::sql::FIND_ACTIVE)
                    .bind(&scope.tenant_id)
                    .bind(&scope.environment_id)
                    .bind(fp)
                    .fetch_optional(&mut *conn)
                    .await?;
                if holder.as_ref().is_some_and(|h| h.fingerprint_expires_at.is_some_and(|t| t <= req.now)) {
                    // The holder's window has passed: release its claim and
                    // insert again (the next round becomes the new original).
                    sqlx::query($crate::sql::RELEASE_EXPIRED)
                        .bind(&scope.tenant_id)
                        .bind(&scope.environment_id)
                        .bind(fp)
                        .bind(req.now)
                        .execute(&mut *conn)
                        .await?;
                    continue;
                }
                if let Some($crate::model::Holder { summary: existing, .. }) = holder {
                    if existing.id == m.id {
                        // Our own row: a group insert committed it but its
                        // answer was lost with the connection.
                        return Ok($crate::MessageOutcome::Accepted(existing));
                    }
                    let event = $crate::NewAuditEvent {
                        action: $crate::audit::DUPLICATE_BLOCKED.to_string(),
                        tenant_id: Some(scope.tenant_id.clone()),
                        environment_id: Some(scope.environment_id.clone()),
                        message_type: Some(m.message_type.clone()),
                        fingerprint: Some(fp.clone()),
                        idempotency_key: m.idempotency_key.clone(),
                        detected_by: Some($crate::DetectedBy::Fingerprint.as_str().to_string()),
                        message_id: Some(existing.id),
                        details: serde_json::json!({
                            "docnum": m.docnum,
                            "mestyp": m.mestyp,
                            "key_values": m.key_values,
                            "packet_index": m.packet_index,
                        }),
                    };
                    insert_audit(conn, req.now, &event).await?;
                    return Ok($crate::MessageOutcome::Duplicate {
                        existing,
                        detected_by: $crate::DetectedBy::Fingerprint,
                    });
                }
            }
            Err($crate::StoreError::Invariant("fingerprint claim kept changing hands".into()))
        }
    };
}

pub(crate) use impl_sql_store;
