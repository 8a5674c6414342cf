//! Security review: tenant and environment isolation. Senders never see or
//! collide with another environment's data, and the admin filters return
//! exactly the scope they name (admins see all tenants, by design).

use std::collections::BTreeSet;

use crate::support::*;
use axum::body::Body;
use axum::http::{Request, header};

backend_tests!(admin_filters_return_exactly_the_scope_they_name, senders_never_see_another_environments_data,);

/// The same order in acme/prod, acme/qa and globex/prod, each sent twice.
async fn three_scopes(app: &TestApp) -> [String; 3] {
    let mut ids = Vec::new();
    for key in [ACME_PROD, ACME_QA, GLOBEX_PROD] {
        let body = accepted(&app.post_xml(key, fixture("orders05.xml")).await);
        let id = body["id"].as_str().unwrap().to_string();
        duplicate_of(&app.post_xml(key, fixture("orders05.xml")).await, &id);
        ids.push(id);
    }
    [ids[0].clone(), ids[1].clone(), ids[2].clone()]
}

async fn admin_filters_return_exactly_the_scope_they_name(backend: Backend) {
    let app = TestApp::new(backend).await;
    let [prod, qa, globex] = three_scopes(&app).await;
    let admin = bearer(ADMIN_TOKEN);
    let find = |q: &str| {
        let (app, admin, q) = (&app, admin.clone(), q.to_string());
        async move {
            let res = app.get(&format!("/admin/messages?{q}"), Some(&admin)).await;
            res.expect(200);
            let found: BTreeSet<(String, String, String)> = res.json()["messages"]
                .as_array()
                .expect("messages")
                .iter()
                .map(|m| {
                    let s = |k: &str| m[k].as_str().map_or_else(|| m[k].to_string(), str::to_string);
                    (s("id"), s("tenant"), s("environment"))
                })
                .collect();
            found
        }
    };
    let all = find("docnum=0000000000004711").await;
    assert_eq!(all.len(), 3, "admins see every tenant (by design): {all:?}");
    let only =
        |found: &BTreeSet<(String, String, String)>| found.iter().map(|t| t.0.clone()).collect::<Vec<_>>();
    assert_eq!(only(&find("docnum=0000000000004711&tenant=globex").await), [globex.as_str()]);
    assert_eq!(only(&find("docnum=0000000000004711&tenant=acme&environment=qa").await), [qa.as_str()]);
    let mut acme = only(&find("docnum=0000000000004711&tenant=acme").await);
    acme.sort();
    let mut expected = vec![prod.clone(), qa.clone()];
    expected.sort();
    assert_eq!(acme, expected);
    assert!(find("docnum=0000000000004711&tenant=nobody").await.is_empty());
    assert!(find("docnum=0000000000004711&tenant=globex&environment=qa").await.is_empty());
    // The fingerprint is the same in all three scopes; the filter still separates them.
    let fp = app.get(&format!("/admin/messages/{prod}"), Some(&admin)).await.json()["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(find(&format!("fingerprint={fp}")).await.len(), 3);
    assert_eq!(
        only(&find(&format!("fingerprint={fp}&tenant=globex&environment=prod")).await),
        [globex.as_str()]
    );
    // Audit: each scope's duplicate is its own event, and the filters keep them apart.
    for (tenant, environment, original) in
        [("acme", "prod", &prod), ("acme", "qa", &qa), ("globex", "prod", &globex)]
    {
        let events = app.audit_events(&format!("tenant={tenant}&environment={environment}")).await;
        assert_eq!(events.len(), 1, "{tenant}/{environment}: {events:?}");
        assert_eq!(events[0]["tenant"], tenant);
        assert_eq!(events[0]["environment"], environment);
        assert_eq!(events[0]["original_message_id"], original.as_str());
    }
    // The HTML page honours the same filters.
    let html = app
        .send(
            Request::builder()
                .uri("/admin/audit?tenant=globex")
                .header(header::AUTHORIZATION, &admin)
                .header(header::ACCEPT, "text/html")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    html.expect(200);
    let page = html.text();
    assert_eq!(page.matches("<tr class=\"event\">").count(), 1, "{page}");
    assert!(page.contains(&globex) && !page.contains(&prod) && !page.contains(&qa));
}

async fn senders_never_see_another_environments_data(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "shared-key-1")];
    let acme = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await);
    // Another tenant: the same document and the same key are new there, never acme's answer.
    let res = app.post_xml_with(GLOBEX_PROD, fixture("orders05.xml"), &key).await;
    let globex = accepted(&res);
    assert_ne!(globex["id"], acme["id"]);
    assert!(!res.text().contains(acme["id"].as_str().unwrap()));
    // A different payload under that key in globex is refused or new, never acme's body.
    let other =
        app.post_xml_with(GLOBEX_PROD, fixture("ordchg05.xml"), &[("idempotency-key", "shared-key-1")]).await;
    assert!(!other.text().contains(acme["id"].as_str().unwrap()), "{}", other.text());
    // Another environment of the same tenant.
    let qa = accepted(&app.post_xml_with(ACME_QA, fixture("orders05.xml"), &key).await);
    assert_ne!(qa["id"], acme["id"]);
    // Each scope's repeat names its own original.
    for (k, original) in [(ACME_PROD, &acme), (GLOBEX_PROD, &globex), (ACME_QA, &qa)] {
        let res = app.post_xml(k, fixture("orders05.xml")).await;
        duplicate_of(&res, original["id"].as_str().unwrap());
    }
    assert_eq!(
        (app.count("acme", "prod").await, app.count("acme", "qa").await, app.count("globex", "prod").await),
        (1, 1, 1)
    );
}
