//! Ingest: golden normalisation of every fixture (checked against the fixture README's ground
//! truth), and on the real engine: idempotent re-runs, appends in pieces, replaced files,
//! interrupted runs, malformed lines, redaction and exact index statistics.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use common::{assert_statistics_exact, snapshot};
use moraine_mcp::config::Settings;
use moraine_mcp::harness::draft::SelfTools;
use moraine_mcp::ingest::files::{self, LogFile};
use moraine_mcp::ingest::reader::{ReadSettings, Reader, Stored};
use moraine_mcp::ingest::redact::Redactor;
use moraine_mcp::ingest::session::BuildSettings;
use moraine_mcp::rows::{EventRow, SessionRow, TurnRow};
use moraine_mcp::vocab::{EventType, Harness};
use serde_json::{Value, json};

fn fixture_files() -> Vec<LogFile> {
    logs_in(&common::fixtures(), 12)
}

/// One file per harness version family (`tests/formats/`), kept apart from the fixtures the
/// tool tests search.
fn format_sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("formats")
}

/// `tests/formats/` as the harnesses leave it on disk: copied aside, each SQLite store built
/// from its SQL script (`state.vscdb.sql` makes `state.vscdb`).
fn format_root() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = std::env::temp_dir().join(format!("moraine-formats-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            common::copy_formats(&root);
            root
        })
        .clone()
}

/// The `count` logs under `root`, found as `ingest` finds them.
fn logs_in(root: &Path, count: usize) -> Vec<LogFile> {
    let (files, problems) = files::from_paths(&[root.to_owned()], None, None);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(files.len(), count, "{files:#?}");
    files
}

/// Both corpora with a README of ground truth and golden files: root and its logs.
fn corpora() -> Vec<(PathBuf, Vec<LogFile>)> {
    vec![
        (common::fixtures(), fixture_files()),
        (format_root(), logs_in(&format_root(), FORMAT_FAMILIES)),
    ]
}

/// Files in `tests/formats/`, one per version family.
const FORMAT_FAMILIES: usize = 35;

#[test]
fn every_format_fixture_is_sniffed_as_the_harness_of_its_directory() {
    let root = format_root();
    for file in logs_in(&root, FORMAT_FAMILIES) {
        let relative = file.path.strip_prefix(&root).unwrap();
        let top = relative.components().next().unwrap().as_os_str();
        let expected = Harness::parse(&top.to_string_lossy()).unwrap();
        assert_eq!(file.harness, expected, "{}", relative.display());
    }
}

/// The fixture whose path contains `part`.
fn fixture<'a>(files: &'a [LogFile], part: &str) -> &'a LogFile {
    files
        .iter()
        .find(|f| f.path.to_string_lossy().contains(part))
        .unwrap_or_else(|| panic!("no fixture matching {part}"))
}

/// What one file normalises to, without a database.
struct Normalised {
    events: Vec<EventRow>,
    turns: Vec<TurnRow>,
    session: SessionRow,
    malformed: u64,
    redactions: u64,
}

fn normalise(file: &LogFile) -> Normalised {
    let config = Settings::default();
    let redactor = Redactor::new(&config.ingest.redaction).unwrap();
    let self_tools = SelfTools::new(&config.tools.self_server_names);
    let progress = indicatif::ProgressBar::hidden();
    let settings = ReadSettings {
        batch_events: 100_000,
        build: BuildSettings {
            preview_chars: config.tools.preview_chars,
            max_indexed_bytes: config.ingest.max_indexed_bytes,
            not_after: 0,
            embedder: None,
        },
        max_line_bytes: config.ingest.max_line_bytes,
        archive: false,
    };
    let mut batches = Vec::new();
    let mut reader = Reader::new(
        settings,
        &redactor,
        &self_tools,
        Box::new(|batch| {
            batches.push(batch);
            Ok(())
        }),
        &progress,
    );
    reader.read_file(file, &Stored::default()).unwrap();
    let counters = reader.finish().unwrap();
    let mut events = Vec::new();
    let mut turns: BTreeMap<u32, TurnRow> = BTreeMap::new();
    let mut session = None;
    for batch in batches {
        events.extend(batch.events);
        for turn in batch.turns {
            turns.insert(turn.ordinal, turn);
        }
        session = batch.sessions.into_iter().last().or(session);
    }
    Normalised {
        events,
        turns: turns.into_values().collect(),
        session: session.expect("a session row"),
        malformed: counters.malformed,
        redactions: counters.redactions,
    }
}

/// The golden form of a normalised file: what the spec cares about, keyed by source line.
fn golden(n: &Normalised) -> Value {
    let line_of: HashMap<u64, u32> = n.events.iter().map(|e| (e.event_key, e.line_no)).collect();
    let line = |key: u64| {
        if key == 0 {
            Value::Null
        } else {
            json!(line_of[&key])
        }
    };
    json!({
        "title": n.session.title,
        "turn_count": n.session.turn_count,
        "event_count": n.session.event_count,
        "completed": n.session.completed,
        "mode": n.session.mode,
        "malformed_lines": n.malformed,
        "redactions": n.redactions,
        "events": n.events.iter().map(|e| json!({
            "line": e.line_no,
            "type": EventType::from_code(e.event_type as u8).unwrap().as_str(),
            "turn": e.turn_ordinal,
            "ordinal": e.ordinal,
            "tool": e.tool_name,
            "exit_code": e.exit_code,
            "searchable": e.searchable,
            "self_tool": e.self_tool,
        })).collect::<Vec<_>>(),
        "turns": n.turns.iter().map(|t| json!({
            "ordinal": t.ordinal,
            "completed": t.completed,
            "terminal_line": line(t.terminal_event_key),
            "user_input_line": line(t.user_event_key),
            "final_response_line": line(t.final_event_key),
            "event_count": t.event_count,
            "tools_called": t.tools_called,
            "event_types": t.event_types,
        })).collect::<Vec<_>>(),
    })
}

fn golden_path(root: &Path, file: &LogFile) -> PathBuf {
    // The built copy's golden files are the sources'.
    let root = if root == format_root() {
        format_sources()
    } else {
        root.to_owned()
    };
    root.join("golden")
        .join(format!("{}.json", file.native_id.replace('/', "__")))
}

#[test]
fn every_fixture_matches_its_golden_file() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    for (root, file) in corpora()
        .into_iter()
        .flat_map(|(root, files)| files.into_iter().map(move |f| (root.clone(), f)))
    {
        let actual = golden(&normalise(&file));
        let path = golden_path(&root, &file);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, serde_json::to_string_pretty(&actual).unwrap() + "\n").unwrap();
            continue;
        }
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|_| {
                panic!("{} is missing; run with UPDATE_GOLDEN=1", path.display())
            }))
            .unwrap();
        assert_eq!(
            actual,
            expected,
            "{} differs from {}",
            file.path.display(),
            path.display()
        );
    }
}

/// One row of a per-file table in the fixture README.
#[derive(Debug)]
struct ReadmeRow {
    line: u32,
    /// The event types the line makes, in order (`a` + `b` when one line makes two), or a
    /// kind of line that makes none.
    kinds: Vec<String>,
    turn: u32,
    terminal: bool,
}

/// Lines that make no event.
const NO_EVENT: [&str; 3] = ["mirror (dropped)", "malformed", "title"];

/// The README's per-file ground truth: rows, title and completion, keyed by file name.
fn readme(root: &Path) -> HashMap<String, (Vec<ReadmeRow>, String, bool)> {
    let text = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut out = HashMap::new();
    for section in text.split("\n### ").skip(1) {
        let file = section
            .split('`')
            .nth(1)
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned();
        let title = section
            .split("Expected session title: **")
            .nth(1)
            .and_then(|rest| rest.split("**").next())
            .unwrap()
            .to_owned();
        let completed = section.contains("Session completed: **true**");
        let rows = section
            .lines()
            .filter_map(|line| {
                let cells: Vec<&str> = line.split(" | ").collect();
                let number = cells.first()?.strip_prefix("| ")?.parse().ok()?;
                Some(ReadmeRow {
                    line: number,
                    kinds: cells[1]
                        .split(" + ")
                        .map(|k| k.trim_matches('`').to_owned())
                        .collect(),
                    turn: cells[2].parse().ok()?,
                    terminal: cells[3].contains("TERMINAL"),
                })
            })
            .collect();
        out.insert(file, (rows, title, completed));
    }
    out
}

#[test]
fn normalisation_agrees_with_the_readme_ground_truth() {
    for (root, files) in corpora() {
        let truth = readme(&root);
        for file in files {
            let name = file
                .path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let (rows, title, completed) = truth
                .get(&name)
                .unwrap_or_else(|| panic!("{name} is not in the README"));
            let n = normalise(&file);
            assert_eq!(&n.session.title, title, "{name}");
            assert_eq!(n.session.completed, *completed, "{name}");
            let mut by_line: HashMap<u32, Vec<&EventRow>> = HashMap::new();
            for event in &n.events {
                by_line.entry(event.line_no).or_default().push(event);
            }
            for row in rows {
                let events = by_line.get(&row.line).cloned().unwrap_or_default();
                if NO_EVENT.contains(&row.kinds[0].as_str()) {
                    assert!(
                        events.is_empty(),
                        "{name}:{} should make no event, made {events:?}",
                        row.line
                    );
                    continue;
                }
                let actual: Vec<&str> = events
                    .iter()
                    .map(|e| EventType::from_code(e.event_type as u8).unwrap().as_str())
                    .collect();
                assert_eq!(actual, row.kinds, "{name}:{} types", row.line);
                let turn = &n.turns[row.turn as usize - 1];
                for event in &events {
                    assert_eq!(event.turn_ordinal, row.turn, "{name}:{} turn", row.line);
                }
                assert_eq!(
                    events
                        .iter()
                        .any(|e| turn.terminal_event_key == e.event_key),
                    row.terminal,
                    "{name}:{} terminal",
                    row.line
                );
            }
            assert_eq!(
                n.events.len(),
                rows.iter()
                    .filter(|r| !NO_EVENT.contains(&r.kinds[0].as_str()))
                    .map(|r| r.kinds.len())
                    .sum::<usize>(),
                "{name}"
            );
            for turn in &n.turns {
                let has_terminal = rows.iter().any(|r| r.turn == turn.ordinal && r.terminal);
                assert_eq!(turn.completed, has_terminal, "{name} turn {}", turn.ordinal);
            }
        }
    }
}

#[test]
fn a_cursor_conversation_is_dated_by_the_store_never_by_the_files_time() {
    let files = logs_in(&format_root(), FORMAT_FAMILIES);
    // Bubbles without a time: the conversation's createdAt and lastUpdatedAt.
    let undated = normalise(fixture(&files, "3c7e1a90-5d2b-4f8e-a6c4-9b0d2e7f1a35"));
    assert_eq!(undated.session.started_at, 1_781_000_000_000);
    assert_eq!(undated.session.updated_at, 1_781_000_900_000);
    assert!(undated.events.iter().all(|e| e.ts == 1_781_000_000_000));
    assert!(
        undated
            .turns
            .iter()
            .all(|t| t.started_at == 1_781_000_000_000)
    );
    // Bubbles with times keep their own.
    let dated = normalise(fixture(&files, "6f1c2a8e-3b5d-4e7f-9a0c-1d2e3f4a5b6c"));
    assert_eq!(
        dated.events[0].ts,
        time_ms("2026-09-01T09:00:00.000Z"),
        "{:?}",
        dated.events[0]
    );
    // The empty conversation in the same store is no session.
    assert!(!files.iter().any(|f| f.native_id.starts_with("9a8b7c6d")));
}

fn time_ms(text: &str) -> i64 {
    let at =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).unwrap();
    (at.unix_timestamp_nanos() / 1_000_000) as i64
}

#[test]
fn turn_facts_in_both_harnesses() {
    let files = fixture_files();
    let find = |part: &str| normalise(fixture(&files, part));
    // Codex: completed, interrupted (completed with no final answer) and unfinished turns.
    let codex = find("1e75913d");
    let states: Vec<(bool, bool)> = codex
        .turns
        .iter()
        .map(|t| (t.completed, t.final_event_key != 0))
        .collect();
    assert_eq!(states, [(true, true), (true, false), (false, false)]);
    assert!(!codex.session.completed);
    assert_eq!(codex.malformed, 1);
    // Claude: the same three shapes.
    let claude = find("3bb35e09");
    let states: Vec<(bool, bool)> = claude
        .turns
        .iter()
        .map(|t| (t.completed, t.final_event_key != 0))
        .collect();
    assert_eq!(
        states,
        [(true, true), (true, false), (true, false), (false, false)]
    );
    assert_eq!(claude.malformed, 1);
    // The unknown record is stored but not searchable.
    let unknown: Vec<&EventRow> = claude
        .events
        .iter()
        .filter(|e| e.event_type == EventType::Unknown.code() as i8)
        .collect();
    assert_eq!(unknown.len(), 1);
    assert!(!unknown[0].searchable);
    // Tool arguments are searchable in both formats: the command or path is in the indexed text.
    let core = find("5c2b148a");
    let bash = core
        .events
        .iter()
        .find(|e| e.tool_name == "Bash" && e.event_type == EventType::ToolCall.code() as i8)
        .unwrap();
    assert!(bash.text.contains("command="), "{}", bash.text);
    assert!(bash.searchable);
    // The large output is kept whole.
    let large = find("33e88032");
    assert!(large.events.iter().any(|e| e.text.len() > 64 * 1024));
    // This service's own tool calls are flagged in both formats.
    assert!(
        find("1bbdc6f5")
            .events
            .iter()
            .any(|e| e.self_tool && e.event_type == EventType::ToolResponse.code() as i8)
    );
    assert!(
        find("3999407f")
            .events
            .iter()
            .filter(|e| e.self_tool)
            .count()
            >= 4
    );
    assert_eq!(find("3999407f").session.mode, "mcp_internal");
}

#[test]
fn secrets_are_redacted_from_text_and_payloads() {
    let files = fixture_files();
    for part in ["b130a138", "4a3980dc"] {
        let n = normalise(fixture(&files, part));
        assert!(n.redactions >= 3, "{part}: {}", n.redactions);
        for event in &n.events {
            for field in [&event.text, &event.raw, &event.arguments, &event.summary] {
                for secret in [
                    "AKIAFAKE",
                    "hunter2secret",
                    "ghp_",
                    "BEGIN RSA PRIVATE KEY-----\\nMII",
                    "sk-proj-",
                    "sk-ant-",
                ] {
                    assert!(
                        !field.contains(secret),
                        "{part} line {} leaks {secret}",
                        event.line_no
                    );
                }
            }
            serde_json::from_str::<Value>(&event.raw)
                .unwrap_or_else(|e| panic!("{part}:{} raw is not JSON: {e}", event.line_no));
        }
    }
}

/// The length of the lines in the first half of `bytes`.
fn half_at_line(bytes: &[u8]) -> usize {
    bytes[..bytes.len() / 2]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ingest-{name}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn ingesting_twice_and_on_another_machine_gives_the_same_ids_and_counts() {
    let (config, db) = common::fresh_db().await;
    let first = common::ingest_paths(&config, &db, &common::fixtures()).await;
    assert_eq!(first.counters.files_read, 12);
    assert_eq!(first.counters.malformed, 2);
    let once = snapshot(&db).await;
    assert_statistics_exact(&once);
    assert!(!once.postings.is_empty());

    let second = common::ingest_paths(&config, &db, &common::fixtures()).await;
    assert_eq!(second.counters.files_unchanged, 12);
    assert_eq!(second.counters.events, 0);
    assert_eq!(snapshot(&db).await, once);

    // "Another machine": the same files at another path, into another database.
    let elsewhere = scratch("elsewhere");
    write_prefixes(&elsewhere, <[u8]>::len);
    let (config2, db2) = common::fresh_db().await;
    common::ingest_paths(&config2, &db2, &elsewhere).await;
    assert_eq!(snapshot(&db2).await, once);
    std::fs::remove_dir_all(elsewhere).unwrap();
}

/// Writes the first `cut` bytes of every fixture into `dir` (same relative paths).
fn write_prefixes(dir: &Path, cut: impl Fn(&[u8]) -> usize) {
    write_prefixes_of(&common::fixtures(), dir, cut);
}

/// Writes the first `cut` bytes of every JSON Lines log under `root` into `dir`.
fn write_prefixes_of(root: &Path, dir: &Path, cut: impl Fn(&[u8]) -> usize) {
    for entry in glob::glob(&format!("{}/**/*.jsonl", root.display())).unwrap() {
        let source = entry.unwrap();
        let bytes = std::fs::read(&source).unwrap();
        let target = dir.join(source.strip_prefix(root).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, &bytes[..cut(&bytes)]).unwrap();
    }
}

/// The byte just after the line `fraction` of the way through `bytes`.
fn at_line(bytes: &[u8], fraction: f64) -> usize {
    let newlines: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    newlines[((newlines.len() as f64 * fraction) as usize).min(newlines.len() - 1)]
}

#[tokio::test]
async fn appending_in_pieces_equals_one_pass() {
    let (config, clean_db) = common::fresh_db().await;
    common::ingest_paths(&config, &clean_db, &common::fixtures()).await;
    let clean = snapshot(&clean_db).await;

    let dir = scratch("appends");
    let (config, db) = common::fresh_db().await;
    // Cut points: a third of the lines, then in the middle of a line (a record still being
    // written), then the rest.
    write_prefixes(&dir, |b| at_line(b, 0.33));
    common::ingest_paths(&config, &db, &dir).await;
    write_prefixes(&dir, |b| (at_line(b, 0.66) + 25).min(b.len()));
    let partial = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!(
        partial.counters.files_reread, 0,
        "appends must not re-read from the start"
    );
    let mid = snapshot(&db).await;
    assert_statistics_exact(&mid);
    // Open turns are reported as open in between.
    assert!(mid.turns.iter().any(|t| !t.completed));
    write_prefixes(&dir, |b| b.len());
    common::ingest_paths(&config, &db, &dir).await;
    let pieced = snapshot(&db).await;
    assert_eq!(pieced, clean);
    assert_statistics_exact(&pieced);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn every_harness_log_appended_in_pieces_equals_one_pass() {
    // The JSON Lines logs of every harness, written a third, two thirds (ending mid-line) and
    // all of the way; Gemini CLI's project roots beside them.
    let dir = scratch("harness-appends");
    for root in glob::glob(&format!(
        "{}/gemini/tmp/*/.project_root",
        format_sources().display()
    ))
    .unwrap()
    {
        let root = root.unwrap();
        let target = dir.join(root.strip_prefix(format_sources()).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&root, target).unwrap();
    }
    let (config, db) = common::fresh_db().await;
    write_prefixes_of(&format_sources(), &dir, |b| at_line(b, 0.33));
    common::ingest_paths(&config, &db, &dir).await;
    write_prefixes_of(&format_sources(), &dir, |b| {
        (at_line(b, 0.66) + 25).min(b.len())
    });
    let partial = common::ingest_paths(&config, &db, &dir).await;
    // Only a log whose new lines rewind or rewrite what came before is read again.
    assert!(partial.counters.files_reread <= 1, "{partial}");
    assert_statistics_exact(&snapshot(&db).await);
    write_prefixes_of(&format_sources(), &dir, |b| b.len());
    common::ingest_paths(&config, &db, &dir).await;
    let pieced = snapshot(&db).await;
    assert_statistics_exact(&pieced);

    let (clean_config, clean_db) = common::fresh_db().await;
    common::ingest_paths(&clean_config, &clean_db, &dir).await;
    assert_eq!(pieced, snapshot(&clean_db).await);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_truncated_and_rewritten_file_is_read_again() {
    let files = fixture_files();
    let claude: Vec<&LogFile> = files
        .iter()
        .filter(|f| f.harness == Harness::ClaudeCode && !f.subagent)
        .collect();
    let (original, replacement) = (claude[0], claude[1]);
    let dir = scratch("rewrite");
    let target = dir.join(original.path.file_name().unwrap());
    std::fs::copy(&original.path, &target).unwrap();
    let (config, db) = common::fresh_db().await;
    common::ingest_paths(&config, &db, &target).await;

    // Truncate and rewrite with other content under the same name.
    std::fs::write(&target, std::fs::read(&replacement.path).unwrap()).unwrap();
    let summary = common::ingest_paths(&config, &db, &target).await;
    assert_eq!(summary.counters.files_reread, 1);
    let rewritten = snapshot(&db).await;
    assert_statistics_exact(&rewritten);

    let (config2, db2) = common::fresh_db().await;
    common::ingest_paths(&config2, &db2, &target).await;
    assert_eq!(rewritten, snapshot(&db2).await);

    // Truncated to less than was read: read again too.
    let bytes = std::fs::read(&target).unwrap();
    let half = half_at_line(&bytes);
    std::fs::write(&target, &bytes[..half]).unwrap();
    let summary = common::ingest_paths(&config, &db, &target).await;
    assert_eq!(summary.counters.files_reread, 1);
    let truncated = snapshot(&db).await;
    assert_statistics_exact(&truncated);
    assert!(truncated.events.len() < rewritten.events.len());
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn rows_of_a_run_that_stopped_before_its_checkpoint_are_replaced() {
    let files = fixture_files();
    let file = fixture(&files, "23435693");
    let dir = scratch("orphans");
    let target = dir.join(file.path.file_name().unwrap());
    let bytes = std::fs::read(&file.path).unwrap();
    let half = half_at_line(&bytes);

    // The checkpoint a run would have written after the first half.
    std::fs::write(&target, &bytes[..half]).unwrap();
    let (config_a, db_a) = common::fresh_db().await;
    common::ingest_paths(&config_a, &db_a, &target).await;
    let checkpoint: Vec<moraine_mcp::rows::CheckpointRow> = db_a
        .read("t", "SELECT ?fields FROM ingest_checkpoints FINAL")
        .fetch_all(&db_a, db_a.default_deadline())
        .await
        .unwrap();

    // A database holding the whole file but only that half-way checkpoint: as if the run
    // inserted the second half and died before writing its checkpoint.
    std::fs::write(&target, &bytes).unwrap();
    let (config, db) = common::fresh_db().await;
    common::ingest_paths(&config, &db, &target).await;
    let clean = snapshot(&db).await;
    let mut stale = checkpoint[0].clone();
    stale.version = moraine_mcp::ingest::writer::next_version(0);
    db.insert("t", "ingest_checkpoints", &[stale], &[])
        .await
        .unwrap();

    let rerun = common::ingest_paths(&config, &db, &target).await;
    assert!(rerun.counters.events > 0, "the second half is read again");
    let after = snapshot(&db).await;
    assert_eq!(after, clean);
    assert_statistics_exact(&after);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_malformed_line_is_counted_and_the_rest_ingested_and_unreadable_files_are_skipped() {
    let (config, db) = common::fresh_db().await;
    let dir = scratch("malformed");
    let good = dir.join("rollout-2026-05-01T00-00-00-0194f3a2-7b1c-4d3e-9f00-1a2b3c4d5e6f.jsonl");
    let mut out = std::fs::File::create(&good).unwrap();
    writeln!(out, r#"{{"timestamp":"2026-05-01T00:00:00.000Z","type":"session_meta","payload":{{"id":"0194f3a2-7b1c-4d3e-9f00-1a2b3c4d5e6f","cwd":"/tmp"}}}}"#).unwrap();
    writeln!(out, r#"{{"timestamp":"2026-05-01T00:00:01.000Z","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"hello"}}]}}}}"#).unwrap();
    writeln!(out, "{{not json").unwrap();
    writeln!(out, "[1, 2, 3]").unwrap();
    writeln!(out, r#"{{"timestamp":"2026-05-01T00:00:02.000Z","type":"event_msg","payload":{{"type":"task_complete"}}}}"#).unwrap();
    drop(out);
    let unreadable =
        dir.join("rollout-2026-05-02T00-00-00-0194f3a2-7b1c-4d3e-9f00-1a2b3c4d5e70.jsonl");
    std::fs::write(&unreadable, "{}\n").unwrap();
    let (files, _) = files::from_paths(
        &[good.clone(), unreadable.clone()],
        Some(Harness::Codex),
        None,
    );
    std::fs::remove_file(&unreadable).unwrap();
    let config = config.validate().unwrap();
    let summary = moraine_mcp::ingest::run(&config, &db, files, false)
        .await
        .unwrap();
    assert_eq!(summary.counters.malformed, 2);
    assert_eq!(
        summary.counters.unreadable.len(),
        1,
        "{:?}",
        summary.counters.unreadable
    );
    assert_eq!(summary.counters.events, 3);
    assert!(!summary.nothing_ingested());
    std::fs::remove_dir_all(dir).unwrap();
}

/// `moraine-mcp ingest <path>` into a database of its own on the shared engine.
fn ingest_cli(path: impl AsRef<Path>) -> std::process::Output {
    ingest_cli_with(&[path.as_ref().as_os_str()])
}

/// `moraine-mcp ingest <args>`, with a home of its own, into a database of its own.
fn ingest_cli_with(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let home = scratch("cli-home");
    std::process::Command::new(env!("CARGO_BIN_EXE_moraine-mcp"))
        .arg("ingest")
        .args(args)
        .env("HOME", &home)
        .env("MORAINE_MCP_CLICKHOUSE__URL", common::shared_engine_url())
        .env(
            "MORAINE_MCP_CLICKHOUSE__DATABASE",
            format!("cli_{}", uuid::Uuid::new_v4().simple()),
        )
        .output()
        .unwrap()
}

#[test]
fn the_ingest_command_reports_and_exits_by_what_it_ingested() {
    // Nothing readable at all: non-zero.
    let output = ingest_cli(Path::new("/nonexistent/path.jsonl"));
    assert!(!output.status.success());
    // Fixtures: a summary line and success.
    let output = ingest_cli(common::fixtures());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    for part in [
        "12 files",
        "lines",
        "events written",
        "sessions touched",
        "2 malformed lines",
        "redactions",
        "events/s",
    ] {
        assert!(stdout.contains(part), "{part} missing from: {stdout}");
    }
    assert!(!stdout.contains("not used"), "{stdout}");
    // Some files unusable, one session twice: each is named, and the exit code says "partly".
    let dir = scratch("cli-partly");
    let session = common::fixtures()
        .join("codex")
        .join("rollout-2026-03-02T09-14-07-23435693-bfda-4cfd-8fa1-17c536123c31.jsonl");
    std::fs::copy(&session, dir.join("copy-of-a-session.jsonl")).unwrap();
    std::fs::copy(&session, dir.join(session.file_name().unwrap())).unwrap();
    std::fs::write(dir.join("notes.jsonl"), "{\"hello\": 1}\n").unwrap();
    let output = ingest_cli(&dir);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("1 files"), "{stdout}");
    assert!(
        stdout.contains("not used: ") && stdout.contains("notes.jsonl: not a session log"),
        "{stdout}"
    );
    assert!(
        stdout.contains("read once: ") && stdout.contains("the same session as"),
        "{stdout}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_log_nothing_of_which_the_harness_reads_is_not_used_and_fails_the_run() {
    let dir = scratch("cli-nothing");
    // A whole JSON document over many lines, read as a JSON Lines log: every line malformed.
    let pretty = dir.join("session.jsonl");
    std::fs::write(
        &pretty,
        serde_json::to_string_pretty(&json!({"sessionId": "x", "chatMessages": [
            {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]}))
        .unwrap(),
    )
    .unwrap();
    // Records of another harness: each one unknown to the adapter asked for.
    let codex = common::fixtures()
        .join("codex")
        .join("rollout-2026-03-02T09-14-07-23435693-bfda-4cfd-8fa1-17c536123c31.jsonl");
    for path in [&pretty, &codex] {
        let output = ingest_cli_with(&["--harness".as_ref(), "copilot".as_ref(), path.as_os_str()]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{stdout}");
        assert!(
            stdout.contains("not used: ") && stdout.contains("nothing in it is a copilot-cli log"),
            "{stdout}"
        );
    }
    // A store is one file, however many sessions it holds (and empty ones are none).
    let formats = scratch("cli-store");
    common::copy_formats(&formats);
    let store = formats.join("cursor/User/globalStorage/state.vscdb");
    let output = ingest_cli(&store);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("1 files holding 3 sessions (3 read, 0 unchanged"),
        "{stdout}"
    );
    std::fs::remove_dir_all(formats).unwrap();
    // One usable log beside the unusable one: some, so exit 2.
    std::fs::copy(&codex, dir.join(codex.file_name().unwrap())).unwrap();
    let output = ingest_cli(&dir);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_continue_session_of_the_python_extension_is_not_used_and_says_why() {
    let dir = scratch("cli-continue");
    let sessions = dir.join(".continue").join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    // The 2023 Python extension's `FullState`: a history of steps, no messages.
    let python_era = json!({
        "history": {"timeline": [{"step": {"name": "UserInputStep", "user_input": "explain this file"}, "depth": 0}], "current_index": 0},
        "active": false, "user_input_queue": [], "slash_commands": [],
        "session_info": {"session_id": "6d0a3b2c-1e4f-4a5b-8c7d-9e0f1a2b3c4d", "title": "explain this file", "date_created": "1694512345.5"}
    });
    std::fs::write(
        sessions.join("6d0a3b2c-1e4f-4a5b-8c7d-9e0f1a2b3c4d.json"),
        serde_json::to_vec_pretty(&python_era).unwrap(),
    )
    .unwrap();
    let current =
        format_sources().join("continue/sessions/a81c5e3d-2f74-4b9a-8d06-1e5c7b3f9a24.json");
    std::fs::copy(&current, sessions.join(current.file_name().unwrap())).unwrap();
    let output = ingest_cli(&dir);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("2 files (1 read"), "{stdout}");
    assert!(
        stdout.contains("not used: ")
            && stdout.contains("6d0a3b2c-1e4f-4a5b-8c7d-9e0f1a2b3c4d.json: a session of Continue's 2023 Python extension"),
        "{stdout}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_log_that_names_its_session_later_moves_into_it_without_duplicates() {
    let (config, db) = common::fresh_db().await;
    let config = config.validate().unwrap();
    let dir = scratch("named-later");
    let path = dir.join("claude-session.jsonl");
    // At first only a summary: nothing names the session, so the file name stands in.
    std::fs::write(
        &path,
        "{\"type\":\"summary\",\"summary\":\"Fixing the build\",\"leafUuid\":\"u-9\"}\n",
    )
    .unwrap();
    let read = |path: &Path| files::from_paths(&[path.to_owned()], None, None).0;
    moraine_mcp::ingest::run(&config, &db, read(&path), false)
        .await
        .unwrap();
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(out, r#"{{"type":"user","sessionId":"s-later","uuid":"u-1","timestamp":"2026-05-01T00:00:00.000Z","message":{{"role":"user","content":"where is the flaky test"}}}}"#).unwrap();
    writeln!(out, r#"{{"type":"assistant","sessionId":"s-later","uuid":"u-2","parentUuid":"u-1","timestamp":"2026-05-01T00:00:01.000Z","message":{{"model":"m","stop_reason":"end_turn","content":[{{"type":"text","text":"in the parser suite"}}]}}}}"#).unwrap();
    drop(out);
    let files = read(&path);
    assert_eq!(files[0].native_id, "s-later");
    moraine_mcp::ingest::run(&config, &db, files, false)
        .await
        .unwrap();
    let sessions: Vec<(String, u32)> = db
        .read("t", "SELECT native_id, event_count FROM sessions FINAL")
        .fetch_all(&db, db.default_deadline())
        .await
        .unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0].0, "s-later");
    let (events, sessions_of_events): (u64, u64) = db
        .read("t", "SELECT count(), uniqExact(session_key) FROM events")
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sessions_of_events, 1);
    assert_eq!(u64::from(sessions[0].1), events);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn early_codex_logs_are_detected_and_logs_without_timestamps_are_not_from_1970() {
    let (config, db) = common::fresh_db().await;
    let config = config.validate().unwrap();
    let dir = scratch("early-codex");
    let uuid = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f";
    // Mid-2025 Codex: bare metadata, state lines, items without envelope or time.
    std::fs::write(
        dir.join(format!("rollout-2025-05-07T17-24-21-{uuid}.jsonl")),
        [
            json!({"id": uuid, "timestamp": "2025-05-07T17:24:21.000Z", "instructions": null}),
            json!({"record_type": "state"}),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list the pending migrations"}]}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "there are seven pending"}]}),
        ]
        .map(|l| l.to_string() + "\n")
        .concat(),
    )
    .unwrap();
    // A Claude Code export with no timestamps at all.
    std::fs::write(
        dir.join("exported.jsonl"),
        [
            json!({"type": "user", "sessionId": "no-clock", "uuid": "a", "message": {"role": "user", "content": "why is the clock missing"}}),
            json!({"type": "assistant", "sessionId": "no-clock", "uuid": "b", "message": {"model": "m", "content": [{"type": "text", "text": "it was never written"}]}}),
        ]
        .map(|l| l.to_string() + "\n")
        .concat(),
    )
    .unwrap();
    let (logs, problems) = files::from_paths(std::slice::from_ref(&dir), None, None);
    assert!(problems.is_empty(), "{problems:?}");
    let harnesses: BTreeMap<String, Harness> = logs
        .iter()
        .map(|f| (f.native_id.clone(), f.harness))
        .collect();
    assert_eq!(harnesses[uuid], Harness::Codex);
    assert_eq!(harnesses["no-clock"], Harness::ClaudeCode);
    moraine_mcp::ingest::run(&config, &db, logs, false)
        .await
        .unwrap();
    let sessions: Vec<(String, i64, u32)> = db
        .read(
            "t",
            "SELECT native_id, toUnixTimestamp64Milli(started_at), turn_count FROM sessions FINAL ORDER BY native_id",
        )
        .fetch_all(&db, db.default_deadline())
        .await
        .unwrap();
    let started: BTreeMap<&str, i64> = sessions
        .iter()
        .map(|(id, at, _)| (id.as_str(), *at))
        .collect();
    // The Codex session starts when its metadata says.
    assert_eq!(started[uuid], 1_746_638_661_000);
    // The export: when the file was written (this year), not 1970.
    assert!(started["no-clock"] > 1_700_000_000_000, "{sessions:?}");
    assert!(
        sessions.iter().all(|(_, _, turns)| *turns == 1),
        "{sessions:?}"
    );
    let oldest_event: i64 = db
        .read("t", "SELECT toUnixTimestamp64Milli(min(ts)) FROM events")
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert!(oldest_event > 1_700_000_000_000);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_whole_file_json_session_rewritten_as_it_grows_is_read_incrementally() {
    let (config, db) = common::fresh_db().await;
    let config = config.validate().unwrap();
    let dir = scratch("typescript-codex");
    let fixture = format_root()
        .join("codex")
        .join("rollout-2025-04-18-3c9d8e7f-1a2b-4c3d-8e9f-0a1b2c3d4e5f.json");
    let path = dir.join(fixture.file_name().unwrap());
    let mut whole: Value =
        serde_json::from_str(&std::fs::read_to_string(&fixture).unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&whole).unwrap()).unwrap();
    let read = || files::from_paths(std::slice::from_ref(&dir), None, None).0;
    let first = moraine_mcp::ingest::run(&config, &db, read(), false)
        .await
        .unwrap();
    assert_eq!(first.counters.events, 6);
    // The CLI saves the whole file again, two items longer.
    let items = whole["items"].as_array_mut().unwrap();
    items.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Now update the changelog."}]}));
    items.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "CHANGELOG.md mentions load_settings."}]}));
    std::fs::write(&path, serde_json::to_string_pretty(&whole).unwrap()).unwrap();
    let second = moraine_mcp::ingest::run(&config, &db, read(), false)
        .await
        .unwrap();
    assert_eq!(second.counters.events, 2, "only the new items are read");
    assert_eq!(second.counters.files_reread, 0);
    let (events, unique, turns): (u64, u64, u32) = db
        .read(
            "t",
            "SELECT count(), uniqExact(event_key), assumeNotNull((SELECT max(turn_count) FROM sessions FINAL)) FROM events",
        )
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((events, unique, turns), (8, 8, 2));
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn forgetting_the_demo_a_session_or_a_source_leaves_exactly_the_rest() {
    use moraine_mcp::forget::{self, Forget};
    let (settings, db) = common::fresh_db().await;
    let config = settings.clone().validate().unwrap();
    let data_dir = config.embedded.data_dir_path();
    common::ingest_paths(&settings, &db, &common::fixtures()).await;
    let demo_logs = common::demo_logs(&data_dir.join("demo"), Some("demo"));
    moraine_mcp::ingest::run(&config, &db, demo_logs, false)
        .await
        .unwrap();

    // Without the demo: exactly what ingesting the fixtures alone stores.
    let (demo_sessions, _) = forget::count(&db, Some("demo")).await.unwrap();
    assert!(demo_sessions >= 21, "{demo_sessions}");
    let done = forget::run(&config, &db, &Forget::Source("demo".into()))
        .await
        .unwrap();
    assert_eq!(done.sessions as u64, demo_sessions);
    // `up` is told not to load the demo again (in the test's own data directory).
    assert!(data_dir.join("demo-removed").exists());
    let (alone_settings, alone) = common::fresh_db().await;
    common::ingest_paths(&alone_settings, &alone, &common::fixtures()).await;
    let after = snapshot(&db).await;
    assert_statistics_exact(&after);
    assert_eq!(after, snapshot(&alone).await);
    let demo_checkpoints: u64 = db
        .read(
            "t",
            "SELECT count() FROM ingest_checkpoints FINAL WHERE source = 'demo'",
        )
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(demo_checkpoints, 0);

    // One session, by the ID the tools give it.
    let file = fixture_files()
        .into_iter()
        .find(|f| f.native_id == "5c2b148a-4a39-402e-984c-ed27a60cf6e9")
        .unwrap();
    let id = moraine_mcp::ids::Id::Session {
        session: file.session_key,
    }
    .to_string();
    let done = forget::run(&config, &db, &Forget::Session(id))
        .await
        .unwrap();
    assert_eq!((done.sessions, done.logs), (1, 1));
    let after = snapshot(&db).await;
    assert_statistics_exact(&after);
    assert!(after.sessions.iter().all(|s| s.0 != file.session_key));
    assert!(after.events.iter().all(|e| e.0 != file.session_key));
    assert!(matches!(
        forget::run(&config, &db, &Forget::Session("session:nope".into())).await,
        Err(forget::ForgetError::NotASessionId(_))
    ));

    // A whole source, then everything.
    forget::run(&config, &db, &Forget::Source("codex".into()))
        .await
        .unwrap();
    let after = snapshot(&db).await;
    assert_statistics_exact(&after);
    assert!(after.sessions.len() < 6, "{}", after.sessions.len());
    let done = forget::run(&config, &db, &Forget::Everything)
        .await
        .unwrap();
    assert!(done.everything);
    assert!(
        db.read("t", "SELECT count() FROM sessions")
            .fetch_optional::<u64>(&db, db.default_deadline())
            .await
            .is_err(),
        "the database is gone"
    );
    std::fs::remove_dir_all(data_dir).unwrap();
}

#[tokio::test]
async fn a_log_ingested_beside_a_running_server_is_found_and_ranked_at_once() {
    let (settings, db) = common::fresh_db().await;
    let first = scratch("fresh-first");
    common::write_sessions(&first, 0x51, 3, 2, "alpha");
    common::ingest_paths(&settings, &db, &first).await;
    let server = common::TestServer::start(settings.clone(), db.clone()).await;
    let mut warm = common::Mcp::legacy(&server.mcp_url, None).await;
    let answer = async |mcp: &mut common::Mcp, query: &str| {
        let envelope = mcp.ok("search_sessions", json!({"query": query})).await;
        envelope["data"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| (hit["id"].clone(), hit["score"].clone()))
            .collect::<Vec<_>>()
    };
    // The server has answered searches (its statistics are cached), the new word is not there.
    assert!(!answer(&mut warm, "alpha").await.is_empty());
    assert!(answer(&mut warm, "quokkafrobnicate").await.is_empty());
    assert!(!answer(&mut warm, "alpha quokkafrobnicate").await.is_empty());
    // Another process ingests sessions holding the word.
    let second = scratch("fresh-second");
    common::write_sessions(&second, 0x52, 2, 2, "quokkafrobnicate");
    common::ingest_paths(&settings, &db, &second).await;
    // Found at once, and ranked as a server that has just started ranks it once the corpus
    // size is read again (every second).
    assert!(!answer(&mut warm, "quokkafrobnicate").await.is_empty());
    let cold_server = common::TestServer::start(settings.clone(), db.clone()).await;
    let mut cold = common::Mcp::legacy(&cold_server.mcp_url, None).await;
    for query in ["quokkafrobnicate", "alpha quokkafrobnicate"] {
        let expected = answer(&mut cold, query).await;
        let mut now = answer(&mut warm, query).await;
        for _ in 0..40 {
            if now == expected {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            now = answer(&mut warm, query).await;
        }
        assert_eq!(now, expected, "{query}");
    }
    server.stop().await;
    cold_server.stop().await;
    std::fs::remove_dir_all(first).unwrap();
    std::fs::remove_dir_all(second).unwrap();
}

#[test]
fn an_opencode_export_reads_as_the_same_session_in_the_store() {
    let root = format_root();
    // `opencode export` output saved with its stderr line before the JSON.
    let export = root.join("opencode/exports/ses_5c1e8a2f7b3dKp9Qw2Xy4Zr6Tu.json");
    let (exported, problems) = files::from_paths(&[export], None, None);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(exported.len(), 1);
    assert_eq!(exported[0].harness, Harness::OpenCode);
    assert_eq!(exported[0].native_id, "ses_5c1e8a2f7b3dKp9Qw2Xy4Zr6Tu");
    // Under any file name: the identity is the export's.
    let renamed = scratch("opencode-export").join("session.json");
    std::fs::copy(&exported[0].path, &renamed).unwrap();
    let (again, problems) = files::from_paths(std::slice::from_ref(&renamed), None, None);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(again[0].session_key, exported[0].session_key);
    let stored = logs_in(&root, FORMAT_FAMILIES);
    let stored = fixture(&stored, "opencode.db#ses_5c1e8a2f7b3dKp9Qw2Xy4Zr6Tu");
    assert_eq!(golden(&normalise(&exported[0])), golden(&normalise(stored)));
    assert_eq!(golden(&normalise(&again[0])), golden(&normalise(stored)));
}

#[test]
fn a_copilot_session_imported_into_an_event_log_is_read_once_from_the_log() {
    let legacy = format_root().join(
        "copilot/history-session-state/session_5d0e7c3a-1f2b-4a6d-9e8c-7b4a2f1d0c93_1760182820882.json",
    );
    let document: Value = serde_json::from_slice(&std::fs::read(&legacy).unwrap()).unwrap();
    let home = scratch("copilot-import");
    let old = home.join("history-session-state");
    let new = home.join("session-state");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&new).unwrap();
    std::fs::copy(&legacy, old.join(legacy.file_name().unwrap())).unwrap();
    // 0.0.343 resumed it: the whole document imported into an event log, then a new prompt.
    let id = "5d0e7c3a-1f2b-4a6d-9e8c-7b4a2f1d0c93";
    let events = [
        json!({"type": "session.start", "id": "e1", "parentId": null, "timestamp": "2025-10-20T08:00:00.000Z",
               "data": {"sessionId": id, "version": 1, "producer": "copilot-agent", "copilotVersion": "0.0.343", "startTime": "2025-10-11T11:40:20.882Z"}}),
        json!({"type": "session.import_legacy", "id": "e2", "parentId": "e1", "timestamp": "2025-10-20T08:00:00.010Z",
               "data": {"legacySession": document, "importTime": "2025-10-20T08:00:00.010Z", "sourceFile": "session.json"}}),
        json!({"type": "user.message", "id": "e3", "parentId": "e2", "timestamp": "2025-10-20T08:00:05.000Z",
               "data": {"content": "try the fix again"}}),
    ];
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(new.join(format!("{id}.jsonl")), text).unwrap();
    let (found, problems) = files::from_paths(std::slice::from_ref(&home), None, None);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].path.ends_with(format!("{id}.jsonl")));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].is_duplicate());
    let n = normalise(&found[0]);
    let prompts: Vec<&str> = n
        .events
        .iter()
        .filter(|e| e.event_type == EventType::UserInput.code() as i8)
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(
        prompts,
        [
            "why does the build cache miss on every CI run?",
            "fix it",
            "try the fix again"
        ]
    );
    assert!(
        n.events
            .iter()
            .any(|e| e.tool_name == "bash" && e.exit_code == Some(0))
    );
    std::fs::remove_dir_all(home).unwrap();
}
