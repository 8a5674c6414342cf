//! Which addresses deliveries may connect to.
//!
//! A destination's URL is chosen by whoever configures it, and the first
//! bytes of every answer are readable in the attempt log: pointed at the
//! hub's own network (a database port, a cloud metadata service, an admin
//! interface on loopback) a destination would make the hub a proxy into
//! places its admins cannot otherwise reach. So deliveries connect only to
//! public addresses, unless `delivery.allow_private_destinations` says
//! otherwise:
//!
//! - **refused unless allowed**: loopback (`127.0.0.0/8`, `::1`), private
//!   (`10/8`, `172.16/12`, `192.168/16`, `fc00::/7`), link-local
//!   (`169.254/16`, `fe80::/10`), shared (`100.64/10`), "this network"
//!   (`0/8`), benchmarking and reserved ranges;
//! - **always refused**: the unspecified address (`0.0.0.0`, `::`, which
//!   reaches the local host), cloud metadata services (`169.254.169.254`,
//!   `169.254.170.2`, `fd00:ec2::254`, `100.100.100.200`), multicast and
//!   broadcast: no receiver lives there.
//!
//! An IPv6 address that embeds an IPv4 one (IPv4-mapped `::ffff:a.b.c.d`,
//! IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`) is judged by the IPv4
//! address. Decimal, hex and short IPv4 forms (`2130706433`, `0x7f.1`,
//! `127.1`) are read by the URL parser as the addresses they are.
//!
//! The check runs where the connection is made: a host name is resolved by
//! [`CheckedResolver`], which hands the HTTP client only the addresses the
//! policy admits, at every connection, so a name that resolves to a public
//! address when the destination is saved and to a private one later (DNS
//! rebinding) still cannot reach it; a literal address is checked before
//! the request ([`check_url`]). The client uses no proxy, so the address
//! checked is the one connected to. A literal address is also checked when
//! the configuration or an admin change is validated.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::config::DeliveryConfig;

/// What a policy refusal says: the address and why.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// The policy: whether private addresses are allowed.
#[derive(Debug, Clone, Copy)]
pub struct AddressPolicy {
    /// `delivery.allow_private_destinations`.
    pub allow_private: bool,
}

impl AddressPolicy {
    /// The policy `[delivery]` sets.
    pub fn of(delivery: &DeliveryConfig) -> Self {
        Self { allow_private: delivery.allow_private_destinations }
    }
}

/// Why an address is refused when private ones are not allowed, or always.
enum Kind {
    /// Refused unless `allow_private_destinations`.
    Private(&'static str),
    /// Refused always.
    Never(&'static str),
}

/// The IPv4 address an IPv6 one stands for, if it embeds one.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    if s[..6] == [0, 0, 0, 0, 0, 0xffff] || (s[..6] == [0; 6] && s[6] != 0) {
        return ip.to_ipv4();
    }
    // NAT64's well-known prefix 64:ff9b::/96.
    (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0]).then(|| Ipv4Addr::from(u128::from(ip) as u32))
}

fn kind_v4(ip: Ipv4Addr) -> Option<Kind> {
    let [a, b, c, d] = ip.octets();
    let never = match [a, b, c, d] {
        [0, 0, 0, 0] => Some("the unspecified address"),
        [169, 254, 169, 254] | [169, 254, 170, 2] | [100, 100, 100, 200] => Some("a cloud metadata service"),
        [255, 255, 255, 255] => Some("the broadcast address"),
        [224..=239, ..] => Some("a multicast address"),
        _ => None,
    };
    if let Some(why) = never {
        return Some(Kind::Never(why));
    }
    let private = match [a, b] {
        [127, _] => "a loopback address",
        [10, _] | [172, 16..=31] | [192, 168] => "a private address",
        [169, 254] => "a link-local address",
        [100, 64..=127] => "a shared (carrier-grade NAT) address",
        [0, _] => "a \"this network\" address",
        [198, 18..=19] => "a benchmarking address",
        [192, 0] if c == 0 || c == 2 => "a reserved address",
        [198, 51] if c == 100 => "a documentation address",
        [203, 0] if c == 113 => "a documentation address",
        [240..=255, _] => "a reserved address",
        _ => return None,
    };
    Some(Kind::Private(private))
}

fn kind_v6(ip: Ipv6Addr) -> Option<Kind> {
    if let Some(v4) = embedded_v4(ip) {
        return kind_v4(v4);
    }
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some(Kind::Never("the unspecified address"));
    }
    if s == [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254] {
        return Some(Kind::Never("a cloud metadata service"));
    }
    if s[0] & 0xff00 == 0xff00 {
        return Some(Kind::Never("a multicast address"));
    }
    let private = match s[0] {
        _ if ip.is_loopback() => "a loopback address",
        x if x & 0xfe00 == 0xfc00 => "a private (unique local) address",
        x if x & 0xffc0 == 0xfe80 => "a link-local address",
        x if x & 0xffc0 == 0xfec0 => "a site-local address",
        0x2001 if s[1] == 0x0db8 => "a documentation address",
        _ => return None,
    };
    Some(Kind::Private(private))
}

impl AddressPolicy {
    /// Why deliveries may not connect to `ip`, or `None` if they may.
    pub fn refusal(self, ip: IpAddr) -> Option<String> {
        let kind = match ip {
            IpAddr::V4(v4) => kind_v4(v4),
            IpAddr::V6(v6) => kind_v6(v6),
        };
        match kind? {
            Kind::Never(why) => Some(format!("{ip} is {why}, which deliveries never reach")),
            Kind::Private(_) if self.allow_private => None,
            Kind::Private(why) => Some(format!(
                "{ip} is {why}; deliveries reach private addresses only with delivery.allow_private_destinations = true"
            )),
        }
    }

    /// Refuses `url` if its host is a literal address the policy refuses
    /// (a host name is checked when it is resolved, see `CheckedResolver`).
    pub fn check_url(self, url: &str) -> Result<(), Refused> {
        let Ok(url) = reqwest::Url::parse(url) else { return Ok(()) };
        // The parser writes an IPv4 host in dotted form and an IPv6 one in
        // brackets, whatever the spelling in the URL.
        let host = url.host_str().unwrap_or_default();
        let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() else {
            return Ok(());
        };
        match self.refusal(ip) {
            Some(why) => Err(Refused(format!("refused: {why}"))),
            None => Ok(()),
        }
    }
}

/// Resolves host names for the delivery client, keeping only the addresses
/// the policy admits: a name with none left fails the connection with the
/// reason.
#[derive(Debug, Clone, Copy)]
pub struct CheckedResolver(pub AddressPolicy);

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let (policy, host) = (self.0, name.as_str().to_string());
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (admitted, refused): (Vec<_>, Vec<_>) =
                found.into_iter().partition(|a| policy.refusal(a.ip()).is_none());
            if admitted.is_empty() {
                let reasons: Vec<String> = refused.iter().filter_map(|a| policy.refusal(a.ip())).collect();
                let why = format!(
                    "refused: {host} resolves to no address deliveries may reach ({})",
                    reasons.join("; ")
                );
                return Err(Box::new(Refused(why)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(admitted.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: AddressPolicy = AddressPolicy { allow_private: false };
    const LENIENT: AddressPolicy = AddressPolicy { allow_private: true };

    fn refused(policy: AddressPolicy, ip: &str) -> bool {
        policy.refusal(ip.parse().expect("an address")).is_some()
    }

    #[test]
    fn private_ranges_are_refused_unless_allowed() {
        for ip in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.1.1",
            "100.64.0.1",
            "0.1.2.3",
            "198.18.0.1",
            "240.0.0.1",
            "::1",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(refused(STRICT, ip), "{ip} refused");
            assert!(!refused(LENIENT, ip), "{ip} allowed with allow_private_destinations");
        }
    }

    #[test]
    fn metadata_unspecified_and_multicast_are_always_refused() {
        for ip in [
            "169.254.169.254",
            "169.254.170.2",
            "100.100.100.200",
            "fd00:ec2::254",
            "0.0.0.0",
            "::",
            "::ffff:169.254.169.254",
            "::ffff:0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "ff02::1",
        ] {
            assert!(refused(STRICT, ip), "{ip}");
            assert!(refused(LENIENT, ip), "{ip} even with allow_private_destinations");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in
            ["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"]
        {
            assert!(!refused(STRICT, ip), "{ip}");
        }
    }

    #[test]
    fn literal_hosts_in_every_spelling_are_checked() {
        for url in [
            "http://127.0.0.1:9999/x",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.1/",
            "http://127.1/",
            "http://017700000001/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://0.0.0.0:8080/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/",
        ] {
            assert!(STRICT.check_url(url).is_err(), "{url}");
        }
        assert!(LENIENT.check_url("http://2130706433/").is_ok());
        assert!(LENIENT.check_url("http://169.254.169.254/").is_err());
        assert!(STRICT.check_url("https://erp.example.com/in").is_ok(), "a name is checked when resolved");
        assert!(STRICT.check_url("http://93.184.216.34/in").is_ok());
    }
}
