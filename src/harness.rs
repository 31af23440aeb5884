//! The agent harnesses whose logs are read: the [`LogFormat`] each one implements (where its
//! logs are, how to recognise and name them, whether they are rendered, how their records
//! read), and the registry that lists them once.
//!
//! Adding a harness is a module here implementing [`LogFormat`] and a reader of its records,
//! its variant in [`Harness`] (names written once), one line in [`registry!`] below, fixtures
//! under `tests/formats/` and a demo session under `deploy/demo/`.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::vocab::Harness;

pub(crate) mod adapter;
pub(crate) mod aider;
pub(crate) mod claude;
pub(crate) mod codex;
pub(crate) mod r#continue;
pub(crate) mod copilot;
pub(crate) mod cursor;
pub mod draft;
pub(crate) mod droid;
pub(crate) mod gemini;
pub mod identity;
pub(crate) mod openclaw;
pub(crate) mod opencode;
pub(crate) mod qwen;
pub mod rendered;
pub mod store;

use adapter::AdapterOutput;
use draft::SelfTools;
pub use identity::Identity;

/// A place a harness keeps its logs by default: a source name and a glob (`~` is the home
/// directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultSource {
    pub name: &'static str,
    pub glob: &'static str,
}

/// What the pipeline needs to know about one harness's logs. Every method but the first has
/// the answer of a harness that writes plain JSON Lines logs named by nothing in particular.
pub(crate) trait LogFormat: Sync {
    /// Where the harness keeps its logs on this kind of machine.
    fn default_sources(&self) -> &'static [DefaultSource];

    /// Parts of a path only this harness's logs lie under (`/.codex/`).
    fn path_hints(&self) -> &'static [&'static str] {
        &[]
    }

    /// File names to look for in a directory named on the command line (globs).
    fn scan_names(&self) -> &'static [&'static str] {
        &["*.jsonl"]
    }

    /// Whether a file found by a glob is one of its logs (a harness's directory also holds
    /// sidecars, temporary copies and set-aside damaged files).
    fn is_log_name(&self, _path: &Path) -> bool {
        true
    }

    /// Whether a line's record is positive evidence of this harness: a shape only it writes.
    fn detect_record(&self, _record: &Map<String, Value>) -> bool {
        false
    }

    /// Whether a whole-file JSON document is one of its sessions.
    fn detect_document(&self, _document: &Value) -> bool {
        false
    }

    /// The session a log's path names, where the harness names files by session.
    fn identity_from_name(&self, _path: &Path) -> Option<Identity> {
        None
    }

    /// The session a log's record names (one of its first records).
    fn identity_from_record(&self, _record: &Map<String, Value>) -> Option<Identity> {
        None
    }

    /// When the log's name says the session began (ms since the epoch).
    fn name_time(&self, _path: &Path) -> Option<i64> {
        None
    }

    /// Whether `path` names one of its stores: a file holding many of its sessions (read
    /// from the name alone: a pushed store's path names a file of another machine).
    fn is_store(&self, _path: &Path) -> bool {
        false
    }

    /// Whether the log at `path` is read rendered (see [`rendered`]) rather than as its bytes.
    fn is_rendered(&self, _path: &Path) -> bool {
        false
    }

    /// The rendering of the log at `path` (asked only when [`LogFormat::is_rendered`]).
    fn render(&self, _path: &Path) -> io::Result<Vec<u8>> {
        Err(rendered::invalid(
            "this harness's logs are read as they are",
        ))
    }

    /// The sessions of the store at `path` (one [`LogFormat::is_store`] names) with an
    /// estimate of their size.
    fn store_sessions(&self, _path: &Path) -> io::Result<Vec<(String, u64)>> {
        Ok(Vec::new())
    }

    /// Whether the log is an older form of a session the harness has moved elsewhere (read
    /// only when the current form is absent).
    fn superseded(&self, _path: &Path) -> bool {
        false
    }
}

/// What a harness's reader is given besides the record.
pub(crate) struct ReadContext<'a> {
    pub self_tools: &'a SelfTools,
    /// The log is a sub-agent's, by its name.
    pub subagent_file: bool,
}

/// Lists every harness once: its variant of [`Harness`], the name its reading state is stored
/// under in checkpoints (never renamed: stored checkpoints name it) with the state's type, and
/// its module, which holds `Format` (its [`LogFormat`]) and `read` (its records into drafts).
/// The order is the order of detection: harnesses whose records are the more specific shapes
/// first.
macro_rules! registry {
    ($($harness:ident => $stored:ident($module:ident::$state:ident)),+ $(,)?) => {
        /// A harness's reading state between records, saved in each checkpoint.
        #[derive(Debug, Clone, Serialize, Deserialize)]
        pub(crate) enum AdapterState {
            $($stored($module::$state),)+
        }

        impl AdapterState {
            /// The state before a log's first record.
            pub(crate) fn fresh(harness: Harness) -> Self {
                match harness {
                    $(Harness::$harness => Self::$stored(Default::default()),)+
                }
            }

            /// Reads one record into `out`.
            pub(crate) fn read(
                &mut self,
                cx: &ReadContext<'_>,
                record: &Value,
                raw: &str,
                out: &mut AdapterOutput,
            ) {
                match self {
                    $(Self::$stored(state) => $module::read(state, cx, record, raw, out),)+
                }
            }
        }

        /// The harness's log format.
        pub(crate) fn format(harness: Harness) -> &'static dyn LogFormat {
            match harness {
                $(Harness::$harness => &$module::Format,)+
            }
        }

        /// Every harness, in the order of detection.
        pub(crate) const DETECTION_ORDER: &[Harness] = &[$(Harness::$harness),+];
    };
}

registry! {
    Codex => Codex(codex::CodexState),
    GeminiCli => Gemini(gemini::GeminiState),
    QwenCode => Qwen(qwen::QwenState),
    CopilotCli => Copilot(copilot::CopilotState),
    Droid => Droid(droid::DroidState),
    Cursor => Cursor(cursor::CursorState),
    ClaudeCode => Claude(claude::ClaudeState),
    OpenCode => OpenCode(opencode::OpenCodeState),
    Aider => Aider(aider::AiderState),
    OpenClaw => OpenClaw(openclaw::OpenClawState),
    Continue => Continue(r#continue::ContinueState),
}

/// The harness whose log `record` is positive evidence of. Records that several could have
/// written (a bare `{"type": "message"}`) say nothing.
pub(crate) fn detect_record(record: &Map<String, Value>) -> Option<Harness> {
    DETECTION_ORDER
        .iter()
        .copied()
        .find(|h| format(*h).detect_record(record))
}

/// The harness whose whole-file JSON session `document` is.
pub(crate) fn detect_document(document: &Value) -> Option<Harness> {
    DETECTION_ORDER
        .iter()
        .copied()
        .find(|h| format(*h).detect_document(document))
}

/// The harness only whose logs lie under a path like `path`.
pub(crate) fn detect_path(path: &str) -> Option<Harness> {
    DETECTION_ORDER.iter().copied().find(|h| {
        format(*h)
            .path_hints()
            .iter()
            .any(|hint| path.contains(hint))
    })
}

/// The harness whose store `path` is, by its name.
pub(crate) fn detect_store(path: &Path) -> Option<Harness> {
    DETECTION_ORDER
        .iter()
        .copied()
        .find(|h| format(*h).is_store(path))
}

/// Whether `path` is a store of `harness` (by its name).
pub(crate) fn is_store(harness: Harness, path: &Path) -> bool {
    format(harness).is_store(path)
}

/// Whether `name` names any harness's store (`opencode.db`).
pub(crate) fn is_store_name(name: &str) -> bool {
    detect_store(Path::new(name)).is_some()
}

/// A store path and the session in it, for a path written `store#session` (a session of any
/// harness's store).
pub fn store_session(path: &Path) -> Option<(PathBuf, &str)> {
    rendered::split_store_session(path, is_store_name)
}

/// Whether the log at `path` is read rendered rather than as the bytes on disk.
pub fn is_rendered(harness: Harness, path: &Path) -> bool {
    format(harness).is_rendered(path)
}

/// Renders the log at `path` as JSON Lines, or `None` when it is read as it is on disk.
pub fn render(harness: Harness, path: &Path) -> io::Result<Option<Vec<u8>>> {
    let format = format(harness);
    if !format.is_rendered(path) {
        return Ok(None);
    }
    format.render(path).map(Some)
}

/// The sessions of the store at `path` with an estimate of their size, or `None` when `path`
/// is not a store of `harness`.
pub fn store_sessions(harness: Harness, path: &Path) -> Option<io::Result<Vec<(String, u64)>>> {
    is_store(harness, path).then(|| format(harness).store_sessions(path))
}

/// The file a log is read from: a store for each of its sessions, else the log itself.
pub fn backing_store(path: &Path) -> PathBuf {
    store_session(path).map_or_else(|| path.to_owned(), |(store, _)| store)
}

/// The file whose time and existence stand for the log at `path` (a store for its sessions).
pub fn backing_file(path: &Path) -> PathBuf {
    match store_session(path) {
        Some((store, _)) if !path.exists() => store,
        _ => path.to_owned(),
    }
}

/// Every harness's default sources, in [`Harness`] order.
pub fn default_sources() -> Vec<(Harness, DefaultSource)> {
    Harness::all()
        .flat_map(|h| format(h).default_sources().iter().map(move |s| (h, *s)))
        .collect()
}

/// The file names to look for in a directory named on the command line, each once.
pub(crate) fn scan_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for harness in DETECTION_ORDER {
        for name in format(*harness).scan_names() {
            if !names.contains(name) {
                names.push(name);
            }
        }
    }
    names
}

/// Whether a file that the scan name `name` found is a log of a harness that looks for it.
pub(crate) fn is_scanned_log(name: &str, path: &Path) -> bool {
    DETECTION_ORDER.iter().any(|h| {
        let format = format(*h);
        format.scan_names().contains(&name) && format.is_log_name(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_every_harness_is_registered_once_with_a_default_source() {
        let mut registered = DETECTION_ORDER.to_vec();
        registered.sort_by_key(|h| h.as_str());
        registered.dedup();
        assert_eq!(registered.len(), Harness::ALL.len());
        for harness in Harness::all() {
            assert!(
                !format(harness).default_sources().is_empty(),
                "{harness} has no default source"
            );
            let state = AdapterState::fresh(harness);
            let stored = serde_json::to_string(&state).unwrap();
            let back: AdapterState = serde_json::from_str(&stored).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), stored);
        }
    }
}
