//! The per-address connection cap (`max_connections_per_address`).
//!
//! The global cap (`max_connections`) queues connections in the kernel, so
//! one client opening thousands of sockets would make everyone else wait
//! behind it. This cap is checked right after `accept`: a connection over
//! its address's share gets a short 503 and is closed at once, so it never
//! holds a task, a timer or a global permit, and other addresses are served.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// What an address over its cap is told before the connection is closed.
/// Written without reading the request: the client may not have sent one.
pub const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/problem+json\r\nretry-after: 5\r\nconnection: close\r\ncontent-length: 128\r\n\r\n\
{\"type\":\"about:blank\",\"title\":\"Service Unavailable\",\"status\":503,\"detail\":\"too many connections from this address; retry later\"}";

/// Open connections per client address.
#[derive(Debug)]
pub struct PerAddress {
    cap: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One counted connection; uncounted when dropped.
#[derive(Debug)]
#[must_use = "the connection is uncounted when the slot is dropped"]
pub struct Slot {
    owner: Arc<PerAddress>,
    addr: IpAddr,
}

impl PerAddress {
    /// A cap of `cap` connections per address (at least 1).
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self { cap: cap.max(1), open: Mutex::new(HashMap::new()) })
    }

    /// Counts a connection from `addr`, or `None` when the address is at its cap.
    pub fn try_open(self: &Arc<Self>, addr: IpAddr) -> Option<Slot> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(canonical(addr)).or_insert(0);
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(Slot { owner: Arc::clone(self), addr: canonical(addr) })
    }

    /// Connections open from `addr`.
    pub fn open_from(&self, addr: IpAddr) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).get(&canonical(addr)).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.owner.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                // The map holds only addresses with open connections.
                open.remove(&self.addr);
            }
        }
    }
}

/// An IPv4 client on a dual-stack listener arrives as `::ffff:a.b.c.d`; it
/// is the same client as `a.b.c.d`.
fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_holds_per_address_and_frees_on_drop() {
        let limit = PerAddress::new(2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = limit.try_open(a).expect("first");
        let _second = limit.try_open(a).expect("second");
        assert!(limit.try_open(a).is_none(), "a third from the same address is over the cap");
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert!(limit.try_open(mapped).is_none(), "the v4-mapped form is the same address");
        assert!(limit.try_open(b).is_some(), "another address is not affected");
        drop(first);
        assert_eq!(limit.open_from(a), 1);
        assert!(limit.try_open(a).is_some(), "a closed connection frees its slot");
    }

    #[test]
    fn the_refusal_is_a_complete_problem_response() {
        let text = std::str::from_utf8(REFUSAL).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|v| v.parse().ok())
            .unwrap();
        assert_eq!(len, body.len(), "content-length matches the body");
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["status"], 503);
    }
}
