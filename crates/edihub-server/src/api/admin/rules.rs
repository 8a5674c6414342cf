//! Admin API for message types and integrations:
//! `GET /admin/message-types`, `PUT /admin/message-types/{id}[?tenant=…]`,
//! `GET /admin/integrations`, `PUT /admin/integrations/{id}`.
//!
//! A change is validated exactly like the config file (same messages, same
//! rules), stored with `source = "admin"` (so the config no longer overwrites
//! it), audited with the old and the new value, and takes effect at once on
//! this process; other replicas pick it up within `catalog_refresh_secs`.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use edihub_store::{IntegrationRow, MessageTypeRow, SOURCE_ADMIN};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::doc::errors::{BadInput, CrossOrigin, NotJson, Unauthenticated, Unavailable, Unusable};
use crate::auth::Admin;
use crate::config::{Config, ConfigError, IntegrationConfig, MessageTypeConfig};
use crate::error::ApiError;
use crate::extract::{ApiPath, ApiQuery, JsonBody};
use crate::ingest::now;
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_types))
        .routes(routes!(put_type))
        .routes(routes!(list_integrations))
        .routes(routes!(put_integration))
}

/// All message types (global rows have an empty tenant).
#[utoipa::path(get, path = "/admin/message-types", tag = "admin",
    responses((status = 200, description = "Message types", body = Object), Unauthenticated, Unavailable),
    security(("bearer" = []), ("basic" = [])))]
async fn list_types(
    State(state): State<AppState>,
    _admin: Admin,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let rows = state.store.list_message_types().await?;
    if crate::console::layout::wants_html(&headers) {
        return Ok(crate::console::pages::rules::types(&rows).into_response());
    }
    Ok(Json(json!({ "message_types": rows })).into_response())
}

#[derive(Debug, Deserialize)]
struct TenantQuery {
    tenant: Option<String>,
}

/// Body of `PUT /admin/message-types/{id}`: the same fields as a
/// `[[message_types]]` table, without `id` and `tenant`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TypeBody {
    /// Paths whose values form the fingerprint; `["$"]` for the whole payload.
    #[serde(default)]
    pub(crate) duplicate_key_fields: Vec<String>,
    /// Paths removed before a whole-payload fingerprint.
    #[serde(default)]
    pub(crate) exclude_fields: Vec<String>,
    /// Window in hours (default 168).
    #[serde(default)]
    pub(crate) duplicate_window_hours: Option<u64>,
    /// Window with a unit (`2s`, `15m`, `12h`, `7d`); wins over hours.
    #[serde(default)]
    pub(crate) duplicate_window: Option<String>,
    /// Parties the fingerprint is taken together with: `sender`, `receiver`.
    #[serde(default)]
    pub(crate) fingerprint_scope: Vec<String>,
}

pub(crate) fn body_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?;
    // serde would also build a struct from an array; only an object is a definition.
    if !value.is_object() {
        return Err(ApiError::Unprocessable("the body must be a JSON object".into()));
    }
    if let Some(member) = crate::extract::nul_member(&value) {
        return Err(ApiError::BadRequest(format!(
            "the body member `{}` holds a NUL character (U+0000), which no value here may contain",
            member.trim_start_matches('.')
        )));
    }
    serde_json::from_value(value).map_err(|e| ApiError::Unprocessable(format!("invalid definition: {e}")))
}

/// A definition sent to `PUT …/{id}`: the body's object with the path's
/// `id` set in it (the path names what is changed), read as a `what`. A
/// value that cannot be read is refused naming its key as the validation
/// would, the definition standing at `at` (`destinations[0]`).
pub(crate) fn definition_at<T: serde::de::DeserializeOwned>(
    body: &[u8],
    id: &str,
    what: &str,
    at: &str,
) -> Result<T, ApiError> {
    let mut def: Value = body_json(body)?;
    if let Some(obj) = def.as_object_mut() {
        obj.insert("id".into(), json!(id));
    }
    serde_path_to_error::deserialize(def).map_err(|e| {
        let key = e.path().to_string();
        let reason = e.into_inner().to_string();
        ApiError::Unprocessable(match key.as_str() {
            "." => format!("invalid {what}: {reason}"),
            key => format!("invalid {what}: {}", ConfigError::new(format!("{at}.{key}"), reason)),
        })
    })
}

/// Validates a candidate by running the config validator over a config that
/// holds only it (and the real tenants), so the rules can never diverge.
pub(crate) fn validate_with(state: &AppState, edit: impl FnOnce(&mut Config)) -> Result<Config, ApiError> {
    let mut probe = state.config.clone();
    probe.message_types.clear();
    probe.integrations.clear();
    probe.destinations.clear();
    edit(&mut probe);
    probe.validate().map_err(|e| ApiError::Unprocessable(e.to_string()))?;
    Ok(probe)
}

/// Create or change a message type; audited as message_type.updated.
#[utoipa::path(put, path = "/admin/message-types/{id}", tag = "admin",
    params(("id" = String, Path), ("tenant" = Option<String>, Query, description = "Absent: the global default")),
    request_body(content = TypeBody, content_type = "application/json"),
    responses((status = 200, description = "Old and new value", body = Object),
        BadInput, Unauthenticated, CrossOrigin, NotJson, Unusable, Unavailable),
    security(("bearer" = []), ("basic" = [])))]
async fn put_type(
    State(state): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<TenantQuery>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let b: TypeBody = body_json(&body)?;
    Ok(Json(save_type(&state, id, q.tenant, b).await?))
}

/// Validates a message type like the config file, stores it as an admin
/// change (audited) and reloads the rules; answers the old and new rows.
pub(crate) async fn save_type(
    state: &AppState,
    id: String,
    tenant: Option<String>,
    b: TypeBody,
) -> Result<Value, ApiError> {
    let mut candidate = MessageTypeConfig::new(id);
    candidate.tenant = tenant.filter(|t| !t.is_empty());
    candidate.duplicate_key_fields = b.duplicate_key_fields;
    candidate.exclude_fields = b.exclude_fields;
    candidate.duplicate_window_hours = b.duplicate_window_hours;
    candidate.duplicate_window = b.duplicate_window;
    candidate.fingerprint_scope = b.fingerprint_scope;
    let mut probe = validate_with(state, |c| c.message_types.push(candidate))?;
    // The one type the probe holds, its window read by the validation.
    let checked = probe.message_types.swap_remove(0);
    let window = checked.window();
    let row = MessageTypeRow {
        tenant_id: checked.tenant.unwrap_or_default(),
        id: checked.id,
        duplicate_key_fields: edihub_store::Json(checked.duplicate_key_fields),
        exclude_fields: edihub_store::Json(checked.exclude_fields),
        duplicate_window_seconds: window.seconds(),
        fingerprint_scope: edihub_store::Json(checked.fingerprint_scope),
        source: SOURCE_ADMIN.into(),
        updated_at: now(),
    };
    let old = state.store.put_message_type(&row).await?;
    state.reload().await?;
    Ok(json!({ "old": old, "new": row }))
}

/// All webhook integrations.
#[utoipa::path(get, path = "/admin/integrations", tag = "admin",
    responses((status = 200, description = "Integrations", body = Object), Unauthenticated, Unavailable),
    security(("bearer" = []), ("basic" = [])))]
async fn list_integrations(
    State(state): State<AppState>,
    _admin: Admin,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let rows = state.store.list_integrations().await?;
    if crate::console::layout::wants_html(&headers) {
        return Ok(crate::console::pages::rules::integrations(&rows).into_response());
    }
    Ok(Json(json!({ "integrations": rows })).into_response())
}

/// Create or change a webhook integration; audited as integration.updated.
#[utoipa::path(put, path = "/admin/integrations/{id}", tag = "admin", params(("id" = String, Path)),
    request_body(content = IntegrationConfig, content_type = "application/json",
        description = "The `id` comes from the path"),
    responses((status = 200, description = "Old and new value", body = Object),
        BadInput, Unauthenticated, CrossOrigin, NotJson, Unusable, Unavailable),
    security(("bearer" = []), ("basic" = [])))]
async fn put_integration(
    State(state): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let def: IntegrationConfig = definition_at(&body, &id, "integration", "integrations[0]")?;
    Ok(Json(save_integration(&state, def).await?))
}

/// Validates an integration like the config file, stores it as an admin
/// change (audited) and reloads; answers the old and new rows.
pub(crate) async fn save_integration(state: &AppState, def: IntegrationConfig) -> Result<Value, ApiError> {
    validate_with(state, |c| c.integrations.push(def.clone()))?;
    let row = IntegrationRow {
        id: def.id.clone(),
        tenant_id: def.tenant.clone(),
        environment_id: def.environment.clone(),
        definition: edihub_store::Json(serde_json::to_value(&def).unwrap_or_default()),
        source: SOURCE_ADMIN.into(),
        updated_at: now(),
    };
    let old = state.store.put_integration(&row).await?;
    state.reload().await?;
    Ok(json!({ "old": old, "new": row }))
}
