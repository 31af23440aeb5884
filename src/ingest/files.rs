//! Finding session logs: configured sources, or files and directories named on the command line,
//! and which harness wrote each one.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{SourceConfig, expand_home};
use crate::vocab::Harness;

/// One log file to ingest, and the session it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    pub path: PathBuf,
    pub harness: Harness,
    pub source: String,
    /// The harness's session id, from the file name (so IDs do not depend on where the file is).
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
        for entry in paths {
            match entry {
                Ok(path) if path.is_file() => match describe(&path, harness, &source.name) {
                    Ok(file) => found.push(file),
                    Err(e) => problems.push(e),
                },
                Ok(_) => {}
                Err(e) => problems.push(DiscoverError::Unusable {
                    path: e.path().to_owned(),
                    message: e.error().to_string(),
                }),
            }
        }
    }
    (dedupe(found), problems)
}

/// Files named on the command line; directories are searched for `*.jsonl`. The harness is
/// `harness` when given, otherwise sniffed from the file.
pub fn from_paths(
    paths: &[PathBuf],
    harness: Option<Harness>,
    source: Option<&str>,
) -> (Vec<LogFile>, Vec<DiscoverError>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    let mut candidates = Vec::new();
    for path in paths {
        if path.is_dir() {
            let pattern = path.join("**").join("*.jsonl");
            match glob::glob(&pattern.to_string_lossy()) {
                Ok(entries) => {
                    candidates.extend(entries.filter_map(Result::ok).filter(|p| p.is_file()));
                }
                Err(e) => problems.push(DiscoverError::Unusable {
                    path: path.clone(),
                    message: e.to_string(),
                }),
            }
        } else if path.is_file() {
            candidates.push(path.clone());
        } else {
            problems.push(DiscoverError::Unusable {
                path: path.clone(),
                message: "no such file or directory".into(),
            });
        }
    }
    for path in candidates {
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
            Ok(h) => match describe(&path, h, source.unwrap_or(h.default_source())) {
                Ok(file) => found.push(file),
                Err(e) => problems.push(e),
            },
            Err(message) => problems.push(DiscoverError::Unusable { path, message }),
        }
    }
    (dedupe(found), problems)
}

fn describe(path: &Path, harness: Harness, source: &str) -> Result<LogFile, DiscoverError> {
    let size = std::fs::metadata(path)
        .map_err(|e| DiscoverError::Unusable {
            path: path.to_owned(),
            message: e.to_string(),
        })?
        .len();
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    describe_log(&path, harness, source, Origin::Local, size)
}

/// Describes the log at `path` (on this machine, or on the machine that pushed it).
pub fn describe_log(
    path: &Path,
    harness: Harness,
    source: &str,
    origin: Origin,
    size: u64,
) -> Result<LogFile, DiscoverError> {
    let unusable = |message: String| DiscoverError::Unusable {
        path: path.to_owned(),
        message,
    };
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| unusable("file name is not UTF-8".into()))?;
    let parent = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|s| s.to_str());
    let subagent = harness == Harness::ClaudeCode && parent == Some("subagents");
    let native_id = match harness {
        Harness::Codex => codex_session_id(stem).unwrap_or(stem).to_owned(),
        Harness::ClaudeCode if subagent => {
            let session = path
                .parent()
                .and_then(Path::parent)
                .and_then(Path::file_name)
                .and_then(|s| s.to_str())
                .unwrap_or("");
            format!("{session}/{stem}")
        }
        Harness::ClaudeCode => stem.to_owned(),
    };
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

/// The session key: a hash of the harness and its session id, so harnesses never collide.
pub fn session_key(harness: Harness, native_id: &str) -> u64 {
    let mut bytes = Vec::with_capacity(native_id.len() + 16);
    bytes.extend_from_slice(harness.as_str().as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(native_id.as_bytes());
    xxhash_rust::xxh3::xxh3_64(&bytes).max(1)
}

/// Codex names rollouts `rollout-<timestamp>-<session uuid>`.
fn codex_session_id(stem: &str) -> Option<&str> {
    let tail = stem.get(stem.len().checked_sub(36)?..)?;
    let is_uuid = tail.len() == 36
        && tail.char_indices().all(|(i, c)| {
            if [8, 13, 18, 23].contains(&i) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
    is_uuid.then_some(tail)
}

/// The harness `path` looks like, when that is not `given` (a likely mistake on the command
/// line: each adapter reads little of the other's records).
fn other_harness(path: &Path, given: Harness) -> Option<Harness> {
    sniff(path).ok().filter(|found| *found != given)
}

/// Decides the harness from the path and the first records.
fn sniff(path: &Path) -> Result<Harness, String> {
    let text = path.to_string_lossy();
    if text.contains("/.codex/") {
        return Ok(Harness::Codex);
    }
    if text.contains("/.claude/") {
        return Ok(Harness::ClaudeCode);
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    for line in BufReader::new(file).lines().take(50) {
        let line = line.map_err(|e| e.to_string())?;
        let Ok(Value::Object(record)) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        if record.contains_key("payload")
            || [
                "session_meta",
                "response_item",
                "event_msg",
                "turn_context",
                "compacted",
            ]
            .contains(&kind)
        {
            return Ok(Harness::Codex);
        }
        if record.contains_key("sessionId")
            || record.contains_key("parentUuid")
            || ["user", "assistant", "summary"].contains(&kind)
        {
            return Ok(Harness::ClaudeCode);
        }
    }
    Err("not a Codex or Claude Code session log (use --harness to say which)".into())
}

/// One file per session: when the same session appears at several paths (a copied log), the
/// largest file wins, then the first path in order, so runs are deterministic.
fn dedupe(mut files: Vec<LogFile>) -> Vec<LogFile> {
    files.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.path.cmp(&b.path)));
    let mut seen: HashMap<u64, PathBuf> = HashMap::new();
    files.retain(|f| match seen.get(&f.session_key) {
        Some(kept) => {
            tracing::warn!(skipped = %f.path.display(), kept = %kept.display(), "same session logged twice; reading one copy");
            false
        }
        None => {
            seen.insert(f.session_key, f.path.clone());
            true
        }
    });
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_native_ids_come_from_file_names() {
        let uuid = "0194f3a2-7b1c-7d3e-9f00-1a2b3c4d5e6f";
        assert_eq!(
            codex_session_id(&format!("rollout-2026-01-02T03-04-05-{uuid}")),
            Some(uuid)
        );
        assert_eq!(codex_session_id("notes"), None);
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
}
