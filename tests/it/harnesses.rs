//! The harnesses added after Codex and Claude Code, on the real engine: sessions that shrink or
//! change in place (Gemini CLI rewinds, SQLite stores rewritten while the agent writes them)
//! end up as a clean read of their final state, re-runs write nothing, stores are never
//! modified, and every harness's content is found through MCP search and open.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Mcp, TestServer, snapshot};
use moraine_mcp::config::Settings;
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
    common::copy_formats(dir);
    std::fs::remove_dir_all(dir.join("golden")).unwrap();
}

const AIDER_HISTORY: &str = "aider/kestrel/.aider.chat.history.md";

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
        summary.counters.malformed, 5,
        "the damaged Gemini, Qwen, Copilot CLI, Droid and Cursor transcript lines"
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
        (
            Harness::Aider,
            "2026-02-03-09-16-40-1bb22314",
            "exponentially",
        ),
        (Harness::Aider, "2026-02-04-14-02-11-d6a951a2", "jitter"),
        (
            Harness::OpenClaw,
            "0199a3c4-5e6f-7a81-b2c3-d4e5f6a7b8c9",
            "greenhouse fan",
        ),
        (Harness::OpenClaw, OPENCLAW_SESSION, "crop box"),
        (
            Harness::OpenClaw,
            "0199b7e8-1a2b-7c3d-9e4f-5a6b7c8d9e0f",
            "soil probe",
        ),
        (
            Harness::Continue,
            "3f6d2b8a-9c41-4e7d-b2a5-6e8f1c0d4a97",
            "StrictMode",
        ),
        (
            Harness::Continue,
            "a81c5e3d-2f74-4b9a-8d06-1e5c7b3f9a24",
            "tide csv export",
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

/// Ingests `path` as `harness`'s, putting up with files caught half-written (a run counts them
/// unreadable and reads them again next time).
async fn ingest_as(
    config: &moraine_mcp::config::Settings,
    db: &moraine_mcp::db::Db,
    path: &Path,
    harness: Harness,
) -> moraine_mcp::ingest::Summary {
    let (logs, _) = moraine_mcp::ingest::files::from_paths(&[path.to_owned()], Some(harness), None);
    let config = config.clone().validate().unwrap();
    moraine_mcp::ingest::run(&config, db, logs, false)
        .await
        .unwrap()
}

/// Events whose text contains `text`.
fn count_text(s: &common::Snapshot, text: &str) -> usize {
    s.events.iter().filter(|e| e.5.contains(text)).count()
}

const CURSOR_COMPOSER: &str = "6f1c2a8e-3b5d-4e7f-9a0c-1d2e3f4a5b6c";

/// One more bubble at the end of the conversation, the way Cursor adds one: the bubble, then
/// the composer document rewritten with the new header list.
fn cursor_adds_bubble(store: &Path, bubble: &str, kind: u8, text: &str) {
    agent_writes(
        store,
        &format!(
            "INSERT INTO cursorDiskKV VALUES ('bubbleId:{CURSOR_COMPOSER}:{bubble}', json_object('_v', 3, 'type', {kind}, 'bubbleId', '{bubble}', 'text', '{text}', 'createdAt', '2026-09-01T10:00:00.000Z'));
             UPDATE cursorDiskKV SET value = json_insert(value, '$.fullConversationHeadersOnly[#]', json_object('bubbleId', '{bubble}', 'type', {kind})) WHERE key = 'composerData:{CURSOR_COMPOSER}';"
        ),
    );
}

#[tokio::test]
async fn a_cursor_conversation_rewritten_in_its_store_is_reread_alone_and_ends_as_one_clean_read() {
    let dir = scratch("cursor");
    build_formats(&dir);
    let store = dir.join("cursor/User/globalStorage/state.vscdb");
    let (config, db) = common::fresh_db().await;
    let first = common::ingest_paths(&config, &db, &store).await;
    assert_eq!(first.counters.files_read, 3);
    let rerun = common::ingest_paths(&config, &db, &store).await;
    assert_eq!(
        (rerun.counters.files_unchanged, rerun.counters.events),
        (3, 0)
    );
    let has = |s: &common::Snapshot, text: &str| count_text(s, text) > 0;
    assert!(has(&snapshot(&db).await, "record a response and mock it"));

    // The user edits their second prompt: Cursor rewrites that bubble, drops the reply that
    // followed it from the header list and adds the new reply.
    agent_writes(
        &store,
        &format!(
            "UPDATE cursorDiskKV SET value = json_set(value, '$.text', 'replace the live call with a vcr cassette') WHERE key = 'bubbleId:{CURSOR_COMPOSER}:u2';
             UPDATE cursorDiskKV SET value = json_set(value, '$.fullConversationHeadersOnly', json('[{{\"bubbleId\":\"u1\",\"type\":1}},{{\"bubbleId\":\"a1\",\"type\":2}},{{\"bubbleId\":\"a2\",\"type\":2}},{{\"bubbleId\":\"a3\",\"type\":2}},{{\"bubbleId\":\"u2\",\"type\":1}},{{\"bubbleId\":\"a5\",\"type\":2}}]')) WHERE key = 'composerData:{CURSOR_COMPOSER}';
             INSERT INTO cursorDiskKV VALUES ('bubbleId:{CURSOR_COMPOSER}:a5', '{{\"_v\":3,\"type\":2,\"bubbleId\":\"a5\",\"text\":\"Recorded the response as a cassette; the test no longer reaches the network.\",\"createdAt\":\"2026-09-01T09:03:00.000Z\"}}');"
        ),
    );
    let second = common::ingest_paths(&config, &db, &store).await;
    assert_eq!(
        (second.counters.files_read, second.counters.files_unchanged),
        (1, 2),
        "only the rewritten conversation is read"
    );
    let rewritten = snapshot(&db).await;
    common::assert_statistics_exact(&rewritten);
    assert!(!has(&rewritten, "record a response and mock it"));
    assert!(has(&rewritten, "vcr cassette"));
    assert!(has(&rewritten, "no longer reaches the network"));

    // Then the agent keeps appending while ingest runs again and again.
    let writing = {
        let store = store.clone();
        std::thread::spawn(move || {
            for i in 0..40 {
                let (bubble, kind) = if i % 2 == 0 { ("u", 1) } else { ("a", 2) };
                cursor_adds_bubble(
                    &store,
                    &format!("{bubble}x{i}"),
                    kind,
                    &format!("appended bubble marker{i}x"),
                );
                std::thread::sleep(std::time::Duration::from_millis(15));
            }
        })
    };
    while !writing.is_finished() {
        common::ingest_paths(&config, &db, &store).await;
    }
    writing.join().unwrap();
    common::ingest_paths(&config, &db, &store).await;
    let last = snapshot(&db).await;
    common::assert_statistics_exact(&last);
    for i in 0..40 {
        assert_eq!(
            count_text(&last, &format!("marker{i}x")),
            1,
            "bubble {i} once"
        );
    }

    let clean_dir = scratch("cursor-clean");
    std::fs::copy(&store, clean_dir.join("state.vscdb")).unwrap();
    let (clean_config, clean_db) = common::fresh_db().await;
    common::ingest_paths(&clean_config, &clean_db, &clean_dir.join("state.vscdb")).await;
    assert_eq!(
        last,
        snapshot(&clean_db).await,
        "as one read of the final store"
    );
    let after = common::ingest_paths(&config, &db, &store).await;
    assert_eq!(
        (after.counters.files_unchanged, after.counters.events),
        (3, 0)
    );
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::remove_dir_all(clean_dir).unwrap();
}

#[tokio::test]
async fn a_gemini_json_chat_rewritten_while_ingest_runs_ends_as_one_clean_read() {
    let source = formats().join("gemini/tmp/kiln/chats/session-2026-03-14T16-40-2e8f6a1c.json");
    let dir = scratch("gemini-json");
    let chats = dir.join(".gemini/tmp/kiln/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let log = chats.join("session-2026-03-14T16-40-2e8f6a1c.json");
    std::fs::copy(&source, &log).unwrap();
    let (config, db) = common::fresh_db().await;
    let first = ingest_as(&config, &db, &dir, Harness::GeminiCli).await;
    assert_eq!(first.counters.files_read, 1);

    // Gemini CLI rewrites the whole file after each message, truncating it first: a reader can
    // find it empty or half written. Halfway, the writer waits for an ingest to have run (on a
    // busy engine one ingest can take longer than all the writes), so ingest runs while the
    // chat is rewritten more than once.
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writing = {
        let log = log.clone();
        let runs = runs.clone();
        let mut chat: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&source).unwrap()).unwrap();
        std::thread::spawn(move || {
            use std::io::Write;
            for i in 0..40 {
                if i == 20 {
                    let waiting = std::time::Instant::now();
                    while runs.load(std::sync::atomic::Ordering::SeqCst) == 0
                        && waiting.elapsed() < std::time::Duration::from_secs(120)
                    {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                }
                let kind = if i % 2 == 0 { "user" } else { "gemini" };
                chat["messages"].as_array_mut().unwrap().push(json!({
                    "id": format!("extra-{i}"),
                    "timestamp": format!("2026-03-14T16:50:{i:02}.000Z"),
                    "type": kind,
                    "content": format!("rewritten message marker{i}x"),
                }));
                let bytes = serde_json::to_vec_pretty(&chat).unwrap();
                let mut file = std::fs::File::create(&log).unwrap();
                file.write_all(&bytes[..bytes.len() / 2]).unwrap();
                file.flush().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(5));
                file.write_all(&bytes[bytes.len() / 2..]).unwrap();
                drop(file);
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        })
    };
    while !writing.is_finished() {
        ingest_as(&config, &db, &dir, Harness::GeminiCli).await;
        runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    writing.join().unwrap();
    assert!(
        runs.load(std::sync::atomic::Ordering::SeqCst) > 1,
        "ingest ran while the chat was being rewritten"
    );
    let settled = ingest_as(&config, &db, &dir, Harness::GeminiCli).await;
    assert!(settled.counters.unreadable.is_empty(), "{settled}");
    let last = snapshot(&db).await;
    common::assert_statistics_exact(&last);
    for i in 0..40 {
        assert_eq!(
            count_text(&last, &format!("marker{i}x")),
            1,
            "message {i} once"
        );
    }
    let (clean_config, clean_db) = common::fresh_db().await;
    ingest_as(&clean_config, &clean_db, &dir, Harness::GeminiCli).await;
    assert_eq!(
        last,
        snapshot(&clean_db).await,
        "as one read of the final chat"
    );
    let after = ingest_as(&config, &db, &dir, Harness::GeminiCli).await;
    assert_eq!(
        (after.counters.files_unchanged, after.counters.events),
        (1, 0)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

const CONTINUE_AGENT: &str = "continue/sessions/a81c5e3d-2f74-4b9a-8d06-1e5c7b3f9a24.json";

#[tokio::test]
async fn a_continue_session_saved_again_is_read_on_and_an_edit_is_read_again() {
    let source: serde_json::Value =
        serde_json::from_slice(&std::fs::read(formats().join(CONTINUE_AGENT)).unwrap()).unwrap();
    let dir = scratch("continue");
    let sessions = dir.join(".continue/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::copy(
        formats().join("continue/sessions/sessions.json"),
        sessions.join("sessions.json"),
    )
    .unwrap();
    let log = sessions.join("a81c5e3d-2f74-4b9a-8d06-1e5c7b3f9a24.json");
    // Continue saves the whole session, pretty-printed, after each exchange: first the session
    // as it stood after its first answer.
    let save = |session: &serde_json::Value| {
        std::fs::write(&log, serde_json::to_vec_pretty(session).unwrap()).unwrap();
    };
    let mut first = source.clone();
    first["history"].as_array_mut().unwrap().truncate(7);
    save(&first);
    let (config, db) = common::fresh_db().await;
    let read = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!((read.counters.files_read, read.counters.events), (1, 11));

    // The next exchange saved: the file is rewritten, and read on from its checkpoint.
    save(&source);
    let grown = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!(
        (
            grown.counters.files_read,
            grown.counters.files_reread,
            grown.counters.events
        ),
        (1, 0, 3),
        "{grown}"
    );
    let after_growth = snapshot(&db).await;
    common::assert_statistics_exact(&after_growth);
    let (clean_config, clean_db) = common::fresh_db().await;
    common::ingest_paths(&clean_config, &clean_db, &dir).await;
    after_growth.assert_same_as(&snapshot(&clean_db).await);

    // The user edits their first prompt and resubmits: Continue rewrites that message and
    // drops what followed it. The session is read again, nothing of the old text kept.
    let mut edited = source.clone();
    edited["history"][1]["message"]["content"][0]["text"] =
        json!("the tide csv export drops the first row, find out why");
    edited["history"].as_array_mut().unwrap().truncate(3);
    save(&edited);
    let reread = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!(
        (reread.counters.files_read, reread.counters.files_reread),
        (1, 1),
        "{reread}"
    );
    let last = snapshot(&db).await;
    common::assert_statistics_exact(&last);
    assert_eq!(count_text(&last, "drops the first row"), 1);
    assert_eq!(count_text(&last, "drops the last row"), 0);
    assert_eq!(count_text(&last, "now run the export tests"), 0);
    let (clean_config, clean_db) = common::fresh_db().await;
    common::ingest_paths(&clean_config, &clean_db, &dir).await;
    last.assert_same_as(&snapshot(&clean_db).await);
    // The index dates the session.
    assert_eq!(last.sessions[0].6, 1_778_143_318_042);

    let again = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!(
        (again.counters.files_unchanged, again.counters.events),
        (1, 0)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

const OPENCLAW_SESSION: &str = "0199b1d2-6c3e-7f40-8a51-92b3c4d5e6f7";

#[tokio::test]
async fn an_openclaw_store_written_while_ingest_runs_reads_as_its_final_state_and_is_never_modified()
 {
    let dir = scratch("openclaw");
    build_formats(&dir);
    let state = dir.join("openclaw");
    std::fs::remove_dir_all(state.join("agents/main/sessions")).unwrap();
    let store = state.join("agents/main/agent/openclaw-agent.sqlite");
    // OpenClaw runs its store in WAL mode.
    let writer = rusqlite::Connection::open(&store).unwrap();
    let mode: String = writer
        .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let (config, db) = common::fresh_db().await;
    let first = common::ingest_paths(&config, &db, &store).await;
    assert_eq!(first.counters.files_read, 2);

    // The session goes on: its next events are appended, and only they are read.
    let event = |seq: u32, json: &str| {
        format!(
            "INSERT INTO transcript_events VALUES ('{OPENCLAW_SESSION}', {seq}, '{json}', 1787233600000 + {seq});"
        )
    };
    agent_writes(
        &store,
        &[
            event(
                8,
                r#"{"type":"message","id":"7c0e5a1f","parentId":"d2f6a874","timestamp":"2026-08-20T13:50:02.000Z","message":{"role":"user","content":[{"type":"text","text":"try the March rerun again"}]}}"#,
            ),
            event(
                9,
                r#"{"type":"message","id":"a43b9d02","parentId":"7c0e5a1f","timestamp":"2026-08-20T13:50:09.000Z","message":{"role":"assistant","content":[{"type":"text","text":"All 212 March scans now read their totals line."}],"provider":"anthropic","model":"claude-opus-4-1","stopReason":"stop"}}"#,
            ),
        ]
        .concat(),
    );
    let grown = common::ingest_paths(&config, &db, &store).await;
    assert_eq!(
        (
            grown.counters.files_read,
            grown.counters.files_unchanged,
            grown.counters.files_reread,
            grown.counters.events
        ),
        (1, 1, 0, 2),
        "{grown}"
    );

    // Then OpenClaw rewrites an event in the middle (a transcript rewritten after a repair)
    // while a write transaction is held open: the session is read again, as committed.
    agent_writes(
        &store,
        &format!(
            "UPDATE transcript_events SET event_json = replace(event_json, 'Raise crop.bottom', 'Lower crop.top and raise crop.bottom') WHERE session_id = '{OPENCLAW_SESSION}' AND seq = 5;"
        ),
    );
    writer
        .execute_batch(&format!(
            "BEGIN IMMEDIATE; {}",
            event(
                10,
                r#"{"type":"message","id":"ffffffff","parentId":"a43b9d02","message":{"role":"user","content":"half written"}}"#
            )
        ))
        .unwrap();
    let bytes_before = std::fs::read(&store).unwrap();
    let rewritten = common::ingest_paths(&config, &db, &store).await;
    assert_eq!(
        (
            rewritten.counters.files_read,
            rewritten.counters.files_reread,
            rewritten.counters.files_unchanged
        ),
        (1, 1, 1),
        "{rewritten}"
    );
    assert_eq!(
        std::fs::read(&store).unwrap(),
        bytes_before,
        "the store is never written"
    );
    writer.execute_batch("ROLLBACK;").unwrap();
    let last = snapshot(&db).await;
    common::assert_statistics_exact(&last);
    assert_eq!(count_text(&last, "Lower crop.top and raise crop.bottom"), 1);
    assert_eq!(count_text(&last, "212 March scans"), 1);
    assert_eq!(count_text(&last, "half written"), 0);

    let clean_dir = scratch("openclaw-clean");
    std::fs::copy(&store, clean_dir.join("openclaw-agent.sqlite")).unwrap();
    let wal = store.with_file_name("openclaw-agent.sqlite-wal");
    if wal.exists() {
        std::fs::copy(&wal, clean_dir.join("openclaw-agent.sqlite-wal")).unwrap();
    }
    let (clean_config, clean_db) = common::fresh_db().await;
    common::ingest_paths(
        &clean_config,
        &clean_db,
        &clean_dir.join("openclaw-agent.sqlite"),
    )
    .await;
    last.assert_same_as(&snapshot(&clean_db).await);
    let again = common::ingest_paths(&config, &db, &store).await;
    assert_eq!(
        (again.counters.files_unchanged, again.counters.events),
        (2, 0)
    );
    drop(writer);
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::remove_dir_all(clean_dir).unwrap();
}

#[tokio::test]
async fn an_openclaw_transcript_moved_into_the_store_stays_one_session() {
    let dir = scratch("openclaw-moved");
    build_formats(&dir);
    let agent = dir.join("openclaw/agents/main");
    let store = agent.join("agent/openclaw-agent.sqlite");
    let sessions = agent.join("sessions");
    // Before the migration: the session is a transcript, and the store does not exist yet.
    let aside = dir.join("store-aside.sqlite");
    std::fs::rename(&store, &aside).unwrap();
    let transcript = |db: &rusqlite::Connection| -> String {
        let mut query = db
            .prepare("SELECT event_json FROM transcript_events WHERE session_id = ?1 ORDER BY seq")
            .unwrap();
        let lines: Vec<String> = query
            .query_map([OPENCLAW_SESSION], |row| row.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        lines.join("\n") + "\n"
    };
    let leftover = sessions.join(format!("{OPENCLAW_SESSION}.jsonl"));
    std::fs::write(
        &leftover,
        transcript(&rusqlite::Connection::open(&aside).unwrap()),
    )
    .unwrap();
    let (config, db) = common::fresh_db().await;
    let before = common::ingest_paths(&config, &db, &agent).await;
    assert_eq!(before.counters.files_read, 2, "{before}");

    // `openclaw doctor` moves it into the store, which goes on from there; the transcript is
    // left behind. The session is read from the store, once, and stays the session it was.
    std::fs::rename(&aside, &store).unwrap();
    agent_writes(
        &store,
        &format!(
            "INSERT INTO transcript_events VALUES ('{OPENCLAW_SESSION}', 8, '{{\"type\":\"message\",\"id\":\"7c0e5a1f\",\"parentId\":\"d2f6a874\",\"timestamp\":\"2026-08-20T14:02:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"rerun the march scans once the rate limit resets\"}}}}', 1787234520000);"
        ),
    );
    // Past its header, the store's session renders as the transcript's lines: a copy of it
    // (what tells a pushed log taking a session over from another session under its ID).
    let rendering = moraine_mcp::harness::render(
        Harness::OpenClaw,
        &moraine_mcp::harness::rendered::store_session_path(&store, OPENCLAW_SESSION),
    )
    .unwrap()
    .unwrap();
    assert!(moraine_mcp::ingest::files::is_copy(
        &std::fs::read(&leftover).unwrap(),
        &rendering
    ));
    let (logs, problems) =
        moraine_mcp::ingest::files::from_paths(std::slice::from_ref(&agent), None, None);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].is_duplicate(), "{problems:?}");
    assert!(
        problems[0]
            .to_string()
            .contains(&format!("{OPENCLAW_SESSION}.jsonl: the same session as")),
        "{}",
        problems[0]
    );
    assert!(
        logs.iter()
            .all(|log| !log.path.to_string_lossy().ends_with(".jsonl")
                || !log.path.to_string_lossy().contains(OPENCLAW_SESSION)),
        "{logs:#?}"
    );
    let after = moraine_mcp::ingest::run(&config.clone().validate().unwrap(), &db, logs, false)
        .await
        .unwrap();
    assert_eq!(after.counters.files_reread, 0, "{after}");
    let moved = snapshot(&db).await;
    common::assert_statistics_exact(&moved);
    let key = session_key(Harness::OpenClaw, OPENCLAW_SESSION);
    assert_eq!(
        moved.sessions.iter().filter(|s| s.0 == key).count(),
        1,
        "{:?}",
        moved.sessions
    );
    assert_eq!(moved.sessions.len(), 3, "{:?}", moved.sessions);
    assert_eq!(
        count_text(&moved, "the invoice ocr misses the totals line"),
        1
    );
    assert_eq!(count_text(&moved, "once the rate limit resets"), 1);
    // As a clean read of the store (and the other transcript) would leave it.
    let (clean_config, clean_db) = common::fresh_db().await;
    let (logs, _) =
        moraine_mcp::ingest::files::from_paths(std::slice::from_ref(&agent), None, None);
    moraine_mcp::ingest::run(&clean_config.validate().unwrap(), &clean_db, logs, false)
        .await
        .unwrap();
    moved.assert_same_as(&snapshot(&clean_db).await);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn the_demo_holds_a_session_of_every_harness_that_search_finds() {
    let dir = scratch("demo");
    let logs = common::demo_logs(&dir, Some("demo"));
    let (config, db) = common::fresh_db().await;
    let summary = moraine_mcp::ingest::run(&config.clone().validate().unwrap(), &db, logs, false)
        .await
        .unwrap();
    assert_eq!(summary.counters.malformed, 0, "{summary}");
    assert!(summary.counters.unreadable.is_empty(), "{summary}");
    let server = TestServer::start(config, db).await;
    let mut mcp = Mcp::legacy(&server.mcp_url, None).await;
    // Terms each new harness's demo session is about.
    let cases = [
        (Harness::GeminiCli, "alias_table"),
        (Harness::QwenCode, "DeadlockDetected"),
        (Harness::CopilotCli, "eslint.config.js"),
        (Harness::Droid, "goleak"),
        (Harness::Cursor, "fetch_rows_blocking"),
        (Harness::OpenCode, "TOO_MANY_PARTS"),
        (Harness::Aider, "quantize"),
        (Harness::OpenClaw, "logrotate"),
        (Harness::Continue, "hydration"),
    ];
    for (harness, term) in cases {
        let found = mcp.ok("search_sessions", json!({"query": term})).await;
        let hits = found["data"]["results"].as_array().unwrap();
        assert_eq!(
            hits[0]["session"]["harness"],
            harness.as_str(),
            "{term}: {found:#}"
        );
    }
    for harness in Harness::all() {
        let listed = mcp
            .ok(
                "list_sessions",
                json!({"start_datetime": "2026-01-01T00:00:00Z", "end_datetime": "2026-04-01T00:00:00Z", "harness": harness.as_str()}),
            )
            .await;
        let sessions = listed["data"]["sessions"].as_array().unwrap();
        assert!(!sessions.is_empty(), "{harness}: {listed:#}");
        if harness != Harness::Codex && harness != Harness::ClaudeCode {
            assert!(
                !sessions[0]["session"]["title"]
                    .as_str()
                    .unwrap_or("")
                    .is_empty(),
                "{listed:#}"
            );
        }
    }
    server.stop().await;
    std::fs::remove_dir_all(dir).unwrap();
}

/// Replaces `from` with `to` in the file at `path` (which must hold it).
fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{}: no {from}", path.display());
    std::fs::write(path, text.replace(from, to)).unwrap();
}

#[tokio::test]
async fn every_new_harness_has_its_secrets_redacted_and_this_services_calls_flagged() {
    const KEY: &str = "AKIAIOSFODNN7EXAMPLE";
    let dir = scratch("redact");
    build_formats(&dir);
    // A credential in a prompt of each harness, and a call of this service's tools spelled the
    // way each harness names MCP tools.
    let logs = [
        (
            GEMINI_CHAT,
            "skip the last row?",
            "\"name\":\"run_shell_command\"",
            "\"name\":\"moraine__search_sessions\"",
        ),
        (
            "qwen/projects/-home-dev-src-ferry/chats/4d2a9c61-3e7f-4b18-a5d0-9c6e2f8b1a47.jsonl",
            "missing on Sundays?",
            "\"name\":\"run_shell_command\"",
            "\"name\":\"moraine__list_sessions\"",
        ),
        (
            "copilot/session-state/0b6e3f2a-7d41-4c4c-9d9d-3e5a1f0c8b62/events.jsonl",
            "why does test_parse_date fail?",
            "\"bash\"",
            "\"moraine-search_sessions\"",
        ),
        (
            "droid/sessions/-home-dev-src-lumen/91c3e7a2-4f5b-4d08-b6e1-2a7c9d3f5e10.jsonl",
            "full brightness at night?",
            "\"name\":\"Execute\"",
            "\"name\":\"moraine___search_sessions\"",
        ),
        (
            "openclaw/agents/main/sessions/0199a3c4-5e6f-7a81-b2c3-d4e5f6a7b8c9.jsonl",
            "check the schedule in fanctl",
            "\"name\":\"exec\"",
            "\"name\":\"moraine__search_sessions\"",
        ),
        (
            CONTINUE_AGENT,
            "drops the last row, find out why",
            "\"name\": \"read_file\"",
            "\"name\": \"moraine_search_sessions\"",
        ),
    ];
    for (log, prompt, tool, ours) in logs {
        let path = dir.join(log);
        edit(&path, prompt, &format!("{prompt} key {KEY}"));
        edit(&path, tool, ours);
    }
    agent_writes(
        &dir.join("opencode/opencode.db"),
        &format!(
            "UPDATE part SET data = replace(data, 'looks at; why?', 'looks at; why? key {KEY}');
             UPDATE part SET data = replace(data, '\"tool\":\"bash\"', '\"tool\":\"moraine_search_sessions\"');"
        ),
    );
    agent_writes(
        &dir.join("cursor/User/globalStorage/state.vscdb"),
        &format!(
            "UPDATE cursorDiskKV SET value = replace(value, 'paris flake?', 'paris flake? key {KEY}');
             UPDATE cursorDiskKV SET value = replace(value, 'run_terminal_command_v2', 'mcp_moraine_search_sessions');"
        ),
    );
    // Aider calls no tools: only its prompt carries the credential.
    edit(
        &dir.join(AIDER_HISTORY),
        "up to five attempts.",
        &format!("up to five attempts. key {KEY}"),
    );
    let (config, db) = common::fresh_db().await;
    let summary = common::ingest_paths(&config, &db, &dir).await;
    assert!(summary.counters.redactions >= 9, "{summary}");
    let rows: Vec<(String, u64, u64, u64)> = db
        .read(
            "t",
            "SELECT s.harness, countIf(position(e.text, {key:String}) > 0 OR position(e.raw, {key:String}) > 0 OR position(e.arguments, {key:String}) > 0), \
                    countIf(position(e.text, 'key ') > 0), countIf(e.self_tool) \
             FROM events AS e INNER JOIN (SELECT session_key, harness FROM sessions FINAL) AS s USING session_key \
             GROUP BY s.harness ORDER BY s.harness",
        )
        .param("key", KEY)
        .fetch_all(&db, db.default_deadline())
        .await
        .unwrap();
    for harness in [
        Harness::GeminiCli,
        Harness::QwenCode,
        Harness::CopilotCli,
        Harness::Droid,
        Harness::OpenCode,
        Harness::Cursor,
        Harness::OpenClaw,
        Harness::Continue,
    ] {
        let (_, leaked, prompts, flagged) = rows
            .iter()
            .find(|r| r.0 == harness.as_str())
            .unwrap_or_else(|| panic!("no {harness} events: {rows:?}"));
        assert_eq!(*leaked, 0, "{harness} stores the credential");
        assert!(*prompts > 0, "{harness}: the edited prompt is there");
        assert!(
            *flagged > 0,
            "{harness}: its call of this service is flagged"
        );
    }
    let aider = rows.iter().find(|r| r.0 == "aider").expect("aider events");
    assert_eq!((aider.1, aider.2 > 0), (0, true), "{rows:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Moves `from` (under the built fixtures) to `to` (under a home directory).
fn place(fixtures: &Path, from: &str, home: &Path, to: &str) {
    let target = home.join(to);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::rename(fixtures.join(from), target).unwrap();
}

#[test]
fn the_default_sources_find_every_harness_where_it_keeps_its_logs() {
    let fixtures = scratch("fixtures");
    build_formats(&fixtures);
    let home = scratch("home");
    let cursor_user = if cfg!(target_os = "macos") {
        "Library/Application Support/Cursor/User"
    } else {
        ".config/Cursor/User"
    };
    place(&fixtures, "codex", &home, ".codex/sessions");
    place(&fixtures, "claude", &home, ".claude/projects");
    place(&fixtures, "gemini/tmp", &home, ".gemini/tmp");
    place(&fixtures, "qwen", &home, ".qwen");
    place(&fixtures, "copilot", &home, ".copilot");
    place(&fixtures, "droid/sessions", &home, ".factory/sessions");
    place(&fixtures, "cursor/projects", &home, ".cursor/projects");
    place(&fixtures, "cursor/User", &home, cursor_user);
    // Aider's history at the root of a repository two levels below home.
    place(&fixtures, "aider/kestrel", &home, "src/kestrel");
    // A store in a workspace's storage as well as the global one.
    let user = home.join(cursor_user);
    std::fs::create_dir_all(user.join("workspaceStorage/4f2a")).unwrap();
    std::fs::copy(
        user.join("globalStorage/state.vscdb"),
        user.join("workspaceStorage/4f2a/state.vscdb"),
    )
    .unwrap();
    // With conversations of its own (one conversation in two stores is read once).
    agent_writes(
        &user.join("workspaceStorage/4f2a/state.vscdb"),
        "UPDATE cursorDiskKV SET key = replace(replace(replace(key, '6f1c2a8e', '7a2d3b9f'), '0d9e8f7a', '1e0f9a8b'), '3c7e1a90', '4d8f2b01'),
                                 value = replace(replace(replace(value, '6f1c2a8e', '7a2d3b9f'), '0d9e8f7a', '1e0f9a8b'), '3c7e1a90', '4d8f2b01');",
    );
    place(&fixtures, "opencode", &home, ".local/share/opencode");
    // OpenClaw under an older name of its state directory, its sidecars and archives beside
    // the transcript; Continue's sessions with their index.
    place(&fixtures, "openclaw/agents", &home, ".clawdbot/agents");
    let transcripts = home.join(".clawdbot/agents/main/sessions");
    let transcript = transcripts.join("0199a3c4-5e6f-7a81-b2c3-d4e5f6a7b8c9.jsonl");
    for sidecar in [
        "0199a3c4-5e6f-7a81-b2c3-d4e5f6a7b8c9.jsonl.reset.2026-07-15T04-00-00.000Z",
        "0199a3c4-5e6f-7a81-b2c3-d4e5f6a7b8c9.checkpoint.7d2e9f41-3c8a-4b65-9e17-2a0f6c8d5b93.jsonl",
        "0199a3c4-5e6f-7a81-b2c3-d4e5f6a7b8c9.trajectory.jsonl",
        "0199a3c4-5e6f-7a81-b2c3-d4e5f6a7b8c9.corrupt-2026-07-15T04-00-00-1a2b3c4d.jsonl",
    ] {
        std::fs::copy(&transcript, transcripts.join(sidecar)).unwrap();
    }
    std::fs::write(transcripts.join("sessions.json"), "{}").unwrap();
    place(&fixtures, "continue", &home, ".continue");

    let home_text = home.to_string_lossy().into_owned();
    let sources: Vec<_> = Settings::default()
        .ingest
        .sources
        .into_iter()
        .map(|mut source| {
            source.glob = source.glob.replacen('~', &home_text, 1);
            source
        })
        .collect();
    let (logs, problems) = moraine_mcp::ingest::files::from_sources(&sources);
    assert!(problems.is_empty(), "{problems:?}");
    for harness in Harness::all() {
        assert!(
            logs.iter().any(|log| log.harness == harness),
            "{harness}: {logs:#?}"
        );
    }
    // Copilot CLI's whole-file sessions of 0.0.341 and older too.
    assert!(
        logs.iter()
            .any(|log| log.path.to_string_lossy().contains("history-session-state")),
        "{logs:#?}"
    );
    let workspace = logs
        .iter()
        .filter(|log| log.path.to_string_lossy().contains("workspaceStorage"))
        .count();
    assert_eq!(workspace, 3, "the workspace store's conversations");
    let openclaw: Vec<String> = logs
        .iter()
        .filter(|log| log.harness == Harness::OpenClaw)
        .map(|log| log.path.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        openclaw.len(),
        3,
        "the transcript and the store's sessions: {openclaw:#?}"
    );
    assert!(
        openclaw.iter().all(|p| p.ends_with(".jsonl")
            && !p.contains(".jsonl.")
            && !p.contains(".checkpoint.")
            && !p.contains(".trajectory.")
            && !p.contains(".corrupt-")
            || p.contains("openclaw-agent.sqlite#")),
        "{openclaw:#?}"
    );
    assert_eq!(
        logs.iter()
            .filter(|log| log.harness == Harness::Continue)
            .count(),
        2,
        "the index is not a session"
    );
    std::fs::remove_dir_all(fixtures).unwrap();
    std::fs::remove_dir_all(home).unwrap();
}

#[tokio::test]
async fn an_aider_history_that_grows_is_read_on_and_only_its_last_run_is_read_again() {
    let source = std::fs::read_to_string(formats().join(AIDER_HISTORY)).unwrap();
    let third = source.find("# aider chat started at 2026-02-04").unwrap();
    let dir = scratch("aider");
    let repo = dir.join("kestrel");
    std::fs::create_dir_all(&repo).unwrap();
    let history = repo.join(".aider.chat.history.md");
    // Aider is still answering in the second run; the third has not started.
    let answering = source.find("> Tokens: 3.9k sent").unwrap();
    std::fs::write(&history, &source[..answering]).unwrap();
    let (config, db) = common::fresh_db().await;
    let first = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!(first.counters.files_read, 1, "{first}");
    // The rest of the second run and the whole third are appended.
    std::fs::write(&history, &source).unwrap();
    let grown = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!(
        (grown.counters.files_read, grown.counters.files_reread),
        (2, 0),
        "the grown run is read on, the new one read: {grown}"
    );
    let read_on = snapshot(&db).await;
    common::assert_statistics_exact(&read_on);
    let (clean_config, clean_db) = common::fresh_db().await;
    common::ingest_paths(&clean_config, &clean_db, &dir).await;
    assert_eq!(read_on, snapshot(&clean_db).await);
    // A run appended later leaves the earlier ones unread.
    let mut longer = source.clone();
    longer.push_str(&source[third..].replace("2026-02-04 14:02:11", "2026-02-05 08:00:00"));
    std::fs::write(&history, &longer).unwrap();
    let again = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!(
        (again.counters.files_unchanged, again.counters.files_read),
        (2, 1),
        "{again}"
    );
    let sessions: u64 = db
        .read(
            "t",
            "SELECT count() FROM sessions FINAL WHERE harness = 'aider'",
        )
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sessions, 3);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Aider's history dates only each run's start; `.aider.input.history` beside it dates what was
/// typed: each prompt shows when it was typed (a prompt sent on by `/ask`, when the command
/// was). Without it, prompts show the run's start.
#[tokio::test]
async fn aider_prompts_show_when_they_were_typed() {
    let dir = scratch("aider-typed");
    let repo = dir.join("kestrel");
    std::fs::create_dir_all(&repo).unwrap();
    for name in [".aider.chat.history.md", ".aider.input.history"] {
        std::fs::copy(formats().join("aider/kestrel").join(name), repo.join(name)).unwrap();
    }
    let local = |text: &str| {
        chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
            .unwrap()
            .and_local_timezone(chrono::Local)
            .earliest()
            .unwrap()
            .timestamp_millis()
    };
    // When each prompt was written down as the person's input.
    let prompts = |db: moraine_mcp::db::Db| async move {
        let key = session_key(Harness::Aider, "2026-02-03-09-16-40-1bb22314");
        db.read(
            "t",
            "SELECT toUnixTimestamp64Milli(ts) FROM events \
             WHERE session_key = {k:UInt64} AND event_type = 'user_input' ORDER BY ts",
        )
        .param("k", key)
        .fetch_all::<i64>(&db, db.default_deadline())
        .await
        .unwrap()
    };
    let (config, db) = common::fresh_db().await;
    let summary = common::ingest_paths(&config, &db, &dir).await;
    assert_eq!(
        summary.logs, 2,
        "the input history is no log of its own: {summary}"
    );
    assert_eq!(
        prompts(db.clone()).await,
        [
            local("2026-02-03 09:17:30.118"),
            local("2026-02-03 09:19:05.772")
        ]
    );
    std::fs::remove_file(repo.join(".aider.input.history")).unwrap();
    let (config, db) = common::fresh_db().await;
    common::ingest_paths(&config, &db, &dir).await;
    let run = local("2026-02-03 09:16:40");
    assert_eq!(prompts(db).await, [run, run]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Every harness the service reads has what adding one asks for: fixtures in `tests/formats/`
/// detected as its own, a demo session, and a row in the harness table.
#[test]
fn every_registered_harness_has_fixtures_detection_a_demo_and_a_docs_row() {
    let table =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/harnesses.md"))
            .unwrap();
    let fixtures = scratch("registry");
    build_formats(&fixtures);
    let demo = scratch("registry-demo");
    let demo_roots = moraine_mcp::demo::write_to(&demo).unwrap();
    for harness in Harness::all() {
        let dir = fixtures.join(harness.default_source());
        assert!(
            dir.is_dir(),
            "{harness}: no fixtures in tests/formats/{}",
            harness.default_source()
        );
        let (logs, problems) =
            moraine_mcp::ingest::files::from_paths(std::slice::from_ref(&dir), None, None);
        assert!(
            !logs.is_empty(),
            "{harness}: no fixture found ({problems:?})"
        );
        for log in &logs {
            assert_eq!(
                log.harness,
                harness,
                "{} detected as {}",
                log.path.display(),
                log.harness
            );
        }
        assert!(
            demo_roots.iter().any(|(h, _)| *h == harness),
            "{harness}: no demo session"
        );
        assert!(
            table.contains(&format!("| `{}` |", harness.as_str())),
            "{harness}: no row in docs/harnesses.md"
        );
    }
    std::fs::remove_dir_all(fixtures).unwrap();
    std::fs::remove_dir_all(demo).unwrap();
}
