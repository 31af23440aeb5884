//! Hostile log files: a 200 MB line, binary data, invalid UTF-8, half garbage, JSON nested
//! 10,000 deep, a 20 MB tool output, CRLF line endings, a symlink loop and an unreadable log,
//! each beside good lines. Ingest keeps its
//! memory bounded, says what it skipped, and keeps every good line around the bad ones.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use moraine_mcp::ingest::files;
use moraine_mcp::vocab::Harness;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moraine-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One good Claude Code user record of session `session`, saying `words`.
fn good(session: &str, n: u32, words: &str) -> String {
    serde_json::json!({
        "type": "user", "sessionId": session, "uuid": format!("{session}-{n}"),
        "timestamp": format!("2026-05-01T00:00:{n:02}.000Z"),
        "message": {"role": "user", "content": words},
    })
    .to_string()
}

/// The process's peak resident memory so far, in bytes (Linux).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn write(dir: &Path, name: &str, parts: &[&[u8]]) {
    let mut file = std::fs::File::create(dir.join(name)).unwrap();
    for part in parts {
        file.write_all(part).unwrap();
    }
}

#[tokio::test]
async fn hostile_files_are_skipped_with_reasons_in_bounded_memory_and_good_lines_kept() {
    let (settings, db) = crate::common::fresh_db().await;
    let config = settings.validate().unwrap();
    let dir = scratch("files");
    let line = |s: &str, n: u32, w: &str| format!("{}\n", good(s, n, w)).into_bytes();

    // A 200 MB line (far over ingest.max_line_bytes) between two good lines, streamed to disk.
    {
        let mut file = std::fs::File::create(dir.join("huge-line.jsonl")).unwrap();
        file.write_all(&line("huge", 1, "before the huge line"))
            .unwrap();
        file.write_all(b"{\"type\":\"user\",\"message\":{\"content\":\"")
            .unwrap();
        let block = vec![b'x'; 1 << 20];
        for _ in 0..200 {
            file.write_all(&block).unwrap();
        }
        file.write_all(b"\"}}\n").unwrap();
        file.write_all(&line("huge", 2, "after the huge line"))
            .unwrap();
    }
    // Binary noise with newlines in it.
    let noise: Vec<u8> = (0..64 * 1024u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    write(
        &dir,
        "binary.jsonl",
        &[
            &line("binary", 1, "good before noise"),
            &noise,
            b"\n",
            &line("binary", 2, "good after noise"),
        ],
    );
    // Invalid UTF-8 inside a string: read lossily, not dropped.
    let mut invalid = good("utf8", 1, "broken bytes here").into_bytes();
    let at = invalid.windows(6).position(|w| w == b"broken").unwrap();
    invalid.splice(at..at, [0xff, 0xfe, b' ']);
    invalid.push(b'\n');
    write(&dir, "invalid-utf8.jsonl", &[&invalid]);
    // Half garbage.
    let mut half = Vec::new();
    for n in 1..=10 {
        half.extend(line("half", n, &format!("good line {n}")));
        half.extend(format!("garbage {{{{ line {n}\n").into_bytes());
    }
    write(&dir, "half-garbage.jsonl", &[&half]);
    // JSON nested 10,000 deep.
    let deep = format!("{}{}\n", "[".repeat(10_000), "]".repeat(10_000));
    write(
        &dir,
        "deep.jsonl",
        &[
            &line("deep", 1, "before the deep line"),
            deep.as_bytes(),
            &line("deep", 2, "after the deep line"),
        ],
    );
    // CRLF line endings.
    let crlf: Vec<u8> = [
        good("crlf", 1, "windows line one"),
        good("crlf", 2, "windows line two"),
    ]
    .iter()
    .flat_map(|l| format!("{l}\r\n").into_bytes())
    .collect();
    write(&dir, "crlf.jsonl", &[&crlf]);
    // A directory symlink pointing at itself.
    std::os::unix::fs::symlink(dir.join("loop"), dir.join("loop")).unwrap();
    // A log that cannot be opened (tests may run as root, who can read any file: a link to
    // nowhere is unreadable for everyone).
    std::os::unix::fs::symlink(dir.join("gone"), dir.join("unreadable.jsonl")).unwrap();
    // A 20 MB tool output, within ingest.max_line_bytes: stored, indexed up to its bound.
    let output = format!(
        "big output start {}",
        "compiler warning line ".repeat(1 << 20)
    );
    let big = serde_json::json!({
        "type": "user", "sessionId": "big", "uuid": "big-1",
        "timestamp": "2026-05-01T00:00:01.000Z",
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": output}]},
    });
    assert!(big.to_string().len() > 20 << 20);
    write(
        &dir,
        "big-output.jsonl",
        &[big.to_string().as_bytes(), b"\n"],
    );

    let before = peak_rss();
    let (logs, problems) =
        files::from_paths(std::slice::from_ref(&dir), Some(Harness::ClaudeCode), None);
    let summary = moraine_mcp::ingest::run(&config, &db, logs, false)
        .await
        .unwrap();
    let grown = peak_rss().saturating_sub(before);
    eprintln!(
        "hostile files: {summary}; discovery problems: {problems:?}; peak memory grew {} MiB",
        grown >> 20
    );
    // Every good line is in: 2 + 2 + 1 + 10 + 2 + 2, and the big output.
    assert_eq!(summary.counters.events, 20, "{summary}");
    // The huge line, the noise, 10 garbage lines and the deep line were skipped and counted.
    assert!(summary.counters.malformed >= 13, "{summary}");
    // The unreadable log is named, with why.
    let named: Vec<String> = problems
        .iter()
        .map(ToString::to_string)
        .chain(summary.counters.unreadable.iter().cloned())
        .filter(|p| p.contains("unreadable.jsonl"))
        .collect();
    assert_eq!(
        named.len(),
        1,
        "{problems:?} {:?}",
        summary.counters.unreadable
    );
    // The 200 MB line was never held in memory (the 22 MB output is, a few times over, on
    // its way to the engine: parsed, stored text, the insert's encoding).
    assert!(grown < 200 << 20, "peak memory grew {} MiB", grown >> 20);
    let texts: Vec<String> = db
        .read("t", "SELECT text FROM events ORDER BY text")
        .fetch_all(&db, db.default_deadline())
        .await
        .unwrap();
    for expected in [
        "after the huge line",
        "good after noise",
        "broken bytes here",
        "good line 10",
        "after the deep line",
        "windows line two",
        "big output start",
    ] {
        assert!(
            texts.iter().any(|t| t.contains(expected)),
            "{expected} missing: {texts:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
