//! The bundled demo corpus: sessions written for this project in every harness's log format,
//! that `up` loads when no agent logs are found, so a new user can search something at once.

use std::path::{Path, PathBuf};

use crate::vocab::Harness;

macro_rules! demo_file {
    ($path:literal) => {
        ($path, include_str!(concat!("../deploy/demo/", $path)))
    };
}

/// Every demo file, by path under `deploy/demo/`: logs, and the SQL scripts the SQLite stores
/// are built from (`<store>.sql`). The first directory names the harness. A test keeps this
/// list equal to the directory.
pub(crate) const FILES: &[(&str, &str)] = &[
    demo_file!("aider/ledgerline/.aider.chat.history.md"),
    demo_file!("claude/-home-dev-src-cartographe/725ccb83-0d98-4bc2-8496-45fd2d73ccb8.jsonl"),
    demo_file!("claude/-home-dev-src-harborctl/662ca2bc-637c-4429-a572-b2286ec3813f.jsonl"),
    demo_file!("claude/-home-dev-src-quillboard/9ce74b5f-a91e-4aba-adb3-7056935abbae.jsonl"),
    demo_file!("claude/-home-dev-src-quillboard/c4a08c72-c350-44e5-81c5-337c39623d5b.jsonl"),
    demo_file!("claude/-home-dev-src-tidepool/10b1ceb7-267a-4cfc-9b9b-6b4eead0cfb7.jsonl"),
    demo_file!(
        "claude/-home-dev-src-tidepool/10b1ceb7-267a-4cfc-9b9b-6b4eead0cfb7/subagents/agent-ab83e96.jsonl"
    ),
    demo_file!("claude/-home-dev-src-tidepool/9e5d1dc4-4f24-4749-8862-882317cb414e.jsonl"),
    demo_file!(
        "codex/2026/01/13/rollout-2026-01-13T09-38-02-9a5eb387-33e0-4ec1-86fa-4eb395e35fc4.jsonl"
    ),
    demo_file!(
        "codex/2026/01/16/rollout-2026-01-16T14-05-44-5b0b83d7-ab84-4a04-ba6b-ce6ff4802dad.jsonl"
    ),
    demo_file!(
        "codex/2026/01/21/rollout-2026-01-21T16-12-09-cc1bb0d3-2087-4a27-a51a-ba093eaf7a18.jsonl"
    ),
    demo_file!(
        "codex/2026/01/27/rollout-2026-01-27T10-20-31-373d637f-b5b0-4739-b31c-3ad16935f987.jsonl"
    ),
    demo_file!(
        "codex/2026/02/03/rollout-2026-02-03T13-47-20-effb7655-381e-4f57-889c-01c2ffed2c89.jsonl"
    ),
    demo_file!(
        "codex/2026/02/10/rollout-2026-02-10T08-31-15-37ab4478-d26c-42b2-86c4-6b6e4363efbf.jsonl"
    ),
    demo_file!("continue/sessions/c7e2a914-5b3d-4f86-a0c1-9d4e7b2f6a38.json"),
    demo_file!("continue/sessions/sessions.json"),
    demo_file!("copilot/session-state/6e384316-10c7-434e-a2f5-9911f9443475/events.jsonl"),
    demo_file!("cursor/User/globalStorage/state.vscdb.sql"),
    demo_file!("droid/sessions/-home-dev-src-harborctl/b5d8b6d9-0d1f-4982-9644-a74de75f397f.jsonl"),
    demo_file!(
        "droid/sessions/-home-dev-src-harborctl/b5d8b6d9-0d1f-4982-9644-a74de75f397f.settings.json"
    ),
    demo_file!(
        "gemini/tmp/5e8b1c3d9a7f2e4b6c0d8a1f3e5b7c9d2a4f6e8b0c1d3e5f7a9b2c4d6e8f0a1b/.project_root"
    ),
    demo_file!(
        "gemini/tmp/5e8b1c3d9a7f2e4b6c0d8a1f3e5b7c9d2a4f6e8b0c1d3e5f7a9b2c4d6e8f0a1b/chats/session-2026-02-20T10-04-3a7c9e1f.jsonl"
    ),
    demo_file!("openclaw/agents/main/sessions/0198e4b2-7a3c-7d51-9e08-4f6b2c1a8d37.jsonl"),
    demo_file!("opencode/opencode.db.sql"),
    demo_file!(
        "qwen/projects/-home-dev-src-ledgerline/chats/1b98f5f0-f9d9-4bdf-b5e6-959d60334919.jsonl"
    ),
];

/// The source name the demo sessions are stored under.
pub const SOURCE: &str = "demo";

/// Whether the demo was removed (`forget --demo`) from the data in `data_dir`: `up` then never
/// loads it again.
pub(crate) fn dismissed(data_dir: &Path) -> bool {
    dismissal(data_dir).exists()
}

/// Records that the demo was removed from the data in `data_dir`.
pub(crate) fn dismiss(data_dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(data_dir)?;
    std::fs::write(
        dismissal(data_dir),
        "removed by `moraine-mcp forget --demo`\n",
    )
}

fn dismissal(data_dir: &Path) -> PathBuf {
    data_dir.join("demo-removed")
}

/// Writes the demo under `dir` (replacing older copies; a store is rebuilt only when its script
/// changed) and returns each harness's directory.
pub fn write_to(dir: &Path) -> std::io::Result<Vec<(Harness, PathBuf)>> {
    let mut roots: Vec<(Harness, PathBuf)> = Vec::new();
    for (relative, contents) in FILES {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let changed = std::fs::read_to_string(&path).ok().as_deref() != Some(*contents);
        if let Some(store) = relative.strip_suffix(".sql") {
            let store = dir.join(store);
            if changed || !store.exists() {
                build_store(&store, contents)?;
            }
        }
        if changed {
            std::fs::write(&path, contents)?;
        }
        let top = relative.split('/').next().unwrap_or_default();
        let harness = Harness::parse(top).expect("each demo directory is named after a harness");
        if !roots.iter().any(|(h, _)| *h == harness) {
            roots.push((harness, dir.join(top)));
        }
    }
    Ok(roots)
}

/// Builds the SQLite store at `path` from `script`, into a temporary file renamed into place
/// so a reader never sees half a store.
fn build_store(path: &Path, script: &str) -> std::io::Result<()> {
    let building = path.with_extension("building");
    let _ = std::fs::remove_file(&building);
    rusqlite::Connection::open(&building)
        .and_then(|db| db.execute_batch(script))
        .map_err(std::io::Error::other)?;
    std::fs::rename(&building, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_list_matches_the_directory() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/demo");
        let pattern = format!("{root}/*/**/*");
        let mut on_disk: Vec<String> = glob::glob(&pattern)
            .unwrap()
            .map(Result::unwrap)
            .filter(|p| p.is_file())
            .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let listed: Vec<String> = FILES.iter().map(|(p, _)| (*p).to_owned()).collect();
        assert_eq!(on_disk, listed);
    }

    #[test]
    fn written_demo_has_every_harness_and_builds_each_store_once() {
        let dir = std::env::temp_dir().join(format!("moraine-demo-{}", std::process::id()));
        let roots = write_to(&dir).unwrap();
        let mut harnesses: Vec<Harness> = roots.iter().map(|(h, _)| *h).collect();
        harnesses.sort_by_key(|h| h.as_str());
        let mut all = Harness::ALL.to_vec();
        all.sort_by_key(|h| h.as_str());
        assert_eq!(harnesses, all);
        let store = dir.join("opencode/opencode.db");
        let built = std::fs::metadata(&store).unwrap().modified().unwrap();
        let db = rusqlite::Connection::open(&store).unwrap();
        let sessions: i64 = db
            .query_row("SELECT count(*) FROM session", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sessions, 1);
        write_to(&dir).unwrap();
        assert_eq!(
            std::fs::metadata(&store).unwrap().modified().unwrap(),
            built
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
