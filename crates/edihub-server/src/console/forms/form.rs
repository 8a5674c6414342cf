//! What the console's edit forms share: rendering a form of fields with
//! its anti-forgery token, and showing a refusal the way a person can act
//! on it: the message at the top (announced to screen readers), the field
//! it names marked invalid with the message beside it, and every value as
//! typed (nothing is lost to a refused submit).
//!
//! The forms do not validate anything themselves: they build the same
//! definition the JSON admin API takes and hand it to the same code, so a
//! form can never accept what the API refuses. The refusal names a config
//! key (`destinations[0].url`); [`field_of`] finds the form field in it.

use std::fmt::Write;

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use crate::console::forms::token::{FormSigner, TOKEN_FIELD};
use crate::console::layout::{esc, layout};
use crate::error::ApiError;

/// How a field is entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One line of text.
    Text,
    /// A list, one item per line.
    Lines,
    /// On or off.
    Checkbox,
}

/// One field of a form.
#[derive(Debug, Clone)]
pub struct Field {
    /// The form field's name (and the config key it maps to).
    pub name: &'static str,
    /// What a person reads.
    pub label: &'static str,
    /// How it is entered.
    pub kind: Kind,
    /// Its value (for a checkbox: `on` or empty).
    pub value: String,
    /// A hint shown below it.
    pub help: &'static str,
}

/// A form ready to render.
pub struct Form<'a> {
    /// Page title (plain text).
    pub title: &'a str,
    /// The navigation section it belongs to.
    pub section: &'a str,
    /// Where it posts (also what its token is for).
    pub action: &'a str,
    /// The admin whose request shows it: signs its anti-forgery token.
    pub signer: &'a FormSigner,
    /// Its fields.
    pub fields: &'a [Field],
    /// Why the last submit was refused, if it was.
    pub refusal: Option<&'a str>,
}

/// The form field a refusal is about: the config key after its first `].`,
/// indexes removed and `.` written `_` (`destinations[0].url` → `url`,
/// `message_types[0].duplicate_key_fields[1]` → `duplicate_key_fields`,
/// `integrations[0].signature.secret_env` → `signature_secret_env`).
pub fn field_of(message: &str) -> Option<String> {
    let key = message.strip_prefix("config key `")?.split('`').next()?;
    let rest = key.split_once("].").map_or(key, |(_, r)| r);
    let mut name = String::new();
    let mut in_index = false;
    for c in rest.chars() {
        match c {
            '[' => in_index = true,
            ']' => in_index = false,
            '.' if !in_index => name.push('_'),
            c if !in_index => name.push(c),
            _ => {}
        }
    }
    (!name.is_empty()).then_some(name)
}

/// Whether field `name` is the one (or one of those) a refusal names: the
/// same name, or a part of it (`signature` marks `signature_scheme` too).
fn names(field: &str, refused: &str) -> bool {
    field == refused || field.strip_prefix(refused).is_some_and(|rest| rest.starts_with('_'))
}

/// The items of a one-per-line field (trimmed, empty lines dropped).
pub fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

fn field(out: &mut String, f: &Field, invalid: bool, refusal: Option<&str>) {
    let id = format!("f-{}", f.name);
    let aria = if invalid {
        format!(" aria-invalid=\"true\" aria-describedby=\"{id}-error\"")
    } else {
        String::new()
    };
    let _ = write!(out, "<div class=\"field\"><label for=\"{id}\">{}</label>", esc(f.label));
    match f.kind {
        Kind::Text => {
            let _ = write!(out, "<input id=\"{id}\" name=\"{}\" value=\"{}\"{aria}>", f.name, esc(&f.value));
        }
        Kind::Lines => {
            let _ = write!(
                out,
                "<textarea id=\"{id}\" name=\"{}\" rows=\"3\"{aria}>{}</textarea>",
                f.name,
                esc(&f.value)
            );
        }
        Kind::Checkbox => {
            let checked = if f.value.is_empty() { "" } else { " checked" };
            let _ = write!(
                out,
                "<input type=\"checkbox\" id=\"{id}\" name=\"{}\" value=\"on\"{checked}{aria}>",
                f.name
            );
        }
    }
    if let Some(message) = refusal.filter(|_| invalid) {
        let _ = write!(out, "<span class=\"field-error\" id=\"{id}-error\">{}</span>", esc(message));
    }
    if !f.help.is_empty() {
        let _ = write!(out, "<span class=\"muted\">{}</span>", esc(f.help));
    }
    out.push_str("</div>");
}

/// The page of a form; 422 when it shows a refusal, else 200.
pub fn render(form: &Form<'_>) -> Response {
    let mut out = String::new();
    let invalid = form.refusal.and_then(field_of);
    if let Some(message) = form.refusal {
        let _ =
            write!(out, "<p id=\"refusal\" class=\"error\" role=\"alert\">Not saved: {}</p>", esc(message));
    }
    let _ = write!(
        out,
        "<form class=\"edit\" method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"{TOKEN_FIELD}\" value=\"{}\">",
        esc(form.action),
        esc(&form.signer.token(form.action))
    );
    for f in form.fields {
        field(&mut out, f, invalid.as_deref().is_some_and(|r| names(f.name, r)), form.refusal);
    }
    out.push_str("<div class=\"field\"><button type=\"submit\" id=\"save\">Save</button></div></form>");
    let page: Html<String> = layout(form.title, form.section, &out);
    let status = if form.refusal.is_some() { StatusCode::UNPROCESSABLE_ENTITY } else { StatusCode::OK };
    (status, page).into_response()
}

/// A refusal to show in the form (422 and 400 answers: the input), or the
/// error itself (anything else is not the person's to fix here).
pub fn refusal(e: ApiError) -> Result<String, ApiError> {
    match e {
        ApiError::Unprocessable(m) | ApiError::BadRequest(m) => Ok(m),
        other => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::{field_of, lines};

    #[test]
    fn refusals_name_their_field() {
        assert_eq!(field_of("config key `destinations[0].url`: not a URL").as_deref(), Some("url"));
        let key = "config key `message_types[0].duplicate_key_fields[1]`: bad path";
        assert_eq!(field_of(key).as_deref(), Some("duplicate_key_fields"));
        let nested = "config key `integrations[0].signature.secret_env`: missing";
        assert_eq!(field_of(nested).as_deref(), Some("signature_secret_env"));
        assert!(super::names("signature_scheme", "signature") && !super::names("signatures", "signature"));
        assert_eq!(field_of("invalid definition: x"), None);
    }

    #[test]
    fn lines_drop_blanks() {
        assert_eq!(lines(" a \r\n\n b\n"), ["a", "b"]);
    }
}
