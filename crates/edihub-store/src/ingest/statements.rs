//! The message statements of the ingest (insert, holder probes, audit
//! events), one method each with its SQL beside it, written once for both
//! backends; the request keys' statements are in [`super::key_statements`].
//!
//! Every statement covers a list: `VALUES` lists for inserts, `UNION ALL`
//! point probes for lookups. The single-request transaction passes a list
//! of one, the group insert a whole batch, so both paths bind the same 19
//! columns in the same order and read the same rows back. The SQL is
//! portable between PostgreSQL and SQLite (`ON CONFLICT … DO NOTHING
//! RETURNING`, `UPDATE … FROM` a CTE) except where a fingerprint's claim
//! lives, whose text comes from [`ClaimSql`]; sqlx maps
//! the Rust types onto each backend's column types (UUID or BLOB,
//! TIMESTAMPTZ or TEXT) and `QueryBuilder` numbers the placeholders. Each
//! list length is its own prepared statement in the connection's cache.

use chrono::{DateTime, Utc};
use sqlx::query_builder::Separated;
use sqlx::types::Json;
use sqlx::{Database, Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};
use uuid::Uuid;

use super::insert_answer::{InsertAnswer, Inserted};
use crate::claims::ClaimSql;
use crate::model::Holder;
use crate::{NewAuditEvent, NewMessage, Result, Scope};

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
}

/// A fingerprint holder with the scope it holds it in.
#[derive(Debug, Clone, FromRow)]
pub(crate) struct ScopedHolder {
    pub(crate) tenant_id: String,
    pub(crate) environment_id: String,
    #[sqlx(flatten)]
    pub(crate) holder: Holder,
}

const INSERT_AUDITS: &str = "INSERT INTO audit_events \
    (occurred_at, action, tenant_id, environment_id, message_type, fingerprint, \
     idempotency_key, detected_by, message_id, details) ";

/// The ingest's statements on a connection (or transaction) of the backend.
pub(crate) trait IngestSql: Database {
    /// Inserts `rows` (`ON CONFLICT DO NOTHING`); returns the ids inserted
    /// and the holders it saw of the rest ([`Inserted`]). A row not
    /// inserted met a fingerprint holder, in the table or earlier in the
    /// same statement.
    fn insert_messages(
        conn: &mut Self::Connection,
        rows: &[Row<'_>],
    ) -> impl Future<Output = Result<Inserted>> + Send;
    /// Binds one message row: the 19 columns of `ClaimSql::INSERT_HEAD`, the
    /// only row binder of the ingest.
    fn push_row(b: &mut Separated<'_, Self, &'static str>, r: &Row<'_>);
    /// The current holders (live or expired) of (scope, fingerprint) claims.
    fn holders(
        conn: &mut Self::Connection,
        claims: &[(&Scope, &str)],
    ) -> impl Future<Output = Result<Vec<ScopedHolder>>> + Send;
    /// Appends audit events, each with its time, in one statement.
    fn insert_audits(
        conn: &mut Self::Connection,
        events: &[(DateTime<Utc>, NewAuditEvent)],
    ) -> impl Future<Output = Result<()>> + Send;
    /// Releases a fingerprint whose window ended by `now`, so a new message may claim it.
    fn release_expired(
        conn: &mut Self::Connection,
        scope: &Scope,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<()>> + Send;
}

impl<DB> IngestSql for DB
where
    DB: Database + ClaimSql + sqlx::database::HasStatementCache,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> &'e str: Encode<'e, DB> + Type<DB>,
    for<'e> &'e [u8]: Encode<'e, DB> + Type<DB>,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'e> i32: Encode<'e, DB> + Type<DB>,
    for<'e> Option<String>: Encode<'e, DB>,
    for<'e> Option<Uuid>: Encode<'e, DB>,
    for<'e> Option<DateTime<Utc>>: Encode<'e, DB>,
    for<'e> Json<&'e serde_json::Value>: Encode<'e, DB> + Type<DB>,
    for<'r> ScopedHolder: FromRow<'r, DB::Row>,
    for<'r> InsertAnswer: FromRow<'r, DB::Row>,
{
    async fn insert_messages(conn: &mut DB::Connection, rows: &[Row<'_>]) -> Result<Inserted> {
        let mut q = QueryBuilder::<DB>::new(DB::INSERT_HEAD);
        q.push_values(rows, |mut b, r| DB::push_row(&mut b, r));
        q.push(DB::INSERT_TAIL).push(DB::OUTBOX_TAIL).push(DB::ANSWER_INSERTED_AND_HOLDERS);
        let answer: Vec<InsertAnswer> = q.build_query_as().fetch_all(&mut *conn).await?;
        Inserted::from_answer(answer)
    }

    fn push_row(b: &mut Separated<'_, DB, &'static str>, r: &Row<'_>) {
        let m = r.message;
        let expires = m.fingerprint.as_ref().map(|_| r.now + chrono::Duration::seconds(m.window_seconds));
        let payload: &[u8] = if r.payload_holder.is_some() { &[] } else { &m.payload[..] };
        b.push_bind(m.id)
            .push_bind(&r.scope.tenant_id)
            .push_bind(&r.scope.environment_id)
            .push_bind(&m.message_type)
            .push_bind(&m.mestyp)
            .push_bind(&m.docnum)
            .push_bind(&m.sender)
            .push_bind(&m.fingerprint)
            .push_bind(&m.fingerprint)
            .push_bind(&m.fingerprint_basis)
            .push_bind(expires)
            .push_bind(Json(&m.key_values))
            .push_bind(&m.idempotency_key)
            .push_bind(&m.provider_event_id)
            .push_bind(m.packet_index)
            .push_bind(&m.content_type)
            .push_bind(payload)
            .push_bind(r.now)
            .push_bind(r.payload_holder);
    }

    async fn holders(conn: &mut DB::Connection, claims: &[(&Scope, &str)]) -> Result<Vec<ScopedHolder>> {
        // One point lookup per distinct claim, each its own `UNION ALL`
        // arm: an equality on every column of the claim's unique key is a single
        // index probe in any plan, also in a generic plan made while the
        // table was small (an `IN` list was then left as a filter over the
        // whole scope).
        let mut distinct: Vec<(&Scope, &str)> = Vec::new();
        for claim in claims {
            if !distinct.contains(claim) {
                distinct.push(*claim);
            }
        }
        let mut q = QueryBuilder::<DB>::new("");
        for (i, (scope, fp)) in distinct.iter().enumerate() {
            q.push(if i == 0 { "" } else { " UNION ALL " });
            q.push(DB::HOLDER_ARM).push_bind(&scope.tenant_id);
            q.push(DB::HOLDER_ENVIRONMENT).push_bind(&scope.environment_id);
            q.push(DB::HOLDER_FINGERPRINT).push_bind(*fp);
        }
        Ok(q.build_query_as().fetch_all(&mut *conn).await?)
    }

    async fn insert_audits(
        conn: &mut DB::Connection,
        events: &[(DateTime<Utc>, NewAuditEvent)],
    ) -> Result<()> {
        let mut q = QueryBuilder::<DB>::new(INSERT_AUDITS);
        q.push_values(events, |mut b, (at, e)| {
            b.push_bind(*at)
                .push_bind(&e.action)
                .push_bind(&e.tenant_id)
                .push_bind(&e.environment_id)
                .push_bind(&e.message_type)
                .push_bind(&e.fingerprint)
                .push_bind(&e.idempotency_key)
                .push_bind(&e.detected_by)
                .push_bind(e.message_id)
                .push_bind(Json(e.stored_details().as_ref()));
        });
        q.build().execute(&mut *conn).await?;
        Ok(())
    }

    async fn release_expired(
        conn: &mut DB::Connection,
        scope: &Scope,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        sqlx::query(DB::RELEASE_EXPIRED)
            .bind(&scope.tenant_id)
            .bind(&scope.environment_id)
            .bind(fingerprint)
            .bind(now)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }
}
