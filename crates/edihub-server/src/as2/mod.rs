//! AS2 (RFC 4130): how trading partners exchange EDI over HTTP. A message
//! is a MIME entity, usually signed (S/MIME `multipart/signed`), encrypted
//! (CMS EnvelopedData) and sometimes compressed (CMS CompressedData),
//! posted with `AS2-From`, `AS2-To` and a `Message-ID`; the receiver
//! answers with an MDN, a signed receipt carrying the MIC of what it
//! received, either in the HTTP answer or posted back later. A partner that
//! gets no MDN sends the same Message-ID again.
//!
//! This module is the protocol: reading and writing messages and MDNs, and
//! sending one to a partner, with no HTTP route and no storage.
//!
//! - [`mime`]: MIME entities as AS2 uses them: exact byte spans, bounded
//!   parsing, canonical writing.
//! - [`id`]: AS2 ids and Message-IDs.
//! - [`headers`]: the AS2 headers of a request and the receipt it asks for.
//! - [`mic`]: digest algorithms and the MIC.
//! - [`keys`]: certificates and private keys from PEM, never printed.
//! - [`cms`]: signatures and encryption (OpenSSL); [`signed`]:
//!   `multipart/signed` around them; [`compress`]: CompressedData.
//! - [`partner`]: stations (our identities) and partner profiles, built
//!   from the configuration's `[as2]` section.
//! - [`inbound`]: opening a partner's message and the MDN that answers it.
//! - [`outbound`]: building a message to a partner; [`receipt`]: reading
//!   the partner's MDN and judging whether it confirms what was sent;
//!   [`send`]: posting it to the partner and judging the answer.
//! - [`disposition`]: what an MDN's disposition says; [`mdn`]: building MDNs.
//! - [`error`]: every failure, typed by the disposition the MDN reports.
//! - `partner_server` (the `testing` feature): pyas2lib's AS2 server, the
//!   independent partner the tests send to.
//! - [`expiry`]: when a station's or partner's certificate needs attention.

pub mod cms;
pub mod compress;
pub mod disposition;
pub mod error;
pub mod expiry;
pub mod headers;
pub mod id;
pub mod inbound;
pub mod keys;
pub mod mdn;
pub mod mic;
pub mod mime;
pub mod outbound;
pub mod partner;
#[cfg(feature = "testing")]
pub mod partner_server;
pub mod receipt;
pub mod send;
pub mod signed;

#[cfg(test)]
pub(crate) mod testing;

pub use error::As2Error;
pub use partner::Registry;

#[cfg(test)]
#[path = "roundtrip_tests.rs"]
mod roundtrip_tests;
