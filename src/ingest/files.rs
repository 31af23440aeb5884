//! Finding session logs: configured sources, or files and directories named on the command line,
//! and which harness wrote each one.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{SourceConfig, expand_home};
use crate::harness::{self, Identity, rendered};
use crate::vocab::Harness;

/// One log file to ingest, and the session it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    pub path: PathBuf,
    pub harness: Harness,
    pub source: String,
    /// The harness's session id: from the file name where the harness names files by session,
    /// otherwise from the log's first records (see [`Identity`]); never from the directory.
    pub native_id: String,
    /// A Claude Code sub-agent transcript, which is a session of its own.
    pub subagent: bool,
    pub session_key: u64,
    /// The log's identity: its source, harness and path.
    pub file_key: u64,
    pub origin: Origin,
    pub size: u64,
}

/// How a log reaches this service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Read from this machine's disk.
    Local,
    /// Sent to the ingest API.
    Push,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Push => "push",
        }
    }
}

/// The key of a log: a hash of its source, harness and path.
pub fn file_key(source: &str, harness: Harness, path: &str) -> u64 {
    let mut bytes = Vec::with_capacity(source.len() + path.len() + 24);
    for part in [source, harness.as_str(), path] {
        bytes.extend_from_slice(part.as_bytes());
        bytes.push(0);
    }
    xxhash_rust::xxh3::xxh3_64(&bytes).max(1)
}

/// Why a path could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    #[error("{path}: {message}")]
    Unusable { path: PathBuf, message: String },
    /// A second copy of a session (an exported or renamed log): the session is read once, from
    /// `kept`.
    #[error("{path}: the same session as {kept}, which is read instead")]
    SameSession { path: PathBuf, kept: PathBuf },
}

impl DiscoverError {
    /// Whether the file's content is read all the same (from another copy).
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Self::SameSession { .. })
    }
}

/// Files matching the configured sources' globs. Missing directories are simply empty.
pub fn from_sources(sources: &[SourceConfig]) -> (Vec<LogFile>, Vec<DiscoverError>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for source in sources {
        let harness = source.harness;
        let pattern = expand_home(&source.glob);
        let Ok(paths) = glob::glob(&pattern.to_string_lossy()) else {
            problems.push(DiscoverError::Unusable {
                path: pattern,
                message: "invalid glob".into(),
            });
            continue;
        };
        let logs: Vec<PathBuf> = paths
            .filter_map(|entry| log_file(entry, &mut problems))
            .filter(|path| harness::format(harness).is_log_name(path))
            .collect();
        for path in logs {
            describe_all(&path, harness, &source.name, &mut found, &mut problems);
        }
    }
    dedupe(&mut found, &mut problems);
    (found, problems)
}

/// A path a glob matched, when it is a file to read; one that cannot be (a link to nowhere, a
/// loop, no permission) is named in `problems` with why. Directories are passed over.
fn log_file(
    entry: Result<PathBuf, glob::GlobError>,
    problems: &mut Vec<DiscoverError>,
) -> Option<PathBuf> {
    let path = match entry {
        Ok(path) => path,
        Err(e) => {
            problems.push(DiscoverError::Unusable {
                path: e.path().to_owned(),
                message: e.error().to_string(),
            });
            return None;
        }
    };
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => Some(path),
        Ok(meta) if meta.is_dir() => None,
        Ok(_) => {
            problems.push(DiscoverError::Unusable {
                path,
                message: "not a regular file".into(),
            });
            None
        }
        Err(e) => {
            problems.push(DiscoverError::Unusable {
                path,
                message: format!("cannot be read: {e}"),
            });
            None
        }
    }
}

/// Files named on the command line; directories are searched for every harness's file names
/// (`*.jsonl`, `rollout-*.json`, stores, …), keeping the files the harness that wrote them counts
/// among its logs (not its sidecars and archived copies). The harness is `harness` when given,
/// otherwise sniffed from the file.
pub fn from_paths(
    paths: &[PathBuf],
    harness: Option<Harness>,
    source: Option<&str>,
) -> (Vec<LogFile>, Vec<DiscoverError>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    // Each with whether a directory's scan found it (rather than the command line naming it).
    let mut candidates: Vec<(PathBuf, bool)> = Vec::new();
    for path in paths {
        if path.is_dir() {
            // JSON Lines logs, whole-file JSON sessions (the TypeScript Codex CLI's, Gemini CLI's
            // and Qwen Code's before they wrote JSON Lines, OpenCode's JSON tree) and stores.
            for name in harness::scan_names() {
                let pattern = path.join("**").join(name);
                match glob::glob(&pattern.to_string_lossy()) {
                    Ok(entries) => {
                        for found in entries.filter_map(|e| log_file(e, &mut problems)) {
                            if harness::is_scanned_log(name, &found)
                                && !candidates.iter().any(|(known, _)| *known == found)
                            {
                                candidates.push((found, true));
                            }
                        }
                    }
                    Err(e) => problems.push(DiscoverError::Unusable {
                        path: path.clone(),
                        message: e.to_string(),
                    }),
                }
            }
        } else if path.is_file() {
            candidates.push((path.clone(), false));
        } else {
            problems.push(DiscoverError::Unusable {
                path: path.clone(),
                message: "no such file or directory".into(),
            });
        }
    }
    for (path, scanned) in candidates {
        let detected = match harness {
            Some(h) => {
                if let Some(looks_like) = other_harness(&path, h) {
                    tracing::warn!(
                        file = %path.display(),
                        given = h.as_str(),
                        looks_like = looks_like.as_str(),
                        "the file looks like another harness's log; reading it as --harness says"
                    );
                }
                Ok(h)
            }
            None => sniff(&path),
        };
        match detected {
            // A file a directory's scan found beside the logs of the harness that wrote it,
            // which that harness does not count among them (a sidecar, an archived copy).
            Ok(h) if scanned && !harness::format(h).is_log_name(&path) => {}
            Ok(h) => {
                let source = source.unwrap_or(h.default_source());
                describe_all(&path, h, source, &mut found, &mut problems);
            }
            Err(message) => problems.push(DiscoverError::Unusable { path, message }),
        }
    }
    dedupe(&mut found, &mut problems);
    (found, problems)
}

/// Describes the log at `path`, or each session of the store at `path`, into `found`.
fn describe_all(
    path: &Path,
    harness: Harness,
    source: &str,
    found: &mut Vec<LogFile>,
    problems: &mut Vec<DiscoverError>,
) {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let unusable = |message: String| DiscoverError::Unusable {
        path: path.clone(),
        message,
    };
    match crate::harness::store_sessions(harness, &path) {
        Some(Ok(sessions)) => {
            for (session, size) in sessions {
                let log = rendered::store_session_path(&path, &session);
                let identity = Identity::of(harness, &log, Vec::new);
                match describe_log(&log, harness, source, Origin::Local, size, identity) {
                    Ok(file) => found.push(file),
                    Err(e) => problems.push(e),
                }
            }
        }
        Some(Err(e)) => problems.push(unusable(format!("cannot be read: {e}"))),
        None => match describe(&path, harness, source) {
            Ok(file) => found.push(file),
            Err(e) => problems.push(e),
        },
    }
}

fn describe(path: &Path, harness: Harness, source: &str) -> Result<LogFile, DiscoverError> {
    let size = std::fs::metadata(path)
        .map_err(|e| DiscoverError::Unusable {
            path: path.to_owned(),
            message: e.to_string(),
        })?
        .len();
    let identity = Identity::of(harness, path, || read_head(path, Some(harness)));
    describe_log(path, harness, source, Origin::Local, size, identity)
}

/// The first [`HEAD_BYTES`] of a file (fewer if it is shorter or cannot be read: the identity
/// then falls back to the file name, and reading the log reports the error). A whole-file JSON
/// session of `harness` is rendered first.
pub fn read_head(path: &Path, harness: Option<Harness>) -> Vec<u8> {
    let mut head = Vec::new();
    if let Some(harness) = harness
        && path.extension().is_some_and(|e| e == "json")
        && crate::harness::is_rendered(harness, path)
    {
        let mut lines = crate::harness::render(harness, path)
            .ok()
            .flatten()
            .unwrap_or_default();
        lines.truncate(HEAD_BYTES);
        return lines;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return head;
    };
    let _ =
        std::io::Read::read_to_end(&mut std::io::Read::take(file, HEAD_BYTES as u64), &mut head);
    head
}

/// Describes the log at `path` (on this machine, or on the machine that pushed it), which
/// holds the session `identity`.
pub fn describe_log(
    path: &Path,
    harness: Harness,
    source: &str,
    origin: Origin,
    size: u64,
    identity: Result<Identity, String>,
) -> Result<LogFile, DiscoverError> {
    let Identity {
        native_id,
        subagent,
    } = identity.map_err(|message| DiscoverError::Unusable {
        path: path.to_owned(),
        message,
    })?;
    Ok(LogFile {
        path: path.to_owned(),
        harness,
        source: source.to_owned(),
        session_key: session_key(harness, &native_id),
        file_key: file_key(source, harness, &path.to_string_lossy()),
        origin,
        native_id,
        subagent,
        size,
    })
}

/// How much of a log's start is searched for its session id. Codex writes its `session_meta`
/// first (tens of KiB with instructions); Claude Code may begin with summaries and snapshots.
pub const HEAD_BYTES: usize = 256 * 1024;

/// The session key: a hash of the harness and its session id, so harnesses never collide.
pub fn session_key(harness: Harness, native_id: &str) -> u64 {
    let mut bytes = Vec::with_capacity(native_id.len() + 16);
    bytes.extend_from_slice(harness.as_str().as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(native_id.as_bytes());
    xxhash_rust::xxh3::xxh3_64(&bytes).max(1)
}

/// The harness `path` looks like, when that is not `given` (a likely mistake on the command
/// line: each adapter reads little of the other's records).
fn other_harness(path: &Path, given: Harness) -> Option<Harness> {
    sniff(path).ok().filter(|found| *found != given)
}

/// Decides the harness from the path and the first records.
fn sniff(path: &Path) -> Result<Harness, String> {
    if let Some(harness) = harness::detect_path(&path.to_string_lossy()) {
        return Ok(harness);
    }
    if let Some(harness) = harness::detect_store(path) {
        return Ok(harness);
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    if path.extension().is_some_and(|e| e == "json") {
        // A whole-file session (or an export of one).
        drop(file);
        let bytes = rendered::read_source(path).map_err(|e| e.to_string())?;
        let whole: Value = serde_json::from_slice(rendered::json_document(&bytes))
            .map_err(|e| format!("not valid JSON: {e}"))?;
        return harness::detect_document(&whole)
            .ok_or_else(|| "a .json file that is not a session of a known harness".into());
    }
    for line in BufReader::new(file).lines().take(50) {
        let line = line.map_err(|e| e.to_string())?;
        let Ok(Value::Object(record)) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let Some(harness) = harness::detect_record(&record) {
            return Ok(harness);
        }
    }
    Err("not a session log of a known harness (use --harness to say which)".into())
}

/// Whether a log is an older form of a session its harness has moved elsewhere.
fn superseded(file: &LogFile) -> bool {
    harness::format(file.harness).superseded(&file.path)
}

/// One file per session. When one session ID is logged at several paths, the logs are told
/// apart by their content: a copy (an exported, renamed or older copy, whose records are those
/// of another log or a start of them, or a superseded form beside the current one) is read
/// once, the current form before a superseded one, then the largest file, then the first path
/// in order, so runs are deterministic; every other copy is reported in `problems`. Logs that differ are different sessions: the one that
/// started first keeps the ID, each other becomes a session of its own under it (as a
/// sub-agent's chat that Gemini CLI saves under its parent's session ID).
fn dedupe(files: &mut Vec<LogFile>, problems: &mut Vec<DiscoverError>) {
    files.sort_by(|a, b| {
        superseded(a)
            .cmp(&superseded(b))
            .then_with(|| b.size.cmp(&a.size))
            .then_with(|| a.path.cmp(&b.path))
    });
    let mut by_key: HashMap<u64, Vec<usize>> = HashMap::new();
    for (at, file) in files.iter().enumerate() {
        by_key.entry(file.session_key).or_default().push(at);
    }
    let mut dropped = vec![false; files.len()];
    let mut renamed: Vec<(usize, Identity)> = Vec::new();
    for group in by_key.values().filter(|g| g.len() > 1) {
        let heads: Vec<Vec<u8>> = group
            .iter()
            .map(|&at| read_head(&files[at].path, Some(files[at].harness)))
            .collect();
        // The distinct logs of the group (indices into `group`), each with its copies.
        let mut distinct: Vec<usize> = Vec::new();
        for (i, &at) in group.iter().enumerate() {
            let copy_of = distinct.iter().copied().find(|&d| {
                superseded(&files[at]) && !superseded(&files[group[d]])
                    || is_copy(&heads[d], &heads[i])
            });
            match copy_of {
                Some(d) => {
                    dropped[at] = true;
                    problems.push(DiscoverError::SameSession {
                        path: files[at].path.clone(),
                        kept: files[group[d]].path.clone(),
                    });
                }
                None => distinct.push(i),
            }
        }
        if distinct.len() < 2 {
            continue;
        }
        // A log that says it is a sub-agent's is never the main one.
        let started = |d: &usize| {
            (
                files[group[*d]].subagent,
                log_start(&heads[*d]).unwrap_or(i64::MAX),
                files[group[*d]].path.clone(),
            )
        };
        let main = distinct.iter().min_by_key(|d| started(d)).copied();
        for d in distinct.into_iter().filter(|d| Some(*d) != main) {
            let file = &files[group[d]];
            renamed.push((group[d], Identity::under(&file.native_id, &file.path)));
        }
    }
    for (at, identity) in renamed {
        let file = &mut files[at];
        file.session_key = session_key(file.harness, &identity.native_id);
        file.native_id = identity.native_id;
        file.subagent = identity.subagent;
    }
    let mut at = 0;
    files.retain(|_| {
        at += 1;
        !dropped[at - 1]
    });
    files.sort_by(|a, b| a.path.cmp(&b.path));
}

/// Whether two logs of one session ID are copies of one log: past their first line (a header
/// that a harness rewrites, such as a title set late), the shorter's records are a start of the
/// longer's. A log that cannot be read counts as a copy: nothing says it differs.
pub fn is_copy(a: &[u8], b: &[u8]) -> bool {
    let past_first_line = |head: &[u8]| -> Vec<u8> {
        // Only whole lines: a head may end inside one.
        let whole = &head[..memchr::memrchr(b'\n', head).map_or(0, |at| at + 1)];
        match memchr::memchr(b'\n', whole) {
            Some(at) => whole[at + 1..].to_vec(),
            None => Vec::new(),
        }
    };
    let (a, b) = (past_first_line(a), past_first_line(b));
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// When a log began, from its first records: a header's `startTime`, else the first
/// `timestamp` (RFC 3339, or ms since the epoch).
pub fn log_start(head: &[u8]) -> Option<i64> {
    let whole = &head[..memchr::memrchr(b'\n', head).map_or(0, |at| at + 1)];
    whole.split(|b| *b == b'\n').take(50).find_map(|line| {
        let Ok(Value::Object(record)) = serde_json::from_slice::<Value>(line) else {
            return None;
        };
        ["startTime", "timestamp"]
            .iter()
            .find_map(|key| match record.get(*key)? {
                Value::String(text) => crate::text::rfc3339_ms(text),
                Value::Number(n) => n.as_i64(),
                _ => None,
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_native_ids_come_from_file_names() {
        let uuid = "0194f3a2-7b1c-7d3e-9f00-1a2b3c4d5e6f";
        assert_eq!(
            crate::harness::codex::session_id_of_name(&format!(
                "rollout-2026-01-02T03-04-05-{uuid}"
            )),
            Some(uuid)
        );
        assert_eq!(crate::harness::codex::session_id_of_name("notes"), None);
        let dir = std::env::temp_dir().join(format!("moraine-files-{}", std::process::id()));
        let sub = dir.join("proj").join("abc").join("subagents");
        std::fs::create_dir_all(&sub).unwrap();
        let path = sub.join("agent-1.jsonl");
        std::fs::write(&path, "{\"type\":\"user\",\"sessionId\":\"abc\"}\n").unwrap();
        let (files, problems) = from_paths(std::slice::from_ref(&dir), None, None);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].native_id, "abc/agent-1");
        assert!(files[0].subagent);
        assert_eq!(files[0].harness, Harness::ClaudeCode);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn test_session_keys_differ_across_harnesses() {
        assert_ne!(
            session_key(Harness::Codex, "x"),
            session_key(Harness::ClaudeCode, "x")
        );
    }

    #[test]
    fn test_a_harness_given_against_the_content_is_noticed() {
        let dir = std::env::temp_dir().join(format!("moraine-harness-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let claude = dir.join("exported.jsonl");
        std::fs::write(
            &claude,
            "{\"type\":\"user\",\"sessionId\":\"s\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
        )
        .unwrap();
        let codex = dir.join("rollout.jsonl");
        std::fs::write(
            &codex,
            "{\"type\":\"session_meta\",\"payload\":{\"id\":\"x\"}}\n",
        )
        .unwrap();
        let unknown = dir.join("notes.jsonl");
        std::fs::write(&unknown, "{\"hello\":1}\n").unwrap();
        assert_eq!(
            other_harness(&claude, Harness::Codex),
            Some(Harness::ClaudeCode)
        );
        assert_eq!(other_harness(&claude, Harness::ClaudeCode), None);
        assert_eq!(
            other_harness(&codex, Harness::ClaudeCode),
            Some(Harness::Codex)
        );
        // Nothing to go on: the given harness is taken without a word.
        assert_eq!(other_harness(&unknown, Harness::Codex), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn test_detection_needs_positive_evidence() {
        let dir = std::env::temp_dir().join(format!("moraine-sniff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sniffed = |name: &str, lines: &[&str]| {
            let path = dir.join(name);
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            sniff(&path)
        };
        // Records several tools could write say nothing: no harness claims them.
        for lines in [
            &[r#"{"type":"message","role":"user","content":"hello"}"#][..],
            &[
                r#"{"id":"x","timestamp":"2026-01-01T00:00:00Z"}"#,
                r#"{"payload":{"a":1}}"#,
            ][..],
            // A bare `session` record, and messages without OpenClaw's entry ids and tool
            // blocks: not OpenClaw's.
            &[
                r#"{"type":"session","id":"s-1"}"#,
                r#"{"type":"message","id":"m-1","parentId":null,"message":{"role":"user","content":"hi"}}"#,
                r#"{"type":"message","id":"813a837d","parentId":null,"message":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}"#,
            ][..],
        ] {
            let found = sniffed("foreign.jsonl", lines);
            assert!(found.is_err(), "{lines:?} taken for {found:?}");
        }
        // Each harness's own shapes.
        assert_eq!(
            sniffed(
                "early.jsonl",
                &[
                    r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#
                ]
            ),
            Ok(Harness::Codex)
        );
        assert_eq!(
            sniffed(
                "droid.jsonl",
                &[
                    r#"{"type":"session_start","id":"d-1","title":"t","cwd":"/w"}"#,
                    r#"{"type":"message","id":"m-1","timestamp":"2026-06-01T10:00:00Z","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#
                ]
            ),
            Ok(Harness::Droid)
        );
        // Aider's history by its name; other Markdown is no log.
        let aider = [
            "",
            "# aider chat started at 2026-02-03 09:15:02",
            "",
            "#### hi  ",
        ];
        assert_eq!(
            sniffed(".aider.chat.history.md", &aider),
            Ok(Harness::Aider)
        );
        assert!(sniffed("NOTES.md", &aider).is_err());
        // OpenClaw: its `session` header, or (a transcript whose header was lost) its entries.
        let openclaw = [
            r#"{"type":"session","version":3,"id":"0b1c","timestamp":"2026-02-25T05:18:55.852Z","cwd":"/w"}"#,
            r#"{"type":"message","id":"813a837d","parentId":null,"timestamp":"2026-02-25T05:19:00.000Z","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1771996735857}}"#,
            r#"{"type":"message","id":"dd433acd","parentId":"813a837d","timestamp":"2026-02-25T05:19:05.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"exec","arguments":{"command":"ls"}}],"stopReason":"toolUse"}}"#,
        ];
        assert_eq!(sniffed("openclaw.jsonl", &openclaw), Ok(Harness::OpenClaw));
        assert_eq!(
            sniffed("headless.jsonl", &openclaw[1..]),
            Ok(Harness::OpenClaw)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn test_a_scan_keeps_logs_and_stores_not_sidecars_and_reads_a_migrated_session_once() {
        let dir = std::env::temp_dir().join(format!("moraine-scan-{}", std::process::id()));
        let agent = dir.join(".openclaw/agents/main");
        std::fs::create_dir_all(agent.join("sessions")).unwrap();
        std::fs::create_dir_all(agent.join("agent")).unwrap();
        let formats = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/formats");
        let transcript = "0199a3c4-5e6f-7a81-b2c3-d4e5f6a7b8c9";
        let log = agent.join(format!("sessions/{transcript}.jsonl"));
        std::fs::copy(
            format!("{formats}/openclaw/agents/main/sessions/{transcript}.jsonl"),
            &log,
        )
        .unwrap();
        for sidecar in [
            format!("{transcript}.jsonl.reset.2026-07-15T04-00-00.000Z"),
            format!("{transcript}.jsonl.deleted.2026-07-15T04-00-00.000Z.zst"),
            format!("{transcript}.checkpoint.7d2e9f41-3c8a-4b65-9e17-2a0f6c8d5b93.jsonl"),
            format!("{transcript}.trajectory.jsonl"),
            format!("{transcript}.corrupt-2026-07-15T04-00-00-1a2b3c4d.jsonl"),
        ] {
            std::fs::copy(&log, agent.join("sessions").join(sidecar)).unwrap();
        }
        std::fs::write(agent.join("sessions/sessions.json"), "{}").unwrap();
        let store = agent.join("agent/openclaw-agent.sqlite");
        rusqlite::Connection::open(&store)
            .unwrap()
            .execute_batch(
                &std::fs::read_to_string(format!(
                    "{formats}/openclaw/agents/main/agent/openclaw-agent.sqlite.sql"
                ))
                .unwrap(),
            )
            .unwrap();
        // A session the migration moved into the store, its transcript left behind.
        let migrated = "0199b1d2-6c3e-7f40-8a51-92b3c4d5e6f7";
        let leftover = agent.join(format!("sessions/{migrated}.jsonl"));
        std::fs::write(
            &leftover,
            format!(
                "{{\"type\":\"session\",\"version\":3,\"id\":\"{migrated}\",\"timestamp\":\"2026-08-20T13:40:02.118Z\",\"cwd\":\"/w\"}}\n"
            ),
        )
        .unwrap();
        // Continue's sessions and their index.
        let sessions = dir.join(".continue/sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        for name in ["3f6d2b8a-9c41-4e7d-b2a5-6e8f1c0d4a97.json", "sessions.json"] {
            std::fs::copy(
                format!("{formats}/continue/sessions/{name}"),
                sessions.join(name),
            )
            .unwrap();
        }

        let (found, problems) = from_paths(std::slice::from_ref(&dir), None, None);
        let mut names: Vec<(Harness, String)> = found
            .iter()
            .map(|f| {
                let name = f.path.file_name().unwrap().to_string_lossy().into_owned();
                (f.harness, name)
            })
            .collect();
        names.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(
            names,
            [
                (Harness::OpenClaw, format!("{transcript}.jsonl")),
                (
                    Harness::Continue,
                    "3f6d2b8a-9c41-4e7d-b2a5-6e8f1c0d4a97.json".to_owned()
                ),
                (
                    Harness::OpenClaw,
                    format!("openclaw-agent.sqlite#{migrated}")
                ),
                (
                    Harness::OpenClaw,
                    "openclaw-agent.sqlite#0199b7e8-1a2b-7c3d-9e4f-5a6b7c8d9e0f".to_owned()
                ),
            ]
        );
        // The leftover transcript is the same session as the store's, which is read instead.
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].is_duplicate());
        assert!(
            matches!(&problems[0], DiscoverError::SameSession { path, kept } if *path == leftover && kept.to_string_lossy().ends_with(migrated)),
            "{problems:?}"
        );
        // Without the store, the transcript is read.
        std::fs::remove_file(&store).unwrap();
        let (found, problems) = from_paths(std::slice::from_ref(&dir), None, None);
        assert!(problems.is_empty(), "{problems:?}");
        assert!(found.iter().any(|f| f.path == leftover));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn test_identity_comes_from_the_harness_naming_or_else_the_first_records() {
        let id = |harness, path: &str, head: &str| {
            Identity::of(harness, Path::new(path), || head.as_bytes().to_vec()).unwrap()
        };
        let plain = |native_id: &str| Identity {
            native_id: native_id.into(),
            subagent: false,
        };
        let uuid = "0194f3a2-7b1c-7d3e-9f00-1a2b3c4d5e6f";
        let meta = "{\"type\":\"session_meta\",\"payload\":{\"id\":\"c-1\"}}\n";
        // Codex: the rollout name, else session_meta, else the pre-session_meta opening record.
        assert_eq!(
            id(
                Harness::Codex,
                &format!("/a/rollout-2026-01-02T03-04-05-{uuid}.jsonl"),
                meta
            ),
            plain(uuid)
        );
        assert_eq!(
            id(Harness::Codex, "/a/codex-session.jsonl", meta),
            plain("c-1")
        );
        assert_eq!(
            id(
                Harness::Codex,
                "/b/codex-session.jsonl",
                "{\"id\":\"c-2\",\"timestamp\":\"2025-05-01T00:00:00Z\",\"instructions\":null}\n"
            ),
            plain("c-2")
        );
        // Claude Code: a session-named file keeps its name even when it opens with the
        // records of the session it resumes; any other name is read.
        let user = |session: &str| {
            format!("{{\"type\":\"user\",\"sessionId\":\"{session}\",\"isSidechain\":false}}\n")
        };
        assert_eq!(
            id(
                Harness::ClaudeCode,
                &format!("/p/{uuid}.jsonl"),
                &user("old")
            ),
            plain(uuid)
        );
        assert_eq!(
            id(
                Harness::ClaudeCode,
                "/x/claude-session.jsonl",
                &format!(
                    "{{\"type\":\"summary\",\"leafUuid\":\"l\"}}\n{}",
                    user("s-1")
                )
            ),
            plain("s-1")
        );
        // A sub-agent's log in the flat layout: a side chain naming its agent.
        assert_eq!(
            id(
                Harness::ClaudeCode,
                "/p/agent-a1b2.jsonl",
                "{\"type\":\"user\",\"sessionId\":\"s-1\",\"isSidechain\":true,\"agentId\":\"a1b2\"}\n"
            ),
            Identity {
                native_id: "s-1/agent-a1b2".into(),
                subagent: true
            }
        );
        // A cut-off first line, or nothing to go on: the file name's stem.
        assert_eq!(
            id(
                Harness::ClaudeCode,
                "/x/notes.jsonl",
                "{\"type\":\"user\",\"sessionId\":\"s-2\""
            ),
            plain("notes")
        );
        assert_eq!(id(Harness::Codex, "/x/notes.jsonl", ""), plain("notes"));
    }

    #[test]
    fn test_one_name_in_two_directories_is_two_sessions_and_one_session_under_two_names_is_read_once()
     {
        let dir = std::env::temp_dir().join(format!("moraine-identity-{}", std::process::id()));
        let record = |session: &str| {
            format!(
                "{{\"type\":\"user\",\"sessionId\":\"{session}\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}}}}\n"
            )
        };
        for (sub, session) in [("repo-a", "s-a"), ("repo-b", "s-b")] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
            std::fs::write(dir.join(sub).join("claude-session.jsonl"), record(session)).unwrap();
        }
        std::fs::create_dir_all(dir.join("exports")).unwrap();
        let copy = dir.join("exports").join("renamed.jsonl");
        std::fs::write(&copy, record("s-a")).unwrap();
        let (files, problems) = from_paths(std::slice::from_ref(&dir), None, None);
        let mut ids: Vec<&str> = files.iter().map(|f| f.native_id.as_str()).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["s-a", "s-b"]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].is_duplicate());
        let told = problems[0].to_string();
        assert!(told.contains("the same session as"), "{told}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
