//! What every console page shares: escaping, the layout with its
//! navigation and inline style (no external assets: the console works on an
//! air-gapped network, and the admin CSP allows nothing else), and the
//! content negotiation that sends browsers HTML and scripts JSON.
//!
//! Pages are strings written with `write!`; every value that a sender or an
//! admin controls goes through [`esc`] (element content and attribute values
//! alike) or [`url_encode`] (query values inside an escaped `href`).

use std::fmt::Write;

use axum::http::{HeaderMap, header};
use axum::response::Html;

use crate::config::Window;

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
pub fn url_encode(text: &str) -> String {
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

/// A query string (`a=1&b=2`, values encoded) of the pairs whose value is
/// present and not empty.
pub fn query_string(pairs: &[(&str, Option<&str>)]) -> String {
    let kept = pairs.iter().filter_map(|(k, v)| v.filter(|v| !v.is_empty()).map(|v| (k, v)));
    kept.map(|(k, v)| format!("{k}={}", url_encode(v))).collect::<Vec<_>>().join("&")
}

/// Whether the client asked for HTML (a browser) rather than JSON: the
/// first type of its `Accept` is `text/html`.
pub fn wants_html(headers: &HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|accept| {
        accept.split(',').next().is_some_and(|first| first.trim().starts_with("text/html"))
    })
}

/// The console's style sheet: readable at 1280 px and on a phone (tables
/// scroll sideways inside their box), visible keyboard focus.
pub const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#222}\
main{padding:1rem 1.5rem}nav{background:#1f3a5f;padding:.5rem 1.5rem;display:flex;flex-wrap:wrap;gap:1rem}\
nav a{color:#fff;text-decoration:none}nav a[aria-current]{font-weight:bold;text-decoration:underline}\
a:focus,button:focus,input:focus,select:focus{outline:2px solid #e08a00;outline-offset:1px}\
.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%;font-size:.9rem}\
th,td{border-bottom:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}\
th{background:#f4f4f4}td.num,th.num{text-align:right}code{font-size:.8rem;word-break:break-all}\
form{display:flex;flex-wrap:wrap;gap:.5rem;margin-bottom:1rem;align-items:flex-end}\
label{display:flex;flex-direction:column;font-size:.8rem}.muted{color:#777}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{font-weight:600}dd{margin:0}\
pre{background:#f7f7f7;border:1px solid #ddd;padding:.75rem;overflow:auto;max-height:40rem;font-size:.8rem}\
section{margin-bottom:1.5rem}ul.kv{margin:0;padding-left:1rem}.warn{color:#9a3b00}\
svg{max-width:100%;height:auto}\
form.inline{display:inline-block;margin:0 .5rem .5rem 0}button{padding:.35rem .75rem;font-size:.9rem}\
article.delivery{border:1px solid #ddd;padding:.25rem .75rem;margin-bottom:.75rem}\
.notice{background:#eef6e8;border:1px solid #8b5;padding:.5rem}.error{background:#fdecea;border:1px solid #c33;padding:.5rem}\
.status.failed,.late{color:#b00020;font-weight:600}.status.pending{color:#9a3b00}.status.delivered{color:#2b7a0b}\
form.edit{flex-direction:column;align-items:stretch;max-width:40rem}.field{display:flex;flex-direction:column;gap:.2rem}\
.field label{font-weight:600}.field input:not([type=checkbox]),.field textarea{font:inherit;padding:.3rem}\
input[aria-invalid=true],textarea[aria-invalid=true]{border:2px solid #b00020}.field-error{color:#b00020;font-size:.8rem}";

/// The console's sections, for the navigation bar: (path, label).
const SECTIONS: [(&str, &str); 7] = [
    ("/admin", "Overview"),
    ("/admin/messages", "Messages"),
    ("/admin/audit", "Audit"),
    ("/admin/message-types", "Message types"),
    ("/admin/integrations", "Integrations"),
    ("/admin/destinations", "Destinations"),
    ("/admin/as2/partners", "AS2 partners"),
];

/// A whole page: `title` (plain text, escaped here), the navigation with
/// `section` marked current, and `body` (already HTML).
pub fn layout(title: &str, section: &str, body: &str) -> Html<String> {
    let mut out = String::with_capacity(body.len() + 2048);
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body><nav aria-label=\"Console\">",
        esc(title)
    );
    for (path, label) in SECTIONS {
        let current = if path == section { " aria-current=\"page\"" } else { "" };
        let _ = write!(out, "<a href=\"{path}\"{current}>{label}</a>");
    }
    let _ = write!(out, "</nav><main><h1>{}</h1>{body}</main></body></html>", esc(title));
    Html(out)
}

/// A window in seconds as the configuration file and the console's forms
/// write it (`168h`, `15m`, `2s`), so that a page shows what an admin types.
/// A number of seconds that is no window (none edihub writes) shows as such,
/// and a form refuses it when it is sent back.
pub fn window_text(seconds: i64) -> String {
    Window::from_seconds(seconds).map_or_else(|| format!("{seconds}s"), |w| w.to_string())
}

/// A labelled text input that keeps its value.
pub fn input(out: &mut String, name: &str, label: &str, value: Option<&str>) {
    let _ = write!(
        out,
        "<label>{label}<input name=\"{name}\" id=\"f-{name}\" value=\"{}\"></label>",
        esc(value.unwrap_or_default())
    );
}

#[cfg(test)]
mod tests {
    use super::{esc, query_string, url_encode, window_text};

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
        assert_eq!(query_string(&[("a", Some("1 2")), ("b", None), ("c", Some(""))]), "a=1%202");
    }

    #[test]
    fn windows_in_the_largest_whole_unit() {
        assert_eq!(window_text(604_800), "168h");
        assert_eq!(window_text(900), "15m");
        assert_eq!(window_text(2), "2s");
        assert_eq!(window_text(0), "0s");
    }
}
