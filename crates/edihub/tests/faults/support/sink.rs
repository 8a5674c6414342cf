//! A delivery destination that takes everything, and the outbox count that
//! goes with it: for tests that check how many delivery rows the messages
//! got, not what the receiver saw (F8 keeps its own, recording receiver);
//! and the shop order the delivery tests send.

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

/// Posts a new shop order `order` to acme/prod on the hub at `hub`;
/// returns its message id (the `webhook-id` of its deliveries).
pub async fn post_order(http: &reqwest::Client, hub: &str, order: &str) -> String {
    let res = http
        .post(format!("{hub}/api/edi-hub/receive-message"))
        .bearer_auth(super::PROD_KEY)
        .header("content-type", "application/json")
        .header("x-message-type", "shop.order")
        .body(format!(r#"{{"order":{{"id":"{order}"}}}}"#))
        .send()
        .await
        .expect("send");
    assert_eq!(res.status(), 202);
    let body: serde_json::Value =
        serde_json::from_slice(&res.bytes().await.expect("answer")).expect("JSON answer");
    body["id"].as_str().expect("id").to_string()
}
