//! PostgreSQL's statements of the ingest, each written whole beside the
//! function that runs it: the message insert (`insert.rs`), the
//! fingerprint claims' probes, locks and releases (`claims.rs`), the
//! request keys (`keys.rs`), the keyed batch's one statement
//! (`keyed_batch.rs`) and the upload of large payloads by `COPY`
//! (`upload.rs`). The paths that run them and the decisions they
//! feed are in [`crate::ingest`]; the audit insert is the audit log's
//! (`postgres/audit.rs`).

mod claims;
mod insert;
mod keyed_batch;
mod keys;
mod upload;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

pub(crate) use insert::insert_messages;
pub(super) use keyed_batch::claim_and_insert;

use super::audit;
use crate::ingest::insert_answer::Inserted;
use crate::ingest::statements::{IngestSql, Row, ScopedHolder};
use crate::{NewAuditEvent, Result, Scope};

impl IngestSql for PgConnection {
    async fn insert_messages(&mut self, rows: &[Row<'_>]) -> Result<Inserted> {
        insert::insert_messages(self, rows).await
    }

    async fn holders(&mut self, claims: &[(&Scope, &str)]) -> Result<Vec<ScopedHolder>> {
        claims::holders(self, claims).await
    }

    async fn packet_holders(&mut self, scope: &Scope, fingerprints: &[&str]) -> Result<Vec<ScopedHolder>> {
        claims::packet_holders(self, scope, fingerprints).await
    }

    async fn lock_fingerprints(&mut self, scope: &Scope, fingerprints: &[&str]) -> Result<()> {
        claims::lock_fingerprints(self, scope, fingerprints).await
    }

    async fn release_expired(&mut self, scope: &Scope, fingerprint: &str, now: DateTime<Utc>) -> Result<()> {
        claims::release_expired(self, scope, fingerprint, now).await
    }

    async fn insert_audits(&mut self, events: &[(DateTime<Utc>, NewAuditEvent)]) -> Result<()> {
        audit::insert_audits(self, events).await
    }
}
