//! The HTML face of `GET /admin/audit`, for people in a browser.
//!
//! Server-rendered, no JavaScript: a filter form (a plain GET, so every view
//! is a bookmarkable URL) and a table of events. Everything that a sender
//! controls (keys, docnums, key values, message types) is HTML-escaped.

use std::fmt::Write;

use axum::response::Html;
use edihub_store::{AuditEvent, AuditFilter};
use serde_json::Value;

/// Escapes text for HTML element content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a query parameter value.
fn url_encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}\
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{border-bottom:1px solid #ddd;\
padding:.35rem .5rem;text-align:left;vertical-align:top}th{background:#f4f4f4}\
code{font-size:.8rem;word-break:break-all}form{display:flex;flex-wrap:wrap;gap:.5rem;margin-bottom:1rem}\
label{display:flex;flex-direction:column;font-size:.8rem}.muted{color:#777}";

fn input(out: &mut String, name: &str, label: &str, value: Option<&str>) {
    let _ = write!(
        out,
        "<label>{label}<input name=\"{name}\" id=\"f-{name}\" value=\"{}\"></label>",
        esc(value.unwrap_or_default())
    );
}

fn detail_text(details: &Value) -> String {
    let mut parts = Vec::new();
    for key in ["docnum", "mestyp", "packet_index", "integration", "reason", "source", "count"] {
        if let Some(v) = details.get(key).filter(|v| !v.is_null()) {
            parts.push(format!("{key}={}", v.as_str().map_or_else(|| v.to_string(), str::to_string)));
        }
    }
    if let Some(kv) = details.get("key_values").and_then(Value::as_array) {
        for entry in kv {
            let path = entry.get("path").and_then(Value::as_str).unwrap_or("?");
            let values = entry.get("values").map(|v| v.to_string()).unwrap_or_default();
            parts.push(format!("{path}={values}"));
        }
    }
    parts.join("; ")
}

/// Renders the page for `filter` with its `events`.
pub fn render(filter: &AuditFilter, events: &[AuditEvent], next_cursor: Option<&str>) -> Html<String> {
    let mut out = String::with_capacity(4096 + events.len() * 512);
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>edihub audit</title><style>{STYLE}</style></head><body><h1>edihub audit</h1>"
    );
    out.push_str("<form method=\"get\" action=\"/admin/audit\">");
    input(&mut out, "action", "Action", filter.action.as_deref());
    input(&mut out, "tenant", "Tenant", filter.tenant.as_deref());
    input(&mut out, "environment", "Environment", filter.environment.as_deref());
    input(&mut out, "message_type", "Message type", filter.message_type.as_deref());
    input(&mut out, "fingerprint", "Fingerprint", filter.fingerprint.as_deref());
    let since = filter.since.map(|t| t.to_rfc3339());
    let until = filter.until.map(|t| t.to_rfc3339());
    input(&mut out, "since", "Since (RFC 3339)", since.as_deref());
    input(&mut out, "until", "Until (RFC 3339)", until.as_deref());
    input(&mut out, "limit", "Limit", Some(&filter.limit.to_string()));
    out.push_str("<button type=\"submit\" id=\"apply\">Filter</button></form>");
    if events.is_empty() {
        out.push_str("<p id=\"empty\" class=\"muted\">No events match these filters.</p>");
    } else {
        out.push_str("<table id=\"events\"><thead><tr><th>When (UTC)</th><th>Action</th><th>Tenant / env</th><th>Message type</th><th>Detected by</th><th>Fingerprint / key</th><th>Original message</th><th>Details</th></tr></thead><tbody>");
        for e in events {
            let what = e.fingerprint.as_deref().or(e.idempotency_key.as_deref()).unwrap_or("");
            let original = e.message_id.map_or_else(
                || "<span class=\"muted\">–</span>".to_string(),
                |id| format!("<a class=\"original\" href=\"/admin/messages/{id}\">{id}</a>"),
            );
            let _ = write!(
                out,
                "<tr class=\"event\"><td>{}</td><td class=\"action\">{}</td><td>{} / {}</td><td class=\"type\">{}</td><td class=\"detected\">{}</td><td><code>{}</code></td><td>{original}</td><td>{}</td></tr>",
                esc(&e.occurred_at.format("%Y-%m-%d %H:%M:%S%.3f").to_string()),
                esc(&e.action),
                esc(e.tenant_id.as_deref().unwrap_or("")),
                esc(e.environment_id.as_deref().unwrap_or("")),
                esc(e.message_type.as_deref().unwrap_or("")),
                esc(e.detected_by.as_deref().unwrap_or("")),
                esc(what),
                esc(&detail_text(&e.details.0)),
            );
        }
        out.push_str("</tbody></table>");
    }
    if let Some(cursor) = next_cursor {
        let mut params = Vec::new();
        let fields = [
            ("action", &filter.action),
            ("tenant", &filter.tenant),
            ("environment", &filter.environment),
            ("message_type", &filter.message_type),
            ("fingerprint", &filter.fingerprint),
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
    out.push_str("</body></html>");
    Html(out)
}

#[cfg(test)]
mod tests {
    use super::{esc, url_encode};

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
        );
    }

    #[test]
    fn encodes_query_values() {
        assert_eq!(url_encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
