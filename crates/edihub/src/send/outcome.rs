//! Reading the hub's answer for one file, and the running totals.
//!
//! The hub answers 202 with `{"status":"accepted",…}` for a new message, 200
//! with `{"status":"duplicate","detected_by":…}` for a blocked one, a packet
//! as `{"messages":[…]}` (202 when any IDoc in it was new), a stored answer
//! with `Idempotency-Replayed: true`, and every error as problem+json.
//! A packet file counts as accepted when any IDoc in it was new; the IDocs
//! are also counted one by one. A replayed answer stored nothing new, so it
//! counts as a duplicate.

use serde_json::Value;

/// How one file went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// At least one new message was stored.
    Accepted,
    /// Every message in it was already there.
    Duplicate,
    /// The hub replayed its stored answer for this Idempotency-Key.
    Replayed,
    /// An HTTP error, a connection error or an unreadable file.
    Failed,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Accepted => "accepted",
            Verdict::Duplicate => "duplicate",
            Verdict::Replayed => "replayed",
            Verdict::Failed => "failed",
        }
    }
}

/// The result of sending one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileResult {
    /// How it went.
    pub verdict: Verdict,
    /// What to print after the file name.
    pub detail: String,
    /// New messages stored (IDocs of a packet one by one).
    pub accepted: usize,
    /// Messages the hub already had.
    pub duplicate: usize,
    /// Whether the answer was a packet (`{"messages":[…]}`).
    pub packet: bool,
}

impl FileResult {
    /// A failure with `detail` (status and reason, or the error).
    pub fn failed(detail: impl Into<String>) -> Self {
        Self { verdict: Verdict::Failed, detail: detail.into(), accepted: 0, duplicate: 0, packet: false }
    }

    /// The line printed for the file `name`.
    pub fn line(&self, name: &str) -> String {
        format!("{:<9} {name}  {}", self.verdict.label(), self.detail)
    }
}

/// Classifies an HTTP answer: `status`, whether `Idempotency-Replayed` was
/// set, and the body.
pub fn classify(status: u16, replayed: bool, body: &[u8]) -> FileResult {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    if !(200..300).contains(&status) {
        return FileResult::failed(format!("{status} {}", problem_detail(json.as_ref(), body)));
    }
    let Some(json) = json else {
        return FileResult::failed(format!("{status} unexpected answer: {}", snippet(body)));
    };
    if let Some(messages) = json.get("messages").and_then(Value::as_array) {
        let count = |s: &str| messages.iter().filter(|m| m["status"] == s).count();
        let (new, dup) = (count("accepted"), count("duplicate"));
        let verdict = if replayed {
            Verdict::Replayed
        } else if new > 0 {
            Verdict::Accepted
        } else {
            Verdict::Duplicate
        };
        let (accepted, duplicate) = if replayed { (0, messages.len()) } else { (new, dup) };
        let detail = format!("packet of {}: {new} accepted, {dup} duplicate", messages.len());
        return FileResult { verdict, detail, accepted, duplicate, packet: true };
    }
    let id = text(&json, "id");
    let (verdict, detail) = match (replayed, json["status"].as_str()) {
        (true, Some(was)) => (Verdict::Replayed, format!("id={id} (Idempotency-Replayed, first {was})")),
        (false, Some("accepted")) => {
            let note = if json["deduplicated"] == false { " (not deduplicated: no key)" } else { "" };
            (Verdict::Accepted, format!("id={id} docnum={}{note}", text(&json, "docnum")))
        }
        (false, Some("duplicate")) => {
            (Verdict::Duplicate, format!("id={id} (detected_by={})", text(&json, "detected_by")))
        }
        _ => return FileResult::failed(format!("{status} unexpected answer: {}", snippet(body))),
    };
    let accepted = usize::from(verdict == Verdict::Accepted);
    FileResult { verdict, detail, accepted, duplicate: 1 - accepted, packet: false }
}

/// A string member, or `-` when absent or null.
fn text(json: &Value, key: &str) -> String {
    json[key].as_str().unwrap_or("-").to_string()
}

/// The problem's `detail` (or `title`), else the start of the body.
fn problem_detail(json: Option<&Value>, body: &[u8]) -> String {
    json.and_then(|j| j["detail"].as_str().or_else(|| j["title"].as_str()))
        .map_or_else(|| snippet(body), str::to_string)
}

/// The first line of a body, at most 200 characters.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let line = text.trim().lines().next().unwrap_or("").to_string();
    if line.is_empty() { "(empty body)".into() } else { line.chars().take(200).collect() }
}

/// Totals over all files.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    files: usize,
    accepted: usize,
    duplicate: usize,
    replayed: usize,
    failed: usize,
    packets: usize,
    messages_accepted: usize,
    messages_duplicate: usize,
}

impl Tally {
    /// Counts one file.
    pub fn add(&mut self, r: &FileResult) {
        self.files += 1;
        match r.verdict {
            Verdict::Accepted => self.accepted += 1,
            Verdict::Duplicate => self.duplicate += 1,
            Verdict::Replayed => {
                self.duplicate += 1;
                self.replayed += 1;
            }
            Verdict::Failed => self.failed += 1,
        }
        self.packets += usize::from(r.packet);
        self.messages_accepted += r.accepted;
        self.messages_duplicate += r.duplicate;
    }

    /// Files counted so far.
    pub fn files(&self) -> usize {
        self.files
    }

    /// Files that failed.
    pub fn failed(&self) -> usize {
        self.failed
    }

    /// `N files: A accepted, D duplicate, F failed` (replays counted as duplicates).
    pub fn summary(&self) -> String {
        let replayed =
            if self.replayed > 0 { format!(" ({} replayed)", self.replayed) } else { String::new() };
        format!(
            "{} files: {} accepted, {} duplicate{replayed}, {} failed",
            self.files, self.accepted, self.duplicate, self.failed
        )
    }

    /// The per-message totals, when any file was a packet.
    pub fn message_summary(&self) -> Option<String> {
        (self.packets > 0).then(|| {
            format!(
                "messages (packet IDocs counted one by one): {} accepted, {} duplicate",
                self.messages_accepted, self.messages_duplicate
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_messages_packets_replays_and_problems() {
        let ok =
            classify(202, false, br#"{"status":"accepted","id":"u1","docnum":"47","deduplicated":true}"#);
        assert_eq!(ok.line("a.xml"), "accepted  a.xml  id=u1 docnum=47");
        let dup = classify(200, false, br#"{"status":"duplicate","id":"u1","detected_by":"fingerprint"}"#);
        assert_eq!(dup.line("b.xml"), "duplicate b.xml  id=u1 (detected_by=fingerprint)");
        let replay = classify(200, true, br#"{"status":"accepted","id":"u1"}"#);
        assert_eq!(replay.line("c.xml"), "replayed  c.xml  id=u1 (Idempotency-Replayed, first accepted)");
        let packet = classify(202, false, br#"{"messages":[{"status":"accepted"},{"status":"duplicate"}]}"#);
        assert_eq!((packet.verdict, packet.accepted, packet.duplicate), (Verdict::Accepted, 1, 1));
        let bad = classify(400, false, br#"{"status":400,"detail":"not XML"}"#);
        assert_eq!(bad.line("d.bin"), "failed    d.bin  400 not XML");
        assert_eq!(classify(502, false, b"<html>\nbad gateway").detail, "502 <html>");

        let mut tally = Tally::default();
        for r in [&ok, &dup, &replay, &packet, &bad] {
            tally.add(r);
        }
        assert_eq!(tally.summary(), "5 files: 2 accepted, 2 duplicate (1 replayed), 1 failed");
        assert_eq!(
            tally.message_summary().unwrap(),
            "messages (packet IDocs counted one by one): 2 accepted, 3 duplicate"
        );
    }
}
