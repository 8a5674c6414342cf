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
            if let Some(key) = &req.key
                && !claim_key(conn, req, key).await?
            {
                return repeat_of_key(conn, req, key).await;
            }
            // The request body is stored once: by the first message stored,
            // which the packet's other stored messages point to.
            let (outcomes, _) =
                store_messages(conn, req, &req.messages, $crate::packet::Progress::START).await?;
            finish(conn, req, outcomes).await
        }

        /// One chunk of a large packet in its own transaction (see
        /// `ingest::packet`): the messages of `chunk`, and for the last
        /// chunk the key's claim and the response for `earlier` plus these.
        /// Returns the chunk's outcomes and the packet's progress, or the
        /// request's final outcome.
        async fn packet_chunk_in(
            conn: &mut Conn,
            req: &$crate::IngestRequest<'_>,
            chunk: $crate::packet::Chunk<'_>,
        ) -> $crate::Result<$crate::packet::ChunkDone> {
            use $crate::packet::ChunkDone;
            if chunk.last
                && let Some(key) = &req.key
                && !claim_key(conn, req, key).await?
            {
                return Ok(ChunkDone::Final(repeat_of_key(conn, req, key).await?));
            }
            let (outcomes, progress) = store_messages(conn, req, chunk.messages, chunk.progress).await?;
            if !chunk.last {
                return Ok(ChunkDone::Stored { outcomes, progress });
            }
            let all = chunk.earlier.iter().cloned().chain(outcomes).collect();
            Ok(ChunkDone::Final(finish(conn, req, all).await?))
        }

        /// Claims the request's key; false when an earlier request holds it.
        async fn claim_key(
            conn: &mut Conn,
            req: &$crate::IngestRequest<'_>,
            key: &$crate::KeyClaim,
        ) -> $crate::Result<bool> {
            let claimed: Option<(String,)> = sqlx::query_as($crate::sql::CLAIM_KEY)
                .bind(&req.scope.tenant_id)
                .bind(&req.scope.environment_id)
                .bind(key.kind.as_str())
                .bind(&key.key)
                .bind(&key.request_sha256)
                .bind(req.now)
                .fetch_optional(&mut *conn)
                .await?;
            Ok(claimed.is_some())
        }

        /// Stores `messages` (all of a request, or a chunk of a packet):
        /// duplicates of committed messages are settled set-wise first, the
        /// rest one insert each. Returns the outcomes in order and the
        /// packet's progress after them (see [`crate::packet::Progress`]).
        async fn store_messages(
            conn: &mut Conn,
            req: &$crate::IngestRequest<'_>,
            messages: &[$crate::NewMessage],
            mut progress: $crate::packet::Progress,
        ) -> $crate::Result<(Vec<$crate::MessageOutcome>, $crate::packet::Progress)> {
            let known = known_duplicates(conn, req, messages, &mut progress.look_up).await?;
            let mut outcomes = Vec::with_capacity(messages.len());
            for (m, known) in messages.iter().zip(known) {
                let outcome = match known {
                    Some(duplicate) => duplicate,
                    None => store_message(conn, req, m, progress.holder).await?,
                };
                if let (None, $crate::MessageOutcome::Accepted(s)) = (progress.holder, &outcome) {
                    progress.holder = Some(s.id);
                }
                outcomes.push(outcome);
            }
            Ok((outcomes, progress))
        }

        /// The messages of a packet whose fingerprint a live, committed
        /// message holds, as duplicates, with their audit events written:
        /// one holder lookup and one audit insert per [`LOOKUP_CHUNK`]
        /// messages instead of three statements per IDoc, so a re-sent
        /// packet costs less than the first send. `None` where the insert
        /// must decide (no holder yet, an expired window, no fingerprint).
        /// A single message skips this: its insert finds a holder as
        /// cheaply. A lookup that finds no duplicate clears `look_up`: the
        /// rest of a new packet (or of a retry past what was committed) is
        /// new too, and its inserts settle any stray repeat.
        ///
        /// [`LOOKUP_CHUNK`]: crate::packet::LOOKUP_CHUNK
        async fn known_duplicates(
            conn: &mut Conn,
            req: &$crate::IngestRequest<'_>,
            messages: &[$crate::NewMessage],
            look_up: &mut bool,
        ) -> $crate::Result<Vec<Option<$crate::MessageOutcome>>> {
            let mut known = vec![None; messages.len()];
            if messages.len() < 2 {
                return Ok(known);
            }
            for (lookup, slots) in messages
                .chunks($crate::packet::LOOKUP_CHUNK)
                .zip(known.chunks_mut($crate::packet::LOOKUP_CHUNK))
            {
                if !*look_up {
                    break;
                }
                let fingerprints: Vec<&str> =
                    lookup.iter().filter_map(|m| m.fingerprint.as_deref()).collect();
                if fingerprints.is_empty() {
                    continue;
                }
                let holders =
                    <$db as $crate::packet::PacketLookup>::packet_holders(conn, req.scope, &fingerprints)
                        .await?;
                let mut events = Vec::new();
                for (m, slot) in lookup.iter().zip(slots.iter_mut()) {
                    if let Some((existing, event)) =
                        $crate::batch::duplicate_of(req.scope, m, req.now, &holders)
                    {
                        events.push((req.now, event));
                        *slot = Some($crate::MessageOutcome::Duplicate {
                            existing,
                            detected_by: $crate::DetectedBy::Fingerprint,
                        });
                    }
                }
                if events.is_empty() {
                    *look_up = false;
                } else {
                    group_audits(conn, &events).await?;
                }
            }
            Ok(known)
        }

        /// Renders the response from `outcomes`, stores it with the key (if
        /// any), and returns the processed outcome.
        async fn finish(
            conn: &mut Conn,
            req: &$crate::IngestRequest<'_>,
            outcomes: Vec<$crate::MessageOutcome>,
        ) -> $crate::Result<$crate::IngestOutcome> {
            let response = (req.render)(&outcomes);
            if let Some(key) = &req.key {
                let first_id = outcomes.first().map($crate::MessageOutcome::id);
                sqlx::query($crate::sql::FINISH_KEY)
                    .bind(&req.scope.tenant_id)
                    .bind(&req.scope.environment_id)
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
