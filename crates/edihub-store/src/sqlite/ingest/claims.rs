//! SQLite's statements over fingerprint claims, the `fingerprint` column
//! of the message rows (see `insert.rs`): who holds a fingerprint, a
//! packet's set-wise lookup, and the release of a claim whose window ended.

use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use crate::ingest::statements::{ScopedHolder, distinct_claims};
use crate::{Result, Scope};

/// The holders of `claims`, one `UNION ALL` arm per distinct claim, each a
/// probe of the partial unique index on the claim.
pub(super) async fn holders(
    conn: &mut SqliteConnection,
    claims: &[(&Scope, &str)],
) -> Result<Vec<ScopedHolder>> {
    let mut q = QueryBuilder::<Sqlite>::new("");
    for (i, (scope, fp)) in distinct_claims(claims).into_iter().enumerate() {
        q.push(if i == 0 { "" } else { " UNION ALL " });
        q.push(
            "SELECT tenant_id, environment_id, id, message_type, mestyp, \
            docnum, key_fingerprint AS fingerprint, received_at, fingerprint_expires_at FROM messages \
            WHERE tenant_id = ",
        );
        q.push_bind(&scope.tenant_id).push(" AND environment_id = ").push_bind(&scope.environment_id);
        q.push(" AND fingerprint = ").push_bind(fp);
    }
    Ok(q.build_query_as().fetch_all(&mut *conn).await?)
}

/// The holders of any of `fingerprints` in `scope`, the fingerprints as one
/// JSON array (SQLite's planner keeps no generic plans, so the statement
/// is prepared as usual).
pub(super) async fn packet_holders(
    conn: &mut SqliteConnection,
    scope: &Scope,
    fingerprints: &[&str],
) -> Result<Vec<ScopedHolder>> {
    let holders = "SELECT tenant_id, environment_id, id, message_type, mestyp, docnum, \
        key_fingerprint AS fingerprint, received_at, fingerprint_expires_at FROM messages \
        WHERE tenant_id = $1 AND environment_id = $2 AND fingerprint IN (SELECT value FROM json_each($3))";
    let list = serde_json::to_string(fingerprints)?;
    Ok(sqlx::query_as(holders)
        .bind(&scope.tenant_id)
        .bind(&scope.environment_id)
        .bind(list)
        .fetch_all(&mut *conn)
        .await?)
}

/// Clears the claim of `fingerprint` in `scope` if its window ended by `now`.
pub(super) async fn release_expired(
    conn: &mut SqliteConnection,
    scope: &Scope,
    fingerprint: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let release = "UPDATE messages SET fingerprint = NULL \
        WHERE tenant_id = $1 AND environment_id = $2 AND fingerprint = $3 \
        AND fingerprint_expires_at <= $4";
    sqlx::query(release)
        .bind(&scope.tenant_id)
        .bind(&scope.environment_id)
        .bind(fingerprint)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
