//! The catalog, lookup, audit and retention methods of [`crate::Store`],
//! written once for both backends (expanded inside `impl_sql_store!`, see
//! [`crate::ingest`] for why a macro).
//!
//! Retention deletes in batches of `LIMIT n` through a sub-select, so a purge
//! never holds a table-wide lock and live traffic interleaves with it.

/// Expands to inherent `db_*` methods of `$ty` (pool of `$db`) that the
/// `Store` impl delegates to. They are inherent, not trait methods, because
/// `#[async_trait]` rewrites an impl before inner macros expand.
macro_rules! admin_methods {
    ($ty:ty, $db:ty) => {
        impl $ty {
            pub(crate) async fn db_seed_message_types(&self, rows: &[$crate::MessageTypeRow]) -> $crate::Result<()> {
                let mut tx = self.begin().await?;
                let existing: Vec<$crate::MessageTypeRow> =
                    sqlx::query_as($crate::sql::LIST_TYPES).fetch_all(&mut *tx).await?;
                for old in existing.iter().filter(|o| o.source == $crate::catalog::SOURCE_CONFIG) {
                    if !rows.iter().any(|r| r.tenant_id == old.tenant_id && r.id == old.id) {
                        sqlx::query($crate::sql::DELETE_CONFIG_TYPE)
                            .bind(&old.tenant_id)
                            .bind(&old.id)
                            .execute(&mut *tx)
                            .await?;
                    }
                }
                for row in rows {
                    sqlx::query($crate::sql::SEED_TYPE)
                        .bind(&row.tenant_id)
                        .bind(&row.id)
                        .bind(&row.duplicate_key_fields)
                        .bind(&row.exclude_fields)
                        .bind(row.duplicate_window_seconds)
                        .bind(row.updated_at)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            pub(crate) async fn db_seed_integrations(&self, rows: &[$crate::IntegrationRow]) -> $crate::Result<()> {
                let mut tx = self.begin().await?;
                let existing: Vec<$crate::IntegrationRow> =
                    sqlx::query_as($crate::sql::LIST_INTEGRATIONS).fetch_all(&mut *tx).await?;
                for old in existing.iter().filter(|o| o.source == $crate::catalog::SOURCE_CONFIG) {
                    if !rows.iter().any(|r| r.id == old.id) {
                        sqlx::query($crate::sql::DELETE_CONFIG_INTEGRATION)
                            .bind(&old.id)
                            .execute(&mut *tx)
                            .await?;
                    }
                }
                for row in rows {
                    sqlx::query($crate::sql::SEED_INTEGRATION)
                        .bind(&row.id)
                        .bind(&row.tenant_id)
                        .bind(&row.environment_id)
                        .bind(&row.definition)
                        .bind(row.updated_at)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            pub(crate) async fn db_list_integrations(&self) -> $crate::Result<Vec<$crate::IntegrationRow>> {
                Ok(sqlx::query_as($crate::sql::LIST_INTEGRATIONS).fetch_all(&self.pool).await?)
            }

            pub(crate) async fn db_list_message_types(&self) -> $crate::Result<Vec<$crate::MessageTypeRow>> {
                Ok(sqlx::query_as($crate::sql::LIST_TYPES).fetch_all(&self.pool).await?)
            }

            pub(crate) async fn db_get_message(&self, id: uuid::Uuid) -> $crate::Result<Option<$crate::MessageRow>> {
                Ok(sqlx::query_as($crate::sql::MESSAGE_BY_ID)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?)
            }

            pub(crate) async fn db_count_messages(&self, scope: &$crate::Scope) -> $crate::Result<i64> {
                let (n,): (i64,) = sqlx::query_as($crate::sql::COUNT_MESSAGES)
                    .bind(&scope.tenant_id)
                    .bind(&scope.environment_id)
                    .fetch_one(&self.pool)
                    .await?;
                Ok(n)
            }

            pub(crate) async fn db_insert_audit(&self, event: &$crate::NewAuditEvent) -> $crate::Result<()> {
                let mut conn = self.pool.acquire().await?;
                insert_audit(&mut *conn, chrono::Utc::now(), event).await
            }

            pub(crate) async fn db_list_audit(
                &self,
                f: &$crate::AuditFilter,
            ) -> $crate::Result<Vec<$crate::AuditEvent>> {
                let mut q = sqlx::QueryBuilder::<$db>::new($crate::sql::AUDIT_COLUMNS);
                let text_filters = [
                    (" AND action = ", &f.action),
                    (" AND tenant_id = ", &f.tenant),
                    (" AND environment_id = ", &f.environment),
                    (" AND message_type = ", &f.message_type),
                    (" AND fingerprint = ", &f.fingerprint),
                ];
                for (clause, value) in text_filters {
                    if let Some(v) = value {
                        q.push(clause).push_bind(v.clone());
                    }
                }
                if let Some(id) = f.message_id {
                    q.push(" AND message_id = ").push_bind(id);
                }
                if let Some(since) = f.since {
                    q.push(" AND occurred_at >= ").push_bind(since);
                }
                if let Some(until) = f.until {
                    q.push(" AND occurred_at < ").push_bind(until);
                }
                if let Some(cursor) = f.cursor {
                    q.push(" AND id < ").push_bind(cursor);
                }
                q.push(" ORDER BY id DESC LIMIT ").push_bind(f.limit);
                Ok(q.build_query_as().fetch_all(&self.pool).await?)
            }

            pub(crate) async fn db_put_message_type(
                &self,
                row: &$crate::MessageTypeRow,
            ) -> $crate::Result<Option<$crate::MessageTypeRow>> {
                let mut tx = self.begin().await?;
                let old: Option<$crate::MessageTypeRow> = sqlx::query_as($crate::sql::GET_TYPE)
                    .bind(&row.tenant_id)
                    .bind(&row.id)
                    .fetch_optional(&mut *tx)
                    .await?;
                sqlx::query($crate::sql::PUT_TYPE)
                    .bind(&row.tenant_id)
                    .bind(&row.id)
                    .bind(&row.duplicate_key_fields)
                    .bind(&row.exclude_fields)
                    .bind(row.duplicate_window_seconds)
                    .bind(row.updated_at)
                    .execute(&mut *tx)
                    .await?;
                // A new tenant override replaces the global rule: record that
                // as what was in effect before.
                let inherited: Option<$crate::MessageTypeRow> = match (&old, row.tenant_id.is_empty()) {
                    (None, false) => sqlx::query_as($crate::sql::GET_TYPE)
                        .bind($crate::GLOBAL_TENANT)
                        .bind(&row.id)
                        .fetch_optional(&mut *tx)
                        .await?,
                    _ => None,
                };
                let event = $crate::NewAuditEvent {
                    action: $crate::audit::MESSAGE_TYPE_UPDATED.into(),
                    tenant_id: (!row.tenant_id.is_empty()).then(|| row.tenant_id.clone()),
                    message_type: Some(row.id.clone()),
                    details: serde_json::json!({ "old": old, "inherited": inherited, "new": row }),
                    ..Default::default()
                };
                insert_audit(&mut *tx, row.updated_at, &event).await?;
                tx.commit().await?;
                Ok(old)
            }

            pub(crate) async fn db_put_integration(
                &self,
                row: &$crate::IntegrationRow,
            ) -> $crate::Result<Option<$crate::IntegrationRow>> {
                let mut tx = self.begin().await?;
                let old: Option<$crate::IntegrationRow> = sqlx::query_as($crate::sql::GET_INTEGRATION)
                    .bind(&row.id)
                    .fetch_optional(&mut *tx)
                    .await?;
                sqlx::query($crate::sql::PUT_INTEGRATION)
                    .bind(&row.id)
                    .bind(&row.tenant_id)
                    .bind(&row.environment_id)
                    .bind(&row.definition)
                    .bind(row.updated_at)
                    .execute(&mut *tx)
                    .await?;
                let event = $crate::NewAuditEvent {
                    action: $crate::audit::INTEGRATION_UPDATED.into(),
                    tenant_id: Some(row.tenant_id.clone()),
                    environment_id: Some(row.environment_id.clone()),
                    details: serde_json::json!({ "integration": row.id, "old": old, "new": row }),
                    ..Default::default()
                };
                insert_audit(&mut *tx, row.updated_at, &event).await?;
                tx.commit().await?;
                Ok(old)
            }

            pub(crate) async fn db_find_messages(
                &self,
                f: &$crate::MessageQuery,
            ) -> $crate::Result<Vec<$crate::MessageMeta>> {
                let mut q = sqlx::QueryBuilder::<$db>::new($crate::sql::MESSAGE_META_COLUMNS);
                let filters = [
                    (" AND tenant_id = ", &f.tenant),
                    (" AND environment_id = ", &f.environment),
                    (" AND key_fingerprint = ", &f.fingerprint),
                    (" AND idempotency_key = ", &f.idempotency_key),
                    (" AND message_type = ", &f.message_type),
                    (" AND sender = ", &f.sender),
                ];
                for (clause, value) in filters {
                    if let Some(v) = value {
                        q.push(clause).push_bind(v.clone());
                    }
                }
                if let Some(docnum) = &f.docnum {
                    let mut forms = q.push(" AND docnum IN (").separated(", ");
                    for form in $crate::model::docnum_forms(docnum) {
                        forms.push_bind(form);
                    }
                    q.push(")");
                }
                if let Some(value) = &f.key_value {
                    // Key values are a short JSON array per message: matched
                    // as text, within the other filters' rows.
                    q.push(" AND CAST(key_values AS TEXT) LIKE ")
                        .push_bind($crate::model::key_value_pattern(value))
                        .push(" ESCAPE '\\'");
                }
                if let Some(since) = f.since {
                    q.push(" AND received_at >= ").push_bind(since);
                }
                if let Some(until) = f.until {
                    q.push(" AND received_at < ").push_bind(until);
                }
                if let Some((at, id)) = f.before {
                    q.push(" AND (received_at < ").push_bind(at);
                    q.push(" OR (received_at = ").push_bind(at).push(" AND id < ").push_bind(id).push("))");
                }
                q.push(" ORDER BY received_at DESC, id DESC LIMIT ").push_bind(f.limit);
                Ok(q.build_query_as().fetch_all(&self.pool).await?)
            }

            pub(crate) async fn db_retention_step(
                &self,
                step: $crate::RetentionStep,
                cutoff: chrono::DateTime<chrono::Utc>,
                now: chrono::DateTime<chrono::Utc>,
                batch: i64,
            ) -> $crate::Result<u64> {
                let q = match step {
                    $crate::RetentionStep::ReleaseFingerprints => {
                        sqlx::query($crate::sql::RELEASE_BATCH).bind(now).bind(batch)
                    }
                    $crate::RetentionStep::PurgeMessages => {
                        sqlx::query($crate::sql::PURGE_MESSAGES).bind(cutoff).bind(now).bind(batch)
                    }
                    $crate::RetentionStep::PurgeKeys => sqlx::query($crate::sql::PURGE_KEYS).bind(cutoff).bind(batch),
                    $crate::RetentionStep::PurgeAudit => sqlx::query($crate::sql::PURGE_AUDIT).bind(cutoff).bind(batch),
                };
                Ok(q.execute(&self.pool).await?.rows_affected())
            }

            pub(crate) async fn db_purge_keys(
                &self,
                which: $crate::KeyPurge<'_>,
                cutoff: chrono::DateTime<chrono::Utc>,
                batch: i64,
            ) -> $crate::Result<u64> {
                let mut q = sqlx::QueryBuilder::<$db>::new($crate::sql::PURGE_KEYS_HEAD);
                q.push_bind(cutoff);
                let (negate, integrations) = match which {
                    $crate::KeyPurge::AllExcept(ids) => (true, ids),
                    $crate::KeyPurge::EventIdsOf(id) => (false, std::slice::from_ref(id)),
                };
                if !integrations.is_empty() {
                    q.push(if negate { " AND NOT " } else { " AND " });
                    q.push("(kind = 'provider_event_id' AND (");
                    // Event ids are stored as `<integration>:<id>`.
                    for (i, id) in integrations.iter().enumerate() {
                        let prefix = format!("{id}:");
                        let len = i32::try_from(prefix.chars().count()).unwrap_or(i32::MAX);
                        q.push(if i == 0 { "substr(key, 1, " } else { " OR substr(key, 1, " });
                        q.push_bind(len).push(") = ").push_bind(prefix);
                    }
                    q.push("))");
                } else if !negate {
                    return Ok(0);
                }
                q.push(" LIMIT ").push_bind(batch).push(")");
                Ok(q.build().execute(&self.pool).await?.rows_affected())
            }
        }
    };
}

pub(crate) use admin_methods;
