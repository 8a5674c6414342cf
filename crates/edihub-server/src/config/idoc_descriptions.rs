//! The IDoc type descriptions of `idoc_descriptions`, read from their files.
//!
//! A description splits a flat-file IDoc's segment data into fields, so the
//! flat file renders and fingerprints as its XML twin. The files are read
//! when the configuration is validated (an unreadable or invalid file, or a
//! type described twice, stops the start naming its key) and once more when
//! the state is built; a running hub never reads them again.

use edihub_core::{IdocDescription, IdocDescriptions};

use super::{Config, ConfigError};

/// Largest description file read (SAP's description of the largest IDoc
/// types is a few MiB).
pub const MAX_DESCRIPTION_BYTES: u64 = 32 * 1024 * 1024;

/// Every configured description; the error names the
/// `idoc_descriptions[i]` key of the file that cannot be used.
pub fn load(config: &Config) -> Result<IdocDescriptions, ConfigError> {
    let mut all = IdocDescriptions::new();
    for (i, path) in config.idoc_descriptions.iter().enumerate() {
        let key = format!("idoc_descriptions[{i}]");
        let text = read(path).map_err(|reason| ConfigError::new(key.clone(), reason))?;
        let description = IdocDescription::read(&text)
            .map_err(|e| ConfigError::new(key.clone(), format!("{path}: {e}")))?;
        all.insert(description).map_err(|e| ConfigError::new(key, format!("{path}: {e}")))?;
    }
    Ok(all)
}

fn read(path: &str) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    if meta.len() > MAX_DESCRIPTION_BYTES {
        return Err(format!("{path} is larger than {MAX_DESCRIPTION_BYTES} bytes"));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    String::from_utf8(bytes).map_err(|_| format!("{path} is not UTF-8 text"))
}
