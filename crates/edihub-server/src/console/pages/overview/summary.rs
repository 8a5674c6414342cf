//! The overview page: per (tenant, environment, message type), for the last
//! 24 hours and 7 days, what was received, accepted and blocked (per
//! detector), the duplicate rate and refused webhook signatures; and a
//! server-rendered SVG chart of accepted messages and blocked duplicates per
//! hour (no JavaScript, no external assets); then the delivery backlog
//! ([`deliveries`](super::deliveries)).
//!
//! Received counts every message that arrived and was answered: accepted
//! ones plus blocked duplicates, where a repeated EDIFACT/X12 interchange
//! counts once (under its first message's type), however many messages it
//! carries.

use std::collections::BTreeMap;
use std::fmt::Write;

use axum::response::Html;
use chrono::{DateTime, Utc};
use edihub_store::{ActivityCount, ActivityPoint, Counted, DetectedBy};

use crate::console::layout::{esc, layout, query_string};

/// The counts of one row of the table.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    accepted: i64,
    idempotency_key: i64,
    fingerprint: i64,
    provider_event_id: i64,
    interchange: i64,
    signatures: i64,
}

impl Counts {
    fn duplicates(&self) -> i64 {
        self.idempotency_key + self.fingerprint + self.provider_event_id + self.interchange
    }

    fn received(&self) -> i64 {
        self.accepted + self.duplicates()
    }

    fn rate(&self) -> String {
        match self.received() {
            0 => "–".into(),
            n => format!("{:.1} %", self.duplicates() as f64 * 100.0 / n as f64),
        }
    }
}

type Key = (String, String, String);

fn group(rows: &[ActivityCount]) -> BTreeMap<Key, Counts> {
    let mut out: BTreeMap<Key, Counts> = BTreeMap::new();
    for r in rows {
        let c =
            out.entry((r.tenant_id.clone(), r.environment_id.clone(), r.message_type.clone())).or_default();
        let counter = match r.what {
            Counted::Accepted => &mut c.accepted,
            Counted::Duplicate(DetectedBy::IdempotencyKey) => &mut c.idempotency_key,
            Counted::Duplicate(DetectedBy::Fingerprint) => &mut c.fingerprint,
            Counted::Duplicate(DetectedBy::ProviderEventId) => &mut c.provider_event_id,
            Counted::Duplicate(DetectedBy::Interchange) => &mut c.interchange,
            Counted::SignaturesRefused => &mut c.signatures,
        };
        *counter += r.count;
    }
    out
}

fn table(out: &mut String, id: &str, title: &str, rows: &[ActivityCount]) {
    let _ = write!(out, "<section><h2>{title}</h2>");
    let grouped = group(rows);
    if grouped.is_empty() {
        let _ = write!(out, "<p id=\"{id}-empty\" class=\"muted\">Nothing arrived.</p></section>");
        return;
    }
    let _ = write!(
        out,
        "<div class=\"scroll\"><table id=\"{id}\"><thead><tr><th>Tenant / env</th><th>Message type</th>\
         <th class=\"num\">Received</th><th class=\"num\">Accepted</th><th class=\"num\">Dup: key</th>\
         <th class=\"num\">Dup: fingerprint</th><th class=\"num\">Dup: event id</th><th class=\"num\">Dup: interchange</th>\
         <th class=\"num\">Duplicate rate</th>\
         <th class=\"num\">Signatures refused</th></tr></thead><tbody>"
    );
    for ((tenant, env, message_type), c) in &grouped {
        let link = query_string(&[
            ("tenant", Some(tenant)),
            ("environment", Some(env)),
            ("message_type", Some(message_type)),
        ]);
        let shown_type = if message_type.is_empty() {
            "<span class=\"muted\">(webhooks)</span>".to_string()
        } else {
            format!("<a href=\"/admin/messages?{}\">{}</a>", esc(&link), esc(message_type))
        };
        let _ = write!(
            out,
            "<tr class=\"activity\"><td>{} / {}</td><td class=\"type\">{shown_type}</td><td class=\"num received\">{}</td>\
             <td class=\"num accepted\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num interchange\">{}</td><td class=\"num rate\">{}</td><td class=\"num signatures\">{}</td></tr>",
            esc(tenant),
            esc(env),
            c.received(),
            c.accepted,
            c.idempotency_key,
            c.fingerprint,
            c.provider_event_id,
            c.interchange,
            c.rate(),
            c.signatures
        );
    }
    out.push_str("</tbody></table></div></section>");
}

/// A bar chart: per interval, accepted (blue) and duplicates (orange) side
/// by side, with the hour under every fourth pair.
fn chart(out: &mut String, bounds: &[DateTime<Utc>], series: &[ActivityPoint]) {
    const W: i64 = 960;
    const H: i64 = 220;
    const TOP: i64 = 20;
    const BOTTOM: i64 = 30;
    let max = series.iter().map(|p| p.accepted.max(p.duplicates)).max().unwrap_or(0).max(1);
    let slot = W / i64::try_from(series.len().max(1)).unwrap_or(1);
    let bar = (slot / 2 - 2).max(1);
    let height = |n: i64| n * (H - TOP - BOTTOM) / max;
    let _ = write!(
        out,
        "<section><h2>Last 24 hours, per hour</h2><svg id=\"chart\" role=\"img\" viewBox=\"0 0 {W} {H}\" \
         width=\"{W}\" height=\"{H}\" xmlns=\"http://www.w3.org/2000/svg\" aria-labelledby=\"chart-title\">\
         <title id=\"chart-title\">Accepted messages and blocked duplicates per hour (most in an hour: {max})</title>\
         <line x1=\"0\" y1=\"{y}\" x2=\"{W}\" y2=\"{y}\" stroke=\"#999\"/>",
        y = H - BOTTOM
    );
    for (i, p) in series.iter().enumerate() {
        let x = i64::try_from(i).unwrap_or(0) * slot;
        let from = bounds.get(i).map(|t| t.format("%H:%M").to_string()).unwrap_or_default();
        for (offset, n, color, what) in
            [(0, p.accepted, "#2f6db5", "accepted"), (bar + 1, p.duplicates, "#e08a00", "duplicates")]
        {
            let h = height(n);
            let _ = write!(
                out,
                "<rect class=\"{what}\" x=\"{}\" y=\"{}\" width=\"{bar}\" height=\"{h}\" fill=\"{color}\"><title>{from} UTC: {n} {what}</title></rect>",
                x + offset,
                H - BOTTOM - h
            );
        }
        if i % 4 == 0 {
            let _ =
                write!(out, "<text x=\"{x}\" y=\"{}\" font-size=\"12\" fill=\"#555\">{from}</text>", H - 10);
        }
    }
    let _ = write!(
        out,
        "<rect x=\"{}\" y=\"4\" width=\"10\" height=\"10\" fill=\"#2f6db5\"/><text x=\"{}\" y=\"13\" font-size=\"12\">accepted</text>\
         <rect x=\"{}\" y=\"4\" width=\"10\" height=\"10\" fill=\"#e08a00\"/><text x=\"{}\" y=\"13\" font-size=\"12\">duplicates</text></svg></section>",
        W - 200,
        W - 186,
        W - 110,
        W - 96
    );
}

/// Renders the overview.
pub fn render(
    day: &[ActivityCount],
    week: &[ActivityCount],
    bounds: &[DateTime<Utc>],
    series: &[ActivityPoint],
    backlog: &[edihub_store::DeliveryBacklog],
) -> Html<String> {
    let mut out = String::with_capacity(16 * 1024);
    chart(&mut out, bounds, series);
    table(&mut out, "day", "Last 24 hours", day);
    table(&mut out, "week", "Last 7 days", week);
    let now = bounds.last().copied().unwrap_or_else(Utc::now);
    crate::console::pages::overview::deliveries::render(&mut out, backlog, now);
    layout("edihub overview", "/admin", &out)
}

#[cfg(test)]
mod tests {
    use super::Counts;

    #[test]
    fn received_and_rate_count_every_detector() {
        let c = Counts {
            accepted: 3,
            idempotency_key: 1,
            fingerprint: 2,
            provider_event_id: 1,
            interchange: 1,
            signatures: 9,
        };
        assert_eq!((c.received(), c.rate()), (8, "62.5 %".to_string()));
        assert_eq!(Counts::default().rate(), "–");
    }
}
