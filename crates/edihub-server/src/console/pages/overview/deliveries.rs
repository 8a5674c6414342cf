//! The overview's Deliveries section: pending and failed deliveries per
//! tenant and environment, and per destination the oldest pending delivery,
//! marked late by the rule the page states ([`LATE_AFTER_SECS`]).

use std::collections::BTreeMap;
use std::fmt::Write;

use chrono::{DateTime, Utc};
use edihub_store::DeliveryBacklog;

use crate::console::layout::{esc, url_encode};

/// A pending delivery is late once its message has waited this long: a
/// healthy receiver gets it within seconds, and the first retries
/// (5 s, 30 s, 2 min by default) fit in it.
pub const LATE_AFTER_SECS: i64 = 300;

fn age(seconds: i64) -> String {
    match seconds.max(0) {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}

fn per_environment(out: &mut String, backlog: &[DeliveryBacklog]) {
    let mut sums: BTreeMap<(&str, &str), (i64, i64)> = BTreeMap::new();
    for b in backlog {
        let e = sums.entry((&b.tenant_id, &b.environment_id)).or_default();
        e.0 += b.pending;
        e.1 += b.failed;
    }
    out.push_str(
        "<div class=\"scroll\"><table id=\"delivery-totals\"><thead><tr><th>Tenant / environment</th>\
         <th class=\"num\">Pending</th><th class=\"num\">Failed</th></tr></thead><tbody>",
    );
    for ((tenant, env), (pending, failed)) in sums {
        let failed_cell = if failed > 0 {
            format!(
                "<a class=\"late\" href=\"/admin/audit?action=delivery.failed&amp;tenant={}&amp;environment={}\">{failed}</a>",
                url_encode(tenant),
                url_encode(env)
            )
        } else {
            "0".into()
        };
        let _ = write!(
            out,
            "<tr class=\"delivery-total\"><td>{} / {}</td><td class=\"num pending\">{pending}</td><td class=\"num failed\">{failed_cell}</td></tr>",
            esc(tenant),
            esc(env)
        );
    }
    out.push_str("</tbody></table></div>");
}

fn per_destination(out: &mut String, backlog: &[DeliveryBacklog], now: DateTime<Utc>) {
    out.push_str(
        "<div class=\"scroll\"><table id=\"destination-backlog\"><thead><tr><th>Destination</th><th>Tenant / env</th>\
         <th class=\"num\">Pending</th><th class=\"num\">Failed</th><th>Oldest pending</th><th>Next due (UTC)</th>\
         </tr></thead><tbody>",
    );
    for b in backlog {
        let (oldest, late) = match b.oldest_pending_at {
            Some(at) => {
                let waited = (now - at).num_seconds();
                let late = waited > LATE_AFTER_SECS;
                let mark = if late { " <strong class=\"late\">late</strong>" } else { "" };
                (format!("waiting {}{mark}", age(waited)), late)
            }
            None => ("<span class=\"muted\">none</span>".to_string(), false),
        };
        let due =
            b.oldest_pending_due_at.map(|d| d.format("%Y-%m-%d %H:%M:%S").to_string()).unwrap_or_default();
        let off = if b.enabled { "" } else { " <span class=\"warn\">(disabled)</span>" };
        let _ = write!(
            out,
            "<tr class=\"backlog{}\" data-destination=\"{}\"><td>{}{off}</td><td>{} / {}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"oldest\">{oldest}</td><td>{due}</td></tr>",
            if late { " is-late" } else { "" },
            esc(&b.destination_id),
            esc(&b.destination_id),
            esc(&b.tenant_id),
            esc(&b.environment_id),
            b.pending,
            b.failed
        );
    }
    out.push_str("</tbody></table></div>");
}

/// Renders the section into `out`.
pub fn render(out: &mut String, backlog: &[DeliveryBacklog], now: DateTime<Utc>) {
    out.push_str("<section id=\"deliveries\"><h2>Deliveries</h2>");
    if backlog.is_empty() {
        out.push_str("<p class=\"muted\">No destination is configured.</p></section>");
        return;
    }
    per_environment(out, backlog);
    let _ = write!(
        out,
        "<p class=\"muted\" id=\"late-rule\">A destination is marked <strong class=\"late\">late</strong> when its \
         oldest pending delivery has waited more than {} minutes since its message was stored.</p>",
        LATE_AFTER_SECS / 60
    );
    per_destination(out, backlog, now);
    out.push_str("</section>");
}

#[cfg(test)]
mod tests {
    use super::{LATE_AFTER_SECS, age, render};
    use chrono::{Duration, Utc};
    use edihub_store::DeliveryBacklog;

    fn backlog(id: &str, waited: Option<i64>) -> DeliveryBacklog {
        let now = Utc::now();
        DeliveryBacklog {
            destination_id: id.into(),
            tenant_id: "acme".into(),
            environment_id: "<prod>".into(),
            enabled: true,
            pending: i64::from(waited.is_some()),
            failed: 2,
            oldest_pending_at: waited.map(|s| now - Duration::seconds(s)),
            oldest_pending_due_at: waited.map(|_| now),
        }
    }

    #[test]
    fn the_oldest_pending_delivery_is_late_past_the_rule() {
        let now = Utc::now();
        let rows = [
            backlog("slow", Some(LATE_AFTER_SECS + 60)),
            backlog("fine", Some(LATE_AFTER_SECS - 60)),
            backlog("idle", None),
        ];
        let mut out = String::new();
        render(&mut out, &rows, now);
        assert!(out.contains("<tr class=\"backlog is-late\" data-destination=\"slow\">"), "{out}");
        assert!(out.contains("<tr class=\"backlog\" data-destination=\"fine\">"), "{out}");
        assert!(out.contains("<tr class=\"backlog\" data-destination=\"idle\">"), "{out}");
        assert_eq!(out.matches(">late</strong>").count(), 2, "the rule and one destination: {out}");
        assert!(
            out.contains("acme / &lt;prod&gt;</td><td class=\"num pending\">2</td>"),
            "summed, escaped: {out}"
        );
        assert!(out.contains("more than 5 minutes"), "the rule is stated");
    }

    #[test]
    fn ages_in_a_readable_unit() {
        assert_eq!(age(5), "5 s");
        assert_eq!(age(600), "10 min");
        assert_eq!(age(3 * 3600), "3 h");
        assert_eq!(age(3 * 86_400), "3 d");
    }
}
