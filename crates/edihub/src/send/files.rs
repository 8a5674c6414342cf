//! Which files `edihub send` posts, under which name and Content-Type.
//!
//! A FILE is sent alone under its file name. A DIR contributes its regular
//! files (symlinks to files included), sorted by their path relative to DIR,
//! which is also the name printed and the name used as Idempotency-Key.
//! Hidden entries (names starting with `.`, e.g. `.DS_Store` or an editor's
//! swap file) are skipped; subdirectories only with `--recursive`, and a
//! symlink to a directory is never followed, so a link loop cannot recurse.

use std::fs;
use std::path::{Path, PathBuf};

/// One file to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Where to read it.
    pub path: PathBuf,
    /// What to print and, with `--idempotency-key-from-name`, the key:
    /// the file name, or the `/`-separated path relative to DIR.
    pub name: String,
}

impl Item {
    /// The Content-Type to send, from the extension (the hub sniffs the rest).
    pub fn content_type(&self) -> &'static str {
        content_type(&self.path)
    }
}

/// `application/xml` for `.xml`, `application/json` for `.json` (any case),
/// otherwise `application/octet-stream`, which the hub sniffs.
pub fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("xml") => "application/xml",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// The files to send for `path` (a file or a directory), sorted by name.
pub fn collect(path: &Path, recursive: bool) -> Result<Vec<Item>, String> {
    let meta = fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.is_file() {
        let name =
            path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        return Ok(vec![Item { path: path.to_path_buf(), name }]);
    }
    if !meta.is_dir() {
        return Err(format!("{}: neither a regular file nor a directory", path.display()));
    }
    let mut items = Vec::new();
    walk(path, "", recursive, &mut items)?;
    items.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(items)
}

fn walk(dir: &Path, prefix: &str, recursive: bool, items: &mut Vec<Item>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if file_name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let name = format!("{prefix}{file_name}");
        let file_type = entry.file_type().map_err(|e| format!("{}: {e}", path.display()))?;
        if file_type.is_dir() {
            if recursive {
                walk(&path, &format!("{name}/"), recursive, items)?;
            }
        } else if fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            // Follows a symlink to a file; a dangling link or a FIFO is skipped.
            items.push(Item { path, name });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_follows_the_extension() {
        assert_eq!(content_type(Path::new("a/orders05.xml")), "application/xml");
        assert_eq!(content_type(Path::new("ORDERS.XML")), "application/xml");
        assert_eq!(content_type(Path::new("orders05.json")), "application/json");
        assert_eq!(content_type(Path::new("orders05.idoc")), "application/octet-stream");
        assert_eq!(content_type(Path::new("README")), "application/octet-stream");
    }

    #[test]
    fn directories_are_sorted_hidden_skipped_and_recursive_on_request() {
        let root = std::env::temp_dir().join(format!("edihub-send-files-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("sub")).unwrap();
        for name in ["b.xml", "a.json", ".hidden", "sub/c.xml"] {
            fs::write(root.join(name), b"x").unwrap();
        }
        let names = |recursive| -> Vec<String> {
            collect(&root, recursive).unwrap().into_iter().map(|i| i.name).collect()
        };
        assert_eq!(names(false), ["a.json", "b.xml"]);
        assert_eq!(names(true), ["a.json", "b.xml", "sub/c.xml"]);
        let single = collect(&root.join("b.xml"), false).unwrap();
        assert_eq!(single[0].name, "b.xml");
        assert!(collect(&root.join("missing"), false).unwrap_err().contains("missing"));
        fs::remove_dir_all(&root).unwrap();
    }
}
