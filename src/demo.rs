//! The bundled demo corpus: a dozen sessions written for this project, in both log formats,
//! that `up` loads when no agent logs are found, so a new user can search something at once.

use std::path::{Path, PathBuf};

macro_rules! demo_file {
    ($path:literal) => {
        ($path, include_str!(concat!("../deploy/demo/", $path)))
    };
}

/// Every demo log, by path under `deploy/demo/`. A test keeps this list equal to the directory.
pub(crate) const FILES: &[(&str, &str)] = &[
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

/// Writes the demo logs under `dir` (replacing older copies) and returns the directories that
/// hold the Codex and the Claude Code logs.
pub(crate) fn write_to(dir: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
    for (relative, contents) in FILES {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if std::fs::read_to_string(&path).ok().as_deref() != Some(*contents) {
            std::fs::write(&path, contents)?;
        }
    }
    Ok((dir.join("codex"), dir.join("claude")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_list_matches_the_directory() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/demo");
        let pattern = format!("{root}/**/*.jsonl");
        let mut on_disk: Vec<String> = glob::glob(&pattern)
            .unwrap()
            .map(|p| {
                p.unwrap()
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        on_disk.sort();
        let listed: Vec<String> = FILES.iter().map(|(p, _)| (*p).to_owned()).collect();
        assert_eq!(on_disk, listed);
    }
}
