//! EDI files as partners send them: different content is never dropped as
//! a duplicate, and envelopes are read the way the standards define them.
//!
//! - An X12 set without key fields is identified by ISA13 + GS06 + ST02, so
//!   a set re-sent under a new ISA13 with other content is stored; claims
//!   of the scheme without ISA13 (held at the upgrade) block nothing.
//! - Control numbers repeated where they must be unique (ST02 in a group,
//!   GS06 in an interchange, UNH 0062 and UNG 0048 in an interchange) refuse
//!   the interchange (422, AK5 `23`, AK905 `19`, CONTRL `26`).
//! - An interchange control number reused for other content is refused
//!   (422, TA1 `025`, UCI `26`, `interchange.mismatch`), never answered
//!   with the first interchange's result.
//! - White space after IEA/UNZ is ignored; an ISA that is not 106
//!   characters and a UNB without syntax version are refused (400, TA1 or
//!   CONTRL naming the field).
//! - The 999 keeps the received repetition separator; a 997's GS08 is the
//!   base version; AK902 is GE01 as sent; a 415 names the EDI types.
//!
//! The files are synthetic, shaped like partners' 271, 834, 850 and COARRI
//! interchanges. The acknowledgements are checked by pyx12 (which maps the
//! 997 of 004010 and the 999) or pydifact, and every refusal by the count of
//! stored messages.

use crate::edi_acks::{ack_of, post, pydifact_read, pyx12_valid};
use crate::support::*;
use edihub_store::{IngestOutcome, IngestRequest, NewMessage, Scope};
use serde_json::json;
use sha2::{Digest, Sha256};

backend_tests!(
    a_set_resent_under_a_new_isa13_with_other_content_is_stored,
    claims_without_isa13_block_no_set,
    repeated_control_numbers_refuse_the_interchange,
    a_reused_interchange_number_with_other_content_is_refused,
    white_space_after_the_trailer_is_accepted,
    an_isa_that_is_not_106_characters_is_refused,
    acknowledgement_envelopes_follow_the_standards,
    a_unb_without_syntax_version_is_refused,
    unsupported_content_types_name_the_edi_types,
);

const X12: &str = "application/EDI-X12";
const EDIFACT: &str = "application/EDIFACT";

/// An ISA of 106 characters from PAYERA to CLINICB.
fn isa(isa11: char, isa12: &str, isa13: &str) -> String {
    format!(
        "ISA*00*          *00*          *ZZ*{:<15}*ZZ*{:<15}*240301*1200*{isa11}*{isa12}*{isa13}*0*P*:~\n",
        "PAYERA", "CLINICB"
    )
}

/// ST…SE around `body` (segments without terminators), SE01 counted.
fn set(st01: &str, st02: &str, convention: &str, body: &[String]) -> String {
    let st03 = if convention.is_empty() { String::new() } else { format!("*{convention}") };
    let segments: String = body.iter().map(|s| format!("{s}~\n")).collect();
    format!("ST*{st01}*{st02}{st03}~\n{segments}SE*{}*{st02}~\n", body.len() + 2)
}

/// GS…GE around `sets`, GE01 counted.
fn group(functional_id: &str, gs06: &str, gs08: &str, sets: &[String]) -> String {
    format!(
        "GS*{functional_id}*PAYERA*CLINICB*20240301*1200*{gs06}*X*{gs08}~\n{}GE*{}*{gs06}~\n",
        sets.concat(),
        sets.len()
    )
}

/// A 005010 interchange of `groups`, IEA counted.
fn interchange(isa13: &str, groups: &[String]) -> String {
    format!("{}{}IEA*{}*{isa13}~\n", isa('^', "00501", isa13), groups.concat(), groups.len())
}

/// A 271 eligibility response for `subscriber`, traced as `trace` (BHT03).
fn eligibility(trace: &str, subscriber: &str) -> Vec<String> {
    [
        format!("BHT*0022*11*{trace}*20240301*1200"),
        "HL*1**20*1".into(),
        "NM1*PR*2*PAYER A*****PI*12345".into(),
        "HL*2*1*21*1".into(),
        "NM1*1P*2*CLINIC B*****XX*1234567893".into(),
        "HL*3*2*22*0".into(),
        format!("NM1*IL*1*{subscriber}*JANE****MI*{subscriber}-ID"),
        "EB*1**30".into(),
    ]
    .to_vec()
}

/// One 271 (GS06 1, ST02 0001) in interchange `isa13`.
fn x12_271(isa13: &str, trace: &str, subscriber: &str) -> String {
    let sets = [set("271", "0001", "005010X279A1", &eligibility(trace, subscriber))];
    interchange(isa13, &[group("HB", "1", "005010X279A1", &sets)])
}

/// An 834 enrollment of `member`.
fn enrollment(member: &str) -> Vec<String> {
    vec![
        format!("BGN*00*ENR-{member}*20240301*1200****2"),
        "INS*Y*18*021*XN*A***FT".into(),
        format!("REF*0F*{member}"),
        format!("NM1*IL*1*{member}*SAM"),
    ]
}

/// An EDIFACT interchange from TERMINALA to CARRIERB with `body` between
/// UNB and UNZ (whose count is `units`).
fn edifact(reference: &str, body: &str, units: usize) -> String {
    format!(
        "UNA:+.? 'UNB+UNOC:3+TERMINALA:ZZ+CARRIERB:ZZ+240301:1200+{reference}'\n{body}UNZ+{units}+{reference}'\n"
    )
}

/// A COARRI (discharge report) message `reference` for container `container`.
fn coarri(reference: &str, container: &str) -> String {
    format!(
        "UNH+{reference}+COARRI:D:00B:UN:ITG14'\nBGM+270+DISCH-{container}+9'\nTDT+20+VOY1+1++CARRIERB:172'\n\
         EQD+CN+{container}+45G1:6346:5'\nUNT+5+{reference}'\n"
    )
}

async fn a_set_resent_under_a_new_isa13_with_other_content_is_stored(backend: Backend) {
    let app = TestApp::new(backend).await;
    // No key fields for X12.271: the set is identified by its control numbers.
    let first = post(&app, x12_271("000000101", "TRACE-A", "DOE").into(), "", &[]).await;
    first.expect(202);
    let first_id = assert_outcome(&first.json()["messages"][0], "accepted");
    let row = app.state.store.get_message(first_id.parse().unwrap()).await.unwrap().expect("stored");
    assert_eq!(row.fingerprint_basis, "docnum");
    // The partner restarted its group numbers: GS06 1 and ST02 0001 again,
    // another subscriber under a new ISA13. A new set, acknowledged as one.
    let other = x12_271("000000102", "TRACE-B", "ROE");
    let second = post(&app, other.clone().into(), "ack=999", &[]).await;
    second.expect(202);
    assert!(second.text().contains("AK2*271*0001*005010X279A1~IK5*A~AK9*A*1*1*1~"), "{}", second.text());
    pyx12_valid(&second);
    assert_eq!(app.count_prod().await, 2, "both subscribers are stored");
    assert!(app.audit_events("action=message.duplicate_blocked").await.is_empty());
    // That interchange again: the interchange layer replays its answer.
    let again = post(&app, other.into(), "", &[]).await;
    again.expect(200);
    assert!(again.replayed());
    assert_eq!(app.count_prod().await, 2);
    let first_again = app.state.store.get_message(first_id.parse().unwrap()).await.unwrap().expect("kept");
    assert!(first_again.fingerprint_active, "the first set still holds its claim");
}

/// The fingerprint of a 271 of PAYERA to CLINICB under the scheme without
/// ISA13 (basis tag `control_numbers`, GS06 and ST02 only).
fn fingerprint_without_isa13(gs06: &str, st02: &str) -> String {
    let array =
        json!(["edihub-fp-1", "X12.271", "", "control_numbers", "ZZ", "PAYERA", "ZZ", "CLINICB", gs06, st02]);
    hex::encode(Sha256::digest(array.to_string()))
}

/// A database holding a 271 stored under the fingerprint scheme without
/// ISA13: its claim stays in place for its window and keeps the row's
/// answers, but no new set can match it, so a set re-sent under a new ISA13
/// with other content is stored. Sets of new interchanges hold claims of
/// the new scheme from then on.
async fn claims_without_isa13_block_no_set(backend: Backend) {
    let app = TestApp::new(backend).await;
    let scope = Scope::new("acme", "prod");
    let old = NewMessage {
        id: uuid::Uuid::now_v7(),
        message_type: "X12.271".into(),
        mestyp: Some("005010X279A1".into()),
        docnum: Some("0001".into()),
        sender: Some("PAYERA".into()),
        fingerprint: Some(fingerprint_without_isa13("1", "0001")),
        fingerprint_basis: "docnum".into(),
        window_seconds: 168 * 3600,
        key_values: json!([]),
        idempotency_key: None,
        provider_event_id: None,
        packet_index: 0,
        content_type: Some(X12.into()),
        payload: x12_271("000000100", "TRACE-OLD", "OLD").into_bytes().into(),
    };
    let request = IngestRequest {
        scope: &scope,
        key: None,
        messages: vec![old.clone()],
        now: chrono::Utc::now(),
        envelope: None,
        lease: None,
    };
    let stored = app.state.store.ingest(request).await.expect("the earlier row");
    assert!(matches!(stored, IngestOutcome::Processed(_)), "{stored:?}");

    let res = post(&app, x12_271("000000101", "TRACE-NEW", "NEW").into(), "", &[]).await;
    res.expect(202);
    let new_id = assert_outcome(&res.json()["messages"][0], "accepted");
    assert_eq!(app.count_prod().await, 2);
    let kept = app.state.store.get_message(old.id).await.unwrap().expect("the earlier row is kept");
    assert!(kept.fingerprint_active, "its claim stays until its window ends");
    assert_eq!(kept.fingerprint, old.fingerprint);
    // The new set's claim is of the scheme with ISA13: a copy of its
    // group in another interchange with the same content is a new set,
    // its own interchange again a replay.
    let row = app.state.store.get_message(new_id.parse().unwrap()).await.unwrap().expect("stored");
    assert_ne!(row.fingerprint, old.fingerprint);
    let again = post(&app, x12_271("000000101", "TRACE-NEW", "NEW").into(), "", &[]).await;
    again.expect(200);
    assert!(again.replayed());
    assert_eq!(app.count_prod().await, 2);
}

async fn repeated_control_numbers_refuse_the_interchange(backend: Backend) {
    let app = TestApp::new(backend).await;
    // Four different 834s sharing ST02 0001 in one group.
    let sets: Vec<String> =
        ["M1", "M2", "M3", "M4"].iter().map(|m| set("834", "0001", "005010X220A1", &enrollment(m))).collect();
    let body = interchange("000000301", &[group("BE", "301", "005010X220A1", &sets)]);
    post(&app, body.clone().into(), "", &[]).await.expect_problem(
        422,
        "ST02 `0001` (segment 9) repeats the control number of an earlier transaction set",
    );
    // Acknowledged: the first two sets read are rejected, the repeat with
    // code 23; AK902 is GE01 (4), AK903 the sets read.
    let res = post(&app, body.clone().into(), "ack=999", &[]).await;
    res.expect(422);
    assert!(
        res.text().contains(
            "AK1*BE*301*005010X220A1~AK2*834*0001*005010X220A1~IK5*R~AK2*834*0001*005010X220A1~IK5*R*23~AK9*R*4*2*0~"
        ),
        "{}",
        res.text()
    );
    pyx12_valid(&res);
    let res = post(&app, body.into(), "ack=997", &[]).await;
    res.expect(422);
    assert!(res.text().contains("AK2*834*0001~AK5*R~AK2*834*0001~AK5*R*23~AK9*R*4*2*0~"), "{}", res.text());

    // GS06 repeated in one interchange (each group's ST02 0001).
    let groups = [
        group("BE", "302", "005010X220A1", &[set("834", "0001", "005010X220A1", &enrollment("M5"))]),
        group("BE", "302", "005010X220A1", &[set("834", "0001", "005010X220A1", &enrollment("M6"))]),
    ];
    let res = post(&app, interchange("000000302", &groups).into(), "ack=999", &[]).await;
    res.expect(422);
    assert!(res.text().contains("IK5*R~AK9*R*1*1*0*19~"), "{}", res.text());
    pyx12_valid(&res);

    // Two different COARRI sharing UNH 0062 1.
    let two = edifact("IC401", &[coarri("1", "MSKU1234565"), coarri("1", "TGHU7654321")].concat(), 2);
    post(&app, two.clone().into(), "", &[])
        .await
        .expect_problem(422, "UNH 0062 `1` (segment 7) repeats the reference of an earlier message");
    let res = post(&app, two.into(), "ack=contrl", &[]).await;
    res.expect(422);
    let read = pydifact_read(&res);
    let segs = &read["messages"][0]["segments"];
    assert_eq!(segs[0], json!(["UCI", "IC401", ["TERMINALA", "ZZ"], ["CARRIERB", "ZZ"], "4"]));
    assert_eq!(segs[1], json!(["UCM", "1", ["COARRI", "D", "00B", "UN", "ITG14"], "4", "26"]));

    // Two UNG with the same 0048.
    let ung = |msg: String| {
        format!("UNG+COARRI+TERMINALA:ZZ+CARRIERB:ZZ+240301:1200+G1+UN+D:00B'\n{msg}UNE+1+G1'\n")
    };
    let groups = [ung(coarri("1", "MSKU1234565")), ung(coarri("2", "TGHU7654321"))].concat();
    let res = post(&app, edifact("IC402", &groups, 2).into(), "ack=contrl", &[]).await;
    res.expect(422);
    let read = pydifact_read(&res);
    assert_eq!(
        read["messages"][0]["segments"][1],
        json!(["UCF", "G1", ["TERMINALA", "ZZ"], ["CARRIERB", "ZZ"], "4", "26"])
    );
    assert_eq!(app.count_prod().await, 0, "nothing of a refused interchange is stored");
}

async fn a_reused_interchange_number_with_other_content_is_refused(backend: Backend) {
    let app = TestApp::new(backend).await;
    let order = |po: &str| {
        let sets = [set("850", "0001", "", &[format!("BEG*00*NE*{po}**20240301")])];
        format!("{}{}IEA*1*000000501~\n", isa('U', "00401", "000000501"), group("PO", "501", "004010", &sets))
    };
    let first = post(&app, order("PO-1").into(), "", &[]).await;
    first.expect(202);
    let first_id = assert_outcome(&first.json()["messages"][0], "accepted");
    // Another order under the same ISA13: refused, never answered with the first.
    let detail = post(&app, order("PO-2").into(), "", &[])
        .await
        .expect_problem(422, "interchange control number 000000501 from ZZ:PAYERA to ZZ:CLINICB was already received with other content");
    assert!(detail.contains("send new content under a new ISA13"), "{detail}");
    let events = app.audit_events("action=interchange.mismatch").await;
    let [e] = events.as_slice() else { panic!("one mismatch event: {events:?}") };
    assert_eq!(e["detected_by"], "interchange");
    assert_eq!(e["idempotency_key"], "X12|ZZ:PAYERA|ZZ:CLINICB|000000501");
    assert_eq!(e["original_message_id"], first_id);
    assert_eq!(e["details"]["same_payload"], false);
    // Asking for an acknowledgement: the TA1 rejecting a duplicate number, with 422.
    let res = post(&app, order("PO-2").into(), "ack=997", &[]).await;
    res.expect(422);
    assert!(res.text().ends_with("~TA1*000000501*240301*1200*R*025~IEA*0*000000001~"), "{}", res.text());
    pyx12_valid(&res);
    // The environment that replays reused Idempotency-Keys refuses it too.
    app.post_receive(Some(&bearer(ACME_QA)), Some(X12), order("PO-1"), &[]).await.expect(202);
    app.post_receive(Some(&bearer(ACME_QA)), Some(X12), order("PO-2"), &[]).await.expect(422);
    // The same interchange, only with a line break more at its end: a replay.
    let resent = post(&app, format!("{}\r\n", order("PO-1")).into(), "", &[]).await;
    resent.expect(200);
    assert!(resent.replayed());
    assert_eq!(app.audit_events("action=interchange.duplicate_blocked").await.len(), 1);
    assert_eq!(app.count_prod().await, 1, "only the first order");
    assert_eq!(app.count("acme", "qa").await, 1);

    // EDIFACT: a CONTRL whose UCI rejects the copy with 26.
    app.post_receive(
        Some(&bearer(ACME_PROD)),
        Some(EDIFACT),
        edifact("IC502", &coarri("1", "MSKU1234565"), 1),
        &[],
    )
    .await
    .expect(202);
    let other = edifact("IC502", &coarri("1", "TGHU7654321"), 1);
    let res = post(&app, other.into(), "", &[("accept", EDIFACT)]).await;
    res.expect(422);
    let read = pydifact_read(&res);
    assert_eq!(
        read["messages"][0]["segments"][0],
        json!(["UCI", "IC502", ["TERMINALA", "ZZ"], ["CARRIERB", "ZZ"], "4", "26"])
    );
    assert_eq!(app.audit_events("action=interchange.mismatch").await.len(), 4);
    assert_eq!(app.count_prod().await, 2);
}

async fn white_space_after_the_trailer_is_accepted(backend: Backend) {
    let app = TestApp::new(backend).await;
    let spaces = format!("{}{}", x12_271("000000601", "TRACE-601", "SPACE"), " ".repeat(79));
    let res = post(&app, spaces.into(), "ack=999", &[]).await;
    res.expect(202);
    assert!(res.text().contains("IK5*A~"), "{}", res.text());
    let lines = format!("{}\r\n\t\r\n", x12_271("000000602", "TRACE-602", "LINES"));
    post(&app, lines.into(), "", &[]).await.expect(202);
    let edi = format!("{}   \r\n\t", edifact("IC601", &coarri("1", "MSKU1234565"), 1));
    let res = post(&app, edi.into(), "ack=contrl", &[]).await;
    res.expect(202);
    let read = pydifact_read(&res);
    assert_eq!(read["messages"][0]["segments"][0][4], "7");
    assert_eq!(app.count_prod().await, 3);
}

async fn an_isa_that_is_not_106_characters_is_refused(backend: Backend) {
    let app = TestApp::new(backend).await;
    let good = x12_271("000000701", "TRACE-701", "WIDE");
    let cases = [
        // 105 characters: the receiver one space short.
        ("*ZZ*CLINICB        *", "*ZZ*CLINICB       *", "ISA08 has 14 characters; X12 fixes it at 15", "008"),
        // 107 characters: a ten-digit control number.
        ("*000000701*0*P*", "*0000000701*0*P*", "ISA13 has 10 characters; X12 fixes it at 9", "018"),
        // A line break inside the ISA.
        (
            "*ZZ*PAYERA         *",
            "*ZZ*PAYERA\n         *",
            "ISA06 has 16 characters, with a line break",
            "006",
        ),
    ];
    for (n, (from, to, detail, note)) in cases.into_iter().enumerate() {
        assert!(good.contains(from), "{from}");
        let body = good.replacen(from, to, 1);
        post(&app, body.clone().into(), "", &[]).await.expect_problem(400, detail);
        let res = post(&app, body.into(), "ack=997", &[]).await;
        res.expect(400);
        let text = res.text();
        // TA101 is ISA13's number in nine digits (a zero too many dropped).
        assert!(
            text.ends_with(&format!("~TA1*000000701*240301*1200*R*{note}~IEA*0*00000000{}~", n + 1)),
            "{text}"
        );
        pyx12_valid(&res);
    }
    assert_eq!(app.count_prod().await, 0);
    post(&app, good.into(), "", &[]).await.expect(202);
}

async fn acknowledgement_envelopes_follow_the_standards(backend: Backend) {
    let app = TestApp::new(backend).await;
    // ISA12 00403: ISA11 `-` is the repetition separator; the 999 keeps it.
    let sets = [set("850", "0001", "", &["BEG*00*NE*PO-801**20240301".to_string()])];
    let body = format!(
        "{}{}IEA*1*000000801~\n",
        isa('-', "00403", "000000801"),
        group("PO", "801", "004030", &sets)
    );
    let res = post(&app, body.into(), "ack=999", &[]).await;
    res.expect(202);
    assert!(res.text().contains("*-*00501*000000001*0*P*:~"), "{}", res.text());
    ack_of(&res, X12);
    pyx12_valid(&res);
    // A 271 under its guide 005010X279A1: the 997's own GS08 is the base
    // version, the 999's its guide 005010X231A1 (and AK103 the 271's guide).
    let res = post(&app, x12_271("000000802", "TRACE-802", "GS").into(), "ack=997", &[]).await;
    res.expect(202);
    assert!(res.text().contains("*2*X*005010~ST*997*0001~AK1*HB*1~"), "{}", res.text());
    // pyx12 maps the 997 of 004010 only; the hub's parser reads this one back.
    ack_of(&res, X12);
    let res = post(&app, x12_271("000000803", "TRACE-803", "GS").into(), "ack=999", &[]).await;
    res.expect(202);
    assert!(
        res.text().contains("*3*X*005010X231A1~ST*999*0001*005010X231A1~AK1*HB*1*005010X279A1~"),
        "{}",
        res.text()
    );
    pyx12_valid(&res);
    // AK902 of a refusal is GE01 as sent: the first of two sets' SE01
    // disagrees; GE01 says 2, one set was read.
    let sets = [
        set("271", "0001", "005010X279A1", &eligibility("TRACE-804", "A")).replace("SE*10*", "SE*9*"),
        set("271", "0002", "005010X279A1", &eligibility("TRACE-805", "B")),
    ];
    let body = interchange("000000804", &[group("HB", "804", "005010X279A1", &sets)]);
    let res = post(&app, body.into(), "ack=999", &[]).await;
    res.expect(422);
    assert!(res.text().contains("IK5*R*4~AK9*R*2*1*0~"), "{}", res.text());
    pyx12_valid(&res);
    assert_eq!(app.count_prod().await, 3);
}

async fn a_unb_without_syntax_version_is_refused(backend: Backend) {
    let app = TestApp::new(backend).await;
    let body = edifact("IC901", &coarri("1", "MSKU1234565"), 1).replace("UNB+UNOC:3+", "UNB+UNOC+");
    post(&app, body.clone().into(), "", &[])
        .await
        .expect_problem(400, "segment 1 (UNB): S001 0002 (syntax version number) is missing");
    let res = post(&app, body.into(), "ack=contrl", &[]).await;
    res.expect(400);
    let read = pydifact_read(&res);
    assert_eq!(read["syntax_identifier"], json!(["UNOC", 3]), "the CONTRL has a version of its own");
    assert_eq!(
        read["messages"][0]["segments"][0],
        json!(["UCI", "IC901", ["TERMINALA", "ZZ"], ["CARRIERB", "ZZ"], "4", "13", "UNB", ["1", "2"]])
    );
    assert_eq!(app.count_prod().await, 0);
}

async fn unsupported_content_types_name_the_edi_types(backend: Backend) {
    let app = TestApp::new(backend).await;
    for content_type in ["application/EDI-consent", "application/x12"] {
        let res = app
            .post_receive(Some(&bearer(ACME_PROD)), Some(content_type), x12_271("000001001", "T", "X"), &[])
            .await;
        let detail = res.expect_problem(415, "unsupported content type");
        for named in ["application/xml", "application/json", EDIFACT, X12] {
            assert!(detail.contains(named), "{content_type}: {detail} should name {named}");
        }
    }
    assert_eq!(app.count_prod().await, 0);
}
