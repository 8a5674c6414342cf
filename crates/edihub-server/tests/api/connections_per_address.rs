//! `max_connections_per_address`: one client address cannot fill the
//! server's connection cap and make everyone else wait.
//!
//! The real server loop on loopback, clients on 127.0.0.2 (the abuser) and
//! 127.0.0.1 (a sender). The global cap is 100 and the header timeout a
//! minute, so before the per-address cap the abuser's 100 silent
//! connections made the sender wait in the accept queue for that minute.
//! With a cap of 20 per address, the abuser's connections past 20 are
//! answered 503 and closed at once, and the sender is served.

use std::net::Ipv4Addr;
use std::time::Duration;

use crate::support::live::LiveServer;
use crate::support::raw::{answer_within, connect_from, head, request};
use crate::support::*;

const ABUSER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const SENDER: Ipv4Addr = Ipv4Addr::LOCALHOST;

fn limits() -> TestConfig {
    TestConfig::new().with(|c| {
        c.max_connections = 100;
        c.max_connections_per_address = 20;
        c.header_read_timeout_secs = 60;
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_address_cannot_hold_the_connections_of_others() {
    let app = TestApp::start(Backend::Sqlite, limits()).await;
    let server = LiveServer::start(app.state.clone()).await;

    // 100 silent connections from one address.
    let mut held = Vec::new();
    for _ in 0..100 {
        held.push(connect_from(server.addr, ABUSER).await.into_split());
    }
    let waits: Vec<_> = held
        .into_iter()
        .map(|(mut reader, writer)| {
            tokio::spawn(async move {
                let answer = answer_within(&mut reader, Duration::from_secs(3)).await;
                (answer, reader, writer)
            })
        })
        .collect();
    let mut refused = 0;
    let mut still_open = Vec::new();
    for w in waits {
        let (answer, reader, writer) = w.await.expect("reader task");
        match answer {
            Some((status, text)) => {
                assert_eq!(status, 503, "{text}");
                assert!(
                    text.contains(PROBLEM_JSON) && text.contains("too many connections from this address")
                );
                refused += 1;
            }
            None => still_open.push((reader, writer)),
        }
    }
    assert_eq!((refused, still_open.len()), (80, 20), "the cap keeps 20 open and refuses the rest");

    // Another address is served meanwhile, at once.
    let (status, text) = request(server.addr, SENDER, &head("GET", "/healthz", &[]), b"").await;
    assert_eq!(status, 200, "{text}");
    let idoc = fixture("orders05.xml");
    let upload = [
        ("Authorization", bearer(ACME_PROD)),
        ("Content-Type", "application/xml".into()),
        ("Content-Length", idoc.len().to_string()),
    ];
    let (status, text) = request(server.addr, SENDER, &head("POST", RECEIVE, &upload), &idoc).await;
    assert_eq!(status, 202, "{text}");
    assert_eq!(app.count_prod().await, 1);

    // The abuser's next connection is refused; once it closes one, it gets a slot back.
    let (status, _) = request(server.addr, ABUSER, &head("GET", "/healthz", &[]), b"").await;
    assert_eq!(status, 503);
    still_open.pop();
    let mut served = false;
    for _ in 0..50 {
        if request(server.addr, ABUSER, &head("GET", "/healthz", &[]), b"").await.0 == 200 {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served, "a closed connection gives its address a slot back");
    drop(still_open);
    server.stop().await;
}
