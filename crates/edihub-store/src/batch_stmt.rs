//! The statements of the group insert, one function each, on any connection
//! of the backend (expanded by [`crate::batch_sql`]'s macro).
//!
//! Every statement covers the whole batch: `VALUES` lists for inserts, `OR`
//! of index-matching terms for lookups. Only storing each response with its
//! key is one statement per request, because the responses differ per row
//! and a portable multi-row `UPDATE` does not exist.

/// Defines the `group_*` statement functions for connections of `$db`.
macro_rules! group_statements {
    ($db:ty) => {
        type GroupConn = <$db as sqlx::Database>::Connection;

        /// Inserts the messages of `items`; returns the ids inserted.
        async fn group_insert_rows(
            conn: &mut GroupConn,
            items: &[&$crate::batch::Queued],
        ) -> $crate::Result<Vec<uuid::Uuid>> {
            let mut q = sqlx::QueryBuilder::<$db>::new($crate::sql::INSERT_MESSAGES_HEAD);
            q.push_values(items, |mut row, item| {
                let m = &item.message;
                let expires =
                    m.fingerprint.as_ref().map(|_| item.now + chrono::Duration::seconds(m.window_seconds));
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
            let rows: Vec<(uuid::Uuid,)> = q.build_query_as().fetch_all(&mut *conn).await?;
            Ok(rows.into_iter().map(|(id,)| id).collect())
        }

        /// The current holders of (scope, fingerprint) claims.
        async fn group_holders(
            conn: &mut GroupConn,
            claims: &[(&$crate::Scope, &str)],
        ) -> $crate::Result<Vec<$crate::batch::ScopedHolder>> {
            Ok(holders_query(claims).build_query_as().fetch_all(&mut *conn).await?)
        }

        /// The holders lookup of `claims`, one `UNION ALL` arm per distinct claim.
        fn holders_query(claims: &[(&$crate::Scope, &str)]) -> sqlx::QueryBuilder<$db> {
            // One point lookup per distinct claim (repeats of one message
            // often share a batch), each its own `UNION ALL` arm: an
            // equality on every column of the unique index is a single
            // index probe in any plan, also in a generic plan made while
            // the table was small (an `IN` list was then left as a filter
            // over the whole scope).
            let mut distinct: Vec<(&$crate::Scope, &str)> = Vec::new();
            for claim in claims {
                if !distinct.contains(claim) {
                    distinct.push(*claim);
                }
            }
            let mut q = sqlx::QueryBuilder::<$db>::new("");
            for (i, (scope, fp)) in distinct.iter().enumerate() {
                q.push(if i == 0 { "" } else { " UNION ALL " });
                q.push($crate::sql::HOLDER_ARM).push_bind(&scope.tenant_id);
                q.push(" AND environment_id = ").push_bind(&scope.environment_id);
                q.push(" AND fingerprint = ").push_bind(*fp);
            }
            q
        }

        /// Appends audit events, each with its time.
        async fn group_audits(
            conn: &mut GroupConn,
            events: &[(chrono::DateTime<chrono::Utc>, $crate::NewAuditEvent)],
        ) -> $crate::Result<()> {
            let mut q = sqlx::QueryBuilder::<$db>::new($crate::sql::INSERT_AUDITS_HEAD);
            q.push_values(events, |mut row, (at, e)| {
                row.push_bind(*at)
                    .push_bind(&e.action)
                    .push_bind(&e.tenant_id)
                    .push_bind(&e.environment_id)
                    .push_bind(&e.message_type)
                    .push_bind(&e.fingerprint)
                    .push_bind(&e.idempotency_key)
                    .push_bind(&e.detected_by)
                    .push_bind(e.message_id)
                    .push_bind(sqlx::types::Json(e.stored_details()));
            });
            q.build().execute(&mut *conn).await?;
            Ok(())
        }

        /// Claims the keys of `items`; true for each item whose key this
        /// statement claimed (a key twice in one batch is claimed once).
        async fn group_claim_keys(
            conn: &mut GroupConn,
            items: &[&$crate::batch::Queued],
        ) -> $crate::Result<Vec<bool>> {
            let mut q = sqlx::QueryBuilder::<$db>::new($crate::sql::CLAIM_KEYS_HEAD);
            q.push_values(
                items.iter().filter_map(|q| Some((*q, q.key.as_ref()?))),
                |mut row, (item, key)| {
                    row.push_bind(&item.scope.tenant_id)
                        .push_bind(&item.scope.environment_id)
                        .push_bind(key.kind.as_str())
                        .push_bind(&key.key)
                        .push_bind(&key.request_sha256)
                        .push_bind(0_i32)
                        .push_bind("")
                        .push_bind(item.now);
                },
            );
            q.push($crate::sql::CLAIM_KEYS_TAIL);
            let rows: Vec<(String, String, String, String)> =
                q.build_query_as().fetch_all(&mut *conn).await?;
            let mut taken = vec![false; rows.len()];
            Ok(items
                .iter()
                .map(|item| {
                    let Some(key) = &item.key else { return false };
                    // Each returned row goes to the first item with its key.
                    let hit = rows.iter().enumerate().position(|(i, (t, e, k, n))| {
                        !taken[i]
                            && *t == item.scope.tenant_id
                            && *e == item.scope.environment_id
                            && k == key.kind.as_str()
                            && *n == key.key
                    });
                    hit.map(|i| taken[i] = true).is_some()
                })
                .collect())
        }

        /// Stores the responses of claimed keys, with the message each
        /// answered for, in one statement.
        async fn group_finish_keys(
            conn: &mut GroupConn,
            rows: &[(&$crate::batch::Queued, &$crate::StoredResponse, uuid::Uuid)],
        ) -> $crate::Result<()> {
            let mut q = sqlx::QueryBuilder::<$db>::new($crate::sql::FINISH_KEYS_HEAD);
            q.push_values(
                rows.iter().filter_map(|r| Some((r, r.0.key.as_ref()?))),
                |mut row, ((item, response, id), key)| {
                    row.push_bind(&item.scope.tenant_id)
                        .push_bind(&item.scope.environment_id)
                        .push_bind(key.kind.as_str())
                        .push_bind(&key.key)
                        .push_bind(i32::from(response.status))
                        .push_bind(&response.body)
                        .push_bind(*id);
                },
            );
            q.push($crate::sql::FINISH_KEYS_TAIL);
            q.build().execute(&mut *conn).await?;
            Ok(())
        }

        /// The stored state of the keys of `items`, with their messages.
        async fn group_key_states(
            conn: &mut GroupConn,
            items: &[&$crate::batch::Queued],
        ) -> $crate::Result<Vec<$crate::batch::KeyState>> {
            // One primary-key probe per distinct key, as `UNION ALL` arms
            // (see `group_holders` for why not an `IN` list).
            let mut distinct: Vec<(&$crate::Scope, &$crate::KeyClaim)> = Vec::new();
            for (item, key) in items.iter().filter_map(|q| Some((*q, q.key.as_ref()?))) {
                let seen =
                    distinct.iter().any(|(s, k)| **s == item.scope && k.kind == key.kind && k.key == key.key);
                if !seen {
                    distinct.push((&item.scope, key));
                }
            }
            let mut q = sqlx::QueryBuilder::<$db>::new("");
            for (i, (scope, key)) in distinct.iter().enumerate() {
                q.push(if i == 0 { "" } else { " UNION ALL " });
                q.push($crate::sql::KEY_STATE_ARM).push_bind(&scope.tenant_id);
                q.push(" AND k.environment_id = ").push_bind(&scope.environment_id);
                q.push(" AND k.kind = ").push_bind(key.kind.as_str());
                q.push(" AND k.key = ").push_bind(&key.key);
            }
            Ok(q.build_query_as().fetch_all(&mut *conn).await?)
        }
    };
}

pub(crate) use group_statements;
