//! The MIME entities AS2 is made of (RFC 2045, 2046, 1847): a header
//! section, a blank line, a body; multipart bodies split at their boundary.
//!
//! AS2 computes signatures and MICs over entities byte for byte, so reading
//! never rewrites what it reads: an [`Entity`] keeps the exact bytes it came
//! from (`raw`), and a multipart part is the exact span between its
//! delimiters (RFC 2046 §5.1.1: the line break before a delimiter belongs
//! to the delimiter). Writing produces the canonical form: CRLF line ends,
//! one `Name: value` line per header.
//!
//! Reading is bounded: at most [`MAX_HEADER_BYTES`] of headers and
//! [`MAX_HEADERS`] fields per entity, [`MAX_PARTS`] parts per multipart, a
//! boundary of 1–70 characters; anything else is refused as malformed,
//! naming what is wrong.

use std::borrow::Cow;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_PAD_INDIFFERENT};

use super::error::As2Error;

/// Most bytes of one entity's header section.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Most header fields of one entity.
pub const MAX_HEADERS: usize = 64;
/// Most parts of one multipart body (AS2 uses two or three).
pub const MAX_PARTS: usize = 8;
/// Longest boundary (RFC 2046 §5.1.1).
pub const MAX_BOUNDARY: usize = 70;

/// Header fields in their order, names as written, values unfolded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(Vec<(String, String)>);

impl Headers {
    /// No fields.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a field at the end.
    pub fn push(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.0.push((name.into(), value.into()));
    }

    /// The first value of `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every field, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Writes `Name: value` CRLF per field.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        for (name, value) in &self.0 {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
}

impl<N: Into<String>, V: Into<String>> FromIterator<(N, V)> for Headers {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        Self(iter.into_iter().map(|(n, v)| (n.into(), v.into())).collect())
    }
}

/// One MIME entity, borrowed from the bytes it was read from.
#[derive(Debug, Clone)]
pub struct Entity<'a> {
    /// Its header fields.
    pub headers: Headers,
    /// The body as written (before any Content-Transfer-Encoding is undone).
    pub body: &'a [u8],
    /// The whole entity, headers and body, exactly as read.
    pub raw: &'a [u8],
}

impl<'a> Entity<'a> {
    /// Its Content-Type; `text/plain` when absent (RFC 2045 §5.2).
    pub fn content_type(&self) -> Result<ContentType, As2Error> {
        match self.headers.get("Content-Type") {
            Some(value) => ContentType::parse(value),
            None => ContentType::parse("text/plain"),
        }
    }

    /// The body with its Content-Transfer-Encoding undone.
    pub fn decoded_body(&self) -> Result<Cow<'a, [u8]>, As2Error> {
        decode_transfer(self.headers.get("Content-Transfer-Encoding"), self.body)
    }
}

/// Reads `raw` as one entity: header fields up to the first blank line,
/// the rest is the body.
pub fn parse_entity(raw: &[u8]) -> Result<Entity<'_>, As2Error> {
    let (headers, body_start) = parse_header_section(raw)?;
    Ok(Entity { headers, body: &raw[body_start..], raw })
}

/// The header section at the start of `bytes` and where the body starts.
fn parse_header_section(bytes: &[u8]) -> Result<(Headers, usize), As2Error> {
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut at = 0;
    loop {
        if at > MAX_HEADER_BYTES {
            return Err(As2Error::malformed(format!(
                "the MIME header section is longer than {MAX_HEADER_BYTES} bytes"
            )));
        }
        let Some(nl) = bytes[at..].iter().position(|&b| b == b'\n').map(|i| at + i) else {
            return Err(As2Error::malformed("a MIME entity has no blank line after its headers"));
        };
        let line = bytes[at..nl].strip_suffix(b"\r").unwrap_or(&bytes[at..nl]);
        let next = nl + 1;
        if line.is_empty() {
            let fields = fields.into_iter().map(|(n, v)| (n, v.trim().to_string())).collect();
            return Ok((Headers(fields), next));
        }
        let line = std::str::from_utf8(line)
            .map_err(|_| As2Error::malformed("a MIME header line is not ASCII/UTF-8 text"))?;
        if line.starts_with([' ', '\t']) {
            let Some((_, value)) = fields.last_mut() else {
                return Err(As2Error::malformed("a MIME header section starts with a continuation line"));
            };
            value.push_str(line);
        } else {
            let (name, value) = line.split_once(':').ok_or_else(|| {
                As2Error::malformed(format!("MIME header line `{}` has no colon", clip(line)))
            })?;
            let name_ok = !name.is_empty() && name.bytes().all(|b| (0x21..=0x7e).contains(&b));
            if !name_ok {
                return Err(As2Error::malformed(format!("MIME header name `{}` is not a token", clip(name))));
            }
            if fields.len() == MAX_HEADERS {
                return Err(As2Error::malformed(format!(
                    "a MIME entity has more than {MAX_HEADERS} header fields"
                )));
            }
            fields.push((name.to_string(), value.to_string()));
        }
        at = next;
    }
}

/// Header-style fields filling a whole body (the content of
/// `message/disposition-notification`, RFC 3798 §3): `Name: value` lines,
/// folded or not, in groups separated by blank lines, read as one list.
pub fn parse_fields(body: &[u8]) -> Result<Headers, As2Error> {
    if body.len() > MAX_HEADER_BYTES {
        return Err(As2Error::malformed(format!("a field block is longer than {MAX_HEADER_BYTES} bytes")));
    }
    let text = std::str::from_utf8(body)
        .map_err(|_| As2Error::malformed("a field block is not ASCII/UTF-8 text"))?;
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)) {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with([' ', '\t'])
            && let Some((_, value)) = fields.last_mut()
        {
            value.push_str(line);
            continue;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| As2Error::malformed(format!("field line `{}` has no colon", clip(line))))?;
        if fields.len() == MAX_HEADERS {
            return Err(As2Error::malformed(format!("a field block has more than {MAX_HEADERS} fields")));
        }
        fields.push((name.trim().to_string(), value.to_string()));
    }
    Ok(Headers(fields.into_iter().map(|(n, v)| (n, v.trim().to_string())).collect()))
}

/// At most 60 characters of `text`, for error messages.
fn clip(text: &str) -> String {
    text.chars().take(60).collect()
}

/// A Content-Type value: `type/subtype` (lower case) and its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentType {
    mime: String,
    params: Vec<(String, String)>,
}

impl ContentType {
    /// Parses `type/subtype; name=value; name="quoted value"`.
    pub fn parse(value: &str) -> Result<Self, As2Error> {
        let (mime, mut rest) = value.split_once(';').unwrap_or((value, ""));
        let mime = mime.trim().to_ascii_lowercase();
        let valid = mime.split_once('/').is_some_and(|(t, s)| is_token(t) && is_token(s));
        if !valid {
            return Err(As2Error::malformed(format!("Content-Type `{}` is not type/subtype", clip(value))));
        }
        let mut params = Vec::new();
        loop {
            rest = rest.trim_start_matches([' ', '\t', ';']);
            if rest.is_empty() {
                break;
            }
            let (name, after) = rest.split_once('=').ok_or_else(|| {
                As2Error::malformed(format!("Content-Type parameter `{}` has no value", clip(rest)))
            })?;
            let name = name.trim().to_ascii_lowercase();
            let after = after.trim_start();
            let (value, tail) = match after.strip_prefix('"') {
                Some(quoted) => read_quoted(quoted).ok_or_else(|| {
                    As2Error::malformed(format!("Content-Type parameter `{name}` has an unclosed quote"))
                })?,
                None => {
                    let end = after.find(';').unwrap_or(after.len());
                    (after[..end].trim().to_string(), &after[end..])
                }
            };
            if params.len() == MAX_HEADERS {
                return Err(As2Error::malformed("a Content-Type has too many parameters"));
            }
            params.push((name, value));
            rest = tail;
        }
        Ok(Self { mime, params })
    }

    /// `type/subtype`, lower case.
    pub fn mime(&self) -> &str {
        &self.mime
    }

    /// Whether the type is `mime` (lower case).
    pub fn is(&self, mime: &str) -> bool {
        self.mime == mime
    }

    /// The value of parameter `name` (lower-case name).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

fn is_token(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?=".contains(&b))
}

/// A quoted string's content after its opening quote, and what follows it.
fn read_quoted(text: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match (escaped, c) {
            (true, c) => {
                out.push(c);
                escaped = false;
            }
            (false, '\\') => escaped = true,
            (false, '"') => return Some((out, &text[i + 1..])),
            (false, c) => out.push(c),
        }
    }
    None
}

/// `body` with the Content-Transfer-Encoding `encoding` undone: identity
/// for `binary`, `8bit`, `7bit` (or none), base64 decoded for `base64`.
pub fn decode_transfer<'a>(encoding: Option<&str>, body: &'a [u8]) -> Result<Cow<'a, [u8]>, As2Error> {
    let encoding = encoding.map(|e| e.trim().to_ascii_lowercase());
    match encoding.as_deref() {
        None | Some("binary" | "8bit" | "7bit") => Ok(Cow::Borrowed(body)),
        Some("base64") => {
            let compact: Vec<u8> = body.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
            STANDARD_PAD_INDIFFERENT
                .decode(&compact)
                .map(Cow::Owned)
                .map_err(|e| As2Error::malformed(format!("a base64 body does not decode: {e}")))
        }
        Some(other) => Err(As2Error::malformed(format!(
            "Content-Transfer-Encoding `{}` is not supported (binary, 8bit, 7bit or base64)",
            clip(other)
        ))),
    }
}

/// The parts of a multipart `body` delimited by `boundary`, each the exact
/// bytes between its delimiter lines.
pub fn split_multipart<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<&'a [u8]>, As2Error> {
    if boundary.is_empty() || boundary.len() > MAX_BOUNDARY {
        return Err(As2Error::malformed(format!("a multipart boundary must be 1–{MAX_BOUNDARY} characters")));
    }
    let delimiter = format!("--{boundary}").into_bytes();
    let mut parts = Vec::new();
    let mut open: Option<usize> = None;
    let mut from = 0;
    while let Some(found) = find(&body[from..], &delimiter).map(|i| from + i) {
        from = found + 1;
        let Some(line) = delimiter_line(body, found, delimiter.len()) else { continue };
        if let Some(start) = open {
            if parts.len() == MAX_PARTS {
                return Err(As2Error::malformed(format!("a multipart body has more than {MAX_PARTS} parts")));
            }
            parts.push(&body[start..line.before]);
        }
        if line.close {
            if parts.is_empty() {
                return Err(As2Error::malformed("a multipart body has no parts"));
            }
            return Ok(parts);
        }
        open = Some(line.after);
        from = line.after;
    }
    Err(As2Error::malformed(format!("the multipart body has no closing boundary `--{}--`", clip(boundary))))
}

/// A delimiter line found in a multipart body.
struct DelimiterLine {
    /// Where the line break before it starts (the end of the previous part).
    before: usize,
    /// Where the next part starts.
    after: usize,
    /// Whether it is the close delimiter (`--boundary--`).
    close: bool,
}

/// The delimiter line at `at`, if the match there is one: at the start of a
/// line, followed by `--` or only transport padding up to the line end.
fn delimiter_line(body: &[u8], at: usize, len: usize) -> Option<DelimiterLine> {
    if at > 0 && body[at - 1] != b'\n' {
        return None;
    }
    let mut end = at + len;
    let close = body[end..].starts_with(b"--");
    if close {
        end += 2;
    }
    while end < body.len() && (body[end] == b' ' || body[end] == b'\t') {
        end += 1;
    }
    let after = if end == body.len() && close {
        end
    } else if body[end..].starts_with(b"\r\n") {
        end + 2
    } else if body[end..].starts_with(b"\n") {
        end + 1
    } else {
        return None;
    };
    let before = if at >= 2 && &body[at - 2..at] == b"\r\n" { at - 2 } else { at.saturating_sub(1) };
    Some(DelimiterLine { before: before.min(at), after, close })
}

/// The first position of `needle` in `haystack` at the start of a line (a
/// delimiter is only ever there): only the line starts are compared, so a
/// large part costs one scan for line breaks.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        if haystack[at..].starts_with(needle) {
            return Some(at);
        }
        at += haystack[at..].iter().position(|&b| b == b'\n')? + 1;
    }
}

/// `bytes` with every bare LF made CRLF (the canonical form of text, RFC
/// 5751 §3.1.1); borrowed when there is none.
pub fn canonical_crlf(bytes: &[u8]) -> Cow<'_, [u8]> {
    let bare = bytes.iter().enumerate().any(|(i, &b)| b == b'\n' && (i == 0 || bytes[i - 1] != b'\r'));
    if !bare {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 32);
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' && (i == 0 || bytes[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    Cow::Owned(out)
}

/// A fresh boundary that no content contains by chance.
pub fn new_boundary() -> String {
    format!("----=_edihub_{}", uuid::Uuid::new_v4().simple())
}

/// An entity: `headers`, a blank line, `body`.
pub fn write_entity(headers: &Headers, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 256);
    headers.write_to(&mut out);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

/// A multipart body of `parts` (each a whole entity) between `boundary` lines.
pub fn write_multipart(boundary: &str, parts: &[&[u8]]) -> Vec<u8> {
    let size = parts.iter().map(|p| p.len() + boundary.len() + 8).sum::<usize>() + boundary.len() + 8;
    let mut out = Vec::with_capacity(size);
    for part in parts {
        out.extend_from_slice(b"--");
        out.extend_from_slice(boundary.as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(part);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"--");
    out.extend_from_slice(boundary.as_bytes());
    out.extend_from_slice(b"--\r\n");
    out
}

/// `bytes` base64-encoded in lines of 76 characters, each ending CRLF.
pub fn base64_lines(bytes: &[u8]) -> Vec<u8> {
    let text = STANDARD.encode(bytes);
    let mut out = Vec::with_capacity(text.len() + text.len() / 38 + 2);
    for line in text.as_bytes().chunks(76) {
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out
}

#[cfg(test)]
#[path = "mime_tests.rs"]
mod tests;
