//! The HTTP client that deliveries, AS2 sends and asynchronous MDN posts
//! share, and how a failed exchange is told in a log or an attempt record.
//! It reads only the address policy, so the AS2 sender uses it without
//! importing the delivery attempt.

use std::time::Duration;

use super::address_policy::{AddressPolicy, CheckedResolver, Refused};

/// The client all attempts share (it pools connections per host). It
/// resolves names through the address policy and uses no proxy (the
/// address checked must be the one connected to).
pub fn client(policy: AddressPolicy) -> reqwest::Result<reqwest::Client> {
    // reqwest is built with `rustls-no-provider`: choose ring for the
    // process (an error means one is installed already, just as good).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .user_agent(concat!("edihub/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .no_proxy()
        .dns_resolver(CheckedResolver(policy))
        .build()
}

/// A failed HTTP exchange as text for a log or an attempt record: the
/// error with its sources (reqwest's own message alone hides the cause),
/// or the address policy's refusal alone; never the URL (it may carry
/// credentials).
pub(crate) fn describe(e: reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".into();
    }
    let mut chain = Vec::new();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        if let Some(refused) = s.downcast_ref::<Refused>() {
            return refused.0.clone();
        }
        chain.push(s.to_string());
        source = s.source();
    }
    let mut text = e.without_url().to_string();
    for s in chain {
        text.push_str(": ");
        text.push_str(&s);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failed_exchange_is_described_without_its_url() {
        // A receiver that accepts the connection and closes it unanswered.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let closer = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            drop(socket);
        });
        let http = client(AddressPolicy { allow_private: true }).unwrap();
        let url = format!("http://user:s3cret-password@127.0.0.1:{port}/hook?token=s3cret-token");
        let e = http.post(&url).body("x").send().await.expect_err("the receiver closes the connection");
        closer.await.unwrap();
        let text = describe(e);
        assert!(!text.contains("s3cret") && !text.contains("127.0.0.1"), "{text}");
        assert!(text.contains(": "), "the causes are named: {text}");
    }

    #[tokio::test]
    async fn a_refused_address_is_described_by_the_refusal_alone() {
        let http = client(AddressPolicy { allow_private: false }).unwrap();
        let e = http.post("http://user:s3cret@localhost:9/").send().await.expect_err("loopback is refused");
        let text = describe(e);
        assert!(text.starts_with("refused: localhost resolves to no address deliveries may reach"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
    }
}
