//! The console's edit forms for message types and destinations:
//! `GET /admin/forms/message-types/{id}[?tenant=…]` and
//! `GET /admin/forms/destinations/{id}` show the rule in a form (an unknown
//! id: an empty form that creates it); their `POST` builds the same
//! definition the JSON admin API's `PUT` takes and hands it to the same
//! code (same validation, same `*.updated` audit with old and new), then
//! redirects to the list; a refusal shows the form again (422) naming the
//! field, with every value as typed.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::admin::rules::{TypeBody, save_type};
use crate::api::doc::errors::{BadInput, FormForged, FormRefused, Unauthenticated, Unavailable};
use crate::config::{
    DeliveryBasicAuth, DeliveryOrdering, DeliverySignatureConfig, DestinationConfig, choice_name,
    parse_choice,
};
use crate::console::forms::form::{Field, Form, Kind, lines, refusal, render};
use crate::console::forms::token::{ConsoleForm, FormSigner};
use crate::console::layout::{url_encode, window_text};
use crate::error::ApiError;
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(type_form, type_submit))
        .routes(routes!(destination_form, destination_submit))
}

#[derive(Debug, Deserialize)]
struct TenantQuery {
    tenant: Option<String>,
}

fn f(name: &'static str, label: &'static str, kind: Kind, value: String, help: &'static str) -> Field {
    Field { name, label, kind, value, help }
}

/// A message type's values as its form shows them.
struct TypeTexts {
    key_fields: String,
    exclude: String,
    window: String,
    scope: String,
}

fn type_fields(t: TypeTexts) -> Vec<Field> {
    let TypeTexts { key_fields, exclude, window, scope } = t;
    vec![
        f(
            "duplicate_key_fields",
            "Key fields",
            Kind::Lines,
            key_fields,
            "One path per line; $ for the whole payload",
        ),
        f(
            "exclude_fields",
            "Excluded fields",
            Kind::Lines,
            exclude,
            "One path per line (whole-payload keys only)",
        ),
        f("duplicate_window", "Window", Kind::Text, window, "2s, 15m, 12h, 7d; empty: 168h"),
        f(
            "fingerprint_scope",
            "Fingerprint scope",
            Kind::Lines,
            scope,
            "sender and/or receiver, one per line; empty: neither",
        ),
    ]
}

fn type_action(id: &str, tenant: Option<&str>) -> String {
    match tenant.filter(|t| !t.is_empty()) {
        Some(t) => format!("/admin/forms/message-types/{}?tenant={}", url_encode(id), url_encode(t)),
        None => format!("/admin/forms/message-types/{}", url_encode(id)),
    }
}

/// The edit form of a message type.
#[utoipa::path(get, path = "/admin/forms/message-types/{id}", tag = "console",
    params(("id" = String, Path), ("tenant" = Option<String>, Query, description = "Absent: the global default")),
    responses((status = 200, description = "The form", body = String, content_type = "text/html"), Unauthenticated, Unavailable),
    security(("basic" = [])))]
async fn type_form(
    State(state): State<AppState>,
    signer: FormSigner,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<TenantQuery>,
) -> Result<Response, ApiError> {
    let tenant = q.tenant.unwrap_or_default();
    let rows = state.store.list_message_types().await?;
    let row = rows.iter().find(|r| r.id == id && r.tenant_id == tenant);
    let fields = match row {
        Some(r) => type_fields(TypeTexts {
            key_fields: r.duplicate_key_fields.0.join("\n"),
            exclude: r.exclude_fields.0.join("\n"),
            window: window_text(r.duplicate_window_seconds),
            scope: r.fingerprint_scope.0.join("\n"),
        }),
        None => type_fields(TypeTexts {
            key_fields: String::new(),
            exclude: String::new(),
            window: String::new(),
            scope: String::new(),
        }),
    };
    let action = type_action(&id, Some(&tenant));
    let title = format!("Message type {id}");
    Ok(render(&Form {
        title: &title,
        section: "/admin/message-types",
        action: &action,
        signer: &signer,
        fields: &fields,
        refusal: None,
    }))
}

/// Saves a message type from its form; audited as message_type.updated.
#[utoipa::path(post, path = "/admin/forms/message-types/{id}", tag = "console",
    params(("id" = String, Path), ("tenant" = Option<String>, Query)),
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "Saved; to the list"),
        FormRefused, BadInput, Unauthenticated, FormForged,
        Unavailable),
    security(("basic" = [])))]
async fn type_submit(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<TenantQuery>,
    form: ConsoleForm,
) -> Result<Response, ApiError> {
    let text = |n: &str| form.get(n).unwrap_or_default().to_string();
    let window = text("duplicate_window");
    let body = TypeBody {
        duplicate_key_fields: lines(&text("duplicate_key_fields")),
        exclude_fields: lines(&text("exclude_fields")),
        duplicate_window_hours: None,
        duplicate_window: Some(window.trim().to_string()).filter(|w| !w.is_empty()),
        fingerprint_scope: lines(&text("fingerprint_scope")),
    };
    let tenant = q.tenant.filter(|t| !t.is_empty());
    match save_type(&state, id.clone(), tenant.clone(), body).await {
        Ok(_) => Ok(Redirect::to("/admin/message-types").into_response()),
        Err(e) => {
            let message = refusal(e)?;
            let fields = type_fields(TypeTexts {
                key_fields: text("duplicate_key_fields"),
                exclude: text("exclude_fields"),
                window,
                scope: text("fingerprint_scope"),
            });
            let action = type_action(&id, tenant.as_deref());
            let title = format!("Message type {id}");
            Ok(render(&Form {
                title: &title,
                section: "/admin/message-types",
                action: &action,
                signer: &form.signer,
                fields: &fields,
                refusal: Some(&message),
            }))
        }
    }
}

fn destination_fields(d: &DestinationConfig) -> Vec<Field> {
    let (scheme, secret_env) =
        d.signature.as_ref().map(|s| (s.scheme.clone(), s.secret_env.clone())).unwrap_or_default();
    let (basic_user, basic_password_env) =
        d.basic_auth.as_ref().map(|b| (b.user.clone(), b.password_env.clone())).unwrap_or_default();
    vec![
        f("tenant", "Tenant", Kind::Text, d.tenant.clone(), ""),
        f("environment", "Environment", Kind::Text, d.environment.clone(), ""),
        f("url", "URL", Kind::Text, d.url.clone(), "http(s) URL the messages are POSTed to"),
        f(
            "message_types",
            "Message types",
            Kind::Lines,
            d.message_types.clone().unwrap_or_default().join("\n"),
            "One per line; empty: every type",
        ),
        f(
            "format",
            "Format",
            Kind::Text,
            choice_name(&d.format),
            "envelope (JSON with metadata), raw (the bytes as received), sap-idoc-xml or as2",
        ),
        f(
            "as2_partner",
            "AS2 partner",
            Kind::Text,
            d.as2_partner.clone().unwrap_or_default(),
            "For format as2: the partner's AS2 id; empty otherwise",
        ),
        f(
            "ordering",
            "Ordering",
            Kind::Text,
            choice_name(&d.ordering),
            "parallel (several attempts at once) or fifo (one at a time, in commit order; a failure holds the line)",
        ),
        f("timeout_secs", "Timeout (seconds)", Kind::Text, d.timeout_secs.to_string(), ""),
        f(
            "max_in_flight",
            "Attempts at once",
            Kind::Text,
            d.max_in_flight.map(|n| n.to_string()).unwrap_or_default(),
            "Per process; empty: delivery.max_in_flight_per_destination",
        ),
        f(
            "enabled",
            "Enabled",
            Kind::Checkbox,
            if d.enabled { "on".into() } else { String::new() },
            "Off: new messages get no delivery to it; queued ones wait",
        ),
        f("signature_scheme", "Signature scheme", Kind::Text, scheme, "standard-webhooks, or empty for none"),
        f("signature_secret_env", "Signature secret (environment variable)", Kind::Text, secret_env, ""),
        f("basic_user", "Basic auth user", Kind::Text, basic_user, "empty for none"),
        f(
            "basic_password_env",
            "Basic auth password (environment variable)",
            Kind::Text,
            basic_password_env,
            "",
        ),
    ]
}

/// A destination from its form's fields, and the refusal of its timeout or
/// its attempts at once when one is not a number (then 0 stands in for it),
/// or of its format or ordering when one names no such value (then the
/// default stands in for it).
fn destination_of(id: &str, form: &ConsoleForm) -> (DestinationConfig, Option<String>) {
    let text = |n: &str| form.get(n).unwrap_or_default().trim().to_string();
    let (timeout, in_flight) = (text("timeout_secs"), text("max_in_flight"));
    let not_a_number = |key: &str, value: &str| {
        format!("config key `destinations[0].{key}`: `{value}` is not a whole number")
    };
    let format = parse_choice(&text("format"));
    // A form from before the field existed posts no ordering: the default.
    let ordering = Some(text("ordering"))
        .filter(|o| !o.is_empty())
        .map_or(Ok(DeliveryOrdering::default()), |o| parse_choice(&o));
    let unknown = |key: &str, reason: &String| format!("config key `destinations[0].{key}`: {reason}");
    let refused = match (timeout.parse::<u64>(), in_flight.parse::<u32>()) {
        (Err(_), _) => Some(not_a_number("timeout_secs", &timeout)),
        (_, Err(_)) if !in_flight.is_empty() => Some(not_a_number("max_in_flight", &in_flight)),
        _ => None,
    }
    .or_else(|| format.as_ref().err().map(|e| unknown("format", e)))
    .or_else(|| ordering.as_ref().err().map(|e| unknown("ordering", e)));
    let types = lines(form.get("message_types").unwrap_or_default());
    let (scheme, secret_env) = (text("signature_scheme"), text("signature_secret_env"));
    let (user, password_env) = (text("basic_user"), text("basic_password_env"));
    let def = DestinationConfig {
        id: id.to_string(),
        tenant: text("tenant"),
        environment: text("environment"),
        url: text("url"),
        message_types: (!types.is_empty()).then_some(types),
        format: format.unwrap_or_default(),
        as2_partner: Some(text("as2_partner")).filter(|p| !p.is_empty()),
        ordering: ordering.unwrap_or_default(),
        signature: (!scheme.is_empty() || !secret_env.is_empty())
            .then_some(DeliverySignatureConfig { scheme, secret_env }),
        basic_auth: (!user.is_empty() || !password_env.is_empty())
            .then_some(DeliveryBasicAuth { user, password_env }),
        timeout_secs: timeout.parse().unwrap_or(0),
        max_in_flight: (!in_flight.is_empty()).then(|| in_flight.parse().unwrap_or(0)),
        enabled: form.get("enabled").is_some(),
    };
    (def, refused)
}

/// The edit form of a push destination.
#[utoipa::path(get, path = "/admin/forms/destinations/{id}", tag = "console", params(("id" = String, Path)),
    responses((status = 200, description = "The form", body = String, content_type = "text/html"), Unauthenticated, Unavailable),
    security(("basic" = [])))]
async fn destination_form(
    State(state): State<AppState>,
    signer: FormSigner,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    let def: DestinationConfig = match crate::api::admin::destinations::find(&state, &id).await {
        Ok(row) => serde_json::from_value(row.definition.0)
            .map_err(|e| ApiError::Unprocessable(format!("stored destination unreadable: {e}")))?,
        Err(ApiError::NotFound(_)) => {
            serde_json::from_value(serde_json::json!({ "tenant": "", "environment": "", "url": "" }))
                .map_err(|e| ApiError::Unprocessable(e.to_string()))?
        }
        Err(e) => return Err(e),
    };
    let action = format!("/admin/forms/destinations/{}", url_encode(&id));
    let title = format!("Destination {id}");
    let fields = destination_fields(&def);
    Ok(render(&Form {
        title: &title,
        section: "/admin/destinations",
        action: &action,
        signer: &signer,
        fields: &fields,
        refusal: None,
    }))
}

/// Saves a push destination from its form; audited as destination.updated.
#[utoipa::path(post, path = "/admin/forms/destinations/{id}", tag = "console", params(("id" = String, Path)),
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "Saved; to the list"),
        FormRefused, BadInput, Unauthenticated, FormForged,
        Unavailable),
    security(("basic" = [])))]
async fn destination_submit(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    form: ConsoleForm,
) -> Result<Response, ApiError> {
    let (def, refused) = destination_of(&id, &form);
    let message = match refused {
        Some(message) => message,
        None => match crate::api::admin::destinations::store(&state, def.clone()).await {
            Ok(_) => return Ok(Redirect::to("/admin/destinations").into_response()),
            Err(e) => refusal(e)?,
        },
    };
    // Shown again exactly as typed (the numbers and the choices too, even
    // when they name nothing; an ordering left empty shows its default).
    let mut fields = destination_fields(&def);
    for t in fields.iter_mut() {
        let typed = form.get(t.name).unwrap_or_default();
        match t.name {
            "timeout_secs" | "max_in_flight" => t.value = typed.to_string(),
            "format" => t.value = typed.trim().to_string(),
            "ordering" if !typed.trim().is_empty() => t.value = typed.trim().to_string(),
            _ => {}
        }
    }
    let action = format!("/admin/forms/destinations/{}", url_encode(&id));
    let title = format!("Destination {id}");
    Ok(render(&Form {
        title: &title,
        section: "/admin/destinations",
        action: &action,
        signer: &form.signer,
        fields: &fields,
        refusal: Some(&message),
    }))
}
