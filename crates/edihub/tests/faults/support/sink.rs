//! A delivery destination that takes everything, and the outbox count that
//! goes with it: for tests that check how many delivery rows the messages
//! got, not what the receiver saw (F8 keeps its own, recording receiver).

/// A receiver on loopback that answers every delivery 204; returns its address.
pub async fn start_receiver() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let app = axum::Router::new()
        .route("/in", axum::routing::post(|| async { axum::http::StatusCode::NO_CONTENT }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// Messages without exactly one delivery row, and the number of rows.
pub async fn deliveries_per_message(url: &str) -> (i64, i64) {
    let pool = sqlx::PgPool::connect(url).await.expect("connect postgres");
    let wrong: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM messages m \
         WHERE (SELECT count(*) FROM deliveries d WHERE d.message_id = m.id) <> 1",
    )
    .fetch_one(&pool)
    .await
    .expect("deliveries per message");
    let rows: i64 =
        sqlx::query_scalar("SELECT count(*) FROM deliveries").fetch_one(&pool).await.expect("deliveries");
    pool.close().await;
    (wrong, rows)
}
