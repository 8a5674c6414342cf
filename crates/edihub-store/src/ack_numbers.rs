//! Acknowledgement control numbers: one counter per (tenant, environment,
//! partner) in the table `ack_counters`.
//!
//! A partner's EDI translator checks the control numbers of what it
//! receives for duplicates, acknowledgements included, so every
//! acknowledgement needs a number never handed out before to that partner,
//! whichever replica sends it and however often edihub restarts. The number
//! is taken with ONE statement (an upsert that returns the value it took),
//! so the database's row lock orders concurrent callers: no two get the same
//! number, and no transaction is held open around it. A number taken by a
//! request that then fails is skipped, never reused; gaps are allowed by the
//! standards, repeats are not.

use sqlx::{Database, Encode, Executor, FromRow, IntoArguments, Type};

use crate::{Result, Scope};

/// Takes the partner's next number: inserts 2 (and answers 1) for a new
/// partner, else moves `next_value` on by one and answers the old value.
const NEXT_ACK_NUMBER: &str = "INSERT INTO ack_counters (tenant_id, environment_id, partner, next_value) \
    VALUES ($1, $2, $3, 2) \
    ON CONFLICT (tenant_id, environment_id, partner) \
    DO UPDATE SET next_value = ack_counters.next_value + 1 \
    RETURNING next_value - 1";

/// The acknowledgement counters' statement.
pub(crate) trait AckSql: Database {
    /// The next acknowledgement number of `partner` in `scope`: 1, 2, 3, …
    fn next_ack_number(
        conn: &mut Self::Connection,
        scope: &Scope,
        partner: &str,
    ) -> impl Future<Output = Result<i64>> + Send;
}

impl<DB> AckSql for DB
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'r> (i64,): FromRow<'r, DB::Row>,
{
    async fn next_ack_number(conn: &mut DB::Connection, scope: &Scope, partner: &str) -> Result<i64> {
        let (value,): (i64,) = sqlx::query_as(NEXT_ACK_NUMBER)
            .bind(scope.tenant_id.as_str())
            .bind(scope.environment_id.as_str())
            .bind(partner)
            .fetch_one(&mut *conn)
            .await?;
        Ok(value)
    }
}
