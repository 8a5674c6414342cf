//! The names AS2 headers carry: AS2 ids (`AS2-From`, `AS2-To`) and
//! Message-IDs.
//!
//! RFC 4130 §6.2: an AS2 id is 1–128 printable ASCII characters, compared
//! case-sensitively, and sent as a quoted string when it holds a space or a
//! character a header atom cannot (`"`, `\`, `,`, `;`, …). A Message-ID
//! (RFC 5322 `msg-id`) is what a partner's re-send repeats, so it is kept
//! exactly as sent, without its angle brackets.

use super::error::As2Error;

/// Longest AS2 id (RFC 4130 §6.2).
pub const MAX_AS2_ID: usize = 128;
/// Longest Message-ID edihub keeps (a header line's limit, RFC 5322 §2.1.1).
pub const MAX_MESSAGE_ID: usize = 998;

/// An AS2 id: a station's or a partner's name in `AS2-From` / `AS2-To`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct As2Id(String);

impl As2Id {
    /// `name` as an AS2 id, unquoted: 1–128 printable ASCII characters
    /// (spaces allowed inside, not at either end).
    pub fn new(name: &str) -> Result<Self, String> {
        let printable = name.bytes().all(|b| (0x20..=0x7e).contains(&b));
        if name.is_empty() || name.len() > MAX_AS2_ID || !printable {
            return Err(format!("`{name}` must be 1–{MAX_AS2_ID} printable ASCII characters"));
        }
        if name.starts_with(' ') || name.ends_with(' ') {
            return Err(format!("`{name}` must not start or end with a space"));
        }
        Ok(Self(name.to_string()))
    }

    /// The id in an `AS2-From` / `AS2-To` header value, quoted or not.
    pub fn from_header(value: &str) -> Result<Self, As2Error> {
        let value = value.trim();
        let name = match value.strip_prefix('"') {
            Some(rest) => unquote(rest)
                .ok_or_else(|| As2Error::malformed(format!("the quoted AS2 id {value} is not closed")))?,
            None if value.contains([' ', '"']) => {
                return Err(As2Error::malformed(format!(
                    "the AS2 id `{value}` holds a space or quote and must be a quoted string"
                )));
            }
            None => value.to_string(),
        };
        Self::new(&name).map_err(As2Error::Malformed)
    }

    /// The id as a header value: quoted when it holds a space or a special.
    pub fn header_value(&self) -> String {
        let atom = self.0.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~.".contains(&b));
        if atom {
            return self.0.clone();
        }
        let mut out = String::with_capacity(self.0.len() + 2);
        out.push('"');
        for c in self.0.chars() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
        out
    }

    /// The id itself.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for As2Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The content of a quoted string after its opening quote, up to the
/// closing one; `None` when it is not closed or text follows it.
fn unquote(rest: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '"' => return chars.as_str().trim().is_empty().then_some(out),
            c => out.push(c),
        }
    }
    None
}

/// A Message-ID without its angle brackets, as the sender wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MessageId(String);

impl MessageId {
    /// A `Message-ID` header value (`<id>`; brackets are optional on read).
    pub fn from_header(value: &str) -> Result<Self, As2Error> {
        let value = value.trim();
        let inner = match value.strip_prefix('<') {
            Some(rest) => rest
                .strip_suffix('>')
                .ok_or_else(|| As2Error::malformed(format!("Message-ID `{value}` has no closing `>`")))?,
            None => value,
        };
        Self::new(inner).map_err(As2Error::Malformed)
    }

    /// `id` (no brackets): 1–998 printable ASCII characters without spaces
    /// or angle brackets.
    pub fn new(id: &str) -> Result<Self, String> {
        let ok = !id.is_empty()
            && id.len() <= MAX_MESSAGE_ID
            && id.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'<' && b != b'>');
        if ok {
            Ok(Self(id.to_string()))
        } else {
            Err(format!(
                "Message-ID `{id}` must be 1–{MAX_MESSAGE_ID} printable ASCII characters without spaces or angle brackets"
            ))
        }
    }

    /// A new, unique Message-ID at `domain` (`<uuid>@domain`).
    pub fn generate(domain: &str) -> Self {
        Self(format!("{}@{domain}", uuid::Uuid::new_v4().simple()))
    }

    /// The header value, with angle brackets.
    pub fn header_value(&self) -> String {
        format!("<{}>", self.0)
    }

    /// The id without brackets.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for MessageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as2_ids_are_quoted_when_they_need_it() {
        let plain = As2Id::new("EDIHUB-ACME").unwrap();
        assert_eq!(plain.header_value(), "EDIHUB-ACME");
        let spaced = As2Id::new("Acme Corp \"EU\"").unwrap();
        assert_eq!(spaced.header_value(), r#""Acme Corp \"EU\"""#);
        assert_eq!(As2Id::from_header(&spaced.header_value()).unwrap(), spaced);
        assert_eq!(As2Id::from_header(" EDIHUB-ACME ").unwrap(), plain);
    }

    #[test]
    fn bad_as2_ids_are_refused() {
        assert!(As2Id::new("").is_err());
        assert!(As2Id::new(&"x".repeat(129)).is_err());
        assert!(As2Id::new(&"x".repeat(128)).is_ok());
        assert!(As2Id::new("caf\u{e9}").is_err());
        assert!(As2Id::new("tab\there").is_err());
        assert!(As2Id::new(" lead").is_err());
        assert!(matches!(As2Id::from_header("two words"), Err(As2Error::Malformed(_))));
        assert!(matches!(As2Id::from_header("\"open"), Err(As2Error::Malformed(_))));
        assert!(matches!(As2Id::from_header("\"a\" b"), Err(As2Error::Malformed(_))));
    }

    #[test]
    fn message_ids_lose_their_brackets_only() {
        let id = MessageId::from_header(" <abc.1@partner.example> ").unwrap();
        assert_eq!(id.as_str(), "abc.1@partner.example");
        assert_eq!(id.header_value(), "<abc.1@partner.example>");
        assert_eq!(MessageId::from_header("bare@x").unwrap().as_str(), "bare@x");
        assert!(MessageId::from_header("<open@x").is_err());
        assert!(MessageId::from_header("<>").is_err());
        assert!(MessageId::from_header("<a b@x>").is_err());
        assert!(MessageId::new(&"m".repeat(999)).is_err());
        assert_ne!(MessageId::generate("h"), MessageId::generate("h"));
    }
}
