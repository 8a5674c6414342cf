//! Raw HTTP/1.1 over loopback TCP against a [`super::live::LiveServer`], for
//! what an in-process request cannot show: an answer that comes before the
//! body is sent, a body trickled byte by byte, and clients on different
//! addresses (any 127.x.y.z is a loopback address of its own on Linux).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpSocket, TcpStream};

/// Connects to `server` from the loopback address `source`.
pub async fn connect_from(server: SocketAddr, source: Ipv4Addr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::from((source, 0))).unwrap_or_else(|e| panic!("bind {source}: {e}"));
    socket.connect(server).await.unwrap_or_else(|e| panic!("connect from {source}: {e}"))
}

/// A request head: `method path`, the given headers, `Host` and `Connection: close`.
pub fn head(method: &str, path: &str, headers: &[(&str, String)]) -> String {
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: edihub\r\nConnection: close\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text
}

/// The status code and whole text of an answer that arrives within `limit`;
/// `None` when nothing arrives by then (the connection still open).
pub async fn answer_within(reader: &mut OwnedReadHalf, limit: Duration) -> Option<(u16, String)> {
    let mut out = Vec::new();
    let read = tokio::time::timeout(limit, async {
        let mut buf = [0u8; 4096];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    if read.is_err() && out.is_empty() {
        return None;
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Some((status, text))
}

/// Sends `head` and `body` whole and reads the answer (within 30 s).
pub async fn request(server: SocketAddr, source: Ipv4Addr, head: &str, body: &[u8]) -> (u16, String) {
    let (mut reader, mut writer) = connect_from(server, source).await.into_split();
    writer.write_all(head.as_bytes()).await.expect("write head");
    // The server may answer and close before the body is sent; that is its right.
    let _ = writer.write_all(body).await;
    answer_within(&mut reader, Duration::from_secs(30)).await.expect("an answer within 30 s")
}

/// A request whose body is trickled one byte every `gap` until the server
/// answers or the connection breaks; the reader half tells whether it has.
pub struct Trickler {
    /// Where the answer arrives.
    pub reader: OwnedReadHalf,
    task: tokio::task::JoinHandle<()>,
}

impl Trickler {
    /// Sends `head` from `source`, then one byte of body every `gap`.
    pub async fn start(server: SocketAddr, source: Ipv4Addr, head: &str, gap: Duration) -> Trickler {
        let (reader, mut writer) = connect_from(server, source).await.into_split();
        writer.write_all(head.as_bytes()).await.expect("write head");
        let task = tokio::spawn(async move { trickle(&mut writer, gap).await });
        Trickler { reader, task }
    }
}

async fn trickle(writer: &mut OwnedWriteHalf, gap: Duration) {
    loop {
        if writer.write_all(b" ").await.is_err() {
            return;
        }
        tokio::time::sleep(gap).await;
    }
}

impl Drop for Trickler {
    fn drop(&mut self) {
        self.task.abort();
    }
}
