//! A group audit statement that the database refuses (PostgreSQL only: a
//! trigger there refuses it; SQLite has no state that outlives a rolled-back
//! statement to let exactly one fail). The batches whose events it carried
//! fall back to transactions of their own (see `crate::ingest::group::audits`),
//! so each duplicate is still answered with its holder and audited once:
//! never unanswered, never twice.

use sqlx::Connection;

use super::batch::duplicates_at_once;
use super::support::*;
use crate::AuditFilter;
use crate::testing::TestDb;

/// How many duplicates are sent at once.
const BURST: usize = 32;

/// The first audit row of `tenant` fails its statement; every later row
/// passes. The sequence counts the rows tried (a sequence is not rolled
/// back with the statement that advanced it).
fn refuse_first_audit_row(tenant: &str) -> [String; 3] {
    [
        "CREATE SEQUENCE audit_rows_tried".into(),
        format!(
            "CREATE FUNCTION refuse_first_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
               IF NEW.tenant_id = '{tenant}' AND nextval('audit_rows_tried') = 1 THEN
                 RAISE EXCEPTION 'audit row refused by the test';
               END IF;
               RETURN NEW;
             END $$"
        ),
        "CREATE TRIGGER refuse_first_audit_row BEFORE INSERT ON audit_events
         FOR EACH ROW EXECUTE FUNCTION refuse_first_audit_row()"
            .into(),
    ]
}

/// A burst of keyless duplicates (the group insert's plain batches settle
/// them, and their first audit statement is refused): every one is answered
/// as a duplicate of the original, with exactly one event each, and the
/// refused statement's rows were written again by the fallback.
pub async fn a_refused_group_audit_falls_back_to_one_event_each(db: &TestDb) {
    let store = db.store().await;
    let scope = fresh_scope();
    let original = processed(ingest_at(&store, &scope, None, vec![message(Some("f"))], now()).await);
    let original_id = outcome_id(&original[0]);
    let mut conn = sqlx::PgConnection::connect(&db.direct_url()).await.expect("connect");
    for sql in refuse_first_audit_row(&scope.tenant_id) {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.expect("trigger installed");
    }

    duplicates_at_once(&store, &scope, "f", BURST, original_id).await;

    let filter = AuditFilter { tenant: Some(scope.tenant_id.clone()), limit: 500, ..Default::default() };
    let events = store.list_audit(&filter).await.unwrap();
    assert_eq!(events.len(), BURST, "one event per duplicate, the refused ones written once by the fallback");
    assert!(events.iter().all(|e| e.message_id == Some(original_id)));
    let tried: i64 =
        sqlx::query_scalar("SELECT last_value FROM audit_rows_tried").fetch_one(&mut conn).await.unwrap();
    assert!(tried > BURST as i64, "a statement was refused ({tried} rows tried for {BURST} events)");
    assert_eq!(store.count_messages(&scope).await.unwrap(), 1, "nothing stored but the original");
    store.close().await;
}
