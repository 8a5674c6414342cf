//! The hashed array in canonical JSON (RFC 8785), written as it is built.
//!
//! A fingerprint hashes a short array of strings and values. Building it as
//! a `serde_json::Value` and handing that to the canonicalizer would copy
//! every part and format it through the canonicalizer's per-write
//! buffering, which cost more than the rest of a small message's
//! fingerprint. Strings, arrays, `null` and booleans are written here as
//! serde_json writes them compactly, which is byte for byte their canonical
//! form (the same escapes, lowercase `\u00xx`, no escaped `/`); numbers
//! (ES6 form) and objects (keys in UTF-16 order) go to the canonicalizer.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The array being hashed: `[` and the parts so far.
pub(super) struct Hashed {
    bytes: Vec<u8>,
    /// The canonical form of a part failed (it cannot for a `Value`).
    failed: bool,
}

impl Hashed {
    /// An array starting with `head` (tag, type, logical message, basis).
    pub fn new(head: [&str; 4]) -> Hashed {
        let mut hashed = Hashed { bytes: Vec::with_capacity(128), failed: false };
        hashed.bytes.push(b'[');
        for (i, part) in head.into_iter().enumerate() {
            if i > 0 {
                hashed.bytes.push(b',');
            }
            hashed.write(|out| write_str(part, out));
        }
        hashed
    }

    fn write(&mut self, f: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>) {
        // The error is dropped in its own branch: the usual `Ok` carries no
        // drop of the `Result` (an out-of-line call per part otherwise).
        if let Err(error) = f(&mut self.bytes) {
            drop(error);
            self.failed = true;
        }
    }

    /// Adds a string.
    pub fn str(&mut self, part: &str) {
        self.bytes.push(b',');
        self.write(|out| write_str(part, out));
    }

    /// Adds a value.
    pub fn value(&mut self, part: &Value) {
        self.bytes.push(b',');
        self.write(|out| write_canonical(part, out));
    }

    /// Adds an array of arrays (the values of each key field).
    pub fn arrays<'a>(&mut self, arrays: impl Iterator<Item = &'a [Value]>) {
        self.bytes.extend_from_slice(b",[");
        for (i, items) in arrays.enumerate() {
            if i > 0 {
                self.bytes.push(b',');
            }
            self.write(|out| write_array(items, out));
        }
        self.bytes.push(b']');
    }

    /// `hex(SHA-256)` of the array, or `None` if a part had no canonical form.
    pub fn finish(mut self) -> Option<String> {
        self.bytes.push(b']');
        (!self.failed).then(|| lower_hex(&Sha256::digest(&self.bytes)))
    }
}

/// `bytes` as lowercase hexadecimal digits.
fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xF)]));
    }
    out
}

/// Writes a JSON string as serde_json does: quoted as it is when nothing in
/// it needs an escape (serde_json escapes only control characters, `"` and
/// `\\`), else through serde_json. The fast path skips serde_json's
/// serializer setup, a fifth of a small message's fingerprint.
fn write_str(s: &str, out: &mut Vec<u8>) -> serde_json::Result<()> {
    if !s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        return serde_json::to_writer(out, s);
    }
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
    Ok(())
}

/// Writes the canonical JSON of `v`, its integers beyond 2^53 as text (see
/// [`exact_integers`]).
pub(super) fn write_canonical(v: &Value, out: &mut Vec<u8>) -> serde_json::Result<()> {
    match v {
        Value::Array(items) => write_array(items, out),
        Value::String(s) => write_str(s, out),
        Value::Null | Value::Bool(_) => serde_json::to_writer(out, v),
        Value::Number(_) | Value::Object(_) => serde_json_canonicalizer::to_writer(&exact_integers(v), out),
    }
}

/// Writes the canonical JSON of an array of `items`.
fn write_array(items: &[Value], out: &mut Vec<u8>) -> serde_json::Result<()> {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_canonical(item, out)?;
    }
    out.push(b']');
    Ok(())
}

/// RFC 8785 writes numbers as IEEE doubles, which rounds integers beyond
/// 2^53: two different order ids such as 820982911946154508 and
/// 820982911946154509 would hash alike. Such integers are hashed as their
/// exact decimal text instead (the same id sent quoted or unquoted is then
/// one key, which is what an id means).
pub(super) fn exact_integers(v: &Value) -> Value {
    const EXACT: u64 = 1 << 53;
    match v {
        Value::Number(n)
            if n.as_u64().is_some_and(|u| u > EXACT)
                || n.as_i64().is_some_and(|i| i.unsigned_abs() > EXACT) =>
        {
            Value::String(n.to_string())
        }
        Value::Array(items) => Value::Array(items.iter().map(exact_integers).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), exact_integers(v))).collect())
        }
        other => other.clone(),
    }
}
