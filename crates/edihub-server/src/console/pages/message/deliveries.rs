//! The message page's Deliveries panel: per destination its status, every
//! attempt (when, status code, latency, the error or the first bytes of the
//! receiver's answer) and Redeliver buttons, one per destination and one for
//! all. Each button is a form posting to `/admin/forms/redeliver/{id}` with
//! its anti-forgery token (see [`crate::console::forms::token`]); the answer
//! redirects back here with `?redelivered=…` and the form's signature of
//! that list, which this panel announces (see `messages::show`).

use std::fmt::Write;

use edihub_store::{AttemptRow, DeliveryReport};
use uuid::Uuid;

use crate::console::forms::token::TOKEN_FIELD;
use crate::console::layout::{esc, url_encode};

/// What the panel shows beyond the deliveries.
pub struct Panel<'a> {
    /// The message.
    pub message_id: Uuid,
    /// Its deliveries, each with its attempts.
    pub deliveries: &'a [DeliveryReport],
    /// The anti-forgery token of the redeliver form.
    pub token: &'a str,
    /// The destinations just queued again (after a Redeliver).
    pub redelivered: Option<&'a str>,
}

/// The form action of a message's Redeliver buttons.
pub fn action(message_id: Uuid) -> String {
    format!("/admin/forms/redeliver/{message_id}")
}

/// How much of a receiver's answer is shown (the store keeps a prefix too).
const SHOWN_ANSWER_CHARS: usize = 200;

fn button(out: &mut String, p: &Panel<'_>, destination: Option<&str>) {
    let (field, label, id) = match destination {
        Some(d) => (
            format!("<input type=\"hidden\" name=\"destination\" value=\"{}\">", esc(d)),
            format!("Redeliver to {}", esc(d)),
            format!("redeliver-{}", url_encode(d)),
        ),
        None => (String::new(), "Redeliver to all".to_string(), "redeliver-all".to_string()),
    };
    let _ = write!(
        out,
        "<form class=\"inline\" method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"{TOKEN_FIELD}\" \
         value=\"{}\">{field}<button type=\"submit\" id=\"{}\">{label}</button></form>",
        action(p.message_id),
        esc(p.token),
        esc(&id)
    );
}

fn attempt(out: &mut String, n: usize, a: &AttemptRow) {
    let code = a.status_code.map(|c| c.to_string()).unwrap_or_else(|| "–".into());
    let said = match (&a.error, &a.response_prefix) {
        (Some(e), Some(r)) => format!("{} <code>{}</code>", esc(e), esc(&shorten(r))),
        (Some(e), None) => esc(e),
        (None, Some(r)) => format!("<code>{}</code>", esc(&shorten(r))),
        (None, None) => String::new(),
    };
    let _ = write!(
        out,
        "<tr class=\"attempt\"><td class=\"num\">{n}</td><td>{}</td><td class=\"num code\">{code}</td>\
         <td class=\"num\">{} ms</td><td class=\"said\">{said}</td></tr>",
        a.attempted_at.format("%Y-%m-%d %H:%M:%S%.3f"),
        a.latency_ms
    );
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(SHOWN_ANSWER_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

fn delivery(out: &mut String, p: &Panel<'_>, d: &DeliveryReport) {
    let row = &d.delivery;
    let _ = write!(
        out,
        "<article class=\"delivery\" data-destination=\"{}\"><h3>{} — <span class=\"status {}\">{}</span></h3>",
        esc(&row.destination_id),
        esc(&row.destination_id),
        esc(&row.status),
        esc(&row.status)
    );
    let _ = write!(out, "<p class=\"muted\">{} attempt(s)", row.attempts);
    if row.status == edihub_store::PENDING {
        let _ = write!(out, "; next attempt due {} UTC", row.next_attempt_at.format("%Y-%m-%d %H:%M:%S"));
    }
    out.push_str(".</p>");
    if !d.attempt_log.is_empty() {
        out.push_str(
            "<div class=\"scroll\"><table class=\"attempts\"><thead><tr><th class=\"num\">#</th><th>When (UTC)</th>\
             <th class=\"num\">Status</th><th class=\"num\">Latency</th><th>Error / answer</th></tr></thead><tbody>",
        );
        for (i, a) in d.attempt_log.iter().enumerate() {
            attempt(out, i + 1, a);
        }
        out.push_str("</tbody></table></div>");
    }
    button(out, p, Some(&row.destination_id));
    out.push_str("</article>");
}

/// Renders the panel into `out`.
pub fn render(out: &mut String, p: &Panel<'_>) {
    out.push_str("<section id=\"deliveries\"><h2>Deliveries</h2>");
    if let Some(queued) = p.redelivered.filter(|q| !q.is_empty()) {
        let _ = write!(
            out,
            "<p id=\"redelivered\" role=\"status\" class=\"notice\">Queued again: {}. The delivery worker sends it at its next pass.</p>",
            esc(queued)
        );
    }
    if p.deliveries.is_empty() {
        out.push_str(
            "<p id=\"no-deliveries\" class=\"muted\">No destination receives this message.</p></section>",
        );
        return;
    }
    for d in p.deliveries {
        delivery(out, p, d);
    }
    if p.deliveries.len() > 1 {
        button(out, p, None);
    }
    out.push_str("</section>");
}

#[cfg(test)]
mod tests {
    use super::shorten;

    #[test]
    fn long_answers_are_cut_at_a_character_boundary() {
        assert_eq!(shorten("short"), "short");
        let long = "é".repeat(300);
        assert_eq!(shorten(&long).chars().count(), 201);
    }
}
