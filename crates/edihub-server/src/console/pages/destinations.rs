//! The HTML face of `GET /admin/destinations`: the push destinations with
//! their rules (where, which messages, how, whether on), each linking to
//! its edit form (`console::forms::edit`).

use std::fmt::Write;

use axum::response::Html;
use edihub_store::DestinationRow;
use serde_json::Value;

use crate::console::layout::{esc, layout, url_encode};

fn member<'a>(def: &'a Value, name: &str) -> Option<&'a Value> {
    def.get(name).filter(|v| !v.is_null())
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => esc(s),
        Some(other) => esc(&other.to_string()),
        None => "<span class=\"muted\">–</span>".into(),
    }
}

fn row(out: &mut String, r: &DestinationRow) {
    let def = &r.definition.0;
    let types = match &r.message_types {
        Some(t) if !t.0.is_empty() => {
            let li: String = t.0.iter().map(|m| format!("<li><code>{}</code></li>", esc(m))).collect();
            format!("<ul class=\"kv\">{li}</ul>")
        }
        _ => "every type".into(),
    };
    let signature = member(def, "signature")
        .and_then(|s| s.get("scheme"))
        .map_or_else(|| "<span class=\"muted\">unsigned</span>".to_string(), |s| text(Some(s)));
    let state = if r.enabled { "enabled" } else { "<span class=\"warn\">disabled</span>" };
    let _ = write!(
        out,
        "<tr class=\"destination\"><td>{}</td><td>{} / {}</td><td class=\"url\"><code>{}</code></td><td>{types}</td>\
         <td>{}</td><td>{signature}</td><td class=\"num\">{} s</td><td>{state}</td><td>{}</td><td>{}</td>\
         <td><a class=\"edit\" href=\"/admin/forms/destinations/{}\">Edit</a></td></tr>",
        esc(&r.id),
        esc(&r.tenant_id),
        esc(&r.environment_id),
        text(member(def, "url")),
        text(member(def, "format")),
        text(member(def, "timeout_secs")),
        esc(&r.source),
        r.updated_at.format("%Y-%m-%d %H:%M:%S"),
        url_encode(&r.id)
    );
}

/// The destinations page.
pub fn render(rows: &[DestinationRow]) -> Html<String> {
    let mut out = String::from(
        "<p class=\"muted\">Every accepted message of a destination's tenant and environment (and of its \
         message types, if listed) is delivered to it. A disabled destination gets no new deliveries; \
         queued ones wait.</p>",
    );
    if rows.is_empty() {
        out.push_str("<p id=\"no-destinations\" class=\"muted\">No destination is configured.</p>");
        return layout("edihub destinations", "/admin/destinations", &out);
    }
    out.push_str(
        "<div class=\"scroll\"><table id=\"destinations\"><thead><tr><th>Id</th><th>Tenant / env</th><th>URL</th>\
         <th>Message types</th><th>Format</th><th>Signature</th><th class=\"num\">Timeout</th><th>State</th>\
         <th>Source</th><th>Updated (UTC)</th><th>Change</th></tr></thead><tbody>",
    );
    for r in rows {
        row(&mut out, r);
    }
    out.push_str("</tbody></table></div>");
    layout("edihub destinations", "/admin/destinations", &out)
}
