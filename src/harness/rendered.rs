//! Sources that are not append-only logs (whole-file JSON rewritten as it grows, logs whose
//! records rewind or replace earlier ones, SQLite stores), rendered as the JSON Lines the reader
//! follows.
//!
//! A rendering lists a session's records as they stand now, one per line, oldest first. Each
//! line carries `chain`, a hash of every line before it, so a change anywhere in the session
//! changes every later line: the head and tail fingerprints of a checkpoint then notice an edit
//! in the middle as surely as a rewrite, locally and for a pushed copy alike. A session that only
//! grew renders as the old lines followed by new ones, and is read on from its checkpoint.
//!
//! Only the tools of rendering are here; which logs are rendered, and how, is each harness's
//! (see [`super::render`]).

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Largest source read into memory to be rendered.
pub const MAX_SOURCE_BYTES: u64 = 256 << 20;

/// The separator between a store's path and the id of one session in it (`opencode.db#ses_1`):
/// a session of a store is read as a log of its own.
pub const STORE_SESSION_SEPARATOR: char = '#';

/// Lines being rendered.
#[derive(Debug, Default)]
pub struct Rendering {
    bytes: Vec<u8>,
    chain: u64,
}

impl Rendering {
    /// Appends one record: `kind` names what it is, `fields` are its content.
    pub fn push(&mut self, kind: &str, fields: Map<String, Value>) {
        let mut record = Map::with_capacity(fields.len() + 2);
        record.insert("record".into(), Value::String(kind.into()));
        record.insert(
            "chain".into(),
            Value::String(format!("{:016x}", self.chain)),
        );
        record.extend(fields);
        let start = self.bytes.len();
        serde_json::to_writer(&mut self.bytes, &Value::Object(record))
            .expect("a JSON value serialises");
        self.bytes.push(b'\n');
        self.chain = xxhash_rust::xxh3::xxh3_64_with_seed(&self.bytes[start..], self.chain);
    }

    /// Appends lines that are not records as they are: the reader counts them as malformed.
    pub fn push_damaged(&mut self, lines: &[&[u8]]) {
        for line in lines {
            self.push_line(line);
        }
    }

    /// Appends a line as it is (a harness's own JSON Lines record, kept byte for byte). It
    /// carries no chain: only the lines after it (pushed as records) depend on it.
    pub fn push_line(&mut self, line: &[u8]) {
        let start = self.bytes.len();
        // A line is one line, whatever it held.
        self.bytes.extend(
            line.iter()
                .map(|b| if matches!(b, b'\r' | b'\n') { b' ' } else { *b }),
        );
        self.bytes.push(b'\n');
        self.chain = xxhash_rust::xxh3::xxh3_64_with_seed(&self.bytes[start..], self.chain);
    }

    /// Appends a record given as a JSON value: only an object is one (a store's `null` for a
    /// deleted message is passed over).
    pub fn push_value(&mut self, kind: &str, value: Value) {
        if let Value::Object(fields) = value {
            self.push(kind, fields);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// A store path and the session in it, for a path written `store#session` whose store part
/// `is_store` names (a log named `notes#2.jsonl` is a file, not a session of a store).
pub fn split_store_session(
    path: &Path,
    is_store: impl Fn(&str) -> bool,
) -> Option<(PathBuf, &str)> {
    let text = path.to_str()?;
    let (store, session) = text.rsplit_once(STORE_SESSION_SEPARATOR)?;
    (is_store(store) && !session.is_empty() && !session.contains('/'))
        .then(|| (PathBuf::from(store), session))
}

/// The path of one session of a store.
pub fn store_session_path(store: &Path, session: &str) -> PathBuf {
    let mut text = store.as_os_str().to_owned();
    text.push(STORE_SESSION_SEPARATOR.to_string());
    text.push(session);
    PathBuf::from(text)
}

/// A source file's bytes, refused when too large to hold.
pub fn read_source(path: &Path) -> io::Result<Vec<u8>> {
    let len = std::fs::metadata(path)?.len();
    if len > MAX_SOURCE_BYTES {
        return Err(invalid(format!(
            "a session file larger than {} MiB",
            MAX_SOURCE_BYTES >> 20
        )));
    }
    std::fs::read(path)
}

/// The JSON document in `bytes`: from its first `{`, past a byte-order mark or a line a tool
/// printed before it (`opencode export` saved with its stderr: `Exporting session: ses_…`).
pub fn json_document(bytes: &[u8]) -> &[u8] {
    match memchr::memchr(b'{', bytes) {
        Some(at) => &bytes[at..],
        None => bytes,
    }
}

pub fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// The JSON objects on the lines of `bytes`, and the whole lines that are not one (damage,
/// kept to be counted as malformed). An unfinished last line is passed over: it is still being
/// written.
pub fn json_lines(bytes: &[u8]) -> (Vec<Map<String, Value>>, Vec<&[u8]>) {
    let mut records = Vec::new();
    let mut damaged = Vec::new();
    let whole = match memchr::memrchr(b'\n', bytes) {
        Some(end) => &bytes[..end],
        None => &[][..],
    };
    for line in whole.split(|b| *b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(record)) => records.push(record),
            _ => damaged.push(line),
        }
    }
    // A session written whole on one line without a newline.
    if whole.is_empty()
        && let Ok(Value::Object(record)) = serde_json::from_slice::<Value>(bytes.trim_ascii())
    {
        records.push(record);
    }
    (records, damaged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(records: &[(&str, Value)]) -> Vec<u8> {
        let mut r = Rendering::default();
        for (kind, value) in records {
            r.push_value(kind, value.clone());
        }
        r.into_bytes()
    }

    #[test]
    fn test_a_grown_rendering_extends_the_old_and_an_edit_changes_every_later_line() {
        let a = json!({"text": "a"});
        let b = json!({"text": "b"});
        let c = json!({"text": "c"});
        let old = lines(&[("m", a.clone()), ("m", b.clone())]);
        let grown = lines(&[("m", a), ("m", b.clone()), ("m", c.clone())]);
        assert!(grown.starts_with(&old));
        let edited = lines(&[("m", json!({"text": "A"})), ("m", b), ("m", c)]);
        let last = |bytes: &[u8]| bytes.split(|b| *b == b'\n').nth(2).unwrap().to_vec();
        assert_ne!(last(&edited), last(&grown));
    }

    #[test]
    fn test_store_session_paths_round_trip() {
        let path = store_session_path(Path::new("/data/opencode.db"), "ses_1");
        assert_eq!(path, Path::new("/data/opencode.db#ses_1"));
        let is_db = |store: &str| store.ends_with(".db");
        let (store, session) = split_store_session(&path, is_db).unwrap();
        assert_eq!(
            (store.as_path(), session),
            (Path::new("/data/opencode.db"), "ses_1")
        );
        assert!(split_store_session(Path::new("/a/b.db#c/d.jsonl"), is_db).is_none());
        assert!(split_store_session(Path::new("/logs/notes#2.jsonl"), is_db).is_none());
    }
}
