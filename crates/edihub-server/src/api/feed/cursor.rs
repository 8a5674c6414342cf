//! The feed cursor a consumer keeps: its position sealed, so it says
//! nothing about the numbers behind it.
//!
//! A position is global to the database (a PostgreSQL transaction id, an
//! SQLite row key), so a plain one would tell a consumer how fast every
//! tenant writes. A cursor is therefore the position encrypted and
//! authenticated under the database's cursor key
//! ([`edihub_store::Store::feed_cursor_key`]) with AES-SIV (RFC 5297,
//! RustCrypto's `aes-siv`), the tenant and environment as associated data.
//! SIV is deterministic: the same position always gives the same cursor (an
//! empty page answers the cursor it was given), a changed or made-up one is
//! refused, and another environment's cursor does not open.
//!
//! Cursors handed out before cursors were sealed (the bare position,
//! base64url, 32 characters) are still read: consumers keep them, and they
//! reveal nothing the consumer did not already hold. Answers always carry
//! sealed ones.

use aes_siv::KeyInit;
use aes_siv::siv::Aes128Siv;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use edihub_store::{FeedPosition, Scope, Store};
use tokio::sync::OnceCell;

use crate::error::ApiError;

/// Bytes of a position: the major part, then the message id.
const POSITION_BYTES: usize = 24;
/// Bytes of the synthetic IV that starts a sealed cursor (AES-SIV's tag).
const IV_BYTES: usize = 16;
/// Bytes of a sealed cursor.
const SEALED_BYTES: usize = IV_BYTES + POSITION_BYTES;

/// The cursor key of the database, read on first use.
#[derive(Debug, Default)]
pub struct Cursors {
    key: OnceCell<CursorKey>,
}

impl Cursors {
    /// The key, read from `store` the first time.
    pub async fn key(&self, store: &dyn Store) -> Result<&CursorKey, ApiError> {
        self.key
            .get_or_try_init(|| async {
                let secret = store.feed_cursor_key().await?;
                let secret: [u8; 32] = secret
                    .as_slice()
                    .try_into()
                    .map_err(|_| ApiError::internal("the feed cursor key is not 32 bytes"))?;
                Ok(CursorKey::new(&secret))
            })
            .await
    }
}

/// The database's cursor key: both halves of an AES-128-SIV key.
#[derive(Clone)]
pub struct CursorKey {
    key: [u8; 32],
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey")
    }
}

/// Why a cursor was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorError {
    /// Not a cursor this API hands out.
    Malformed,
    /// Sealed, but not by this database for this environment (or changed).
    Foreign,
}

impl CursorKey {
    /// The key `secret` (32 bytes: AES-SIV's MAC and cipher keys).
    pub fn new(secret: &[u8; 32]) -> Self {
        CursorKey { key: *secret }
    }

    fn cipher(&self) -> Aes128Siv {
        Aes128Siv::new(&self.key.into())
    }

    /// The associated data: tenant and environment as separate headers,
    /// so ("ab", "c") and ("a", "bc") differ.
    fn headers(scope: &Scope) -> [&[u8]; 2] {
        [scope.tenant_id.as_bytes(), scope.environment_id.as_bytes()]
    }

    /// The cursor of `position` in `scope`'s feed.
    pub fn seal(&self, scope: &Scope, position: FeedPosition) -> String {
        // Encrypting a 24-byte buffer under a 32-byte key cannot fail.
        let sealed = self.cipher().encrypt(Self::headers(scope), &plain(position)).expect("AES-SIV seal");
        URL_SAFE_NO_PAD.encode(sealed)
    }

    /// The position of a cursor this API handed out for `scope`: a sealed
    /// one, or a bare position from before cursors were sealed.
    pub fn open(&self, scope: &Scope, text: &str) -> Result<FeedPosition, CursorError> {
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| CursorError::Malformed)?;
        if let Ok(bare) = <[u8; POSITION_BYTES]>::try_from(bytes.as_slice()) {
            return position(&bare).ok_or(CursorError::Malformed);
        }
        if bytes.len() != SEALED_BYTES {
            return Err(CursorError::Malformed);
        }
        let data = self.cipher().decrypt(Self::headers(scope), &bytes).map_err(|_| CursorError::Foreign)?;
        let data: [u8; POSITION_BYTES] = data.try_into().map_err(|_| CursorError::Foreign)?;
        position(&data).ok_or(CursorError::Foreign)
    }
}

fn plain(position: FeedPosition) -> [u8; POSITION_BYTES] {
    let mut bytes = [0u8; POSITION_BYTES];
    bytes[..8].copy_from_slice(&position.major.to_be_bytes());
    bytes[8..].copy_from_slice(position.id.as_bytes());
    bytes
}

fn position(bytes: &[u8; POSITION_BYTES]) -> Option<FeedPosition> {
    let major = i64::from_be_bytes(bytes[..8].try_into().ok()?);
    let id = uuid::Uuid::from_slice(&bytes[8..]).ok()?;
    (major >= 0).then_some(FeedPosition { major, id })
}

/// A cursor as edihub wrote it before cursors were sealed: the bare
/// position, base64url (tests build such cursors to check they are read).
pub fn bare_cursor(position: FeedPosition) -> String {
    URL_SAFE_NO_PAD.encode(plain(position))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CursorKey {
        CursorKey::new(&[7u8; 32])
    }

    #[test]
    fn a_sealed_cursor_opens_in_its_environment_only() {
        let (acme, globex) = (Scope::new("acme", "prod"), Scope::new("globex", "prod"));
        let p = FeedPosition { major: 0x1234_5678_9abc, id: uuid::Uuid::now_v7() };
        let sealed = key().seal(&acme, p);
        assert_eq!(key().open(&acme, &sealed), Ok(p));
        assert_eq!(key().seal(&acme, p), sealed, "the same position, the same cursor");
        assert_eq!(key().open(&globex, &sealed), Err(CursorError::Foreign), "another environment");
        assert_eq!(key().open(&Scope::new("acm", "eprod"), &sealed), Err(CursorError::Foreign));
        assert_eq!(CursorKey::new(&[8u8; 32]).open(&acme, &sealed), Err(CursorError::Foreign), "another key");
        assert_eq!(key().open(&acme, &key().seal(&acme, FeedPosition::START)), Ok(FeedPosition::START));
    }

    #[test]
    fn a_sealed_cursor_hides_the_position() {
        let scope = Scope::new("acme", "prod");
        let id = uuid::Uuid::now_v7();
        let (a, b) = (FeedPosition { major: 1000, id }, FeedPosition { major: 1001, id });
        let (ca, cb) = (key().seal(&scope, a), key().seal(&scope, b));
        let (ra, rb) = (URL_SAFE_NO_PAD.decode(&ca).unwrap(), URL_SAFE_NO_PAD.decode(&cb).unwrap());
        assert!(!ra.windows(8).any(|w| w == 1000i64.to_be_bytes()), "the number is not in the cursor");
        assert!(!ra.windows(16).any(|w| w == id.as_bytes()), "nor the message id");
        let differing = ra.iter().zip(&rb).filter(|(x, y)| x != y).count();
        assert!(differing > SEALED_BYTES / 2, "neighbouring positions look unrelated: {differing}");
    }

    #[test]
    fn changed_and_made_up_cursors_are_refused() {
        let scope = Scope::new("acme", "prod");
        let sealed = key().seal(&scope, FeedPosition { major: 42, id: uuid::Uuid::now_v7() });
        let mut flipped = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
        flipped[IV_BYTES + 7] ^= 1;
        assert_eq!(key().open(&scope, &URL_SAFE_NO_PAD.encode(flipped)), Err(CursorError::Foreign));
        for bad in ["", "abc", "!!!!", &sealed[1..], &format!("{sealed}A"), &sealed[..sealed.len() - 2]] {
            assert!(key().open(&scope, bad).is_err(), "{bad:?}");
        }
        let negative = URL_SAFE_NO_PAD.encode([0xffu8; POSITION_BYTES]);
        assert_eq!(key().open(&scope, &negative), Err(CursorError::Malformed));
    }

    #[test]
    fn a_cursor_from_before_sealing_is_still_read() {
        let p = FeedPosition { major: 77, id: uuid::Uuid::now_v7() };
        let bare = bare_cursor(p);
        assert_eq!(bare.len(), 32);
        assert_eq!(key().open(&Scope::new("acme", "prod"), &bare), Ok(p));
    }
}
