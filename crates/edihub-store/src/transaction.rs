//! The body of the ingest transaction, for both backends (expanded by
//! [`crate::ingest`]'s macro next to the store it serves).
//!
//! Each function takes the transaction's connection, so everything it does
//! commits or rolls back together: claiming the key, storing or finding each
//! message, auditing duplicates, and storing the response with the key.

/// Defines `ingest_in` and its helpers for connections of `$db`.
macro_rules! ingest_tx_fns {
    ($db:ty) => {
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
                .bind(sqlx::types::Json(e.stored_details()))
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
                let first_id = outcomes.first().map($crate::MessageOutcome::id);
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
                Some(id) => {
                    sqlx::query_as($crate::sql::SUMMARY_BY_ID).bind(id).fetch_optional(&mut *conn).await?
                }
                None => None,
            };
            let original = match original {
                Some(o) => (message_id, Some(o.message_type), o.fingerprint),
                None => (message_id, None, None),
            };
            let event = $crate::NewAuditEvent::key_repeat(scope, key, original, same, replay);
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
            let expires =
                m.fingerprint.as_ref().map(|_| req.now + chrono::Duration::seconds(m.window_seconds));
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
                if holder.as_ref().is_some_and(|h| !h.is_live(req.now)) {
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
                    let event = $crate::NewAuditEvent::fingerprint_duplicate(scope, m, fp, existing.id);
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

pub(crate) use ingest_tx_fns;
