//! Parse + fingerprint throughput of the core, per input byte (`make bench`
//! reads the MB/s from criterion's estimates; see BENCHMARKS.md).
//!
//! Each iteration does what the server does for one request body before it
//! touches the database: `parse_body` (encoding, XML or JSON, IDoc tree, the
//! one JSON rendering) and `fingerprint` of every IDoc under the demo
//! configuration's rules for its type. EDIFACT and X12 interchanges are
//! measured the same way (one fingerprint per message, see `edi`): the two
//! real fixtures, where per-interchange costs weigh, and interchanges of
//! 1,000 messages built from them, which give the rate per byte.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use edihub_core::{FingerprintSpec, KeyPath, fingerprint, parse_body};
use mimalloc::MiMalloc;

#[path = "support/edi.rs"]
mod edi;

/// The allocator the server binary uses: parsing allocates per element, so
/// timing it under the system allocator would measure the wrong thing.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

macro_rules! fixture {
    ($path:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/idoc/", $path))
    };
}

/// (benchmark id, body, Content-Type, message type, key fields as in config/edihub.toml)
type Case = (&'static str, &'static [u8], &'static str, &'static str, &'static [&'static str]);

const CASES: &[Case] = &[
    (
        "orders05_xml_2k",
        fixture!("orders05.xml"),
        "application/xml",
        "ORDERS05",
        &["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"],
    ),
    (
        "orders05_json_2k",
        fixture!("orders05.json"),
        "application/json",
        "ORDERS05",
        &["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"],
    ),
    (
        "real_ordrsp_xml_17k",
        fixture!("real/sapabh_O2C-UNEDIFACT-D96A_01b-SalesOrderResponse_ORDERS05-ORDRSP.xml"),
        "application/xml",
        "ORDERS05",
        &["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"],
    ),
    (
        "real_invoic02_xml_17k",
        fixture!("real/sapabh_O2C-UNEDIFACT-D10B_03-Invoice_INVOIC02.xml"),
        "application/xml",
        "INVOIC02",
        &["E1EDK02[QUALF=009].BELNR", "E1EDK01.BELNR"],
    ),
];

fn parse_and_fingerprint(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse_fingerprint");
    for (id, body, content_type, message_type, fields) in CASES {
        let keys: Vec<KeyPath> = fields.iter().map(|f| KeyPath::parse(f).expect("key path")).collect();
        let spec = FingerprintSpec {
            message_type,
            key_fields: &keys,
            exclude_fields: &[],
            scope: edihub_core::FingerprintScope::NONE,
        };
        // Fail loudly if a fixture stops parsing rather than timing an error path.
        let parsed = parse_body(body, Some(content_type)).expect("fixture parses");
        assert!(fingerprint(&parsed.documents[0], &spec).hex.is_some(), "{id}: no fingerprint");

        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(*id, |b| {
            b.iter(|| {
                let parsed = parse_body(black_box(body), Some(content_type)).expect("parses");
                for doc in &parsed.documents {
                    black_box(fingerprint(doc, &spec));
                }
            });
        });
    }
    group.finish();
}

/// EDIFACT and X12 interchanges (ids without "xml": they are not in the
/// IDoc-XML target), each message typed and fingerprinted as the server
/// does: its own type (`X12.810`, `X12.850`), that type's key fields from
/// config/edihub.toml, and no key fields for an unconfigured type (the
/// control numbers then).
fn interchanges(c: &mut Criterion) {
    let rules = edi::rules();
    let mut group = c.benchmark_group("parse_fingerprint");
    for (id, body, content_type, messages) in edi::cases() {
        let parsed = parse_body(&body, Some(content_type)).expect("interchange parses");
        assert_eq!(parsed.documents.len(), messages, "{id}");
        assert!(parsed.documents.iter().all(|d| rules.fingerprint(d).hex.is_some()), "{id}: no fingerprint");

        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(id, |b| {
            b.iter(|| {
                let parsed = parse_body(black_box(&body), Some(content_type)).expect("parses");
                for doc in &parsed.documents {
                    black_box(rules.fingerprint(doc));
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, parse_and_fingerprint, interchanges);
criterion_main!(benches);
