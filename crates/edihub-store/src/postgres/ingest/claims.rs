//! PostgreSQL's statements over fingerprint claims, the rows of
//! `message_claims` (see `insert.rs`): who holds a fingerprint, a packet's
//! set-wise lookup, the locks a packet takes before it claims, and the
//! release of a claim whose window ended.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Postgres, QueryBuilder};

use crate::ingest::statements::{ScopedHolder, distinct_claims};
use crate::{Result, Scope};

/// The holders of `claims`, one `UNION ALL` arm per distinct claim: an
/// equality on every column of the claim's primary key is a single index
/// probe in any plan, also in a generic plan made while the table was
/// small (an `IN` list was then left as a filter over the whole scope).
/// The claim alone carries what the answer names of its holder: a join to
/// `messages` by id would lock and open every partition per probe (it
/// cannot be pruned at planning; docs/scale.md).
pub(super) async fn holders(conn: &mut PgConnection, claims: &[(&Scope, &str)]) -> Result<Vec<ScopedHolder>> {
    let mut q = QueryBuilder::<Postgres>::new("");
    for (i, (scope, fp)) in distinct_claims(claims).into_iter().enumerate() {
        q.push(if i == 0 { "" } else { " UNION ALL " });
        q.push(
            "SELECT c.tenant_id, c.environment_id, c.message_id AS id, \
            c.message_type, c.mestyp, c.docnum, c.fingerprint, c.received_at, \
            NULLIF(c.expires_at, 'infinity') AS fingerprint_expires_at \
            FROM message_claims c WHERE c.tenant_id = ",
        );
        q.push_bind(&scope.tenant_id).push(" AND c.environment_id = ").push_bind(&scope.environment_id);
        q.push(" AND c.fingerprint = ").push_bind(fp);
    }
    Ok(q.build_query_as().fetch_all(&mut *conn).await?)
}

/// The holders of any of `fingerprints` in `scope`, the fingerprints as one
/// `text[]`. Not kept as a prepared statement: planned afresh for each
/// lookup (see `IngestSql::packet_holders`), which for one relation takes
/// well under a millisecond.
pub(super) async fn packet_holders(
    conn: &mut PgConnection,
    scope: &Scope,
    fingerprints: &[&str],
) -> Result<Vec<ScopedHolder>> {
    let holders = "SELECT c.tenant_id, c.environment_id, m.id, m.message_type, m.mestyp, \
        m.docnum, m.key_fingerprint AS fingerprint, m.received_at, m.fingerprint_expires_at \
        FROM message_claims c JOIN messages m ON m.id = c.message_id \
        WHERE c.tenant_id = $1 AND c.environment_id = $2 AND c.fingerprint = ANY($3)";
    Ok(sqlx::query_as(holders)
        .bind(&scope.tenant_id)
        .bind(&scope.environment_id)
        .bind(fingerprints)
        .persistent(false)
        .fetch_all(&mut *conn)
        .await?)
}

/// The class of the fingerprint locks (the two-key advisory lock space,
/// apart from the partition and migration locks' one-key space): "ed".
const FINGERPRINT_LOCK_CLASS: i32 = 0x6564;

/// Locks `fingerprints` in `scope` for the transaction: one lock per
/// distinct hash of scope and fingerprint, taken in hash order (the sorted,
/// distinct subquery is not flattened, so the outer select calls the lock
/// function in its order). Two fingerprints that share a hash only wait for
/// each other.
pub(super) async fn lock_fingerprints(
    conn: &mut PgConnection,
    scope: &Scope,
    fingerprints: &[&str],
) -> Result<()> {
    let lock = "SELECT pg_advisory_xact_lock($1, k) FROM \
        (SELECT DISTINCT hashtext($2 || '/' || $3 || '/' || f) AS k FROM unnest($4::text[]) AS f ORDER BY k) AS s";
    sqlx::query(lock)
        .bind(FINGERPRINT_LOCK_CLASS)
        .bind(&scope.tenant_id)
        .bind(&scope.environment_id)
        .bind(fingerprints)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Deletes the claim of `fingerprint` in `scope` if its window ended by `now`.
pub(super) async fn release_expired(
    conn: &mut PgConnection,
    scope: &Scope,
    fingerprint: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let release = "DELETE FROM message_claims \
        WHERE tenant_id = $1 AND environment_id = $2 AND fingerprint = $3 AND expires_at <= $4";
    sqlx::query(release)
        .bind(&scope.tenant_id)
        .bind(&scope.environment_id)
        .bind(fingerprint)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
