//! The HTML face of `GET /admin/audit`, for people in a browser.
//!
//! Server-rendered, no JavaScript: a filter form (a plain GET, so every view
//! is a bookmarkable URL) and a table of events. Everything that a sender
//! controls (keys, docnums, key values, message types) is HTML-escaped.

use std::fmt::Write;

use axum::response::Html;
use edihub_store::{AuditEvent, AuditFilter};
use serde_json::Value;

use crate::console::layout::{esc, input, layout, url_encode};

fn text_of(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// The details of an event as a small list: the known members first, then
/// each key path with its values.
fn detail_list(details: &Value) -> String {
    let mut items = String::new();
    for key in ["docnum", "mestyp", "packet_index", "integration", "reason", "source", "count"] {
        if let Some(v) = details.get(key).filter(|v| !v.is_null()) {
            let _ = write!(items, "<li>{key}: {}</li>", esc(&text_of(v)));
        }
    }
    if let Some(kv) = details.get("key_values").and_then(Value::as_array) {
        for entry in kv {
            let path = entry.get("path").and_then(Value::as_str).unwrap_or("?");
            let values: Vec<String> =
                entry.get("values").and_then(Value::as_array).into_iter().flatten().map(text_of).collect();
            let shown = if values.is_empty() { "(missing)".to_string() } else { values.join(", ") };
            let _ = write!(items, "<li><code>{}</code>: {}</li>", esc(path), esc(&shown));
        }
    }
    if items.is_empty() { String::new() } else { format!("<ul class=\"kv\">{items}</ul>") }
}

/// Renders the page for `filter` with its `events`.
pub fn render(filter: &AuditFilter, events: &[AuditEvent], next_cursor: Option<&str>) -> Html<String> {
    let mut out = String::with_capacity(4096 + events.len() * 512);
    out.push_str("<form method=\"get\" action=\"/admin/audit\">");
    input(&mut out, "action", "Action", filter.action.as_deref());
    input(&mut out, "tenant", "Tenant", filter.tenant.as_deref());
    input(&mut out, "environment", "Environment", filter.environment.as_deref());
    input(&mut out, "message_type", "Message type", filter.message_type.as_deref());
    input(&mut out, "fingerprint", "Fingerprint", filter.fingerprint.as_deref());
    let original = filter.message_id.map(|id| id.to_string());
    input(&mut out, "original_message_id", "Original message id", original.as_deref());
    let since = filter.since.map(|t| t.to_rfc3339());
    let until = filter.until.map(|t| t.to_rfc3339());
    input(&mut out, "since", "Since (RFC 3339)", since.as_deref());
    input(&mut out, "until", "Until (RFC 3339)", until.as_deref());
    input(&mut out, "limit", "Limit", Some(&filter.limit.to_string()));
    out.push_str("<button type=\"submit\" id=\"apply\">Filter</button></form>");
    if events.is_empty() {
        out.push_str("<p id=\"empty\" class=\"muted\">No events match these filters.</p>");
    } else {
        out.push_str("<div class=\"scroll\"><table id=\"events\"><thead><tr><th>When (UTC)</th><th>Action</th><th>Tenant / env</th><th>Message type</th><th>Detected by</th><th>Fingerprint / key</th><th>Original message</th><th>Details</th></tr></thead><tbody>");
        events.iter().for_each(|e| event_row(&mut out, e));
        out.push_str("</tbody></table></div>");
    }
    if let Some(cursor) = next_cursor {
        let mut params = Vec::new();
        let fields = [
            ("action", &filter.action),
            ("tenant", &filter.tenant),
            ("environment", &filter.environment),
            ("message_type", &filter.message_type),
            ("fingerprint", &filter.fingerprint),
            ("original_message_id", &original),
            ("since", &since),
            ("until", &until),
        ];
        for (k, v) in fields {
            if let Some(v) = v {
                params.push(format!("{k}={}", url_encode(v)));
            }
        }
        params.push(format!("limit={}", filter.limit));
        params.push(format!("cursor={}", url_encode(cursor)));
        let _ = write!(
            out,
            "<p><a id=\"next\" href=\"/admin/audit?{}\">Older events →</a></p>",
            esc(&params.join("&"))
        );
    }
    layout("edihub audit", "/admin/audit", &out)
}

/// One event as a table row; everything a sender controls is escaped.
fn event_row(out: &mut String, e: &AuditEvent) {
    let what = e.fingerprint.as_deref().or(e.idempotency_key.as_deref()).unwrap_or("");
    let original = e.message_id.map_or_else(
        || "<span class=\"muted\">–</span>".to_string(),
        |id| format!("<a class=\"original\" href=\"/admin/messages/{id}\">{id}</a>"),
    );
    let _ = write!(
        out,
        "<tr class=\"event\"><td>{}</td><td class=\"action\">{}</td><td>{} / {}</td><td class=\"type\">{}</td><td class=\"detected\">{}</td><td><code>{}</code></td><td>{original}</td><td class=\"details\">{}</td></tr>",
        esc(&e.occurred_at.format("%Y-%m-%d %H:%M:%S%.3f").to_string()),
        esc(&e.action),
        esc(e.tenant_id.as_deref().unwrap_or("")),
        esc(e.environment_id.as_deref().unwrap_or("")),
        esc(e.message_type.as_deref().unwrap_or("")),
        esc(e.detected_by.as_deref().unwrap_or("")),
        esc(what),
        detail_list(&e.details.0),
    );
}

#[cfg(test)]
mod tests {
    use super::detail_list;

    #[test]
    fn details_become_a_list_with_escaped_values() {
        let details = serde_json::json!({ "docnum": "<b>1</b>",
            "key_values": [{ "path": "E1EDK01.BELNR", "values": ["a<", 7] }, { "path": "X", "values": [] }] });
        assert_eq!(
            detail_list(&details),
            "<ul class=\"kv\"><li>docnum: &lt;b&gt;1&lt;/b&gt;</li><li><code>E1EDK01.BELNR</code>: a&lt;, 7</li>\
             <li><code>X</code>: (missing)</li></ul>"
        );
    }
}
