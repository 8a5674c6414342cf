//! The HTML face of `GET /admin/messages/{id}`: the message's metadata, its
//! payload made readable, and the "why" panel, the answer to "why was this
//! blocked, and what did it block?": what the fingerprint was computed over
//! (type, MESTYP, each key path with the values found, or the IDoc number
//! with client, port and partner), its window and when it ends, and every
//! duplicate the audit log recorded against this message; then its
//! deliveries with Redeliver buttons ([`deliveries`]) and the status sent
//! back to a SAP sender ([`sap_status`]).

pub mod deliveries;
pub mod payload;
pub mod sap_status;

use std::fmt::Write;

use axum::response::Html;
use chrono::{DateTime, Utc};
use edihub_store::{AuditEvent, MessageRow};
use serde_json::Value;

use crate::console::layout::{esc, layout, url_encode, window_text};
use crate::console::pages::message::payload::view;

/// Everything the page shows beyond the message itself.
pub struct Context<'a> {
    /// The duplicates blocked against this message, newest first.
    pub duplicates: &'a [AuditEvent],
    /// Whether there are more than `duplicates` (the page links to the rest).
    pub more_duplicates: bool,
    /// The (client, port, partner) of the IDoc's control record, for a
    /// fingerprint over the IDoc number.
    pub docnum_scope: Option<[Option<String>; 3]>,
    /// The time the page was made (to say whether the window still runs).
    pub now: DateTime<Utc>,
    /// The Deliveries panel.
    pub deliveries: crate::console::pages::message::deliveries::Panel<'a>,
    /// The status changes sent (or owed) to a SAP system about this
    /// message, or carried by it ([`sap_status`]).
    pub sap_status: &'a [edihub_store::SapStatusRow],
}

fn row(out: &mut String, label: &str, value: Option<&str>) {
    let shown = value.map_or_else(|| "<span class=\"muted\">–</span>".to_string(), esc);
    let _ = write!(out, "<dt>{label}</dt><dd>{shown}</dd>");
}

fn metadata(out: &mut String, m: &MessageRow) {
    out.push_str("<section><h2>Message</h2><dl id=\"meta\">");
    row(out, "Id", Some(&m.id.to_string()));
    row(out, "Tenant / environment", Some(&format!("{} / {}", m.tenant_id, m.environment_id)));
    row(out, "Message type", Some(&m.message_type));
    row(out, "MESTYP", m.mestyp.as_deref());
    row(out, "Docnum", m.docnum.as_deref());
    row(out, "Sender", m.sender.as_deref());
    row(out, "Received (UTC)", Some(&m.received_at.format("%Y-%m-%d %H:%M:%S%.3f").to_string()));
    row(out, "Content-Type", m.content_type.as_deref());
    row(out, "Packet index", Some(&m.packet_index.to_string()));
    row(out, "Idempotency-Key", m.idempotency_key.as_deref());
    row(out, "Provider event id", m.provider_event_id.as_deref());
    out.push_str("</dl></section>");
}

fn text_of(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

fn inputs(out: &mut String, m: &MessageRow, ctx: &Context<'_>) {
    let _ = write!(
        out,
        "<p>Basis: <strong id=\"basis\">{}</strong>. Inputs: message type <code>{}</code>, MESTYP <code>{}</code>",
        esc(&m.fingerprint_basis),
        esc(&m.message_type),
        esc(m.mestyp.as_deref().unwrap_or(""))
    );
    match m.fingerprint_basis.as_str() {
        "docnum" => {
            let [mandt, sndpor, sndprn] = ctx.docnum_scope.clone().unwrap_or_default();
            let _ = write!(
                out,
                ", and the IDoc number <code>{}</code> (no configured key field had a value) with client \
                 <code>{}</code>, sending port <code>{}</code> and partner <code>{}</code>.</p>",
                esc(m.docnum.as_deref().unwrap_or("")),
                esc(mandt.as_deref().unwrap_or("")),
                esc(sndpor.as_deref().unwrap_or("")),
                esc(sndprn.as_deref().unwrap_or(""))
            );
        }
        "none" => out.push_str(". Nothing identified this message: it was not deduplicated.</p>"),
        _ => out.push_str(", and the values at the key paths:</p>"),
    }
    let Some(paths) = m.key_values.0.as_array().filter(|a| !a.is_empty()) else { return };
    out.push_str(
        "<table id=\"key-values\"><thead><tr><th>Key path</th><th>Values found</th></tr></thead><tbody>",
    );
    for entry in paths {
        let path = entry.get("path").and_then(Value::as_str).unwrap_or("?");
        let values: Vec<&Value> =
            entry.get("values").and_then(Value::as_array).into_iter().flatten().collect();
        let shown = if values.is_empty() {
            "<span class=\"muted\">missing</span>".to_string()
        } else {
            let items: String = values.iter().map(|v| format!("<li>{}</li>", esc(&text_of(v)))).collect();
            format!("<ul class=\"kv\">{items}</ul>")
        };
        let _ = write!(out, "<tr><td><code>{}</code></td><td>{shown}</td></tr>", esc(path));
    }
    out.push_str("</tbody></table>");
}

fn window(out: &mut String, m: &MessageRow, now: DateTime<Utc>) {
    let Some(expires) = m.fingerprint_expires_at else { return };
    let seconds = (expires - m.received_at).num_seconds();
    let state = if !m.fingerprint_active || expires <= now {
        "ended: the same fingerprint is accepted again as a new message"
    } else {
        "running: a repeat is blocked as a duplicate of this message"
    };
    let _ = write!(
        out,
        "<p id=\"window\">Window {} — until {} UTC ({state}).</p>",
        window_text(seconds),
        expires.format("%Y-%m-%d %H:%M:%S")
    );
}

fn duplicates(out: &mut String, m: &MessageRow, ctx: &Context<'_>) {
    let _ = write!(
        out,
        "<h3>Duplicates blocked against it ({}{})</h3>",
        ctx.duplicates.len(),
        if ctx.more_duplicates { "+" } else { "" }
    );
    if ctx.duplicates.is_empty() {
        out.push_str("<p id=\"no-duplicates\" class=\"muted\">None.</p>");
        return;
    }
    out.push_str(
        "<div class=\"scroll\"><table id=\"duplicates\"><thead><tr><th>When (UTC)</th><th>Detected by</th>\
        <th>Docnum</th><th>Key / fingerprint</th></tr></thead><tbody>",
    );
    for e in ctx.duplicates {
        let docnum = e.details.0.get("docnum").map(text_of).unwrap_or_default();
        let what = e.idempotency_key.as_deref().or(e.fingerprint.as_deref()).unwrap_or("");
        let _ = write!(
            out,
            "<tr class=\"duplicate\"><td>{}</td><td class=\"detected\">{}</td><td>{}</td><td><code>{}</code></td></tr>",
            e.occurred_at.format("%Y-%m-%d %H:%M:%S%.3f"),
            esc(e.detected_by.as_deref().unwrap_or("")),
            esc(&docnum),
            esc(what)
        );
    }
    out.push_str("</tbody></table></div>");
    let _ = write!(
        out,
        "<p><a id=\"all-duplicates\" href=\"/admin/audit?action=message.duplicate_blocked&amp;original_message_id={}\">\
         All of them in the audit log</a></p>",
        url_encode(&m.id.to_string())
    );
}

fn payload(out: &mut String, m: &MessageRow) {
    let shown = view(&m.payload, m.content_type.as_deref());
    let _ = write!(
        out,
        "<section><h2>Payload</h2><p class=\"muted\">{} bytes, shown as {}. \
         <a id=\"download\" href=\"/admin/messages/{}/payload\">Download as received</a></p>",
        m.payload.len(),
        shown.format,
        m.id
    );
    if shown.truncated {
        out.push_str("<p id=\"truncated\" class=\"warn\">Only the beginning is shown: download the payload for all of it.</p>");
    }
    let _ = write!(out, "<pre id=\"payload\">{}</pre></section>", esc(&shown.text));
}

/// Renders the page of message `m`.
pub fn render(m: &MessageRow, ctx: &Context<'_>) -> Html<String> {
    let mut out = String::with_capacity(8192 + m.payload.len() * 2);
    metadata(&mut out, m);
    out.push_str("<section id=\"why\"><h2>Why: the fingerprint</h2>");
    let _ = write!(
        out,
        "<p>Fingerprint <code id=\"fingerprint\">{}</code></p>",
        esc(m.fingerprint.as_deref().unwrap_or("none"))
    );
    inputs(&mut out, m, ctx);
    window(&mut out, m, ctx.now);
    duplicates(&mut out, m, ctx);
    out.push_str("</section>");
    crate::console::pages::message::deliveries::render(&mut out, &ctx.deliveries);
    sap_status::render(&mut out, ctx.sap_status);
    payload(&mut out, m);
    layout("edihub message", "/admin/messages", &out)
}
