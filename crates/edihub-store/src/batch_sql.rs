//! The SQL of the group insert ([`crate::batch`]), for both backends.
//!
//! Like [`crate::ingest`], a macro expands the same code for
//! `sqlx::Pool<Postgres>` and `sqlx::Pool<Sqlite>`. Each statement is built
//! with `QueryBuilder`, which numbers the placeholders for the backend, and
//! runs on a connection: in autocommit for requests without a key, inside
//! one transaction for requests with one. The number of rows varies, so
//! each batch size is its own prepared statement in sqlx's per-connection
//! cache (at most [`crate::batch`]'s row limit of them per statement).

/// Implements [`crate::batch::GroupInsert`] for `sqlx::Pool<$db>`; `$begin`
/// starts a write transaction.
macro_rules! group_insert_sql {
    ($db:ty, $begin:expr) => {
        #[async_trait::async_trait]
        impl $crate::batch::GroupInsert for sqlx::Pool<$db> {

            async fn insert_rows(&self, items: &[&$crate::batch::Queued]) -> $crate::Result<Vec<uuid::Uuid>> {
                group_insert_rows(&mut *self.acquire().await?, items).await
            }

            async fn holders(
                &self,
                claims: &[(&$crate::Scope, &str)],
            ) -> $crate::Result<Vec<$crate::batch::ScopedHolder>> {
                group_holders(&mut *self.acquire().await?, claims).await
            }

            async fn insert_audits(
                &self,
                events: &[(chrono::DateTime<chrono::Utc>, $crate::NewAuditEvent)],
            ) -> $crate::Result<()> {
                group_audits(&mut *self.acquire().await?, events).await
            }

            async fn settle_keyed(
                &self,
                items: &[&$crate::batch::Queued],
            ) -> $crate::Result<Vec<$crate::batch::Verdict>> {
                use $crate::batch::Verdict;
                let mut verdicts = vec![Verdict::Undecided; items.len()];
                let mut tx = self.begin_with($begin).await?;
                let claimed = group_claim_keys(&mut *tx, items).await?;
                let winners: Vec<&$crate::batch::Queued> =
                    items.iter().zip(&claimed).filter(|(_, c)| **c).map(|(q, _)| *q).collect();
                if !winners.is_empty() {
                    let inserted = group_insert_rows(&mut *tx, &winners).await?;
                    let claims = $crate::batch::unsettled_claims(&winners, &inserted);
                    let holders =
                        if claims.is_empty() { Vec::new() } else { group_holders(&mut *tx, &claims).await? };
                    let mut events = Vec::new();
                    let mut outcomes = Vec::with_capacity(winners.len());
                    for q in &winners {
                        if inserted.contains(&q.message.id) {
                            outcomes.push($crate::MessageOutcome::Accepted(q.message.summary(q.now)));
                        } else if let Some((existing, event)) = $crate::batch::live_duplicate(q, &holders) {
                            events.push((q.now, event));
                            outcomes.push($crate::MessageOutcome::Duplicate {
                                existing,
                                detected_by: $crate::DetectedBy::Fingerprint,
                            });
                        } else {
                            // An expired window or a vanished holder: roll
                            // the batch back and let each request's own
                            // transaction handle it.
                            return Ok(verdicts);
                        }
                    }
                    if !events.is_empty() {
                        group_audits(&mut *tx, &events).await?;
                    }
                    let answers: Vec<(Vec<$crate::MessageOutcome>, $crate::StoredResponse)> = outcomes
                        .into_iter()
                        .zip(&winners)
                        .map(|(outcome, q)| {
                            let outcomes = vec![outcome];
                            let response = (q.render)(&outcomes);
                            (outcomes, response)
                        })
                        .collect();
                    let finished: Vec<_> = winners
                        .iter()
                        .zip(&answers)
                        .map(|(q, (outcomes, response))| (*q, response, outcomes[0].id()))
                        .collect();
                    group_finish_keys(&mut *tx, &finished).await?;
                    tx.commit().await?;
                    let mut answers = answers.into_iter().map(|(outcomes, response)| {
                        Verdict::Outcome($crate::IngestOutcome::Processed { outcomes, response })
                    });
                    for (v, c) in verdicts.iter_mut().zip(&claimed) {
                        if *c {
                            *v = answers.next().unwrap_or(Verdict::Undecided);
                        }
                    }
                } else {
                    tx.commit().await?;
                }
                // Repeats: every claim they met is committed by now (an
                // earlier request's, or this batch's), with its response.
                let repeats: Vec<(usize, &$crate::batch::Queued)> =
                    items.iter().enumerate().filter(|(i, _)| !claimed[*i]).map(|(i, q)| (i, *q)).collect();
                if !repeats.is_empty() {
                    let qs: Vec<&$crate::batch::Queued> = repeats.iter().map(|(_, q)| *q).collect();
                    let decided = async {
                        let mut conn = self.acquire().await?;
                        let states = group_key_states(&mut *conn, &qs).await?;
                        let decided: Vec<_> = repeats
                            .iter()
                            .filter_map(|(i, q)| Some((*i, $crate::batch::repeat(q, &states)?)))
                            .collect();
                        let events: Vec<_> = decided.iter().map(|(_, (_, e))| e.clone()).collect();
                        if !events.is_empty() {
                            group_audits(&mut *conn, &events).await?;
                        }
                        Ok::<_, $crate::StoreError>(decided)
                    };
                    match decided.await {
                        Ok(decided) => decided.into_iter().for_each(|(i, (v, _))| verdicts[i] = v),
                        // The claimed requests are committed; the repeats
                        // run their own transactions.
                        Err(e) => tracing::debug!(error = %e, "group key lookup failed"),
                    }
                }
                Ok(verdicts)
            }
        }

        $crate::batch_stmt::group_statements!($db);
    };
}

pub(crate) use group_insert_sql;
