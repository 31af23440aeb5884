//! The harnesses added after Codex and Claude Code, on the real engine: sessions that shrink or
//! change in place (Gemini CLI rewinds, SQLite stores rewritten while the agent writes them)
//! end up as a clean read of their final state, re-runs write nothing, stores are never
//! modified, and every harness's content is found through MCP search and open.

mod common;

use std::path::{Path, PathBuf};

use common::{Mcp, TestServer, snapshot};
use moraine_mcp::ids;
use moraine_mcp::ingest::files::session_key;
use moraine_mcp::vocab::Harness;
use serde_json::json;

fn formats() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("formats")
}

/// A scratch directory of its own.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "harnesses-{name}-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The format fixtures with their SQLite stores built, under `dir`.
fn build_formats(dir: &Path) {
    common::copy_tree(&formats(), dir, &mut |path| {
        let name = path.to_string_lossy();
        if let Some(store) = name.strip_suffix(".sql") {
            let sql = std::fs::read_to_string(path).unwrap();
            rusqlite::Connection::open(store)
                .unwrap()
                .execute_batch(&sql)
                .unwrap();
            std::fs::remove_file(path).unwrap();
        }
    });
    std::fs::remove_dir_all(dir.join("golden")).unwrap();
}

const GEMINI_CHAT: &str = "gemini/tmp/quarry/chats/session-2026-08-03T09-12-7c41e2d0.jsonl";

#[tokio::test]
async fn a_gemini_rewind_retracts_what_it_removed_and_a_rerun_writes_nothing() {
    let source = std::fs::read(formats().join(GEMINI_CHAT)).unwrap();
    let rewind = source
        .windows(b"{\"$rewindTo\"".len())
        .position(|w| w == b"{\"$rewindTo\"")
        .unwrap();
    let dir = scratch("gemini");
    let chats = dir.join(".gemini/tmp/quarry/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let log = chats.join("session-2026-08-03T09-12-7c41e2d0.jsonl");
    // The chat before the rewind holds the prompt that is rewound away.
    std::fs::write(&log, &source[..rewind]).unwrap();
    let (config, db) = common::fresh_db().await;
    common::ingest_paths(&config, &db, &dir).await;
    let before = snapshot(&db).await;
    let has = |s: &common::Snapshot, text: &str| s.events.iter().any(|e| e.5.contains(text));
    assert!(has(&before, "rename cut to cut_rows"));
    std::fs::write(&log, &source).unwrap();
    let after = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!(after.counters.files_read, 1);
    let rewound = snapshot(&db).await;
    common::assert_statistics_exact(&rewound);

    let (clean_config, clean_db) = common::fresh_db().await;
    common::ingest_paths(&clean_config, &clean_db, &dir).await;
    let clean = snapshot(&clean_db).await;
    assert_eq!(
        rewound, clean,
        "a rewind must leave what one read of the final chat leaves"
    );
    assert!(
        !has(&rewound, "rename cut to cut_rows"),
        "the rewound prompt is gone"
    );
    assert!(has(&rewound, "run the tests again"));

    let again = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!(again.counters.files_unchanged, 1);
    assert_eq!(again.counters.events, 0);
    assert_eq!(snapshot(&db).await, clean);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Runs `sql` on the store at `path` as the agent would, in one transaction.
fn agent_writes(path: &Path, sql: &str) {
    let db = rusqlite::Connection::open(path).unwrap();
    db.execute_batch(&format!("BEGIN; {sql} COMMIT;")).unwrap();
}

#[tokio::test]
async fn a_store_changed_while_the_agent_writes_reads_as_its_final_state_and_is_never_modified() {
    let dir = scratch("opencode");
    build_formats(&dir);
    let store_dir = dir.join("opencode");
    std::fs::remove_dir_all(store_dir.join("storage")).unwrap();
    let store = store_dir.join("opencode.db");
    // OpenCode runs its store in WAL mode.
    let writer = rusqlite::Connection::open(&store).unwrap();
    let mode: String = writer
        .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let (config, db) = common::fresh_db().await;
    let first = common::ingest_paths(&config, &db, &store).await;
    assert_eq!(first.counters.files_read, 2);

    // The agent edits a message in the middle, appends a turn and deletes the synthetic
    // prompt, then holds a write transaction open (a reply streaming) while ingest runs.
    let session = "ses_5c1e8a2f7b3dKp9Qw2Xy4Zr6Tu";
    agent_writes(
        &store,
        &format!(
            "UPDATE part SET data = json_set(data, '$.text', 'The cache evicts by insertion order: make it an LRU keyed by last access.') WHERE id = 'prt_c01';
             DELETE FROM part WHERE message_id = 'msg_a08'; DELETE FROM message WHERE id = 'msg_a08';
             INSERT INTO message VALUES ('msg_a09', '{session}', 1767000300000, 1767000300000, '{{\"role\":\"user\",\"time\":{{\"created\":1767000300000}}}}');
             INSERT INTO part VALUES ('prt_i01', 'msg_a09', '{session}', 1767000300000, 1767000300000, '{{\"type\":\"text\",\"text\":\"now benchmark the lru against the fifo\"}}');"
        ),
    );
    writer
        .execute_batch(
            "BEGIN IMMEDIATE; INSERT INTO part VALUES ('prt_x', 'msg_a09', 'x', 0, 0, '{\"type\":\"text\",\"text\":\"half written\"}');",
        )
        .unwrap();
    let bytes_before = std::fs::read(&store).unwrap();
    let second = common::ingest_paths(&config, &db, &store).await;
    assert_eq!(
        second.counters.files_read, 1,
        "only the changed session is read"
    );
    assert_eq!(second.counters.files_unchanged, 1);
    assert_eq!(
        std::fs::read(&store).unwrap(),
        bytes_before,
        "the store is never written"
    );
    writer.execute_batch("ROLLBACK;").unwrap();
    let changed = snapshot(&db).await;
    common::assert_statistics_exact(&changed);

    let clean_dir = scratch("opencode-clean");
    std::fs::copy(&store, clean_dir.join("opencode.db")).unwrap();
    let wal = store_dir.join("opencode.db-wal");
    if wal.exists() {
        std::fs::copy(&wal, clean_dir.join("opencode.db-wal")).unwrap();
    }
    let (clean_config, clean_db) = common::fresh_db().await;
    common::ingest_paths(&clean_config, &clean_db, &clean_dir.join("opencode.db")).await;
    assert_eq!(changed, snapshot(&clean_db).await);
    let texts: Vec<&str> = changed.events.iter().map(|e| e.5.as_str()).collect();
    assert!(texts.iter().any(|t| t.contains("benchmark the lru")));
    assert!(!texts.iter().any(|t| t.contains("half written")));
    assert!(
        !texts
            .iter()
            .any(|t| t.contains("Continue if you have next steps"))
    );

    let third = common::ingest_paths(&config, &db, &store).await;
    assert_eq!(
        (third.counters.files_unchanged, third.counters.events),
        (2, 0)
    );
    drop(writer);
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::remove_dir_all(clean_dir).unwrap();
}

#[tokio::test]
async fn every_harness_is_found_by_search_and_opened() {
    let dir = scratch("all");
    build_formats(&dir);
    let (config, db) = common::fresh_db().await;
    let summary = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!(
        summary.counters.malformed, 2,
        "the damaged Gemini and Qwen lines"
    );
    let server = TestServer::start(config, db).await;
    let mut mcp = Mcp::legacy(&server.mcp_url, None).await;
    // A phrase from each harness's fixture and the session it is in.
    let cases = [
        (
            Harness::GeminiCli,
            "7c41e2d0-5b9a-4f3e-8d21-6a0c9e4b7f12",
            "slab cutter",
        ),
        (
            Harness::GeminiCli,
            "2e8f6a1c-9d3b-4c7e-b5a2-8f1e6d4c0b93",
            "firing presets",
        ),
        (
            Harness::QwenCode,
            "4d2a9c61-3e7f-4b18-a5d0-9c6e2f8b1a47",
            "sunday sailing",
        ),
        (
            Harness::QwenCode,
            "8a3f1d96-0c4b-4e2a-9f57-1d8e3b6a2c70",
            "harbour fee",
        ),
        (
            Harness::CopilotCli,
            "0b6e3f2a-7d41-4c4c-9d9d-3e5a1f0c8b62",
            "test_parse_date",
        ),
        (
            Harness::Droid,
            "91c3e7a2-4f5b-4d08-b6e1-2a7c9d3f5e10",
            "status LED",
        ),
        (
            Harness::Cursor,
            "5f2c8e14-a9d3-4b6e-8c71-0e4d2a9f6b38",
            "orbit propagator",
        ),
        (
            Harness::Cursor,
            "6f1c2a8e-3b5d-4e7f-9a0c-1d2e3f4a5b6c",
            "geocode_paris",
        ),
        (
            Harness::OpenCode,
            "ses_5c1e8a2f7b3dKp9Qw2Xy4Zr6Tu",
            "tile cache",
        ),
        (
            Harness::OpenCode,
            "ses_7fa0c2d91e4bXq3LmN8pR2sT5v",
            "mosaic tiles",
        ),
    ];
    for (harness, native, phrase) in cases {
        let session = ids::session_id(session_key(harness, native));
        let found = mcp
            .ok(
                "search_sessions",
                json!({"query": phrase, "harness": harness.as_str()}),
            )
            .await;
        let hits = found["data"]["results"].as_array().unwrap();
        assert!(
            hits.iter().any(|h| h["session"]["id"] == session.as_str()),
            "{phrase} in {harness}: {found:#}"
        );
        assert!(
            hits.iter()
                .all(|h| h["session"]["harness"] == harness.as_str())
        );
        let opened = mcp.ok("open", json!({"id": session})).await;
        assert_eq!(
            opened["data"]["session"]["harness"],
            harness.as_str(),
            "{opened:#}"
        );
    }
    server.stop().await;
    std::fs::remove_dir_all(dir).unwrap();
}
