//! Which files `edihub send` posts, under which name and Content-Type.
//!
//! A FILE is sent alone under its file name, whatever it holds. A DIR
//! contributes its regular files (symlinks to files included), sorted by
//! their path relative to DIR, which is also the name printed and the name
//! used as Idempotency-Key. Of those, only files that look like a message are
//! sent: their first bytes (after a byte order mark and whitespace) are `<`,
//! `{` or `[`, the hub's own sniffing; a README or a script next to the
//! IDocs is skipped and reported. `--include GLOB` chooses by file name
//! instead. Hidden entries (names starting with `.`, e.g. `.DS_Store` or an
//! editor's swap file) are skipped; subdirectories only with `--recursive`,
//! and a symlink to a directory is never followed, so a link loop cannot
//! recurse.

use std::fs;
use std::io::Read;
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

/// The files chosen in a directory, and the names of those left out.
#[derive(Debug, Default)]
pub struct Selection {
    /// The files to send, sorted by name.
    pub items: Vec<Item>,
    /// Names of the directory's files that were not chosen, sorted.
    pub skipped: Vec<String>,
}

/// How the files of a directory are chosen.
#[derive(Debug, Clone, Copy)]
pub struct Choice<'a> {
    /// Descend into subdirectories.
    pub recursive: bool,
    /// File-name globs (`*`, `?`); empty: files that look like a message.
    pub include: &'a [String],
}

/// The files to send for `path` (a file or a directory), sorted by name.
pub fn collect(path: &Path, choice: Choice<'_>) -> Result<Selection, String> {
    let meta = fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.is_file() {
        let name =
            path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        return Ok(Selection { items: vec![Item { path: path.to_path_buf(), name }], skipped: Vec::new() });
    }
    if !meta.is_dir() {
        return Err(format!("{}: neither a regular file nor a directory", path.display()));
    }
    let mut found = Selection::default();
    walk(path, "", choice, &mut found)?;
    found.items.sort_by(|a, b| a.name.cmp(&b.name));
    found.skipped.sort();
    Ok(found)
}

fn walk(dir: &Path, prefix: &str, choice: Choice<'_>, found: &mut Selection) -> Result<(), String> {
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
            if choice.recursive {
                walk(&path, &format!("{name}/"), choice, found)?;
            }
        } else if fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            // Follows a symlink to a file; a dangling link or a FIFO is skipped.
            let chosen = if choice.include.is_empty() {
                looks_like_message(&path)
            } else {
                choice.include.iter().any(|glob| glob_match(glob, &file_name))
            };
            if chosen {
                found.items.push(Item { path, name });
            } else {
                found.skipped.push(name);
            }
        }
    }
    Ok(())
}

/// Whether the file starts like XML or JSON. An unreadable file is chosen,
/// so that sending it reports the error.
fn looks_like_message(path: &Path) -> bool {
    let mut head = Vec::with_capacity(4096);
    match fs::File::open(path).and_then(|f| f.take(4096).read_to_end(&mut head)) {
        Ok(_) => edihub_core::looks_like_message(&head),
        Err(_) => true,
    }
}

/// Shell-style match of a whole name: `*` any run of characters, `?` one.
pub fn glob_match(glob: &str, name: &str) -> bool {
    let (g, n): (Vec<char>, Vec<char>) = (glob.chars().collect(), name.chars().collect());
    let (mut gi, mut ni) = (0, 0);
    // The last `*` seen and the name position it was tried at, for backtracking.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match g.get(gi) {
            Some('*') => {
                star = Some((gi, ni));
                gi += 1;
            }
            Some(&c) if c == '?' || c == n[ni] => {
                gi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sg, sn)) => {
                    gi = sg + 1;
                    ni = sn + 1;
                    star = Some((sg, sn + 1));
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|&c| c == '*')
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

    fn names(root: &Path, recursive: bool, include: &[String]) -> (Vec<String>, Vec<String>) {
        let found = collect(root, Choice { recursive, include }).unwrap();
        (found.items.into_iter().map(|i| i.name).collect(), found.skipped)
    }

    #[test]
    fn directories_are_sorted_hidden_skipped_and_recursive_on_request() {
        let root = std::env::temp_dir().join(format!("edihub-send-files-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("sub")).unwrap();
        for name in ["b.xml", "a.json", ".hidden", "sub/c.xml"] {
            fs::write(root.join(name), b"<x/>").unwrap();
        }
        assert_eq!(names(&root, false, &[]).0, ["a.json", "b.xml"]);
        assert_eq!(names(&root, true, &[]).0, ["a.json", "b.xml", "sub/c.xml"]);
        let single = collect(&root.join("b.xml"), Choice { recursive: false, include: &[] }).unwrap();
        assert_eq!(single.items[0].name, "b.xml");
        let missing = collect(&root.join("missing"), Choice { recursive: false, include: &[] });
        assert!(missing.unwrap_err().contains("missing"));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn only_files_that_look_like_messages_unless_included_by_name() {
        let root = std::env::temp_dir().join(format!("edihub-send-sniff-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain("<A/>".bytes().flat_map(|b| [b, 0])).collect();
        let files: [(&str, &[u8]); 6] = [
            ("order.idoc", b"\n  <?xml version=\"1.0\"?><ORDERS05/>"),
            ("plain.json", b"{\"id\":1}"),
            ("utf16.xml", &utf16),
            ("README.md", b"# Fixtures\n"),
            ("make.py", b"#!/usr/bin/env python3\n"),
            ("empty.xml", b""),
        ];
        for (name, bytes) in files {
            fs::write(root.join(name), bytes).unwrap();
        }
        let (sent, skipped) = names(&root, false, &[]);
        assert_eq!(sent, ["order.idoc", "plain.json", "utf16.xml"]);
        assert_eq!(skipped, ["README.md", "empty.xml", "make.py"]);
        let (sent, skipped) = names(&root, false, &["*.md".into(), "empty.?ml".into()]);
        assert_eq!(sent, ["README.md", "empty.xml"]);
        assert_eq!(skipped.len(), 4);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(glob_match("*.xml", "orders05.xml"));
        assert!(!glob_match("*.xml", "orders05.xml.bak"));
        assert!(glob_match("orders??.*", "orders05.json"));
        assert!(glob_match("*05*", "orders05-soap.xml"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a*b", "acbd"));
        assert!(glob_match("a*b*c", "aXbYbZc"));
    }
}
