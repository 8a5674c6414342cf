//! Compression of AS2 content (RFC 5402, CMS CompressedData per RFC 3274):
//! a zlib stream inside a CompressedData structure.
//!
//! Debian's OpenSSL is built without zlib, so its CMS cannot compress: the
//! structure is RustCrypto's `cms` types and the zlib stream `flate2`'s.
//! Inflating is bounded: a CompressedData whose content inflates past the
//! caller's limit is refused as soon as the limit is passed, so a small
//! "decompression bomb" costs at most the limit in memory and time.

use std::io::{Read, Write};

use ::cms::cert::x509::spki::AlgorithmIdentifierOwned;
use ::cms::compressed_data::CompressedData;
use ::cms::content_info::{CmsVersion, ContentInfo};
use ::cms::signed_data::EncapsulatedContentInfo;
use der::asn1::{Any, ObjectIdentifier, OctetString};
use der::{Decode, Encode};
use flate2::Compression;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;

use super::cms::{ID_DATA, to_der};
use super::error::{AlgorithmUse, As2Error};

/// id-ct-compressedData (RFC 3274 §1.1).
const ID_COMPRESSED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.9");
/// id-alg-zlibCompress (RFC 3274 §2), the only algorithm defined.
const ID_ZLIB: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.3.8");

/// `content` as DER CompressedData (zlib).
pub fn compress(content: &[u8]) -> Result<Vec<u8>, As2Error> {
    let failed = |e: &dyn std::fmt::Display| As2Error::Processing(format!("compressing: {e}"));
    let mut encoder = ZlibEncoder::new(Vec::with_capacity(content.len() / 4 + 64), Compression::default());
    encoder.write_all(content).map_err(|e| failed(&e))?;
    let zlib = encoder.finish().map_err(|e| failed(&e))?;
    let build = || -> der::Result<Vec<u8>> {
        let compressed = CompressedData {
            version: CmsVersion::V0,
            compression_alg: AlgorithmIdentifierOwned { oid: ID_ZLIB, parameters: None },
            encap_content_info: EncapsulatedContentInfo {
                econtent_type: ID_DATA,
                econtent: Some(Any::encode_from(&OctetString::new(zlib)?)?),
            },
        };
        ContentInfo { content_type: ID_COMPRESSED_DATA, content: Any::encode_from(&compressed)? }.to_der()
    };
    build().map_err(|e| failed(&e))
}

/// The content of CompressedData `input` (BER or DER), refused once it
/// inflates past `max_bytes`.
pub fn decompress(input: &[u8], max_bytes: usize) -> Result<Vec<u8>, As2Error> {
    let der = to_der(input)
        .map_err(|e| As2Error::Decompression(format!("the pkcs7-mime body is not CMS ({e})")))?;
    let unreadable =
        |e: der::Error| As2Error::Decompression(format!("the CompressedData does not read: {e}"));
    let info = ContentInfo::from_der(&der).map_err(unreadable)?;
    if info.content_type != ID_COMPRESSED_DATA {
        return Err(As2Error::Decompression(format!(
            "the pkcs7-mime body is {} content, not CompressedData",
            info.content_type
        )));
    }
    let compressed: CompressedData = info.content.decode_as().map_err(unreadable)?;
    if compressed.compression_alg.oid != ID_ZLIB {
        return Err(As2Error::UnsupportedAlgorithm {
            used: AlgorithmUse::Compression,
            name: compressed.compression_alg.oid.to_string(),
        });
    }
    let zlib: OctetString = compressed
        .encap_content_info
        .econtent
        .ok_or_else(|| As2Error::Decompression("the CompressedData has no content".into()))?
        .decode_as()
        .map_err(unreadable)?;
    inflate(zlib.as_bytes(), max_bytes)
}

/// A zlib stream inflated, at most `max_bytes` of it.
fn inflate(zlib: &[u8], max_bytes: usize) -> Result<Vec<u8>, As2Error> {
    let mut out = Vec::with_capacity(zlib.len().saturating_mul(4).min(max_bytes));
    let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX).saturating_add(1);
    ZlibDecoder::new(zlib)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| As2Error::Decompression(format!("the zlib stream is broken: {e}")))?;
    if out.len() > max_bytes {
        return Err(As2Error::Decompression(format!(
            "the content inflates to more than {max_bytes} bytes, the limit"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_data_round_trips() {
        let content = b"Content-Type: application/edi-x12\r\n\r\nISA*00*~".repeat(50);
        let der = compress(&content).unwrap();
        assert!(der.len() < content.len());
        assert_eq!(decompress(&der, content.len()).unwrap(), content);
    }

    #[test]
    fn a_decompression_bomb_is_refused_at_the_limit() {
        // 64 MiB of zeros compress to about 64 KiB.
        let der = compress(&vec![0u8; 64 * 1024 * 1024]).unwrap();
        assert!(der.len() < 100 * 1024, "{}", der.len());
        let err = decompress(&der, 1024 * 1024).unwrap_err();
        assert_eq!(
            err,
            As2Error::Decompression("the content inflates to more than 1048576 bytes, the limit".into())
        );
        assert_eq!(err.disposition().to_string(), "processed/Error: decompression-failed");
    }

    #[test]
    fn other_content_and_broken_streams_are_refused() {
        assert!(matches!(decompress(b"not der", 10), Err(As2Error::Decompression(_))));
        let mut der = compress(b"hello world, hello world").unwrap();
        let n = der.len();
        der[n - 3] ^= 0xff;
        assert!(matches!(decompress(&der, 100), Err(As2Error::Decompression(t)) if t.contains("zlib")));
    }
}
