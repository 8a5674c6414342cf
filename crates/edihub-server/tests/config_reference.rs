//! docs/configuration.md is generated from the configuration types: every
//! key of `Config`, found by walking its structs in `src/config/`, with the
//! key's `///` documentation as its meaning and its default taken from
//! `Config::default()` (or, inside list items, from the field's serde
//! default). This test renders the reference and fails with a diff when the
//! file differs; `EDIHUB_BLESS=1` rewrites the file instead:
//!
//! ```sh
//! EDIHUB_BLESS=1 cargo test -p edihub-server --test config_reference
//! ```
//!
//! A config field without `///` documentation fails the test too, naming it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use edihub_server::config::Config;
use quote::ToTokens;
use serde_json::Value;
use syn::{Attribute, Expr, Fields, GenericArgument, Item, Lit, PathArguments, Type};

const ROOT_TYPE: &str = "Config";

/// A field of a config struct, as declared.
struct Field {
    name: String,
    docs: String,
    ty: Type,
    /// `#[serde(default)]` or `#[serde(default = "f")]`: `Some(None)` or `Some(Some(f))`.
    serde_default: Option<Option<String>>,
}

/// What the source declares: structs with their fields and docs, the
/// bodies of the functions serde defaults name, and the file's name of the
/// `#[default]` value of each enum.
#[derive(Default)]
struct Source {
    structs: BTreeMap<String, (String, Vec<Field>)>,
    functions: BTreeMap<String, syn::Block>,
    enum_defaults: BTreeMap<String, String>,
}

/// The name serde gives `variant` under `#[serde(rename_all = "…")]`
/// (`lowercase` or `kebab-case`, the two the config uses).
fn serde_name(variant: &str, rename_all: &str) -> String {
    let mut out = String::new();
    for (i, c) in variant.chars().enumerate() {
        if c.is_uppercase() && i > 0 && rename_all == "kebab-case" {
            out.push('-');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// An enum's `#[serde(rename_all = "…")]`, if any.
fn rename_all(attrs: &[Attribute]) -> Option<String> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename_all") {
                found = Some(meta.value()?.parse::<syn::LitStr>()?.value());
            } else if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<Expr>()?;
            }
            Ok(())
        });
    }
    found
}

fn docs(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(l) => match &l.lit {
                    Lit::Str(s) => Some(s.value().trim().to_string()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The field's serde attributes: skipped, and its default.
fn serde_attrs(attrs: &[Attribute]) -> (bool, Option<Option<String>>) {
    let (mut skip, mut default) = (false, None);
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip") {
                skip = true;
            } else if meta.path.is_ident("default") {
                default = Some(match meta.value() {
                    Ok(v) => Some(v.parse::<syn::LitStr>()?.value()),
                    Err(_) => None,
                });
            } else if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<Expr>()?;
            }
            Ok(())
        });
    }
    (skip, default)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src/config") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn read_source(dir: &Path) -> Source {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.sort();
    let mut source = Source::default();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read a config source file");
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for item in file.items {
            match item {
                Item::Struct(s) => {
                    let Fields::Named(named) = &s.fields else { continue };
                    let fields = named
                        .named
                        .iter()
                        .filter_map(|f| {
                            let (skip, serde_default) = serde_attrs(&f.attrs);
                            (!skip).then(|| Field {
                                name: f.ident.as_ref().expect("named field").to_string(),
                                docs: docs(&f.attrs),
                                ty: f.ty.clone(),
                                serde_default,
                            })
                        })
                        .collect();
                    source.structs.insert(s.ident.to_string(), (docs(&s.attrs), fields));
                }
                Item::Fn(f) => {
                    source.functions.insert(f.sig.ident.to_string(), *f.block);
                }
                Item::Enum(e) => {
                    let Some(rule) = rename_all(&e.attrs) else { continue };
                    let default =
                        e.variants.iter().find(|v| v.attrs.iter().any(|a| a.path().is_ident("default")));
                    if let Some(v) = default {
                        source
                            .enum_defaults
                            .insert(e.ident.to_string(), serde_name(&v.ident.to_string(), &rule));
                    }
                }
                _ => {}
            }
        }
    }
    source
}

/// The last path segment of a type and its first generic argument, if any.
fn head(ty: &Type) -> Option<(String, Option<&Type>)> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    let arg = match &seg.arguments {
        PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    };
    Some((seg.ident.to_string(), arg))
}

/// A value as the reference shows it.
fn show(value: &Value) -> String {
    match value {
        Value::Null => "none".into(),
        Value::String(s) if s.is_empty() => "empty".into(),
        Value::String(s) => format!("`{s}`"),
        Value::Array(a) if a.is_empty() => "`[]`".into(),
        other => format!("`{other}`"),
    }
}

/// The default of a field inside a list item, from its serde attribute.
fn item_default(source: &Source, field: &Field) -> String {
    let optional = matches!(head(&field.ty), Some((name, _)) if name == "Option");
    match &field.serde_default {
        None if optional => "none".into(),
        None => "required".into(),
        Some(Some(function)) => source
            .functions
            .get(function)
            .and_then(|body| first_literal(body.to_token_stream()))
            .unwrap_or_else(|| format!("`{function}()`")),
        Some(None) => match head(&field.ty).map(|(name, _)| name).as_deref() {
            Some("Option") => "none".into(),
            Some("bool") => "`false`".into(),
            Some("Vec") => "`[]`".into(),
            Some("String") => "empty".into(),
            Some("u8" | "u16" | "u32" | "u64" | "usize") => "`0`".into(),
            Some(name) if source.enum_defaults.contains_key(name) => {
                format!("`{}`", source.enum_defaults[name])
            }
            _ => "see meaning".into(),
        },
    }
}

fn first_literal(tokens: proc_macro2::TokenStream) -> Option<String> {
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Literal(l) => {
                let text = l.to_string();
                return Some(format!("`{}`", text.trim_matches('"')));
            }
            proc_macro2::TokenTree::Ident(i) if i == "true" || i == "false" => return Some(format!("`{i}`")),
            proc_macro2::TokenTree::Group(g) => {
                if let Some(found) = first_literal(g.stream()) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

/// `EDIHUB_<KEY>` of a key outside lists.
fn env_name(key: &str) -> String {
    format!("`EDIHUB_{}`", key.replace('.', "__").to_uppercase())
}

struct Section {
    path: String,
    docs: String,
    rows: Vec<String>,
}

/// Walks `type_name` at `path`; `defaults` is its part of `Config::default()`
/// (None inside list items, where each item brings its own values).
fn walk(
    source: &Source,
    type_name: &str,
    path: &str,
    docs: &str,
    defaults: Option<&Value>,
    sections: &mut Vec<Section>,
    undocumented: &mut Vec<String>,
) {
    let (struct_docs, fields) = &source.structs[type_name];
    let index = sections.len();
    let section_docs = if docs.is_empty() { struct_docs.clone() } else { docs.to_string() };
    sections.push(Section { path: path.to_string(), docs: section_docs, rows: Vec::new() });
    for field in fields {
        let key = if path.is_empty() { field.name.clone() } else { format!("{path}.{}", field.name) };
        if field.docs.is_empty() {
            undocumented.push(format!("{type_name}::{} (`{key}`)", field.name));
        }
        let (outer, inner) = head(&field.ty).unwrap_or_default();
        let inner_name = inner.and_then(head).map(|(n, _)| n);
        let nested = match (outer.as_str(), inner_name) {
            ("Vec", Some(n)) if source.structs.contains_key(&n) => Some((n, format!("{key}[]"), true)),
            ("Option", Some(n)) if source.structs.contains_key(&n) => Some((n, key.clone(), false)),
            (n, _) if source.structs.contains_key(n) => Some((n.to_string(), key.clone(), false)),
            _ => None,
        };
        let default = match defaults {
            Some(d) => show(d.get(&field.name).unwrap_or(&Value::Null)),
            None => item_default(source, field),
        };
        match nested {
            Some((name, nested_path, is_list)) => {
                let nested_defaults = if is_list { None } else { defaults.and_then(|d| d.get(&field.name)) };
                let nested_defaults = nested_defaults.filter(|v| !v.is_null());
                let in_list = defaults.is_none() || is_list || nested_defaults.is_none();
                walk(
                    source,
                    &name,
                    &nested_path,
                    &field.docs,
                    if in_list { None } else { nested_defaults },
                    sections,
                    undocumented,
                );
            }
            None => {
                let env = if defaults.is_some() { env_name(&key) } else { String::new() };
                let meaning = field.docs.replace('|', "\\|");
                sections[index].rows.push(format!("| `{key}` | {default} | {env} | {meaning} |"));
            }
        }
    }
}

const HEADER: &str = "\
# Configuration reference

The configuration is a TOML file (`EDIHUB_CONFIG`, default
`config/edihub.toml`), overridden by environment variables, weakest first:
defaults < file < `DATABASE_URL` < `EDIHUB_<KEY>` (nested keys joined with
`__`, as in the tables' last column). Unknown keys in the file are errors;
unknown `EDIHUB_*` variables are logged and ignored. Every value is checked
at start, and an invalid one stops the process naming its key. Keys inside
lists (`tenants[]`, `destinations[]`, …) are set in the file, and their
default column says whether an item must give them.

This file is generated from the `///` documentation of the configuration
types in `crates/edihub-server/src/config/` (do not edit it by hand) and
checked by `cargo test -p edihub-server --test config_reference`; to
rewrite it after changing a field:

```text
EDIHUB_BLESS=1 cargo test -p edihub-server --test config_reference
```
";

fn render(source: &Source) -> (String, Vec<String>) {
    let defaults = serde_json::to_value(Config::default()).expect("the default config serializes");
    let (mut sections, mut undocumented) = (Vec::new(), Vec::new());
    walk(source, ROOT_TYPE, "", "", Some(&defaults), &mut sections, &mut undocumented);
    let mut out = String::from(HEADER);
    for section in sections.iter().filter(|s| !s.rows.is_empty()) {
        let title =
            if section.path.is_empty() { "Top level".to_string() } else { format!("`{}`", section.path) };
        out.push_str(&format!("\n## {title}\n\n"));
        if !section.docs.is_empty() && !section.path.is_empty() {
            out.push_str(&format!("{}\n\n", section.docs));
        }
        out.push_str("| key | default | environment | meaning |\n|---|---|---|---|\n");
        for row in &section.rows {
            out.push_str(row);
            out.push('\n');
        }
    }
    (out, undocumented)
}

/// The lines only in `old` (`-`) and only in `new` (`+`), in order, from a
/// longest common subsequence of the two.
fn diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+{:>4} {}\n", j + 1, b[j]));
            j += 1;
        } else {
            out.push_str(&format!("-{:>4} {}\n", i + 1, a[i]));
            i += 1;
        }
    }
    out
}

#[test]
fn configuration_reference_matches_the_config_types() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = read_source(&crate_dir.join("src/config"));
    let (rendered, undocumented) = render(&source);
    assert!(
        undocumented.is_empty(),
        "config fields without `///` documentation: {}",
        undocumented.join(", ")
    );
    let target = crate_dir.join("../../docs/configuration.md");
    if std::env::var_os("EDIHUB_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&target, &rendered).expect("write docs/configuration.md");
        return;
    }
    let current = std::fs::read_to_string(&target).unwrap_or_default();
    assert!(
        current == rendered,
        "docs/configuration.md differs from the config types' documentation \
         (- the file, + generated; rewrite it with \
         `EDIHUB_BLESS=1 cargo test -p edihub-server --test config_reference`):\n{}",
        diff(&current, &rendered)
    );
}
