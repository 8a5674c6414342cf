//! Where the configuration file comes from, and a clear error when it is
//! missing: the default `config/edihub.toml` is relative to the current
//! directory, so outside the repository it is not found, and the message
//! must name the source the path came from (`--config`, `EDIHUB_CONFIG` or
//! the default) and say how to give another.

use std::path::Path;

use clap::parser::ValueSource;

/// `Ok` when `path` exists; otherwise why not, naming where the path came from.
pub fn check_exists(path: &Path, source: Option<ValueSource>) -> Result<(), String> {
    if path.exists() {
        return Ok(());
    }
    let from = match source {
        Some(ValueSource::CommandLine) => "given with --config",
        Some(ValueSource::EnvVariable) => "given by EDIHUB_CONFIG",
        _ => "the default; give --config FILE or set EDIHUB_CONFIG",
    };
    let cwd = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default();
    let relative = if path.is_relative() { format!(", relative to {cwd}") } else { String::new() };
    Err(format!("configuration file {} not found ({from}{relative})", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_where_the_path_came_from() {
        let missing = Path::new("no/such/edihub.toml");
        let err = |s| check_exists(missing, s).unwrap_err();
        assert!(err(Some(ValueSource::CommandLine)).contains("given with --config"));
        assert!(!err(Some(ValueSource::CommandLine)).contains("EDIHUB_CONFIG"));
        assert!(err(Some(ValueSource::EnvVariable)).contains("given by EDIHUB_CONFIG"));
        assert!(err(Some(ValueSource::DefaultValue)).contains("the default; give --config FILE"));
        assert!(err(None).contains("relative to"));
        assert!(check_exists(Path::new(env!("CARGO_MANIFEST_DIR")), None).is_ok());
    }
}
