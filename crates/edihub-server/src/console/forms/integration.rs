//! The console's edit form for webhook integrations:
//! `GET /admin/forms/integrations/{id}` shows one (an unknown id: an empty
//! form that creates it) and its `POST` builds the definition
//! `PUT /admin/integrations/{id}` takes (the nested `event_id` and
//! `signature` from flat fields) and hands it to the same code; like the
//! other edit forms ([`super::edit`]), a refusal shows the form again.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::admin::rules::save_integration;
use crate::api::doc::errors::{BadInput, FormForged, FormRefused, Unauthenticated, Unavailable};
use crate::config::{EventIdConfig, IntegrationConfig, SignatureConfig};
use crate::console::forms::form::{Field, Form, Kind, lines, refusal, render};
use crate::console::forms::token::{ConsoleForm, FormSigner};
use crate::console::layout::url_encode;
use crate::error::ApiError;
use crate::extract::ApiPath;
use crate::state::AppState;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(integration_form, integration_submit))
}

fn text(name: &'static str, label: &'static str, value: Option<&str>, help: &'static str) -> Field {
    Field { name, label, kind: Kind::Text, value: value.unwrap_or_default().to_string(), help }
}

fn fields(d: &IntegrationConfig, event_id_days: Option<String>) -> Vec<Field> {
    let event = d.event_id.as_ref();
    let sig = d.signature.as_ref();
    let types = d.message_types.clone().unwrap_or_default().join("\n");
    let days = event_id_days.or_else(|| d.event_id_days.map(|n| n.to_string()));
    vec![
        text("tenant", "Tenant", Some(&d.tenant), ""),
        text("environment", "Environment", Some(&d.environment), ""),
        text("message_type", "Message type", d.message_type.as_deref(), "A fixed type, or empty"),
        text(
            "message_type_path",
            "Message type path",
            d.message_type_path.as_deref(),
            "JSONPath to the type in the payload",
        ),
        Field {
            name: "message_types",
            label: "Allowed types",
            kind: Kind::Lines,
            value: types,
            help: "With a path: one per line",
        },
        text("event_id_header", "Event id header", event.and_then(|e| e.header.as_deref()), ""),
        text("event_id_path", "Event id path", event.and_then(|e| e.path.as_deref()), "JSONPath, e.g. $.id"),
        text(
            "event_id_days",
            "Keep event ids (days)",
            days.as_deref(),
            "0: forever; empty: retention.keys_days",
        ),
        text(
            "signature_scheme",
            "Signature scheme",
            sig.map(|s| s.scheme.as_str()),
            "standard-webhooks, github, shopify, stripe, hmac or none",
        ),
        text(
            "signature_secret_env",
            "Secret (environment variable)",
            sig.and_then(|s| s.secret_env.as_deref()),
            "",
        ),
        text("signature_header", "Signature header (hmac)", sig.and_then(|s| s.header.as_deref()), ""),
        text(
            "signature_encoding",
            "Encoding (hmac)",
            sig.and_then(|s| s.encoding.as_deref()),
            "hex or base64",
        ),
        text("signature_prefix", "Prefix (hmac)", sig.and_then(|s| s.prefix.as_deref()), "e.g. sha256="),
    ]
}

/// An integration from the form, and the refusal of `event_id_days` when it
/// is not a number (then it is left out).
fn integration_of(id: &str, form: &ConsoleForm) -> (IntegrationConfig, Option<String>) {
    let opt = |n: &str| Some(form.get(n).unwrap_or_default().trim().to_string()).filter(|v| !v.is_empty());
    let days = opt("event_id_days");
    let parsed = days.as_deref().map(str::parse::<u32>);
    let bad_days = matches!(parsed, Some(Err(_))).then(|| {
        format!(
            "config key `integrations[0].event_id_days`: `{}` is not a whole number of days",
            days.unwrap_or_default()
        )
    });
    let (header, path) = (opt("event_id_header"), opt("event_id_path"));
    let scheme = opt("signature_scheme");
    let (secret_env, sig_header) = (opt("signature_secret_env"), opt("signature_header"));
    let (encoding, prefix) = (opt("signature_encoding"), opt("signature_prefix"));
    let any_sig = [&scheme, &secret_env, &sig_header, &encoding, &prefix].iter().any(|v| v.is_some());
    let types = lines(form.get("message_types").unwrap_or_default());
    let def = IntegrationConfig {
        id: id.to_string(),
        tenant: opt("tenant").unwrap_or_default(),
        environment: opt("environment").unwrap_or_default(),
        message_type: opt("message_type"),
        message_type_path: opt("message_type_path"),
        message_types: (!types.is_empty()).then_some(types),
        event_id: (header.is_some() || path.is_some()).then_some(EventIdConfig { header, path }),
        signature: any_sig.then(|| SignatureConfig {
            scheme: scheme.unwrap_or_default(),
            secret_env,
            header: sig_header,
            encoding,
            prefix,
        }),
        event_id_days: parsed.and_then(Result::ok),
    };
    (def, bad_days)
}

fn action(id: &str) -> String {
    format!("/admin/forms/integrations/{}", url_encode(id))
}

/// The edit form of a webhook integration.
#[utoipa::path(get, path = "/admin/forms/integrations/{id}", tag = "console", params(("id" = String, Path)),
    responses((status = 200, description = "The form", body = String, content_type = "text/html"), Unauthenticated, Unavailable),
    security(("basic" = [])))]
async fn integration_form(
    State(state): State<AppState>,
    signer: FormSigner,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    let rows = state.store.list_integrations().await?;
    let def = match rows.into_iter().find(|r| r.id == id) {
        Some(row) => serde_json::from_value(row.definition.0)
            .map_err(|e| ApiError::Unprocessable(format!("stored integration unreadable: {e}")))?,
        None => serde_json::from_value(serde_json::json!({ "tenant": "", "environment": "" }))
            .map_err(|e| ApiError::Unprocessable(e.to_string()))?,
    };
    let (action, title) = (action(&id), format!("Integration {id}"));
    let fields = fields(&def, None);
    Ok(render(&Form {
        title: &title,
        section: "/admin/integrations",
        action: &action,
        signer: &signer,
        fields: &fields,
        refusal: None,
    }))
}

/// Saves a webhook integration from its form; audited as integration.updated.
#[utoipa::path(post, path = "/admin/forms/integrations/{id}", tag = "console", params(("id" = String, Path)),
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "Saved; to the list"),
        FormRefused, BadInput, Unauthenticated, FormForged,
        Unavailable),
    security(("basic" = [])))]
async fn integration_submit(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    form: ConsoleForm,
) -> Result<Response, ApiError> {
    let (def, bad_days) = integration_of(&id, &form);
    let message = match bad_days {
        Some(message) => message,
        None => match save_integration(&state, def.clone()).await {
            Ok(_) => return Ok(Redirect::to("/admin/integrations").into_response()),
            Err(e) => refusal(e)?,
        },
    };
    let typed_days = form.get("event_id_days").map(str::to_string);
    let (action, title) = (action(&id), format!("Integration {id}"));
    let fields = fields(&def, typed_days);
    Ok(render(&Form {
        title: &title,
        section: "/admin/integrations",
        action: &action,
        signer: &form.signer,
        fields: &fields,
        refusal: Some(&message),
    }))
}
