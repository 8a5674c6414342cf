//! The HTML face of `GET /admin/messages`: a search form (a plain GET, so a
//! search is a bookmarkable URL) by docnum, key value, fingerprint, message
//! type, sender, scope and time, and the matching messages newest first,
//! each linking to its page. Keyset pagination as in the JSON answer; a
//! search checked row by row looks at a bounded number of messages a page,
//! and a short page then says how far back it looked.

use std::fmt::Write;

use axum::response::Html;
use edihub_store::{MessageMeta, MessagePage, MessageQuery};

use crate::console::layout::{esc, input, layout, query_string};

fn form(out: &mut String, q: &MessageQuery, since: Option<&str>, until: Option<&str>) {
    out.push_str("<form method=\"get\" action=\"/admin/messages\" role=\"search\">");
    input(out, "docnum", "Docnum", q.docnum.as_deref());
    input(out, "key_value", "Key value", q.key_value.as_deref());
    input(out, "fingerprint", "Fingerprint", q.fingerprint.as_deref());
    input(out, "message_type", "Message type", q.message_type.as_deref());
    input(out, "sender", "Sender (SNDPRN)", q.sender.as_deref());
    input(out, "tenant", "Tenant", q.tenant.as_deref());
    input(out, "environment", "Environment", q.environment.as_deref());
    input(out, "since", "Since (RFC 3339)", since);
    input(out, "until", "Until (RFC 3339)", until);
    input(out, "limit", "Limit", Some(&q.limit.to_string()));
    out.push_str("<button type=\"submit\" id=\"search\">Search</button></form>");
}

fn table(out: &mut String, found: &[MessageMeta]) {
    out.push_str(
        "<div class=\"scroll\"><table id=\"messages\"><thead><tr><th>Received (UTC)</th><th>Tenant / env</th>\
         <th>Message type</th><th>MESTYP</th><th>Docnum</th><th>Sender</th><th>Fingerprint</th></tr></thead><tbody>",
    );
    for m in found {
        let fp = m.fingerprint.as_deref().map_or_else(String::new, |f| f.chars().take(16).collect());
        let _ = write!(
            out,
            "<tr class=\"message\"><td><a class=\"detail\" href=\"/admin/messages/{}\">{}</a></td><td>{} / {}</td>\
             <td class=\"type\">{}</td><td>{}</td><td class=\"docnum\">{}</td><td class=\"sender\">{}</td>\
             <td><code title=\"{}\">{}</code></td></tr>",
            m.id,
            m.received_at.format("%Y-%m-%d %H:%M:%S%.3f"),
            esc(&m.tenant_id),
            esc(&m.environment_id),
            esc(&m.message_type),
            esc(m.mestyp.as_deref().unwrap_or("")),
            esc(m.docnum.as_deref().unwrap_or("")),
            esc(m.sender.as_deref().unwrap_or("")),
            esc(m.fingerprint.as_deref().unwrap_or("")),
            esc(&fp),
        );
    }
    out.push_str("</tbody></table></div>");
}

/// Renders the page for query `q` with `found`, whose next page starts at
/// `next_cursor`.
pub fn render(q: &MessageQuery, found: &MessagePage, next_cursor: Option<&str>) -> Html<String> {
    let mut out = String::with_capacity(4096 + found.messages.len() * 512);
    let since = q.since.map(|t| t.to_rfc3339());
    let until = q.until.map(|t| t.to_rfc3339());
    form(&mut out, q, since.as_deref(), until.as_deref());
    // A short page with a next one: its scan ended first (see
    // `MessageQuery::scan`); say how far it looked.
    let scanned_to = found.next.filter(|_| (found.messages.len() as i64) < q.limit);
    if found.messages.is_empty() && scanned_to.is_none() {
        out.push_str("<p id=\"empty\" class=\"muted\">No messages match this search.</p>");
    } else if !found.messages.is_empty() {
        table(&mut out, &found.messages);
    }
    if let Some((at, _)) = scanned_to {
        let _ = write!(
            out,
            "<p id=\"scanned\" class=\"muted\">{} found among the messages received since {} UTC \
             (a search by sender, key value, type, scope or Idempotency-Key looks at {} messages a page). \
             Older messages are on the next page.</p>",
            found.messages.len(),
            at.format("%Y-%m-%d %H:%M:%S%.3f"),
            q.scan.unwrap_or(edihub_store::SEARCH_SCAN),
        );
    }
    if let Some(cursor) = next_cursor {
        let limit = q.limit.to_string();
        let params = query_string(&[
            ("docnum", q.docnum.as_deref()),
            ("key_value", q.key_value.as_deref()),
            ("fingerprint", q.fingerprint.as_deref()),
            ("idempotency_key", q.idempotency_key.as_deref()),
            ("message_type", q.message_type.as_deref()),
            ("sender", q.sender.as_deref()),
            ("tenant", q.tenant.as_deref()),
            ("environment", q.environment.as_deref()),
            ("since", since.as_deref()),
            ("until", until.as_deref()),
            ("limit", Some(&limit)),
            ("cursor", Some(cursor)),
        ]);
        let _ = write!(
            out,
            "<p><a id=\"next\" href=\"/admin/messages?{}\">Older messages →</a></p>",
            esc(&params)
        );
    }
    layout("edihub messages", "/admin/messages", &out)
}
