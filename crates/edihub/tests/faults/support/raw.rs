//! Raw TCP clients for what reqwest will not do: trickle a body, stop in the
//! middle of the headers, open connections and say nothing. Blocking std
//! sockets, run on blocking threads.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The hub's address from its base URL.
pub fn addr(url: &str) -> SocketAddr {
    url.trim_start_matches("http://").parse().expect("host:port")
}

/// A raw request's outcome.
#[derive(Debug, Clone)]
pub struct RawAnswer {
    /// `HTTP/1.1 503 Service Unavailable`, or `None` when the server said nothing.
    pub status_line: Option<String>,
    /// The whole response as text (what arrived).
    pub text: String,
    /// From connecting to the end of the answer (or of waiting).
    pub elapsed: Duration,
    /// Body bytes written before the answer came (or writing failed).
    pub body_bytes_sent: usize,
}

impl RawAnswer {
    /// The status code.
    pub fn status(&self) -> Option<u16> {
        self.status_line.as_deref()?.split(' ').nth(1)?.parse().ok()
    }

    /// The JSON body, if any.
    pub fn json(&self) -> Option<serde_json::Value> {
        let (_, body) = self.text.split_once("\r\n\r\n")?;
        serde_json::from_str(body.trim()).ok()
    }
}

/// POSTs `body` to the receive endpoint, writing it in `chunks` pieces with
/// `gap` between them; stops writing as soon as an answer arrives. Waits at
/// most `limit` for the answer.
pub fn trickle_post(
    url: &str,
    key: &str,
    body: &[u8],
    declared_len: usize,
    chunks: usize,
    gap: Duration,
    limit: Duration,
) -> RawAnswer {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr(url)).expect("connect");
    stream.set_nodelay(true).ok();
    let head = format!(
        "POST /api/edi-hub/receive-message HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/xml\r\nContent-Length: {declared_len}\r\nConnection: close\r\n\r\n",
        addr(url)
    );
    stream.write_all(head.as_bytes()).expect("write head");
    let mut reader = stream.try_clone().expect("clone socket");
    let read_limit = limit;
    let reading = std::thread::spawn(move || {
        reader.set_read_timeout(Some(read_limit)).ok();
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(_) => break,
            }
        }
        (out, Instant::now())
    });
    let piece = body.len().div_ceil(chunks.max(1)).max(1);
    let mut sent = 0;
    for chunk in body.chunks(piece) {
        if reading.is_finished() || started.elapsed() > limit {
            break;
        }
        if stream.write_all(chunk).is_err() {
            break;
        }
        sent += chunk.len();
        std::thread::sleep(gap);
    }
    let (out, done) = reading.join().expect("reader");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status_line = text.lines().next().filter(|l| l.starts_with("HTTP/")).map(str::to_string);
    RawAnswer { status_line, text, elapsed: done - started, body_bytes_sent: sent }
}

/// Opens a connection and sends an unfinished request head (no blank line).
pub fn unfinished_head(url: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr(url)).expect("connect");
    stream
        .write_all(b"POST /api/edi-hub/receive-message HTTP/1.1\r\nHost: edihub\r\nX-Slow: ")
        .expect("write partial head");
    stream
}

/// How a held connection ended while we waited up to `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// The server closed it (EOF or reset) after this long.
    Closed(Duration),
    /// The server answered something (e.g. 408) after this long.
    Answered(Duration, String),
    /// Still open when we stopped waiting.
    StillOpen,
    /// Reading failed otherwise (e.g. reset by the server) after this long.
    Failed(Duration, String),
}

/// Waits up to `limit` for the server to close or answer `stream`.
pub fn wait_for_server(stream: &mut TcpStream, limit: Duration) -> Held {
    let started = Instant::now();
    stream.set_read_timeout(Some(limit)).ok();
    let mut buf = [0u8; 512];
    match stream.read(&mut buf) {
        Ok(0) => Held::Closed(started.elapsed()),
        Ok(n) => Held::Answered(started.elapsed(), String::from_utf8_lossy(&buf[..n]).into_owned()),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            Held::StillOpen
        }
        Err(e) => Held::Failed(started.elapsed(), e.to_string()),
    }
}

/// `count` connections that never send a byte.
pub fn idle_connections(url: &str, count: usize) -> Vec<TcpStream> {
    let a = addr(url);
    (0..count)
        .map(|i| {
            TcpStream::connect_timeout(&a, Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("idle connection {i}: {e}"))
        })
        .collect()
}
