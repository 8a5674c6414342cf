//! The documents the fault tests send: ORDERS05 IDocs with unique order
//! numbers (so each is one business message), every tenth a packet of three
//! IDocs (so a half-stored packet would show), some with an Idempotency-Key.

use std::fmt::Write;

/// A tiny deterministic PRNG (xorshift64*), seeded per test and printed, so
/// a failing order can be replayed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded from `EDIHUB_FAULT_SEED` when set, else from the clock.
    pub fn from_env(test: &str) -> Rng {
        let seed =
            std::env::var("EDIHUB_FAULT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
        eprintln!("[{test}] EDIHUB_FAULT_SEED={seed}");
        Rng(seed | 1)
    }

    /// The next number.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// Fisher–Yates.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// One business document as the sender keeps it: its bytes, its optional
/// Idempotency-Key and the DOCNUMs of the IDocs inside.
#[derive(Debug, Clone)]
pub struct Doc {
    /// Index in the run.
    pub index: usize,
    /// The exact bytes sent every time.
    pub body: Vec<u8>,
    /// Sent as `Idempotency-Key` when set.
    pub key: Option<String>,
    /// `EDI_DC40.DOCNUM` of each IDoc, in order (one for a single IDoc).
    pub docnums: Vec<String>,
}

impl Doc {
    /// Whether this document is a packet.
    pub fn is_packet(&self) -> bool {
        self.docnums.len() > 1
    }
}

fn idoc(out: &mut String, docnum: &str, belnr: &str) {
    let _ = write!(
        out,
        r#"<IDOC BEGIN="1"><EDI_DC40 SEGMENT="1"><TABNAM>EDI_DC40</TABNAM><MANDT>100</MANDT><DOCNUM>{docnum}</DOCNUM><IDOCTYP>ORDERS05</IDOCTYP><MESTYP>ORDERS</MESTYP><SNDPOR>SAPQ01</SNDPOR><SNDPRT>LS</SNDPRT><SNDPRN>Q01CLNT100</SNDPRN><RCVPOR>EDIHUB</RCVPOR><CREDAT>20240612</CREDAT><CRETIM>101500</CRETIM></EDI_DC40><E1EDK01 SEGMENT="1"><CURCY>EUR</CURCY><BSART>NB</BSART><BELNR>{belnr}</BELNR></E1EDK01><E1EDK02 SEGMENT="1"><QUALF>001</QUALF><BELNR>PO-{belnr}</BELNR></E1EDK02><E1EDP01 SEGMENT="1"><POSEX>00010</POSEX><MENGE>12.000</MENGE><MENEE>PCE</MENEE><E1EDP19 SEGMENT="1"><QUALF>002</QUALF><IDTNR>MAT-100200</IDTNR><KTEXT>Schraube M6 &amp; Mutter</KTEXT></E1EDP19></E1EDP01></IDOC>"#
    );
}

/// `count` documents. `packets`: every tenth is a packet of three IDocs.
/// `key_percent`: how many carry an Idempotency-Key.
pub fn make_docs(rng: &mut Rng, count: usize, packets: bool, key_percent: u64) -> Vec<Doc> {
    let run = uuid::Uuid::new_v4().simple().to_string();
    let run = &run[..8];
    // A random base, so documents of two calls never share a DOCNUM.
    let mut next_docnum = 1 + (rng.next() % 1_000_000_000) * 1_000_000;
    (0..count)
        .map(|index| {
            let n = if packets && index % 10 == 9 { 3 } else { 1 };
            let mut xml = String::from(r#"<?xml version="1.0" encoding="UTF-8"?><ORDERS05>"#);
            let mut docnums = Vec::with_capacity(n);
            for part in 0..n {
                let docnum = format!("{next_docnum:016}");
                next_docnum += 1;
                idoc(&mut xml, &docnum, &format!("{run}-{index}-{part}"));
                docnums.push(docnum);
            }
            xml.push_str("</ORDERS05>");
            let key = rng.chance(key_percent).then(|| format!("{run}-key-{index}"));
            Doc { index, body: xml.into_bytes(), key, docnums }
        })
        .collect()
}
