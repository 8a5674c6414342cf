//! The HTML face of `GET /admin/as2/partners`: who the hub exchanges AS2
//! messages with, what each exchange uses, when each certificate ends (an
//! expired one breaks the link, so one ending within
//! [`crate::as2::expiry::WARN_DAYS`] is flagged), and each partner's last
//! messages with the state of their MDNs.

use std::fmt::Write;

use axum::response::Html;
use serde_json::Value;

use crate::as2::expiry::WARN_DAYS;
use crate::console::layout::{esc, layout};

/// A JSON string member, escaped; a dash when absent.
fn text(v: &Value, name: &str) -> String {
    match v.get(name) {
        Some(Value::String(s)) => esc(s),
        Some(Value::Null) | None => "<span class=\"muted\">–</span>".into(),
        Some(other) => esc(&other.to_string()),
    }
}

/// A certificate cell: subject, end, and its state (flagged unless valid).
fn certificate(v: &Value) -> String {
    let c = &v["certificate"];
    let end = c["not_after"].as_str().map(|t| t.get(..10).unwrap_or(t)).unwrap_or("");
    let days = c["days_left"].as_i64().unwrap_or(0);
    let state = match c["state"].as_str() {
        Some("expired") => "<span class=\"warn cert-expired\">expired</span>".to_string(),
        Some("expiring") => format!("<span class=\"warn cert-expiring\">expires in {days} days</span>"),
        _ => format!("<span class=\"cert-valid\">{days} days left</span>"),
    };
    format!("{}<br><span class=\"muted\">until {}</span> {state}", text(c, "subject"), esc(end))
}

fn protections(p: &Value) -> String {
    let on: Vec<&str> =
        ["signed", "encrypted", "compressed"].into_iter().filter(|k| p[*k].as_bool() == Some(true)).collect();
    if on.is_empty() { "<span class=\"muted\">none</span>".into() } else { on.join(", ") }
}

fn last_messages(p: &Value) -> String {
    let Some(list) = p["last_messages"].as_array().filter(|l| !l.is_empty()) else {
        return "<span class=\"muted\">none yet</span>".into();
    };
    let items: String = list
        .iter()
        .map(|m| {
            let stored = match m["stored_message_id"].as_str() {
                Some(id) => format!(" <a href=\"/admin/messages/{0}\">{0}</a>", esc(id)),
                None => String::new(),
            };
            format!(
                "<li><code>{}</code> {} MDN {} {}{stored}</li>",
                text(m, "received_at"),
                text(m, "message_id"),
                text(m, "mdn_mode"),
                text(m, "mdn_status")
            )
        })
        .collect();
    format!("<ul class=\"kv\">{items}</ul>")
}

fn stations_table(out: &mut String, stations: &[Value]) {
    out.push_str(
        "<h2>Stations</h2><div class=\"scroll\"><table id=\"stations\"><thead><tr><th>AS2 id</th>\
         <th>Tenant / env</th><th>Async MDN URL</th><th>Our certificate</th></tr></thead><tbody>",
    );
    for s in stations {
        let _ = write!(
            out,
            "<tr class=\"station\"><td><code>{}</code></td><td>{} / {}</td><td>{}</td><td>{}</td></tr>",
            text(s, "as2_id"),
            text(s, "tenant"),
            text(s, "environment"),
            text(s, "async_mdn_url"),
            certificate(s)
        );
    }
    out.push_str("</tbody></table></div>");
}

fn partners_table(out: &mut String, partners: &[Value]) {
    out.push_str(
        "<h2>Partners</h2><div class=\"scroll\"><table id=\"partners\"><thead><tr><th>AS2 id</th><th>Station</th>\
         <th>URL</th><th>Protections</th><th>MIC / cipher</th><th>MDN</th><th>Their certificate</th>\
         <th>Last messages</th></tr></thead><tbody>",
    );
    for p in partners {
        let mdn = format!(
            "{}{}",
            text(p, "mdn"),
            if p["mdn_signed"].as_bool() == Some(true) { ", signed" } else { "" }
        );
        let _ = write!(
            out,
            "<tr class=\"partner\"><td><code>{}</code></td><td><code>{}</code></td><td class=\"url\">{}</td>\
             <td>{}</td><td>{} / {}</td><td>{mdn}</td><td>{}</td><td>{}</td></tr>",
            text(p, "as2_id"),
            text(p, "station"),
            text(p, "url"),
            protections(p),
            text(p, "mic_algorithm"),
            text(p, "encryption_algorithm"),
            certificate(p),
            last_messages(p)
        );
    }
    out.push_str("</tbody></table></div>");
}

/// The partners page.
pub fn render(stations: &[Value], partners: &[Value]) -> Html<String> {
    const TITLE: &str = "edihub AS2 partners";
    const PATH: &str = "/admin/as2/partners";
    let mut out = format!(
        "<p class=\"muted\">AS2 stations and trading partners of the configuration. A certificate that ends \
         within {WARN_DAYS} days is flagged: exchange a new one with the partner before it does.</p>"
    );
    if stations.is_empty() {
        out.push_str("<p id=\"no-partners\" class=\"muted\">No AS2 station is configured ([as2]).</p>");
        return layout(TITLE, PATH, &out);
    }
    stations_table(&mut out, stations);
    partners_table(&mut out, partners);
    layout(TITLE, PATH, &out)
}
