//! The HTML audit page in a real browser: edihub serves on a port-0 TCP
//! listener, headless Chromium loads `/admin/audit` with HTTP Basic
//! credentials (answering edihub's 401 challenge), a person's steps are
//! replayed through the Chrome DevTools Protocol (type the action into the
//! filter form, click "Filter"), and the rendered table is read back from the
//! DOM: after filtering it shows exactly the blocked duplicate. A screenshot
//! lands in `target/tmp/browser-audit.png`.
//!
//! Chromium is required: `scripts/test.sh` installs Debian's `chromium` when
//! it is missing; without it this test fails, it does not skip.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::live::LiveServer;
use crate::support::*;
use base64::Engine;
use serde_json::{Value, json};

/// A headless Chromium with a throwaway profile; killed and removed on drop.
pub struct Browser {
    child: Child,
    profile: PathBuf,
}

impl Browser {
    pub fn launch() -> Browser {
        let profile = std::env::temp_dir().join(format!("edihub-chromium-{}", uuid::Uuid::new_v4().simple()));
        let child = Command::new("chromium")
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
            .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
            .args(["--remote-debugging-port=0", "--window-size=1280,800", "about:blank"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start chromium ({e}); scripts/test.sh installs it"));
        Browser { child, profile }
    }

    /// The DevTools port, from the profile's `DevToolsActivePort` file.
    pub fn devtools_port(&mut self) -> u16 {
        let file = self.profile.join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(port) =
                std::fs::read_to_string(&file).ok().and_then(|t| t.lines().next()?.parse().ok())
            {
                return port;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("chromium exited at start: {status}");
            }
            assert!(Instant::now() < deadline, "chromium wrote no DevToolsActivePort");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Helper processes may still be writing into the profile for a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.profile.exists() && Instant::now() < deadline {
            let _ = std::fs::remove_dir_all(&self.profile);
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A minimal DevTools client: one page target over a WebSocket (RFC 6455,
/// text frames only), one command at a time.
pub struct Cdp {
    stream: TcpStream,
    next_id: u64,
}

/// The body of a GET on the DevTools port (HTTP/1.1 with Content-Length;
/// it drops HTTP/1.0 and keeps the connection open).
fn http_get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("devtools http");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").unwrap();
    let (mut reader, mut line, mut length) = (BufReader::new(s), String::new(), 0);
    while reader.read_line(&mut line).expect("devtools answer") > 2 {
        if let Some((_, v)) = line.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("content-length")) {
            length = v.trim().parse().expect("Content-Length");
        }
        line.clear();
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).expect("devtools body");
    String::from_utf8(body).expect("UTF-8 body")
}

impl Cdp {
    pub fn connect(port: u16) -> Cdp {
        let deadline = Instant::now() + Duration::from_secs(20);
        let ws_url = loop {
            let targets: Value = serde_json::from_str(&http_get(port, "/json/list")).unwrap_or(Value::Null);
            let page = targets.as_array().into_iter().flatten().find(|t| t["type"] == "page");
            if let Some(url) = page.and_then(|p| p["webSocketDebuggerUrl"].as_str()) {
                break url.to_string();
            }
            assert!(Instant::now() < deadline, "no page target in chromium");
            std::thread::sleep(Duration::from_millis(100));
        };
        let path = &ws_url[ws_url.find("/devtools/").expect("devtools path")..];
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("devtools websocket");
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let key = base64::engine::general_purpose::STANDARD.encode(uuid::Uuid::new_v4().as_bytes());
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.contains(" 101 "), "websocket upgrade refused: {status}");
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 2 {
            line.clear();
        }
        assert!(reader.buffer().is_empty(), "no frames before the first command");
        Cdp { stream, next_id: 1 }
    }

    fn send_frame(&mut self, opcode: u8, payload: &[u8]) {
        let mut frame = vec![0x80 | opcode];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= 0xffff => frame.extend([0x80 | 126].into_iter().chain((n as u16).to_be_bytes())),
            n => frame.extend([0x80 | 127].into_iter().chain((n as u64).to_be_bytes())),
        }
        let mask: [u8; 4] = uuid::Uuid::new_v4().as_bytes()[..4].try_into().unwrap();
        frame.extend(mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame).expect("websocket write");
    }

    fn read_message(&mut self) -> String {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.stream.read_exact(&mut head).expect("websocket read");
            let len = match head[1] & 0x7f {
                126 => u64::from(u16::from_be_bytes(self.read_array())),
                127 => u64::from_be_bytes(self.read_array()),
                n => u64::from(n),
            };
            assert_eq!(head[1] & 0x80, 0, "a server never masks its frames");
            let mut payload = vec![0u8; usize::try_from(len).unwrap()];
            self.stream.read_exact(&mut payload).expect("websocket payload");
            match head[0] & 0x0f {
                0x9 => self.send_frame(0xA, &payload),
                0x8 => panic!("chromium closed the DevTools connection"),
                0x0..=0x2 => {
                    message.extend(payload);
                    if head[0] & 0x80 != 0 {
                        return String::from_utf8(message).expect("UTF-8 message");
                    }
                }
                _ => {}
            }
        }
    }

    fn read_array<const N: usize>(&mut self) -> [u8; N] {
        let mut buf = [0u8; N];
        self.stream.read_exact(&mut buf).expect("websocket read");
        buf
    }

    /// Sends a command and returns its result, or the error DevTools
    /// answered (events in between are skipped).
    fn try_call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send_frame(0x1, json!({ "id": id, "method": method, "params": params }).to_string().as_bytes());
        loop {
            let msg: Value = serde_json::from_str(&self.read_message()).expect("DevTools JSON");
            if msg["id"] == id {
                return match msg.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(msg["result"].clone()),
                };
            }
        }
    }

    /// Sends a command and returns its result (events in between are skipped).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.try_call(method, params).unwrap_or_else(|error| panic!("{method}: {error}"))
    }

    /// Evaluates JavaScript in the page and returns its value.
    pub fn eval(&mut self, expression: &str) -> Value {
        self.eval_unless_navigating(expression)
            .unwrap_or_else(|| panic!("{expression}: the page navigated while it ran"))
    }

    /// Evaluates JavaScript in the page; `None` when a navigation (a
    /// form the page submits, a redirect) replaced the document while it
    /// ran, which DevTools answers with an error instead of a value.
    fn eval_unless_navigating(&mut self, expression: &str) -> Option<Value> {
        let params = json!({ "expression": expression, "returnByValue": true });
        let r = match self.try_call("Runtime.evaluate", params) {
            Ok(r) => r,
            Err(error) if navigated(&error) => return None,
            Err(error) => panic!("Runtime.evaluate: {error}"),
        };
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {}", r["exceptionDetails"]);
        Some(r["result"]["value"].clone())
    }

    /// Waits until `condition` (JavaScript) is true in the page, also
    /// across the navigations that lead there.
    pub fn wait_for(&mut self, condition: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.eval_unless_navigating(condition) != Some(json!(true)) {
            if Instant::now() >= deadline {
                let page = self.eval("location.href + ' ' + (document.body ? document.body.innerText : '')");
                panic!("timed out waiting for {condition}; page: {page}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Whether a DevTools error says the document went away under an
/// evaluation (the page navigated), not that the evaluation was wrong.
fn navigated(error: &Value) -> bool {
    let message = error["message"].as_str().unwrap_or("");
    [
        "Inspected target navigated or closed",
        "Execution context was destroyed",
        "Cannot find context with specified id",
    ]
    .iter()
    .any(|m| message.contains(m))
}

/// The rendered rows of the events table, as JSON text.
const ROWS: &str = "JSON.stringify([...document.querySelectorAll('#events tr.event')].map(tr => ({ \
    action: tr.querySelector('.action').textContent, \
    detected: tr.querySelector('.detected').textContent, \
    type: tr.querySelector('.type').textContent, \
    original: tr.querySelector('a.original')?.textContent ?? null, \
    shown: tr.getBoundingClientRect().height > 0 && getComputedStyle(tr).visibility === 'visible' })))";

/// Loads the page, filters by action like a person would, screenshots it;
/// returns (rows before, rows after, the action field after, location after).
fn drive(base: &str, screenshot: &Path) -> (Value, Value, Value, Value) {
    let mut browser = Browser::launch();
    let mut cdp = Cdp::connect(browser.devtools_port());
    cdp.call("Page.enable", json!({}));
    let nav = cdp.call("Page.navigate", json!({ "url": format!("{base}/admin/audit") }));
    assert!(nav.get("errorText").is_none(), "navigation failed: {nav}");
    cdp.wait_for("document.readyState === 'complete' && !!document.querySelector('#apply')");
    assert_eq!(cdp.eval("document.title"), "edihub audit");
    let before: Value = serde_json::from_str(cdp.eval(ROWS).as_str().unwrap()).unwrap();

    // Type into the Action field and click the Filter button with the mouse.
    cdp.eval("document.querySelector('#f-action').focus()");
    cdp.call("Input.insertText", json!({ "text": "message.duplicate_blocked" }));
    let at = cdp.eval(
        "(() => { const r = document.querySelector('#apply').getBoundingClientRect(); \
         return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; })()",
    );
    for kind in ["mousePressed", "mouseReleased"] {
        let event = json!({ "type": kind, "x": at["x"], "y": at["y"], "button": "left", "clickCount": 1 });
        cdp.call("Input.dispatchMouseEvent", event);
    }
    cdp.wait_for(
        "location.search.includes('action=message.duplicate_blocked') && document.readyState === 'complete' \
         && !!document.querySelector('#f-action')",
    );
    let after: Value = serde_json::from_str(cdp.eval(ROWS).as_str().unwrap()).unwrap();
    let field = cdp.eval("document.querySelector('#f-action').value");
    let location = cdp.eval("location.pathname + location.search");

    let shot = cdp.call("Page.captureScreenshot", json!({ "format": "png" }));
    let png = base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().unwrap()).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    std::fs::write(screenshot, png).expect("write screenshot");
    (before, after, field, location)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn audit_page_filters_to_the_blocked_duplicate_in_chromium() {
    let app = TestApp::new(Backend::Sqlite).await;
    let original = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    // The re-issued IDoc (same order numbers, new DOCNUM) is blocked by fingerprint.
    let original_id = original["id"].as_str().unwrap();
    duplicate_of(&app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await, original_id);
    // Another kind of event, which the filter must hide.
    let key = [("idempotency-key", "browser-k"), ("x-message-type", "free.event")];
    accepted(&app.post_json(ACME_PROD, r#"{"docnum":"1"}"#, &key).await);
    app.post_json(ACME_PROD, r#"{"docnum":"2"}"#, &key).await.expect(422);

    let server = LiveServer::start(app.state.clone()).await;
    let base = format!("http://admin:{ADMIN_TOKEN}@{}", server.addr);
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-audit.png");
    let (before, after, field, location) =
        tokio::task::spawn_blocking(move || drive(&base, &shot)).await.expect("browser driver");

    let actions: Vec<&Value> = before.as_array().unwrap().iter().map(|r| &r["action"]).collect();
    assert_eq!(actions, [&json!("idempotency_key.mismatch"), &json!("message.duplicate_blocked")]);
    // The form was submitted (a GET of the same page with the filter in the query).
    let location = location.as_str().unwrap();
    assert!(location.starts_with("/admin/audit?"), "{location}");
    assert!(location.split(['?', '&']).any(|p| p == "action=message.duplicate_blocked"), "{location}");
    assert_eq!(field, "message.duplicate_blocked", "the form keeps the filter");
    assert_eq!(
        after,
        json!([{ "action": "message.duplicate_blocked", "detected": "fingerprint", "type": "ORDERS05",
                 "original": original["id"], "shown": true }]),
        "filtered page"
    );

    // The browser was challenged (401 + WWW-Authenticate: Basic) and then let in.
    let metrics = app.get("/metrics", None).await.text();
    for status in ["401", "200"] {
        let line = format!("edihub_http_requests_total{{route=\"/admin/audit\",status=\"{status}\"}}");
        assert!(metrics.contains(&line), "{line} missing:\n{metrics}");
    }
    server.stop().await;
}

/// Where the console test writes its screenshots: `EDIHUB_CONSOLE_SCREENSHOTS`
/// (`make console-screenshots` sets `docs/console`), else the test's tmp dir.
pub fn screenshot_dir() -> PathBuf {
    std::env::var_os("EDIHUB_CONSOLE_SCREENSHOTS")
        .map(|d| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(d))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")))
}

/// Writes a screenshot of the page as it is now to `name.png` in [`screenshot_dir`].
pub fn screenshot(cdp: &mut Cdp, name: &str) {
    let shot = cdp.call("Page.captureScreenshot", json!({ "format": "png", "captureBeyondViewport": false }));
    let png = base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().unwrap()).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    let dir = screenshot_dir();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).expect("write screenshot");
}

/// Opens `path`, waits for its heading, screenshots it as `name.png` and
/// returns what the page shows: title, heading and `probe` (JavaScript).
pub fn visit(cdp: &mut Cdp, base: &str, path: &str, name: &str, probe: &str) -> Value {
    open(cdp, base, path);
    screenshot(cdp, name);
    seen(cdp, probe)
}

/// Opens `path` (a `#fragment` scrolls to it) and waits for its heading.
pub fn open(cdp: &mut Cdp, base: &str, path: &str) {
    let nav = cdp.call("Page.navigate", json!({ "url": format!("{base}{path}") }));
    assert!(nav.get("errorText").is_none(), "navigation to {path} failed: {nav}");
    let want = path.split(['?', '#']).next().unwrap();
    cdp.wait_for(&format!(
        "location.pathname === '{want}' && document.readyState === 'complete' && !!document.querySelector('main h1')"
    ));
}

/// What the current page shows: title, heading, `probe` (JavaScript), and
/// whether any script element exists or ran.
pub fn seen(cdp: &mut Cdp, probe: &str) -> Value {
    json!({
        "title": cdp.eval("document.title"),
        "h1": cdp.eval("document.querySelector('main h1').textContent"),
        "probe": cdp.eval(probe),
        "scripts": cdp.eval("document.querySelectorAll('script').length"),
        "xss": cdp.eval("window.__xss === undefined ? null : window.__xss"),
    })
}

/// Every console page in a real browser: each loads under the admin
/// credential and shows its content; a payload and key value carrying a
/// script are shown as text, and nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn console_pages_load_in_chromium() {
    let app = TestApp::new(Backend::Sqlite).await;
    let original = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let id = original["id"].as_str().unwrap().to_string();
    duplicate_of(&app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await, &id);
    let evil = "<script>window.__xss=1</script><img src=x onerror=\"window.__xss=2\">";
    let body = json!({ "docnum": "S-1", "order": { "id": evil } }).to_string();
    let shop = accepted(&app.post_json(ACME_PROD, body, &[("x-message-type", "shop.order")]).await);
    let shop_id = shop["id"].as_str().unwrap().to_string();

    let server = LiveServer::start(app.state.clone()).await;
    let base = format!("http://admin:{ADMIN_TOKEN}@{}", server.addr);
    let (id2, shop2) = (id.clone(), shop_id.clone());
    let pages = tokio::task::spawn_blocking(move || {
        let mut browser = Browser::launch();
        let mut cdp = Cdp::connect(browser.devtools_port());
        cdp.call("Page.enable", json!({}));
        let rows = "document.querySelectorAll('tr').length";
        vec![
            visit(
                &mut cdp,
                &base,
                "/admin",
                "overview",
                "document.querySelectorAll('#chart rect.accepted').length",
            ),
            visit(
                &mut cdp,
                &base,
                "/admin/messages",
                "messages",
                "document.querySelectorAll('tr.message').length",
            ),
            visit(
                &mut cdp,
                &base,
                &format!("/admin/messages/{id2}"),
                "message",
                "document.querySelectorAll('tr.duplicate').length",
            ),
            visit(
                &mut cdp,
                &base,
                &format!("/admin/messages/{shop2}"),
                "message-hostile",
                "document.querySelector('#key-values li').textContent",
            ),
            visit(
                &mut cdp,
                &base,
                "/admin/audit",
                "audit",
                "document.querySelectorAll('#events .details li').length",
            ),
            visit(&mut cdp, &base, "/admin/message-types", "message-types", rows),
            visit(&mut cdp, &base, "/admin/integrations", "integrations", rows),
        ]
    })
    .await
    .expect("browser driver");

    let titles: Vec<&Value> = pages.iter().map(|p| &p["title"]).collect();
    assert_eq!(
        titles,
        [
            "edihub overview",
            "edihub messages",
            "edihub message",
            "edihub message",
            "edihub audit",
            "edihub message types",
            "edihub integrations"
        ]
    );
    assert_eq!(pages[0]["probe"], 24, "24 hourly bars");
    assert_eq!(pages[1]["probe"], 2, "both stored messages listed");
    assert_eq!(pages[2]["probe"], 1, "the blocked duplicate in the why panel");
    assert_eq!(pages[3]["probe"], evil, "the script is shown as text");
    assert!(pages[4]["probe"].as_i64().unwrap() >= 2, "details as a list: {}", pages[4]);
    assert!(pages[5]["probe"].as_i64().unwrap() >= 5, "message types listed");
    for p in &pages {
        assert_eq!(p["scripts"], 0, "no script element in any page: {p}");
        assert_eq!(p["xss"], Value::Null, "nothing ran: {p}");
    }
    server.stop().await;
}
