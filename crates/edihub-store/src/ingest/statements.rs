//! What the ingest asks of a backend's connection: its message statements
//! ([`IngestSql`]: insert, holder probes, fingerprint locks, releases,
//! audit events) and, in [`super::keys`], its key statements. Each backend
//! writes them whole for its schema (`postgres/ingest/`,
//! `sqlite/ingest/`); the paths of the ingest run them on a connection or
//! transaction and decide from what they return ([`super::decide`]).
//!
//! Every statement covers a list: `VALUES` lists for inserts, point probes
//! for lookups. A packet's insert rounds pass a list of one, a batch a
//! list of many, so every path binds the same 19 columns in the same
//! order and reads the same rows back. Each list length is its own
//! prepared statement in the connection's cache (but for PostgreSQL's
//! insert that reads uploaded payloads, which names a table of its
//! transaction and is not kept).

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::insert_answer::Inserted;
use crate::model::Holder;
use crate::{InsertLease, NewAuditEvent, NewMessage, Result, Scope};

/// One message row to insert, with what its request adds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row<'a> {
    /// Where it belongs.
    pub scope: &'a Scope,
    /// The request time: `received_at` and the start of the window.
    pub now: DateTime<Utc>,
    /// The message.
    pub message: &'a NewMessage,
    /// The packet sibling that stores the shared body; `None` stores it here.
    pub payload_holder: Option<Uuid>,
    /// Its deliveries to lease at the insert (the plain group insert's
    /// rows only).
    pub lease: Option<&'a InsertLease>,
}

impl Row<'_> {
    /// When the fingerprint's window ends (`None` without a fingerprint).
    pub(crate) fn expires_at(&self) -> Option<DateTime<Utc>> {
        let m = self.message;
        m.fingerprint.as_ref().map(|_| self.now + chrono::Duration::seconds(m.window_seconds))
    }

    /// The body this row stores: empty where a packet sibling holds it.
    pub(crate) fn stored_payload(&self) -> &[u8] {
        if self.payload_holder.is_some() { &[] } else { &self.message.payload[..] }
    }
}

/// A fingerprint holder with the scope it holds it in.
#[derive(Debug, Clone, FromRow)]
pub(crate) struct ScopedHolder {
    pub(crate) tenant_id: String,
    pub(crate) environment_id: String,
    #[sqlx(flatten)]
    pub(crate) holder: Holder,
}

/// The message statements of the ingest on a connection (or transaction)
/// of the backend.
pub(crate) trait IngestSql {
    /// Inserts `rows` where each claims its fingerprint (`ON CONFLICT DO
    /// NOTHING`), with their outbox rows, each delivery a row's
    /// [`Row::lease`] names leased; returns the ids inserted, the
    /// deliveries leased and the holders it saw of the rest ([`Inserted`]). A row not inserted met a
    /// fingerprint holder, in the table or earlier in the same statement.
    fn insert_messages(&mut self, rows: &[Row<'_>]) -> impl Future<Output = Result<Inserted>> + Send;
    /// The current holders (live or expired) of (scope, fingerprint)
    /// claims: one point probe per distinct claim ([`distinct_claims`]).
    fn holders(
        &mut self,
        claims: &[(&Scope, &str)],
    ) -> impl Future<Output = Result<Vec<ScopedHolder>>> + Send;
    /// The holders (live or expired) of any of `fingerprints` in `scope`,
    /// for a packet's set-wise duplicate lookup (see
    /// [`crate::ingest::packet`]). The probes of [`IngestSql::holders`] are
    /// prepared once per list length; a packet grows the table by
    /// thousands of rows within the request, and a plan cached while the
    /// table was small (a scan per probe) is slow on PostgreSQL, so this
    /// passes the fingerprints as one parameter to a single-relation
    /// statement planned afresh.
    fn packet_holders(
        &mut self,
        scope: &Scope,
        fingerprints: &[&str],
    ) -> impl Future<Output = Result<Vec<ScopedHolder>>> + Send;
    /// Takes, in one global order, a transaction-scoped lock on each of
    /// `fingerprints` in `scope` before the settle transaction inserts them
    /// one by one in packet order. Two packets that carry the same
    /// fingerprints in opposite order would otherwise each hold one claim
    /// and wait for the other's (a deadlock PostgreSQL breaks only after
    /// `deadlock_timeout`, failing one of them); so the second waits
    /// before it claims anything. The claims themselves keep packet order,
    /// which is the feed's and delivery's order. SQLite's one writer runs
    /// the transactions one at a time: nothing to do there.
    fn lock_fingerprints(
        &mut self,
        scope: &Scope,
        fingerprints: &[&str],
    ) -> impl Future<Output = Result<()>> + Send;
    /// Releases a fingerprint whose window ended by `now`, so a new message
    /// may claim it.
    fn release_expired(
        &mut self,
        scope: &Scope,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Appends audit events, each with its time, in one statement.
    fn insert_audits(
        &mut self,
        events: &[(DateTime<Utc>, NewAuditEvent)],
    ) -> impl Future<Output = Result<()>> + Send;
}

/// `claims` without repeats, in order: one probe each.
pub(crate) fn distinct_claims<'a>(claims: &[(&'a Scope, &'a str)]) -> Vec<(&'a Scope, &'a str)> {
    let mut distinct: Vec<(&Scope, &str)> = Vec::new();
    for claim in claims {
        if !distinct.contains(claim) {
            distinct.push(*claim);
        }
    }
    distinct
}
