//! The HTML faces of `GET /admin/message-types` and `GET
//! /admin/integrations`: lists of the rules in effect, each row linking to
//! its edit form (`console::forms::edit`, `console::forms::integration`).

use std::fmt::Write;

use axum::response::Html;
use edihub_store::{IntegrationRow, MessageTypeRow};
use serde_json::Value;

use crate::console::layout::{esc, layout, url_encode, window_text};

fn list(items: &[String]) -> String {
    if items.is_empty() {
        return "<span class=\"muted\">–</span>".into();
    }
    let li: String = items.iter().map(|i| format!("<li><code>{}</code></li>", esc(i))).collect();
    format!("<ul class=\"kv\">{li}</ul>")
}

/// The message types page.
pub fn types(rows: &[MessageTypeRow]) -> Html<String> {
    let mut out = String::from(
        "<p class=\"muted\">A type nobody configured falls back to the IDoc number and 168h.</p>\
         <div class=\"scroll\"><table id=\"types\"><thead><tr><th>Type</th><th>Tenant</th><th>Key fields</th>\
         <th>Excluded fields</th><th>Window</th><th>Fingerprint scope</th><th>Source</th><th>Updated (UTC)</th><th>Change</th></tr></thead><tbody>",
    );
    for r in rows {
        let tenant = if r.tenant_id.is_empty() { "(global)" } else { &r.tenant_id };
        let _ = write!(
            out,
            "<tr class=\"type\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"scope\">{}</td><td>{}</td>\
             <td>{}</td>\
             <td><a class=\"edit\" href=\"/admin/forms/message-types/{}{}\">Edit</a></td></tr>",
            esc(&r.id),
            esc(tenant),
            list(&r.duplicate_key_fields.0),
            list(&r.exclude_fields.0),
            window_text(r.duplicate_window_seconds),
            list(&r.fingerprint_scope.0),
            esc(&r.source),
            r.updated_at.format("%Y-%m-%d %H:%M:%S"),
            url_encode(&r.id),
            if r.tenant_id.is_empty() {
                String::new()
            } else {
                format!("?tenant={}", url_encode(&r.tenant_id))
            }
        );
    }
    out.push_str("</tbody></table></div>");
    layout("edihub message types", "/admin/message-types", &out)
}

/// A definition member as text (strings bare, the rest as JSON).
fn member(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// The integrations page.
pub fn integrations(rows: &[IntegrationRow]) -> Html<String> {
    let mut out = String::from(
        "<div class=\"scroll\"><table id=\"integrations\"><thead><tr><th>Id (webhook path)</th><th>Tenant / env</th>\
         <th>Rules</th><th>Source</th><th>Updated (UTC)</th><th>Change</th></tr></thead><tbody>",
    );
    for r in rows {
        let mut rules = String::new();
        if let Some(def) = r.definition.0.as_object() {
            for (k, v) in def.iter().filter(|(_, v)| !v.is_null()) {
                let _ = write!(rules, "<li>{}: <code>{}</code></li>", esc(k), esc(&member(v)));
            }
        }
        let _ = write!(
            out,
            "<tr class=\"integration\"><td><code>/api/webhook/{}</code></td><td>{} / {}</td><td><ul class=\"kv\">{rules}</ul></td>\
             <td>{}</td><td>{}</td><td><a class=\"edit\" href=\"/admin/forms/integrations/{}\">Edit</a></td></tr>",
            esc(&r.id),
            esc(&r.tenant_id),
            esc(&r.environment_id),
            esc(&r.source),
            r.updated_at.format("%Y-%m-%d %H:%M:%S"),
            url_encode(&r.id)
        );
    }
    out.push_str("</tbody></table></div>");
    layout("edihub integrations", "/admin/integrations", &out)
}
