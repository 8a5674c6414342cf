//! The records of a flat file: one per line, read by character position.
//!
//! SAP counts field lengths in characters, so a record is measured and
//! sliced by characters, not bytes (a UTF-8 `ü` is one character of a
//! field). Line breaks are LF or CRLF. Blank lines before the first record
//! and after the last are ignored (a trailing newline, an editor's extra
//! line); a blank line between records is refused, as is any control
//! character inside a record: neither is ever part of SAP's fixed layout.

use crate::CoreError;

/// One record: its 1-based line number and text, sliced by characters.
pub(super) struct Record<'t> {
    /// 1-based number of the record (its line) in the file.
    pub number: usize,
    text: &'t str,
    /// Byte offset of every character when the text is not ASCII.
    bounds: Option<Vec<usize>>,
}

impl<'t> Record<'t> {
    fn new(number: usize, text: &'t str) -> Result<Record<'t>, CoreError> {
        if let Some((column, c)) = text.chars().enumerate().find(|(_, c)| c.is_control()) {
            return Err(structure(
                number,
                format!("has the control character U+{:04X} at column {}", u32::from(c), column + 1),
            ));
        }
        let bounds = (!text.is_ascii()).then(|| text.char_indices().map(|(at, _)| at).collect());
        Ok(Record { number, text, bounds })
    }

    /// Length in characters.
    pub fn len(&self) -> usize {
        self.bounds.as_ref().map_or(self.text.len(), Vec::len)
    }

    /// The characters `at..at + len` (the caller checked the length).
    pub fn field(&self, at: usize, len: usize) -> &'t str {
        let byte = |i: usize| match &self.bounds {
            None => i,
            Some(b) => b.get(i).copied().unwrap_or(self.text.len()),
        };
        &self.text[byte(at)..byte(at + len)]
    }

    /// The trimmed characters `at..at + len`.
    pub fn trimmed(&self, at: usize, len: usize) -> &'t str {
        self.field(at, len).trim()
    }

    /// Whether the record starts with `prefix`.
    pub fn starts_with(&self, prefix: &str) -> bool {
        self.text.starts_with(prefix)
    }

    /// The first `len` characters trimmed, to name the record in errors.
    pub fn head(&self, len: usize) -> &'t str {
        self.field(0, len.min(self.len())).trim()
    }
}

/// The records of a decoded file, or the error of the first bad one.
pub(super) fn records(text: &str) -> Result<Vec<Record<'_>>, CoreError> {
    let lines: Vec<(usize, &str)> = text
        .split('\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.strip_suffix('\r').unwrap_or(line)))
        .collect();
    let blank = |line: &&(usize, &str)| line.1.trim().is_empty();
    let first = lines.iter().position(|l| !blank(&l)).unwrap_or(lines.len());
    let last = lines.iter().rposition(|l| !blank(&l)).map_or(first, |i| i + 1);
    lines[first..last]
        .iter()
        .map(|&(number, line)| {
            if line.is_empty() {
                return Err(structure(
                    number,
                    "is empty: records follow each other on consecutive lines".into(),
                ));
            }
            Record::new(number, line)
        })
        .collect()
}

/// A structural error of record `number`.
pub(super) fn structure(record: usize, detail: String) -> CoreError {
    CoreError::FlatStructure { record, detail }
}
