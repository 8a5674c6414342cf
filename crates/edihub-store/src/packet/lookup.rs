//! The one statement of the packet path that differs per backend: the
//! holders of many fingerprints of one scope.
//!
//! The group insert looks holders up as `UNION ALL` point probes, a
//! statement it prepares once per batch size. A packet's lookups cannot
//! reuse that: the packet grows the table by thousands of rows within the
//! request, and a plan cached while the table was small (a scan per arm) was
//! measured at 1–2.5 s per 256-fingerprint lookup on PostgreSQL, while
//! planning 64 arms afresh for every lookup cost about 40 ms. So each
//! backend gets a single-relation statement with the fingerprints as one
//! parameter: an array on PostgreSQL (`= ANY`, planned afresh each time,
//! which for one relation takes well under a millisecond), a JSON array read
//! by `json_each` on SQLite (whose planner has no cached generic plans).

use crate::batch::ScopedHolder;
use crate::{Result, Scope};

/// A backend's lookup of the current holders of `fingerprints` in `scope`.
pub(crate) trait PacketLookup: sqlx::Database {
    /// The holders (live or expired) of any of `fingerprints` in `scope`.
    fn packet_holders(
        conn: &mut Self::Connection,
        scope: &Scope,
        fingerprints: &[&str],
    ) -> impl Future<Output = Result<Vec<ScopedHolder>>> + Send;
}

/// PostgreSQL: the fingerprints as one `text[]`.
const PG_HOLDERS: &str = "SELECT tenant_id, environment_id, id, message_type, mestyp, docnum, \
    key_fingerprint AS fingerprint, received_at, fingerprint_expires_at FROM messages \
    WHERE tenant_id = $1 AND environment_id = $2 AND fingerprint = ANY($3)";

/// SQLite: the fingerprints as one JSON array.
const SQLITE_HOLDERS: &str = "SELECT tenant_id, environment_id, id, message_type, mestyp, docnum, \
    key_fingerprint AS fingerprint, received_at, fingerprint_expires_at FROM messages \
    WHERE tenant_id = $1 AND environment_id = $2 AND fingerprint IN (SELECT value FROM json_each($3))";

impl PacketLookup for sqlx::Postgres {
    async fn packet_holders(
        conn: &mut Self::Connection,
        scope: &Scope,
        fingerprints: &[&str],
    ) -> Result<Vec<ScopedHolder>> {
        Ok(sqlx::query_as(PG_HOLDERS)
            .bind(&scope.tenant_id)
            .bind(&scope.environment_id)
            .bind(fingerprints)
            .persistent(false)
            .fetch_all(&mut *conn)
            .await?)
    }
}

impl PacketLookup for sqlx::Sqlite {
    async fn packet_holders(
        conn: &mut Self::Connection,
        scope: &Scope,
        fingerprints: &[&str],
    ) -> Result<Vec<ScopedHolder>> {
        let list = serde_json::to_string(fingerprints).unwrap_or_else(|_| "[]".into());
        Ok(sqlx::query_as(SQLITE_HOLDERS)
            .bind(&scope.tenant_id)
            .bind(&scope.environment_id)
            .bind(list)
            .fetch_all(&mut *conn)
            .await?)
    }
}
