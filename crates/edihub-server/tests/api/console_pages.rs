//! The console's HTML pages over HTTP, on both backends: what a browser
//! (`Accept: text/html`) gets from `/admin`, `/admin/messages`,
//! `/admin/messages/{id}`, `/admin/message-types` and `/admin/integrations`,
//! that scripts still get JSON, that sender-controlled text is escaped, that
//! the admin hardening headers are there, and that looking changes nothing.

use crate::support::*;
use axum::body::Body;
use axum::http::Request;
use serde_json::Value;

backend_tests!(
    message_page_explains_a_key_field_fingerprint,
    message_page_explains_the_docnum_fallback,
    message_pages_escape_hostile_values,
    message_search_filters_and_pages,
    bounded_search_links_the_next_page,
    overview_counts_and_charts,
    catalog_lists_show_the_rules,
);

/// `GET path` as a browser with the admin credential.
async fn page(app: &TestApp, path: &str) -> TestResponse {
    let request = Request::builder()
        .uri(path)
        .header("authorization", basic("admin", ADMIN_TOKEN))
        .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .body(Body::empty())
        .unwrap();
    let res = app.send(request).await;
    res.expect(200);
    assert!(res.header("content-type").is_some_and(|t| t.starts_with("text/html")), "{path}: HTML");
    assert_eq!(res.header("cache-control"), Some("no-store"), "{path}");
    assert_eq!(res.header("x-frame-options"), Some("DENY"), "{path}");
    assert!(
        res.header("content-security-policy").is_some_and(|p| p.contains("default-src 'none'")),
        "{path}"
    );
    res
}

/// Everything stored: messages per scope and the whole audit log.
async fn snapshot(app: &TestApp) -> (i64, i64, usize) {
    (app.count("acme", "prod").await, app.count("acme", "qa").await, app.audit_events("").await.len())
}

/// The raw markup that must never appear unescaped.
const HOSTILE: [&str; 3] = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "\"><b>x</b>"];

fn assert_escaped(html: &str) {
    for raw in HOSTILE {
        assert!(!html.contains(raw), "unescaped {raw:?} in the page");
    }
}

async fn message_page_explains_a_key_field_fingerprint(backend: Backend) {
    let app = TestApp::new(backend).await;
    let original = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let id = original["id"].as_str().unwrap().to_string();
    duplicate_of(&app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await, &id);
    duplicate_of(&app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await, &id);
    let before = snapshot(&app).await;

    let html = page(&app, &format!("/admin/messages/{id}")).await.text();
    assert!(html.contains("<title>edihub message</title>"));
    assert!(html.contains("<strong id=\"basis\">key_fields</strong>"), "basis shown");
    assert!(html.contains("MESTYP <code>ORDERS</code>"), "MESTYP is an input");
    assert!(html.contains("<code>E1EDK01.BELNR</code></td><td><ul class=\"kv\"><li>4500012345</li>"));
    assert!(
        html.contains("<code>E1EDK02[QUALF=001].BELNR</code></td><td><ul class=\"kv\"><li>PO-77881</li>")
    );
    assert!(
        html.contains(&format!(
            "<code id=\"fingerprint\">{}</code>",
            original["fingerprint"].as_str().unwrap()
        ))
    );
    assert!(html.contains("Window 168h — until "), "the window and its end");
    assert!(html.contains("running: a repeat is blocked"));
    assert_eq!(html.matches("<tr class=\"duplicate\">").count(), 2, "both blocked repeats listed");
    assert!(html.contains("<td>0000000000004712</td>"), "the repeat's docnum");
    assert!(html.contains(&format!("original_message_id={id}")), "link to the audit log");
    // The payload, indented, escaped, with the raw download.
    assert!(html.contains(&format!("href=\"/admin/messages/{id}/payload\"")));
    assert!(html.contains("shown as XML"));
    assert!(html.contains("\n  &lt;IDOC BEGIN=&quot;1&quot;&gt;"), "indented and escaped XML");

    // Scripts still get JSON.
    let json = app.get(&format!("/admin/messages/{id}"), Some(&bearer(ADMIN_TOKEN))).await;
    json.expect(200);
    assert_eq!(json.json()["id"], id.as_str());
    // The duplicates of the audit API by original message id.
    let events = app.audit_events(&format!("original_message_id={id}")).await;
    assert_eq!(events.len(), 2);
    app.get("/admin/audit?original_message_id=nope", Some(&bearer(ADMIN_TOKEN)))
        .await
        .expect_problem(400, "original_message_id");
    assert_eq!(snapshot(&app).await, before, "looking changes nothing");
}

async fn message_page_explains_the_docnum_fallback(backend: Backend) {
    let app = TestApp::new(backend).await;
    let res = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("x-message-type", "NOKEYS")]).await;
    let id = accepted(&res)["id"].as_str().unwrap().to_string();
    let html = page(&app, &format!("/admin/messages/{id}")).await.text();
    assert!(html.contains("<strong id=\"basis\">docnum</strong>"));
    assert!(html.contains(
        "the IDoc number <code>0000000000004711</code> (no configured key field had a value) with client \
         <code>100</code>, sending port <code>SAPQ01</code> and partner <code>Q01CLNT100</code>"
    ));
    assert!(html.contains("<p id=\"no-duplicates\" class=\"muted\">None.</p>"));
}

/// A shop order whose key value and docnum carry markup.
async fn post_hostile(app: &TestApp) -> Value {
    let body = serde_json::json!({
        "docnum": HOSTILE[1],
        "order": { "id": HOSTILE[0], "note": HOSTILE[2] },
    });
    accepted(&app.post_json(ACME_PROD, body.to_string(), &[("x-message-type", "shop.order")]).await)
}

async fn message_pages_escape_hostile_values(backend: Backend) {
    let app = TestApp::new(backend).await;
    let m = post_hostile(&app).await;
    let id = m["id"].as_str().unwrap();
    let body = serde_json::json!({ "docnum": "2", "order": { "id": HOSTILE[0] } });
    app.post_json(ACME_PROD, body.to_string(), &[("x-message-type", "shop.order")]).await.expect(200);
    let before = snapshot(&app).await;

    let detail = page(&app, &format!("/admin/messages/{id}")).await.text();
    assert_escaped(&detail);
    assert!(detail.contains("<li>&lt;script&gt;alert(1)&lt;/script&gt;</li>"), "the key value, escaped");
    assert!(detail.contains("&lt;img src=x onerror=alert(2)&gt;"), "the docnum, escaped");
    assert!(detail.contains("shown as JSON"));
    assert_eq!(detail.matches("<tr class=\"duplicate\">").count(), 1);

    let query = format!("/admin/messages?key_value={}", "%3Cscript%3Ealert(1)%3C%2Fscript%3E");
    let found = page(&app, &query).await.text();
    assert_escaped(&found);
    assert_eq!(found.matches("<tr class=\"message\">").count(), 1);
    assert!(found.contains(&format!("href=\"/admin/messages/{id}\"")), "each row links to its page");
    assert!(found.contains("value=\"&lt;script&gt;alert(1)&lt;/script&gt;\""), "the form keeps the value");

    let audit = page(&app, "/admin/audit?action=message.duplicate_blocked").await.text();
    assert_escaped(&audit);
    assert!(audit.contains("<li><code>$.order.id</code>: &lt;script&gt;alert(1)&lt;/script&gt;</li>"));
    assert!(audit.contains(&format!("<a class=\"original\" href=\"/admin/messages/{id}\">")));
    assert_eq!(snapshot(&app).await, before, "looking changes nothing");
}

async fn message_search_filters_and_pages(backend: Backend) {
    let app = TestApp::new(backend).await;
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    for n in 1..=3 {
        let body = serde_json::json!({ "docnum": format!("D{n}"), "order": { "id": format!("O{n}") } });
        accepted(&app.post_json(ACME_PROD, body.to_string(), &[("x-message-type", "shop.order")]).await);
    }
    let before = snapshot(&app).await;

    // No criteria: the newest messages, with a link to the next page.
    let first = page(&app, "/admin/messages?limit=2").await.text();
    assert_eq!(first.matches("<tr class=\"message\">").count(), 2);
    assert!(first.contains("<td class=\"docnum\">D3</td>") && first.contains("<td class=\"docnum\">D2</td>"));
    let second = page(&app, &next_link(&first)).await.text();
    assert!(second.contains("<td class=\"docnum\">D1</td>") && second.contains("0000000000004711"));
    assert!(!second.contains("<td class=\"docnum\">D2</td>"), "no repeats across pages");

    // Each criterion.
    for (query, expected) in [
        ("docnum=4711", "0000000000004711"),
        ("key_value=O2", "D2"),
        ("sender=Q01CLNT100", "0000000000004711"),
        ("message_type=ORDERS05", "0000000000004711"),
    ] {
        let html = page(&app, &format!("/admin/messages?{query}")).await.text();
        assert_eq!(html.matches("<tr class=\"message\">").count(), 1, "{query}");
        assert!(html.contains(&format!("<td class=\"docnum\">{expected}</td>")), "{query}");
    }
    let future = page(&app, "/admin/messages?since=2999-01-01T00:00:00Z").await.text();
    assert!(future.contains("id=\"empty\""), "a time range in the future finds nothing");
    // JSON keeps its rule and gains the new filters and a cursor.
    let json = app.get("/admin/messages?key_value=O2", Some(&bearer(ADMIN_TOKEN))).await;
    json.expect(200);
    assert_eq!(json.json()["messages"][0]["docnum"], "D2");
    app.get("/admin/messages?limit=5", Some(&bearer(ADMIN_TOKEN))).await.expect_problem(400, "key_value");
    app.get("/admin/messages?sender=x&cursor=junk", Some(&bearer(ADMIN_TOKEN)))
        .await
        .expect_problem(400, "cursor");
    assert_eq!(snapshot(&app).await, before, "looking changes nothing");
}

/// With `admin.search_scan_messages = 2`, a sender search over five
/// messages whose match is the oldest: the JSON pages are short (empty) with
/// a `next_cursor` until the match, and following it finds it once; the
/// HTML page says how far back it looked and links to the next.
async fn bounded_search_links_the_next_page(backend: Backend) {
    let app = TestApp::start(backend, TestConfig::new().with(|c| c.admin.search_scan_messages = 2)).await;
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    for n in 1..=4 {
        let body = serde_json::json!({ "docnum": format!("D{n}"), "order": { "id": format!("O{n}") } });
        accepted(&app.post_json(ACME_PROD, body.to_string(), &[("x-message-type", "shop.order")]).await);
    }
    let admin = bearer(ADMIN_TOKEN);
    let (mut path, mut pages, mut found) =
        ("/admin/messages?sender=Q01CLNT100".to_string(), Vec::new(), Vec::new());
    loop {
        let res = app.get(&path, Some(&admin)).await;
        res.expect(200);
        let body = res.json();
        let docnums: Vec<String> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["docnum"].as_str().unwrap().to_string())
            .collect();
        pages.push(docnums.len());
        found.extend(docnums);
        match body["next_cursor"].as_str() {
            Some(cursor) => path = format!("/admin/messages?sender=Q01CLNT100&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(found, ["0000000000004711"], "the one match, once");
    assert_eq!(pages, [0, 0, 1], "two messages examined a page");

    let html = page(&app, "/admin/messages?sender=Q01CLNT100").await.text();
    assert!(!html.contains("id=\"empty\""), "not \"no messages\" while older ones are left");
    assert!(html.contains("id=\"scanned\"") && html.contains("0 found among the messages received since"));
    assert!(html.contains("looks at 2 messages a page"));
    let next = next_link(&html);
    assert!(next.contains("sender=Q01CLNT100") && next.contains("cursor="), "{next}");
    let second = page(&app, &next).await.text();
    assert!(second.contains("0 found among"), "the second pair holds no match either");
    let last = page(&app, &next_link(&second)).await.text();
    assert!(last.contains("<td class=\"docnum\">0000000000004711</td>") && !last.contains("id=\"next\""));
}

/// The target of a search page's "Older messages" link.
fn next_link(html: &str) -> String {
    let start = html.find("id=\"next\" href=\"").expect("a next link") + "id=\"next\" href=\"".len();
    html[start..html[start..].find('"').unwrap() + start].replace("&amp;", "&")
}

async fn overview_counts_and_charts(backend: Backend) {
    let app = TestApp::new(backend).await;
    let empty = page(&app, "/admin").await.text();
    assert!(empty.contains("<title>edihub overview</title>") && empty.contains("id=\"day-empty\""));
    let original = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    duplicate_of(
        &app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await,
        original["id"].as_str().unwrap(),
    );
    let keyed = [("x-message-type", "shop.order"), ("idempotency-key", "k-1")];
    let body = serde_json::json!({ "docnum": "1", "order": { "id": HOSTILE[0] } }).to_string();
    accepted(&app.post_json(ACME_QA, body.clone(), &keyed).await);
    app.post_json(ACME_QA, body, &keyed).await.expect(200);
    // An X12 interchange and its repeat: one message, one repeated interchange.
    let x12 = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/edifact/real/sapabh_O2C-ASCX12-004010_01a-SalesOrderRequest_X12-850.x12"),
    )
    .expect("the X12 fixture");
    let auth = bearer(ACME_PROD);
    let post_x12 = || app.post_receive(Some(&auth), Some("application/EDI-X12"), x12.clone(), &[]);
    post_x12().await.expect(202);
    let again = post_x12().await;
    again.expect(200);
    assert!(again.replayed());
    let before = snapshot(&app).await;

    let html = page(&app, "/admin").await.text();
    assert_escaped(&html);
    let day =
        &html[html.find("id=\"day\"").expect("24 h table")..html.find("id=\"week\"").expect("7 d table")];
    assert!(day.contains(
        "<td>acme / prod</td><td class=\"type\"><a href=\"/admin/messages?tenant=acme&amp;environment=prod&amp;message_type=ORDERS05\">ORDERS05</a></td>\
         <td class=\"num received\">2</td><td class=\"num accepted\">1</td><td class=\"num\">0</td><td class=\"num\">1</td>\
         <td class=\"num\">0</td><td class=\"num interchange\">0</td><td class=\"num rate\">50.0 %</td>"
    ), "{day}");
    assert!(day.contains("<td>acme / qa</td>") && day.contains(">shop.order</a>"), "{day}");
    assert!(day.contains("<td class=\"num\">1</td><td class=\"num\">0</td><td class=\"num\">0</td><td class=\"num interchange\">0</td><td class=\"num rate\">50.0 %</td>"));
    assert!(day.contains(
        ">X12.850</a></td><td class=\"num received\">2</td><td class=\"num accepted\">1</td>\
         <td class=\"num\">0</td><td class=\"num\">0</td><td class=\"num\">0</td><td class=\"num interchange\">1</td>\
         <td class=\"num rate\">50.0 %</td>"
    ), "the repeated interchange is counted: {day}");
    // The chart: 24 pairs of bars, one per clock hour (the last one up to
    // now), holding the three messages and the three duplicates.
    assert!(html.contains("<svg id=\"chart\""));
    assert_eq!(html.matches("<rect class=\"accepted\"").count(), 24);
    assert!(html.contains(":00 UTC: "), "bars start on the hour");
    assert_eq!((chart_total(&html, "accepted"), chart_total(&html, "duplicates")), (3, 3));
    assert!(!html.contains("<script"), "no JavaScript");
    assert_eq!(snapshot(&app).await, before, "looking changes nothing");
    app.get("/admin", None).await.expect(401);
}

/// The sum of the chart's bars of one kind, from their titles
/// (`HH:MM UTC: n accepted`).
fn chart_total(html: &str, what: &str) -> i64 {
    html.split(" UTC: ")
        .skip(1)
        .filter_map(|rest| rest.split_once("</title>").map(|(title, _)| title))
        .filter_map(|title| title.split_once(' '))
        .filter(|(_, kind)| *kind == what)
        .map(|(n, _)| n.parse::<i64>().expect("a count"))
        .sum()
}

async fn catalog_lists_show_the_rules(backend: Backend) {
    let app = TestApp::new(backend).await;
    let hostile = serde_json::json!({ "duplicate_key_fields": ["$.a"], "duplicate_window_hours": 2 });
    let put = Request::builder()
        .method("PUT")
        .uri("/admin/message-types/%3Cscript%3Ealert(1)%3C%2Fscript%3E?tenant=acme")
        .header("authorization", bearer(ADMIN_TOKEN))
        .header("content-type", "application/json")
        .body(Body::from(hostile.to_string()))
        .unwrap();
    app.send(put).await.expect(200);
    let before = snapshot(&app).await;
    let types = page(&app, "/admin/message-types").await.text();
    assert_escaped(&types);
    assert!(types.contains(
        "<tr class=\"type\"><td>ORDERS05</td><td>(global)</td><td><ul class=\"kv\"><li><code>E1EDK01.BELNR</code></li>\
         <li><code>E1EDK02[QUALF=001].BELNR</code></li></ul></td><td><span class=\"muted\">–</span></td><td>168h</td>\
         <td class=\"scope\"><span class=\"muted\">–</span></td><td>config</td>"
    ));
    assert!(types.contains("<td>WIN2S</td><td>(global)</td>") && types.contains("<td>2s</td>"));
    assert!(
        types.contains("<td>&lt;script&gt;alert(1)&lt;/script&gt;</td><td>acme</td>"),
        "an admin-named type, escaped"
    );
    let integrations = page(&app, "/admin/integrations").await.text();
    assert!(
        integrations.contains("<title>edihub integrations</title>")
            && integrations.contains("id=\"integrations\"")
    );
    let json = app.get("/admin/message-types", Some(&bearer(ADMIN_TOKEN))).await;
    assert!(json.json()["message_types"].is_array(), "scripts still get JSON");
    assert_eq!(snapshot(&app).await, before, "looking changes nothing");
}
