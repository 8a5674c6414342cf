//! Operations endpoints of issue #4. On both backends: `/metrics` after some
//! traffic counts requests by route and status, accepted messages and
//! duplicates by type and detector, a latency histogram whose `+Inf` bucket
//! equals its count, and pool gauges; every response carries an
//! `x-request-id` (a valid incoming one is echoed); `/readyz` is 200. And on
//! a PostgreSQL cluster of its own: `/readyz` turns 503 within the acquire
//! timeout when PostgreSQL stops, and 200 again by itself when it is back.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::support::live::{PgCluster, app_on};
use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request};

backend_tests!(metrics_after_traffic, request_ids_on_every_response, readyz_is_200);

/// Samples of the exposition, keyed by `name{labels}` exactly as printed.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (key, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("sample line {l:?}"));
            (key.to_string(), value.parse().unwrap_or_else(|_| panic!("value of {l:?}")))
        })
        .collect()
}

#[track_caller]
fn sample(all: &BTreeMap<String, f64>, key: &str) -> f64 {
    *all.get(key).unwrap_or_else(|| panic!("no sample {key}; have {:#?}", all.keys()))
}

async fn scrape(app: &TestApp) -> (String, BTreeMap<String, f64>) {
    let res = app.get("/metrics", None).await;
    res.expect(200);
    assert!(res.header("content-type").is_some_and(|t| t.starts_with("text/plain")));
    let text = res.text();
    let all = samples(&text);
    (text, all)
}

async fn metrics_after_traffic(backend: Backend) {
    let app = TestApp::new(backend).await;
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await.expect(200);
    let key = [("idempotency-key", "metrics-k")];
    accepted(&app.post_xml_with(ACME_PROD, fixture("ordchg05.xml"), &key).await);
    assert!(app.post_xml_with(ACME_PROD, fixture("ordchg05.xml"), &key).await.replayed());
    app.post_xml(ACME_PROD, b"<not-xml".to_vec()).await.expect(400);
    app.get("/admin/audit", None).await.expect(401);
    app.get("/admin/audit", Some(&bearer(ADMIN_TOKEN))).await.expect(200);
    app.get("/healthz", None).await.expect(200);

    let (text, all) = scrape(&app).await;
    for (name, kind) in [
        ("edihub_http_requests_total", "counter"),
        ("edihub_messages_received_total", "counter"),
        ("edihub_messages_accepted_total", "counter"),
        ("edihub_duplicates_blocked_total", "counter"),
        ("edihub_retention_rows_total", "counter"),
        ("edihub_http_request_duration_seconds", "histogram"),
        ("edihub_db_pool_connections", "gauge"),
    ] {
        assert!(text.contains(&format!("# TYPE {name} {kind}\n")), "{name} {kind}:\n{text}");
    }
    let receive = r#"route="/api/edi-hub/receive-message""#;
    for (labels, n) in [
        (format!("{receive},status=\"202\""), 2.0),
        (format!("{receive},status=\"200\""), 2.0),
        (format!("{receive},status=\"400\""), 1.0),
        (r#"route="/admin/audit",status="401""#.into(), 1.0),
        (r#"route="/admin/audit",status="200""#.into(), 1.0),
        (r#"route="/healthz",status="200""#.into(), 1.0),
    ] {
        assert_eq!(sample(&all, &format!("edihub_http_requests_total{{{labels}}}")), n, "{labels}");
    }
    let t = r#"message_type="ORDERS05""#;
    assert_eq!(sample(&all, &format!("edihub_messages_received_total{{{t}}}")), 4.0);
    assert_eq!(sample(&all, &format!("edihub_messages_accepted_total{{{t}}}")), 2.0);
    assert_eq!(
        sample(&all, &format!("edihub_duplicates_blocked_total{{{t},detected_by=\"fingerprint\"}}")),
        1.0
    );
    assert_eq!(
        sample(&all, &format!("edihub_duplicates_blocked_total{{{t},detected_by=\"idempotency_key\"}}")),
        1.0
    );

    // One histogram per route: cumulative buckets, +Inf = count = requests of the route.
    let hist = "edihub_http_request_duration_seconds";
    for route in ["/api/edi-hub/receive-message", "/admin/audit", "/healthz"] {
        let r = format!("route=\"{route}\"");
        let prefix = format!("{hist}_bucket{{{r},le=\"");
        let buckets: Vec<(&String, &f64)> = all.iter().filter(|(k, _)| k.starts_with(&prefix)).collect();
        assert!(buckets.len() >= 2, "{route}: buckets");
        let mut by_bound: Vec<(f64, f64)> = buckets
            .iter()
            .map(|(k, v)| {
                let le = k[prefix.len()..].trim_end_matches("\"}");
                (if le == "+Inf" { f64::INFINITY } else { le.parse().expect("bound") }, **v)
            })
            .collect();
        by_bound.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(by_bound.windows(2).all(|w| w[0].1 <= w[1].1), "{route}: cumulative {by_bound:?}");
        let inf = sample(&all, &format!("{hist}_bucket{{{r},le=\"+Inf\"}}"));
        let count = sample(&all, &format!("{hist}_count{{{r}}}"));
        assert_eq!(inf, count, "{route}: +Inf bucket = count");
        let requests: f64 = all
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("edihub_http_requests_total{{{r},")))
            .map(|(_, v)| v)
            .sum();
        assert_eq!(count, requests, "{route}: count = requests");
        assert!(sample(&all, &format!("{hist}_sum{{{r}}}")) > 0.0);
    }

    // Pool gauges.
    let open = sample(&all, r#"edihub_db_pool_connections{state="open"}"#);
    let idle = sample(&all, r#"edihub_db_pool_connections{state="idle"}"#);
    assert!(open >= 1.0 && idle <= open, "open {open}, idle {idle}");
    // The scrape itself is counted by the next one.
    let (_, again) = scrape(&app).await;
    assert_eq!(sample(&again, r#"edihub_http_requests_total{route="/metrics",status="200"}"#), 1.0);
}

async fn request_ids_on_every_response(backend: Backend) {
    let app = TestApp::new(backend).await;
    let fresh = |res: &TestResponse| -> uuid::Uuid {
        let id = res
            .header("x-request-id")
            .unwrap_or_else(|| panic!("no x-request-id: {} {}", res.status, res.text()));
        uuid::Uuid::parse_str(id).unwrap_or_else(|e| panic!("fresh request id {id}: {e}"))
    };
    let a = fresh(&app.get("/healthz", None).await);
    let b = fresh(&app.get("/healthz", None).await);
    assert_ne!(a, b, "one id per request");
    fresh(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);

    // A usable incoming id is echoed, on success and on errors alike.
    let with_id = |method: Method, uri: &str, id: &str| {
        Request::builder().method(method).uri(uri).header("x-request-id", id).body(Body::empty()).unwrap()
    };
    // README: "Every response carries an x-request-id", so the 404 and 405
    // fallbacks too.
    let mut without = Vec::new();
    for (method, uri, status) in [
        (Method::GET, "/readyz", 200),
        (Method::GET, "/admin/audit", 401),
        (Method::GET, "/admin/nothing-here", 404),
        (Method::DELETE, "/healthz", 405),
    ] {
        let res = app.send(with_id(method.clone(), uri, "proxy-7f3a.9:b_X")).await;
        res.expect(status);
        if res.header("x-request-id") != Some("proxy-7f3a.9:b_X") {
            without.push(format!("{method} {uri} -> {status}: {:?}", res.header("x-request-id")));
        }
    }
    assert!(without.is_empty(), "incoming x-request-id not echoed on: {without:#?}");
    // An unusable one (too long, spaces, empty) is replaced by a fresh id.
    for bad in ["x".repeat(65), "has space".to_string(), String::new()] {
        let res = app.send(with_id(Method::GET, "/healthz", &bad)).await;
        assert_ne!(res.header("x-request-id"), Some(bad.as_str()));
        fresh(&res);
    }
}

async fn readyz_is_200(backend: Backend) {
    let app = TestApp::new(backend).await;
    let res = app.get("/readyz", None).await;
    res.expect(200);
    assert_eq!(res.json()["status"], "ready");
}

async fn readyz(router: &axum::Router) -> TestResponse {
    let request = Request::builder().uri("/readyz").body(Body::empty()).unwrap();
    send_on(router.clone(), request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readyz_follows_postgresql_down_and_up() {
    let cluster = tokio::task::spawn_blocking(PgCluster::start).await.expect("start cluster");
    let (_state, router) =
        app_on(&cluster.url(), TestConfig::new().with(|c| c.database_acquire_timeout_secs = 2)).await;
    readyz(&router).await.expect(200);
    let post =
        || receive_request(Some(&bearer(ACME_PROD)), Some("application/xml"), fixture("orders05.xml"), &[]);
    let first = accepted(&send_on(router.clone(), post()).await);

    cluster.stop_immediate();
    let started = Instant::now();
    let res = readyz(&router).await;
    let took = started.elapsed();
    res.expect_problem(503, "database");
    assert!(res.header("retry-after").is_some());
    assert!(took < Duration::from_millis(4500), "503 within the 2 s acquire timeout, took {took:?}");
    // Senders get 503 too (they retry), never 2xx or 500.
    send_on(router.clone(), post()).await.expect_problem(503, "");

    cluster.start_again();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let res = readyz(&router).await;
        if res.status == 200 {
            break;
        }
        res.expect_problem(503, "");
        assert!(Instant::now() < deadline, "/readyz still {} 20 s after PostgreSQL came back", res.status);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // The data survived the crash: the repeat is a duplicate of the first message.
    duplicate_of(&send_on(router.clone(), post()).await, first["id"].as_str().unwrap());
    drop(cluster);
}
