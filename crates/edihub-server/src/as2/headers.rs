//! The AS2 headers of a request (RFC 4130 §6 and §7.3): who sends to whom
//! (`AS2-From`, `AS2-To`), the `Message-ID` a re-send repeats, and the
//! receipt the sender asks for (`Disposition-Notification-To`,
//! `Disposition-Notification-Options`, `Receipt-Delivery-Option`).
//!
//! `Disposition-Notification-Options` is parsed as RFC 4130 §7.3 writes it:
//! `signed-receipt-protocol=<importance>, pkcs7-signature;
//! signed-receipt-micalg=<importance>, sha-256, sha-1`, where the
//! importance is `required` or `optional`. A required protocol or
//! algorithm edihub lacks is a failure (`unsupported format`,
//! `unsupported MIC-algorithms`); an optional one is ignored.

use super::error::As2Error;
use super::id::{As2Id, MessageId};
use super::mic::MicAlgorithm;
use super::mime::Headers;

/// The AS2 headers of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// `AS2-From`: the sender.
    pub from: As2Id,
    /// `AS2-To`: the receiver (one of our stations, inbound).
    pub to: As2Id,
    /// `Message-ID`.
    pub message_id: MessageId,
    /// `Subject`, when sent.
    pub subject: Option<String>,
    /// The receipt asked for; `None` when no MDN is wanted.
    pub receipt: Option<ReceiptRequest>,
}

impl Envelope {
    /// Reads the AS2 headers; a missing or malformed one is named.
    pub fn read(headers: &Headers) -> Result<Self, As2Error> {
        let required = |name: &str| {
            headers
                .get(name)
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| As2Error::malformed(format!("the {name} header is missing")))
        };
        if let Some(version) = headers.get("AS2-Version") {
            let known =
                version.trim().split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            if !known {
                return Err(As2Error::malformed(format!("AS2-Version `{version}` is not a version number")));
            }
        }
        Ok(Self {
            from: As2Id::from_header(required("AS2-From")?)?,
            to: As2Id::from_header(required("AS2-To")?)?,
            message_id: MessageId::from_header(required("Message-ID")?)?,
            subject: headers.get("Subject").map(str::to_string),
            receipt: ReceiptRequest::read(headers)?,
        })
    }
}

/// The MDN a sender asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptRequest {
    /// `Disposition-Notification-To` (an address; AS2 does not mail to it).
    pub notification_to: String,
    /// `Disposition-Notification-Options`, parsed.
    pub options: DispositionOptions,
    /// `Receipt-Delivery-Option`: the URL of an asynchronous MDN; `None`
    /// for a synchronous one (in the HTTP answer).
    pub async_url: Option<String>,
}

impl ReceiptRequest {
    /// The receipt asked for in `headers`, if any.
    pub fn read(headers: &Headers) -> Result<Option<Self>, As2Error> {
        let Some(to) = headers.get("Disposition-Notification-To") else { return Ok(None) };
        let options = match headers.get("Disposition-Notification-Options") {
            Some(value) => DispositionOptions::parse(value)?,
            None => DispositionOptions::default(),
        };
        let async_url = match headers.get("Receipt-Delivery-Option").map(str::trim) {
            None | Some("") => None,
            Some(url) => {
                let parsed = reqwest::Url::parse(url).map_err(|e| {
                    As2Error::malformed(format!("Receipt-Delivery-Option `{url}` is not a URL: {e}"))
                })?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(As2Error::malformed(format!(
                        "Receipt-Delivery-Option `{url}` is not an http(s) URL"
                    )));
                }
                Some(url.to_string())
            }
        };
        Ok(Some(Self { notification_to: to.to_string(), options, async_url }))
    }
}

/// Whether a sender insists on a receipt option (RFC 4130 §7.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Importance {
    /// The option must be honoured or the MDN says `failed`.
    Required,
    /// The option may be ignored.
    Optional,
}

/// One `name=importance, value, value` parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionValues {
    /// `required` or `optional`.
    pub importance: Importance,
    /// The values, in the sender's order of preference.
    pub values: Vec<String>,
}

/// `Disposition-Notification-Options`, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DispositionOptions {
    /// `signed-receipt-protocol`.
    pub protocol: Option<OptionValues>,
    /// `signed-receipt-micalg`.
    pub micalg: Option<OptionValues>,
}

impl DispositionOptions {
    /// Parses the header value; other parameters are kept out (ignored).
    pub fn parse(value: &str) -> Result<Self, As2Error> {
        let mut options = Self::default();
        for parameter in value.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, rest) = parameter.split_once('=').ok_or_else(|| {
                As2Error::malformed(format!("Disposition-Notification-Options part `{parameter}` has no `=`"))
            })?;
            let mut items = rest.split(',').map(str::trim);
            let importance = match items.next().map(str::to_ascii_lowercase).as_deref() {
                Some("required") => Importance::Required,
                Some("optional") => Importance::Optional,
                _ => {
                    return Err(As2Error::malformed(format!(
                        "Disposition-Notification-Options `{}` must start with `required` or `optional`",
                        name.trim()
                    )));
                }
            };
            let values: Vec<String> = items.filter(|v| !v.is_empty()).map(str::to_string).collect();
            let parsed = Some(OptionValues { importance, values });
            match name.trim().to_ascii_lowercase().as_str() {
                "signed-receipt-protocol" => options.protocol = parsed,
                "signed-receipt-micalg" => options.micalg = parsed,
                _ => {}
            }
        }
        Ok(options)
    }

    /// Whether the MDN is to be signed: a PKCS #7 signature asked for,
    /// or a required protocol edihub does not have (`unsupported format`).
    pub fn wants_signed(&self) -> Result<bool, As2Error> {
        let Some(protocol) = &self.protocol else { return Ok(false) };
        let pkcs7 = protocol.values.iter().any(|v| v.eq_ignore_ascii_case("pkcs7-signature"));
        match (pkcs7, protocol.importance) {
            (true, _) => Ok(true),
            (false, Importance::Optional) => Ok(false),
            (false, Importance::Required) => Err(As2Error::UnsupportedFormat(format!(
                "signed-receipt-protocol requires {}; edihub signs receipts with pkcs7-signature",
                protocol.values.join(", ")
            ))),
        }
    }

    /// The first MIC algorithm asked for that edihub supports; `None` when
    /// none is asked for or only optional unsupported ones are.
    pub fn mic_algorithm(&self) -> Result<Option<MicAlgorithm>, As2Error> {
        let Some(micalg) = &self.micalg else { return Ok(None) };
        match micalg.values.iter().find_map(|v| MicAlgorithm::from_name(v)) {
            Some(found) => Ok(Some(found)),
            None if micalg.importance == Importance::Required => {
                Err(As2Error::UnsupportedMicAlgorithms(format!(
                    "signed-receipt-micalg requires {}; edihub supports sha-256, sha-384, sha-512 and sha-1",
                    micalg.values.join(", ")
                )))
            }
            None => Ok(None),
        }
    }

    /// The header value asking for a signed receipt with `algorithm`.
    pub fn signed_receipt(algorithm: MicAlgorithm) -> String {
        format!(
            "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, {}",
            algorithm.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Headers {
        pairs.iter().map(|(n, v)| (*n, *v)).collect()
    }

    #[test]
    fn the_envelope_reads_quoted_ids_and_the_receipt() {
        let h = headers(&[
            ("AS2-Version", "1.2"),
            ("as2-from", "\"Partner Inc\""),
            ("AS2-To", "EDIHUB"),
            ("Message-ID", "<m1@partner>"),
            ("Subject", "PO"),
            ("Disposition-Notification-To", "edi@partner.example"),
            (
                "Disposition-Notification-Options",
                "signed-receipt-protocol=required, pkcs7-signature; signed-receipt-micalg=required, sha256",
            ),
            ("Receipt-Delivery-Option", "https://partner.example/mdn"),
        ]);
        let e = Envelope::read(&h).unwrap();
        assert_eq!(
            (e.from.as_str(), e.to.as_str(), e.message_id.as_str()),
            ("Partner Inc", "EDIHUB", "m1@partner")
        );
        let receipt = e.receipt.unwrap();
        assert_eq!(receipt.async_url.as_deref(), Some("https://partner.example/mdn"));
        assert!(receipt.options.wants_signed().unwrap());
        assert_eq!(receipt.options.mic_algorithm().unwrap(), Some(MicAlgorithm::Sha256));
    }

    #[test]
    fn missing_and_malformed_headers_are_named() {
        let base = [("AS2-From", "A"), ("AS2-To", "B"), ("Message-ID", "<m@x>")];
        for missing in ["AS2-From", "AS2-To", "Message-ID"] {
            let h: Headers = base.iter().filter(|(n, _)| *n != missing).map(|(n, v)| (*n, *v)).collect();
            let err = Envelope::read(&h).unwrap_err();
            assert_eq!(err, As2Error::Malformed(format!("the {missing} header is missing")));
        }
        let mut h = headers(&base);
        h.push("AS2-Version", "one");
        assert!(Envelope::read(&h).is_err());
        let mut h = headers(&base);
        h.push("Disposition-Notification-To", "x");
        h.push("Receipt-Delivery-Option", "mailto:x@y");
        assert!(matches!(Envelope::read(&h), Err(As2Error::Malformed(t)) if t.contains("http(s)")));
        assert_eq!(Envelope::read(&headers(&base)).unwrap().receipt, None);
    }

    #[test]
    fn options_choose_the_first_supported_algorithm() {
        let o = DispositionOptions::parse(
            "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, md5, SHA-512, sha1",
        )
        .unwrap();
        assert_eq!(o.mic_algorithm().unwrap(), Some(MicAlgorithm::Sha512));
        assert!(o.wants_signed().unwrap());
        let o = DispositionOptions::parse("signed-receipt-micalg=optional, md5").unwrap();
        assert_eq!(o.mic_algorithm().unwrap(), None);
        assert!(!o.wants_signed().unwrap());
    }

    #[test]
    fn required_options_edihub_lacks_are_failures() {
        let o = DispositionOptions::parse("signed-receipt-micalg=required, md5").unwrap();
        let err = o.mic_algorithm().unwrap_err();
        assert_eq!(err.disposition().to_string(), "failed/Failure: unsupported MIC-algorithms");
        let o = DispositionOptions::parse("signed-receipt-protocol=required, pgp-signature").unwrap();
        let err = o.wants_signed().unwrap_err();
        assert_eq!(err.disposition().to_string(), "failed/Failure: unsupported format");
        assert!(DispositionOptions::parse("signed-receipt-micalg=maybe, sha1").is_err());
        assert!(DispositionOptions::parse("signed-receipt-micalg").is_err());
    }
}
