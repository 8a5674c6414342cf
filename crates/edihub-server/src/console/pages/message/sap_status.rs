//! The "Status to SAP" panel of a message page: the status changes the hub
//! owes or sent for an IDoc of a SAP system (39, 41, 40), each with the
//! message the IDoc is (or "refused": a refused IDoc is no message) and the
//! status message that carries it; on a status message's own page, the
//! changes it carries. Absent when there are none.

use std::fmt::Write;

use edihub_store::SapStatusRow;

use crate::console::layout::esc;

/// Appends the panel for `rows` (nothing when empty).
pub fn render(out: &mut String, rows: &[SapStatusRow]) {
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "<section id=\"sap-status\"><h2>Status to SAP</h2><table><thead><tr><th>Recorded (UTC)</th>\
         <th>DOCNUM</th><th>MESTYP</th><th>Message</th><th>Status</th><th>Text</th><th>Sent in</th></tr></thead><tbody>",
    );
    for r in rows {
        let text = r
            .params
            .0
            .iter()
            .enumerate()
            .fold(r.text.clone(), |t, (i, p)| t.replace(&format!("&{}", i + 1), p));
        let carried = r.batch_message_id.map_or_else(
            || "<span class=\"muted\">pending</span>".to_string(),
            |id| format!("<a href=\"/admin/messages/{id}\">{id}</a>"),
        );
        let message = r.message_id.map_or_else(
            || "<span class=\"muted\">refused</span>".to_string(),
            |id| format!("<a href=\"/admin/messages/{id}\">{id}</a>"),
        );
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{message}</td><td class=\"sap-status-code\">{}</td><td>{}</td><td>{carried}</td></tr>",
            r.created_at.format("%Y-%m-%d %H:%M:%S"),
            esc(&r.docnum),
            esc(&r.mestyp),
            esc(&r.status),
            esc(&text),
        );
    }
    out.push_str("</tbody></table></section>");
}
