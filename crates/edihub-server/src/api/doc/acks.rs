//! The receive route's acknowledgement bodies in the OpenAPI document.
//!
//! An EDIFACT or X12 sender that asks for an acknowledgement (`Accept:
//! application/EDI-X12` or `application/EDIFACT`, or `?ack=997|999|contrl`)
//! gets it as the body instead of JSON, with the status JSON would have had:
//! 202 and 200 carry the 997/999/TA1 or CONTRL of the interchange, and a
//! refused interchange whose header could be read (400, 422) the
//! acknowledgement of the refusal (docs/edi.md, "Refused interchanges").
//! The document says so: those statuses list both EDI media types, each a
//! text schema with an example, beside JSON. The examples are what
//! edihub-core writes for the interchanges of docs/edi.md (X12 901 from
//! PARTNERA, EDIFACT IC902 from PARTNERB) at 2024-03-01 12:05; the tests
//! below write them again.

use std::collections::BTreeMap;

use utoipa::IntoResponses;
use utoipa::openapi::schema::{Object, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};

/// A 997 accepting an interchange with one 850 (the answer of a 202).
pub const X12_ACCEPTED: &str = "ISA*00*          *00*          *ZZ*ACME           *ZZ*PARTNERA       *240301*1205*U*00401*000000001*0*P*>~GS*FA*ACME*PARTNERA*20240301*1205*1*X*004010~ST*997*0001~AK1*PO*901~AK2*850*0001~AK5*A~AK9*A*1*1*1~SE*6*0001~GE*1*1~IEA*1*000000001~";
/// A CONTRL accepting an interchange with one ORDERS (the answer of a 202).
pub const EDIFACT_ACCEPTED: &str = "UNB+UNOC:3+ACME:14+PARTNERB:14+240301:1205+1'UNH+1+CONTRL:D:3:UN'UCI+IC902+PARTNERB:14+ACME:14+7'UCM+1+ORDERS:D:96A:UN:EAN008+7'UNT+4+1'UNZ+1+1'";
/// A TA1 rejecting a repeated interchange as a duplicate (a 200).
pub const X12_REPEATED: &str = "ISA*00*          *00*          *ZZ*ACME           *ZZ*PARTNERA       *240301*1205*U*00401*000000004*0*P*>~TA1*000000901*240301*1200*R*025~IEA*0*000000004~";
/// A CONTRL rejecting a repeated interchange as a duplicate (a 200).
pub const EDIFACT_REPEATED: &str = "UNB+UNOC:3+ACME:14+PARTNERB:14+240301:1205+4'UNH+1+CONTRL:D:3:UN'UCI+IC902+PARTNERB:14+ACME:14+4+26'UNT+3+1'UNZ+1+4'";
/// A 997 rejecting a transaction set whose SE01 count disagrees (a 422).
const X12_COUNT_REFUSED: &str = "ISA*00*          *00*          *ZZ*ACME           *ZZ*PARTNERA       *240301*1205*U*00401*000000002*0*P*>~GS*FA*ACME*PARTNERA*20240301*1205*2*X*004010~ST*997*0001~AK1*PO*901~AK2*850*0001~AK3*SE*4**8~AK4*1*96*7*5~AK5*R*4~AK9*R*1*1*0~SE*8*0001~GE*1*2~IEA*1*000000002~";
/// A CONTRL rejecting a message whose UNT count disagrees (a 422).
const EDIFACT_COUNT_REFUSED: &str = "UNB+UNOC:3+ACME:14+PARTNERB:14+240301:1205+2'UNH+1+CONTRL:D:3:UN'UCI+IC902+PARTNERB:14+ACME:14+4'UCM+1+ORDERS:D:96A:UN:EAN008+4+29'UCS+5'UCD+29+1'UNT+6+1'UNZ+1+2'";
/// A TA1 alone for an interchange that ends too soon (a 400).
const X12_SYNTAX_REFUSED: &str = "ISA*00*          *00*          *ZZ*ACME           *ZZ*PARTNERA       *240301*1205*U*00401*000000003*0*P*>~TA1*000000901*240301*1200*R*023~IEA*0*000000003~";
/// A CONTRL rejecting an interchange that ends too soon (a 400).
const EDIFACT_SYNTAX_REFUSED: &str = "UNB+UNOC:3+ACME:14+PARTNERB:14+240301:1205+3'UNH+1+CONTRL:D:3:UN'UCI+IC902+PARTNERB:14+ACME:14+4+13'UNT+3+1'UNZ+1+3'";

/// 400 and 422 of the receive route: the problem document, or, when an
/// acknowledgement was asked for and the interchange's header could be
/// read, the acknowledgement of the refusal. The type is never built: it
/// exists for its [`IntoResponses`] implementation.
#[derive(Debug)]
pub struct RefusedWithAck;

impl IntoResponses for RefusedWithAck {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let refusal = |description: &str, x12: &str, edifact: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/problem+json",
                    ContentBuilder::new().schema(Some(Ref::from_schema_name("Problem"))).build(),
                )
                .content("application/EDI-X12", text(x12))
                .content("application/EDIFACT", text(edifact))
                .build()
                .into()
        };
        BTreeMap::from([
            (
                "400".to_string(),
                refusal(
                    "Malformed body, header or query; for an interchange whose header could be read and an \
                     acknowledgement asked for, that acknowledgement (a TA1 or a CONTRL rejecting it)",
                    X12_SYNTAX_REFUSED,
                    EDIFACT_SYNTAX_REFUSED,
                ),
            ),
            (
                "422".to_string(),
                refusal(
                    "Well-formed but unusable (for an interchange: counts or references that disagree, control \
                     numbers repeated within it, or its control number reused for other content); with an \
                     acknowledgement asked for, that acknowledgement (a 997/999, TA1 or CONTRL rejecting it)",
                    X12_COUNT_REFUSED,
                    EDIFACT_COUNT_REFUSED,
                ),
            ),
        ])
    }
}

/// An EDI body: text, with an example.
fn text(example: &str) -> utoipa::openapi::Content {
    ContentBuilder::new().schema(Some(Object::with_type(Type::String))).example(Some(example.into())).build()
}

#[cfg(test)]
mod tests {
    use edihub_core::{AckKind, AckTime, acknowledge, acknowledge_refusal, parse_body, refusal};

    const X12: &str = "ISA*00*          *00*          *ZZ*PARTNERA       *ZZ*ACME           *240301*1200*U*00401*\
        000000901*0*P*>~GS*PO*PARTNERA*ACME*20240301*1200*901*X*004010~ST*850*0001~BEG*00*NE*DOC-PO-901**20240301~\
        REF*CR*CUST-17~SE*4*0001~GE*1*901~IEA*1*000000901~";
    const EDIFACT: &str = "UNB+UNOC:3+PARTNERB:14+ACME:14+240301:1200+IC902'UNH+1+ORDERS:D:96A:UN:EAN008'\
        BGM+220+DOC-PO-902+9'RFF+ON:DOC-PO-902'FTX+AAI+++Size 10?+2'UNT+5+1'UNZ+1+IC902'";
    const AT: AckTime = AckTime { year: 2024, month: 3, day: 1, hour: 12, minute: 5 };

    fn text(bytes: Option<Vec<u8>>) -> String {
        String::from_utf8(bytes.expect("an acknowledgement")).expect("ASCII")
    }

    fn answer(body: &str, kind: AckKind, repeated: bool, number: i64) -> String {
        let parsed = parse_body(body.as_bytes(), None).expect("the docs' interchange is read");
        text(acknowledge(parsed.envelope.as_ref().expect("an envelope"), kind, repeated, number, AT))
    }

    fn refused(body: &str, kind: AckKind, number: i64) -> String {
        assert!(parse_body(body.as_bytes(), None).is_err(), "refused: {body}");
        text(acknowledge_refusal(
            &refusal(body.as_bytes(), None).expect("a readable header"),
            kind,
            number,
            AT,
        ))
    }

    #[test]
    fn the_examples_are_what_the_core_writes() {
        let (x12, edifact) = (AckKind::X12Functional, AckKind::Contrl);
        assert_eq!(answer(X12, x12, false, 1), super::X12_ACCEPTED);
        assert_eq!(answer(EDIFACT, edifact, false, 1), super::EDIFACT_ACCEPTED);
        assert_eq!(answer(X12, x12, true, 4), super::X12_REPEATED);
        assert_eq!(answer(EDIFACT, edifact, true, 4), super::EDIFACT_REPEATED);
        assert_eq!(refused(&X12.replace("SE*4*", "SE*5*"), x12, 2), super::X12_COUNT_REFUSED);
        assert_eq!(refused(&EDIFACT.replace("UNT+5+", "UNT+4+"), edifact, 2), super::EDIFACT_COUNT_REFUSED);
        assert_eq!(refused(X12.trim_end_matches('~'), x12, 3), super::X12_SYNTAX_REFUSED);
        assert_eq!(refused(EDIFACT.trim_end_matches('\''), edifact, 3), super::EDIFACT_SYNTAX_REFUSED);
    }
}
