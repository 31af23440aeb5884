//! Whose session a log holds: from the harness's own file naming, else its first records, else
//! the file name. Directories never count, so one session moved or pushed from another machine
//! keeps its IDs, and two sessions exported under one name stay two.

use std::path::Path;

use serde_json::Value;

use super::format;
use crate::vocab::Harness;

/// The harness's session id of a log, and whether it is a sub-agent's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub native_id: String,
    pub subagent: bool,
}

impl Identity {
    /// The identity of the log at `path`: from its name where the harness names logs by
    /// session, otherwise from its first records (`head`, read only then), otherwise from the
    /// file name's stem.
    pub fn of<H: AsRef<[u8]>>(
        harness: Harness,
        path: &Path,
        head: impl FnOnce() -> H,
    ) -> Result<Self, String> {
        if let Some(named) = Self::from_name(harness, path) {
            return Ok(named);
        }
        if let Some(found) = Self::from_content(harness, head().as_ref()) {
            return Ok(found);
        }
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or("file name is not UTF-8")?;
        Ok(Self::main(stem))
    }

    /// The identity the harness's own file naming gives (a session of a store is named by
    /// the store's path and its id).
    pub fn from_name(harness: Harness, path: &Path) -> Option<Self> {
        if let Some((_, session)) = super::store_session(path) {
            return Some(Self::main(session));
        }
        format(harness).identity_from_name(path)
    }

    /// The identity the first records of a log give (whole lines of `head` only: the last one
    /// may be cut off).
    pub fn from_content(harness: Harness, head: &[u8]) -> Option<Self> {
        let whole = &head[..memchr::memrchr(b'\n', head).map_or(0, |at| at + 1)];
        let format = format(harness);
        whole.split(|b| *b == b'\n').find_map(|line| {
            let Ok(Value::Object(record)) = serde_json::from_slice::<Value>(line) else {
                return None;
            };
            format.identity_from_record(&record)
        })
    }

    /// A log that holds a session ID another log already stands for, with other content: a
    /// session of its own under that one, named after its file.
    pub fn under(native_id: &str, path: &Path) -> Self {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self::child(format!("{native_id}/{stem}"))
    }

    /// A main session.
    pub fn main(native_id: &str) -> Self {
        Self {
            native_id: native_id.to_owned(),
            subagent: false,
        }
    }

    /// A sub-agent's session (or one under another).
    pub fn child(native_id: String) -> Self {
        Self {
            native_id,
            subagent: true,
        }
    }
}

/// A text field of a record usable as an id: non-empty and at most 200 bytes.
pub(crate) fn id_text(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 200)
        .map(str::to_owned)
}

/// A UUID in its usual text form.
pub(crate) fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.char_indices().all(|(i, c)| {
            if [8, 13, 18, 23].contains(&i) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

/// The stem of a file's name, if it is UTF-8.
pub(crate) fn stem(path: &Path) -> Option<&str> {
    path.file_stem()?.to_str()
}

/// The name of the directory `levels` above the file (1: its own directory).
pub(crate) fn dir_name(path: &Path, levels: usize) -> Option<&str> {
    let mut dir = path;
    for _ in 0..levels {
        dir = dir.parent()?;
    }
    dir.file_name()?.to_str()
}
