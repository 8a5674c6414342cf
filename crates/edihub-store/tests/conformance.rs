//! Runs the conformance suite on SQLite and on PostgreSQL.

use edihub_store::conformance::{self, StoreRef};
use edihub_store::testing::{Backend, TestDb};
use edihub_store::{PoolSettings, Pooler};

async fn run<F, Fut>(backend: Backend, check: F)
where
    F: FnOnce(StoreRef) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let db = TestDb::new(backend).await;
    let store = db.store().await;
    check(store.clone()).await;
    store.close().await;
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { run(Backend::Sqlite, conformance::$name).await })*
        }
        mod postgres {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { run(Backend::Postgres, conformance::$name).await })*
        }
    };
}

suite!(
    sap_status_follows_deliveries,
    sap_status_of_resent_idocs,
    racing_resends_queue_one_status,
    sap_status_after_an_early_verdict,
    racing_verdicts_and_status_record_the_41,
    a_mixed_verdict_batch_records_the_right_statuses,
    carrying_is_all_or_nothing,
    sap_refusals_are_recorded_without_a_message,
    new_then_duplicate,
    no_fingerprint_never_collides,
    window_expiry_admits_again,
    scopes_are_isolated,
    idempotency_key_replay_and_mismatch,
    large_payloads_are_stored_whole,
    packet_outcomes_in_order,
    large_packet_chunks_and_resend,
    large_packet_retry_stores_only_the_rest,
    large_packet_with_a_key,
    racing_large_packets_store_each_idoc_once,
    racing_fingerprints_store_one,
    racing_keys_store_one,
    crossed_packets_do_not_deadlock,
    concurrent_new_messages_all_stored,
    bad_row_fails_only_its_request,
    own_row_is_not_a_duplicate,
    grouped_duplicates_are_audited_like_single_ones,
    keyed_burst_claims_each_key_once,
    keyed_request_after_an_expired_window,
    keyed_burst_after_expired_windows,
    keyed_burst_with_duplicates_settles_each,
    interchange_window_releases_its_claim,
    audit_filters_and_pagination,
    seeding_follows_config,
    seeding_integrations_follows_config,
    admin_changes_are_audited_and_kept,
    lookups_find_messages,
    retention_releases_and_purges,
    key_purge_keeps_an_integrations_event_ids,
    message_search_filters_and_pages,
    bounded_search_pages_see_every_match_once,
    lookups_keep_to_their_tenants_and_environments,
    audit_events_of_one_message,
    outbox_rows_written_with_messages,
    lease_claim_is_exclusive,
    deliveries_leased_at_the_insert,
    an_insert_lease_that_ends_leaves_the_delivery_to_a_claim,
    recent_claim_leaves_older_messages,
    deliveries_finish_fail_and_replay,
    a_stale_verdict_does_not_overwrite_a_newer_lease,
    attempts_recorded_together,
    a_stale_verdict_in_the_same_batch_changes_nothing,
    an_answer_with_a_nul_is_recorded,
    purged_messages_drop_their_deliveries,
    moving_a_destination_withdraws_its_queued_deliveries,
    a_moved_seed_withdraws_its_queued_deliveries,
    fifo_line_claims_the_head_in_order,
    fifo_line_claims_are_exclusive,
    delivery_queues_count_pending,
    activity_counts_and_series,
    rollup_answers_like_a_direct_count,
    rollup_waits_for_the_hour_to_settle,
    racing_roll_ups_add_each_hour_once,
    delivery_backlog_per_destination,
    ack_numbers_count_per_partner,
    racing_ack_numbers_are_distinct,
    as2_message_ids_are_claimed_once,
    racing_as2_claims_admit_one,
    as2_async_mdns_are_leased_once,
    retention_purges_as2_messages,
    feed_pages_in_order,
    feed_cursor_survives_a_purge,
    feed_follows_concurrent_ingest,
    feed_scan_is_bounded,
    feed_page_ends_at_its_byte_budget,
);

/// Acknowledgement numbers go on increasing after the store is closed and
/// opened again on the same database (a restart, or another replica).
async fn ack_numbers_survive_a_reopen(backend: Backend) {
    let db = TestDb::new(backend).await;
    let scope = conformance::fresh_scope();
    let store = db.store().await;
    for expected in 1..=3 {
        assert_eq!(store.next_ack_number(&scope, "X12|ZZ:TP").await.unwrap(), expected);
    }
    store.close().await;
    drop(store);
    let reopened = db.store().await;
    assert_eq!(reopened.next_ack_number(&scope, "X12|ZZ:TP").await.unwrap(), 4);
    reopened.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_ack_numbers_survive_a_reopen() {
    ack_numbers_survive_a_reopen(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_ack_numbers_survive_a_reopen() {
    ack_numbers_survive_a_reopen(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_a_first_try_success_is_kept_on_its_delivery() {
    conformance::a_first_try_success_is_kept_on_its_delivery(&TestDb::new(Backend::Sqlite).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_a_first_try_success_is_kept_on_its_delivery() {
    conformance::a_first_try_success_is_kept_on_its_delivery(&TestDb::new(Backend::Postgres).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_feed_waits_for_an_older_open_transaction() {
    conformance::feed_waits_for_an_older_open_transaction(&TestDb::new(Backend::Sqlite).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_feed_waits_for_an_older_open_transaction() {
    conformance::feed_waits_for_an_older_open_transaction(&TestDb::new(Backend::Postgres).await).await;
}

/// PostgreSQL's partitions and claims table (SQLite has neither), and its
/// interleaved transactions.
macro_rules! postgres_only {
    ($($name:ident),* $(,)?) => {
        mod postgres_partitions {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { conformance::$name(&TestDb::new(Backend::Postgres).await).await })*
        }
    };
}

postgres_only!(
    racing_fingerprints_across_partitions_store_one,
    insert_into_an_uncreated_range_lands,
    retention_drops_whole_expired_partitions,
    retention_finishes_a_period_a_crash_left_half_dropped,
    retention_keeps_partitions_with_claims_or_shared_bodies,
    crossed_packets_wait_instead_of_deadlocking,
    a_refused_group_audit_falls_back_to_one_event_each,
    a_refused_verdict_costs_only_itself,
    verdicts_read_deliveries_by_key_without_statistics,
);

/// A store set up for a transaction pooler, connected directly here: its
/// migrations (one transaction under `pg_advisory_xact_lock`) apply once
/// however many replicas start together, and it stores and finds messages.
/// The suite above runs through a real PgBouncer in `make test`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_pooler_settings_migrate_once_and_ingest() {
    let db = TestDb::new(Backend::Postgres).await;
    let settings = PoolSettings { pooler: Pooler::Transaction, ..PoolSettings::default() };
    let mut replicas = Vec::new();
    for _ in 0..4 {
        replicas.push(edihub_store::connect(&db.url, &settings).await.expect("connect"));
    }
    // All at once, as replicas starting together do.
    let migrations: Vec<_> = replicas
        .iter()
        .map(|store| {
            let store = store.clone();
            tokio::spawn(async move { store.migrate().await })
        })
        .collect();
    for migration in migrations {
        migration.await.expect("task").expect("every replica's migrate succeeds");
    }
    let applied: i64 = {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&db.direct_url()).await.expect("direct");
        sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations").fetch_one(&mut conn).await.expect("count")
    };
    let expected = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations/postgres"))
        .expect("migrations")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sql")))
        .count();
    assert_eq!(applied, expected as i64, "each migration applied once");
    conformance::new_then_duplicate(replicas[0].clone()).await;
    for store in replicas {
        store.close().await;
    }
}

/// A transaction pooler with an SQLite file is refused: there is no server.
#[tokio::test]
async fn sqlite_refuses_a_pooler() {
    let db = TestDb::new(Backend::Sqlite).await;
    let settings = PoolSettings { pooler: Pooler::Transaction, ..PoolSettings::default() };
    let err = edihub_store::connect(&db.url, &settings).await.expect_err("refused");
    assert!(matches!(err, edihub_store::StoreError::PoolerWithoutServer), "{err}");
    assert!(!std::path::Path::new(db.url.trim_start_matches("sqlite://")).exists(), "no file created");
}

/// Migration 0012 (SQLite) makes the feed position the row's own key: the
/// positions 0009's trigger gave stay, in order, a cursor taken before it
/// continues after it, and a number retention purged before it is not
/// handed out again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_feed_positions_survive_migration_0012() {
    use edihub_store::conformance::{follow, fresh_scope, message, now, outcome_id, processed};
    let db = TestDb::new(Backend::Sqlite).await;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/sqlite");
    let all = sqlx::migrate::Migrator::new(dir).await.expect("migrations");
    let before =
        sqlx::migrate::Migrator::with_migrations(all.iter().filter(|m| m.version < 12).cloned().collect());
    let pool = sqlx::SqlitePool::connect(&format!("{}?mode=rwc", db.url)).await.expect("open");
    before.run(&pool).await.expect("migrations 0001-0011");
    let scope = fresh_scope();
    let ids: Vec<uuid::Uuid> = (0..4).map(|_| uuid::Uuid::now_v7()).collect();
    for id in &ids {
        sqlx::query(
            "INSERT INTO messages (id, tenant_id, environment_id, message_type, fingerprint_basis, key_values, \
             packet_index, payload, received_at) VALUES ($1, $2, $3, 'ORDERS05', 'none', '[]', 0, x'3c412f3e', $4)",
        )
        .bind(id)
        .bind(&scope.tenant_id)
        .bind(&scope.environment_id)
        .bind(now())
        .execute(&pool)
        .await
        .expect("a message stored before 0012");
    }
    // Retention took the newest: its number 4 must not come back.
    sqlx::query("DELETE FROM messages WHERE id = $1").bind(ids[3]).execute(&pool).await.expect("purge");
    pool.close().await;

    let store = db.store().await;
    let (seen, cursor) = follow(&store, &scope, None, 2).await;
    assert_eq!(seen, ids[..3], "the messages before 0012, in their order");
    assert_eq!(cursor.map(|c| c.major), Some(3), "their positions kept");
    let fresh = processed(
        edihub_store::conformance::ingest_at(&store, &scope, None, vec![message(None)], now()).await,
    );
    let page = edihub_store::conformance::feed_page(&store, &scope, cursor, None, 10).await;
    let after: Vec<_> = page.messages.iter().map(|m| m.meta.id).collect();
    assert_eq!(after, [outcome_id(&fresh[0])], "the new message follows the cursor taken before 0012");
    assert_eq!(page.next.map(|c| c.major), Some(5), "after the purged 4, not 4 again");
    store.close().await;
}

/// Migration 0018 (SQLite) rebuilds `sap_status_changes` so a change may be
/// about no message: the rows before it keep their ids, the pending index
/// still keeps one pending status per IDoc and state, and an id retention
/// purged before it is not handed out again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_sap_status_changes_survive_migration_0018() {
    use edihub_store::SapRefusal;
    use edihub_store::conformance::{fresh_scope, now};
    let db = TestDb::new(Backend::Sqlite).await;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/sqlite");
    let all = sqlx::migrate::Migrator::new(dir).await.expect("migrations");
    let before =
        sqlx::migrate::Migrator::with_migrations(all.iter().filter(|m| m.version < 18).cloned().collect());
    let pool = sqlx::SqlitePool::connect(&format!("{}?mode=rwc", db.url)).await.expect("open");
    before.run(&pool).await.expect("migrations 0001-0017");
    let scope = fresh_scope();
    let message = uuid::Uuid::now_v7();
    for docnum in ["0000000000000001", "0000000000000002", "0000000000000003"] {
        sqlx::query(
            "INSERT INTO sap_status_changes (tenant_id, environment_id, message_id, docnum, mestyp, status, \
             text, created_at) VALUES ($1, $2, $3, $4, 'ORDERS', '40', 'failed', $5)",
        )
        .bind(&scope.tenant_id)
        .bind(&scope.environment_id)
        .bind(message)
        .bind(docnum)
        .bind(now())
        .execute(&pool)
        .await
        .expect("a status change recorded before 0018");
    }
    // Retention took the newest: its id 3 must not come back.
    sqlx::query("DELETE FROM sap_status_changes WHERE id = 3").execute(&pool).await.expect("purge");
    pool.close().await;

    let store = db.store().await;
    let pending = store.pending_sap_statuses(&scope, 10).await.expect("pending");
    let kept: Vec<_> = pending.iter().map(|r| (r.id, r.docnum.as_str(), r.message_id)).collect();
    assert_eq!(kept, [(1, "0000000000000001", Some(message)), (2, "0000000000000002", Some(message))]);
    let refusal = |docnum: &str| SapRefusal {
        docnum: docnum.into(),
        mestyp: "ORDERS".into(),
        code: 422,
        reason: "refused".into(),
    };
    let added =
        store.record_sap_refusals(&scope, &[refusal("0000000000000001")], now()).await.expect("record");
    assert_eq!(added, 0, "its 40 is pending: the index still holds");
    let added =
        store.record_sap_refusals(&scope, &[refusal("0000000000000004")], now()).await.expect("record");
    assert_eq!(added, 1);
    let pending = store.pending_sap_statuses(&scope, 10).await.expect("pending");
    let last = pending.last().expect("the refusal");
    assert!(last.id > 3, "after the purged 3: {}", last.id);
    assert_eq!((last.docnum.as_str(), last.message_id), ("0000000000000004", None), "about no message");
    store.close().await;
}
