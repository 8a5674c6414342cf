//! The EDIFACT and X12 cases of the bench, and the per-type rules the
//! server would apply to them.
//!
//! Besides the two real fixtures, each syntax gets an interchange of
//! [`MESSAGES`] messages built from its real order: the same message with
//! its own control number and order number, and counts that add up, so
//! that the rate per byte is not only the cost of one envelope.

use edihub_core::{Document, Fingerprint, FingerprintSpec, KeyPath, fingerprint};

/// Messages in a built interchange.
const MESSAGES: usize = 1000;

const DUAL: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/edifact/real/staedi_invoice810_po850_dual.edi"
));
const ORDERS_D96A: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/edifact/real/sapabh_O2C-UNEDIFACT-D96A_01a-SalesOrderRequest_ORDERS-D96A-EAN008.edi"
));
const X12_850: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/edifact/real/sapabh_O2C-ASCX12-004010_01a-SalesOrderRequest_X12-850.x12"
));

/// (benchmark id, body, Content-Type, number of messages)
pub type Case = (String, Vec<u8>, &'static str, usize);

pub fn cases() -> Vec<Case> {
    let orders = std::str::from_utf8(ORDERS_D96A).expect("the fixture is ASCII");
    vec![
        ("x12_850_dual_2k".into(), DUAL.to_vec(), "application/EDI-X12", 3),
        ("edifact_orders_d96a".into(), ORDERS_D96A.to_vec(), "application/EDIFACT", 1),
        (format!("x12_850_x{MESSAGES}"), x12_orders(MESSAGES).into_bytes(), "application/EDI-X12", MESSAGES),
        (
            format!("edifact_orders_d96a_x{MESSAGES}"),
            edifact_orders(orders, MESSAGES).into_bytes(),
            "application/EDIFACT",
            MESSAGES,
        ),
    ]
}

/// `text` with `from` replaced once, which must be there.
fn replaced(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "the fixture has no `{from}`");
    text.replacen(from, to, 1)
}

/// The real 850's interchange with its transaction set `n` times (ST02,
/// SE02 and BEG03 numbered, GE01 counting them).
fn x12_orders(n: usize) -> String {
    let st = X12_850.find("ST*").expect("ST");
    let ge = X12_850.find("GE*").expect("GE");
    let (head, set, tail) = (&X12_850[..st], &X12_850[st..ge], &X12_850[ge..]);
    let mut out = head.to_string();
    for i in 1..=n {
        let set = replaced(set, "ST*850*0001~", &format!("ST*850*{i:04}~"));
        let set = replaced(&set, "SE*10*0001~", &format!("SE*10*{i:04}~"));
        out.push_str(&replaced(&set, "*68DHHA7B*", &format!("*68DHHA7B-{i}*")));
    }
    out.push_str(&replaced(tail, "GE*1*", &format!("GE*{n}*")));
    out
}

/// The real ORDERS interchange with its message `n` times (UNH and UNT
/// 0062 and BGM 1004 numbered, UNZ 0036 counting them).
fn edifact_orders(orders: &str, n: usize) -> String {
    let unh = orders.find("UNH+").expect("UNH");
    let unz = orders.find("UNZ+").expect("UNZ");
    let (head, message, tail) = (&orders[..unh], &orders[unh..unz], &orders[unz..]);
    let mut out = head.to_string();
    for i in 1..=n {
        let message = replaced(message, "UNH+1+", &format!("UNH+{i}+"));
        let message = replaced(&message, "UNT+15+1'", &format!("UNT+15+{i}'"));
        out.push_str(&replaced(&message, "+5YGVX1VT+", &format!("+5YGVX1VT-{i}+")));
    }
    out.push_str(&replaced(tail, "UNZ+1+", &format!("UNZ+{n}+")));
    out
}

/// The key fields of the EDI types config/edihub.toml configures; other
/// types have none (their messages are fingerprinted by control numbers).
pub struct Rules(Vec<(&'static str, Vec<KeyPath>)>);

pub fn rules() -> Rules {
    let configured = [("X12.850", "BEG03"), ("EDIFACT.ORDERS", "BGM.02")];
    Rules(configured.iter().map(|(t, k)| (*t, vec![KeyPath::parse(k).expect("key path")])).collect())
}

impl Rules {
    /// What the server does per message before the database: its type,
    /// that type's rule, its control number and its fingerprint.
    pub fn fingerprint(&self, doc: &Document) -> Fingerprint {
        let is_configured = |t: &str| self.0.iter().any(|(id, _)| *id == t);
        let message_type = doc.message_type(None, &is_configured).expect("an EDI message has a type");
        let keys = self.0.iter().find(|(id, _)| *id == message_type).map_or(&[][..], |(_, k)| k.as_slice());
        std::hint::black_box(doc.docnum());
        fingerprint(
            doc,
            &FingerprintSpec {
                message_type: &message_type,
                key_fields: keys,
                exclude_fields: &[],
                scope: edihub_core::FingerprintScope::NONE,
            },
        )
    }
}
