//! Crash safety of ingest: `moraine-mcp ingest` killed with SIGKILL at several points of a large
//! run, a killed run's late insert, its engine killed under it, and two runs at once — each
//! followed by a run to the end — must store exactly what one clean run stores: no duplicate,
//! no lost event, statistics exact.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use moraine_mcp::db::Db;
use moraine_mcp::ingest::lock::IngestLock;
use moraine_mcp::metrics::Metrics;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::common::{
    Snapshot, assert_statistics_exact, config_for, fresh_db, ingest_paths, snapshot, write_sessions,
};
use crate::own_engine::{BIN, Up, gone};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moraine-crash-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `moraine-mcp ingest <dir>` into `database` on the shared engine, as a child process.
fn ingest(dir: &std::path::Path, database: &str) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["ingest", "--no-progress", "--harness", "claude-code"])
        .arg(dir)
        .env(
            "MORAINE_MCP_CLICKHOUSE__URL",
            crate::common::shared_engine_url(),
        )
        .env("MORAINE_MCP_CLICKHOUSE__DATABASE", database)
        .env("MORAINE_MCP_INGEST__BATCH_EVENTS", "500")
        .env("HOME", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

#[tokio::test]
async fn ingest_killed_at_any_point_and_run_again_stores_exactly_one_clean_run() {
    let dir = scratch("corpus");
    write_sessions(&dir, 0xc4a5, 120, 25, "crashword");
    let (reference_settings, reference_db) = fresh_db().await;
    ingest_paths(&reference_settings, &reference_db, &dir).await;
    let reference = snapshot(&reference_db).await;
    assert!(
        reference.events.len() >= 10_000,
        "{}",
        reference.events.len()
    );

    // How long one whole run of the command takes here, to spread the kills over it.
    let (timing_settings, _) = fresh_db().await;
    let started = std::time::Instant::now();
    let status = ingest(&dir, &timing_settings.clickhouse.database)
        .status()
        .unwrap();
    assert!(status.success());
    let whole = started.elapsed();

    let (settings, db) = fresh_db().await;
    let database = settings.clickhouse.database.clone();
    let mut killed_with_work_done = 0;
    // Each run resumes where the last stopped: together the kills stay within one whole run,
    // so that every run has work left when it is killed.
    for fraction in [0.08, 0.1, 0.12, 0.14, 0.16, 0.18] {
        let mut child = ingest(&dir, &database).spawn().unwrap();
        tokio::time::sleep(whole.mul_f64(fraction)).await;
        let finished = child.try_wait().unwrap().is_some();
        let _ = child.kill();
        let _ = child.wait();
        if !finished {
            killed_with_work_done += 1;
        }
    }
    assert!(
        killed_with_work_done >= 5,
        "only {killed_with_work_done} runs were cut off"
    );
    let status = ingest(&dir, &database).status().unwrap();
    assert!(status.success());
    let after = snapshot(&db).await;
    assert_statistics_exact(&after);
    after.assert_same_as(&reference);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The reference: what one clean run stores for `dir`.
async fn clean_run(dir: &std::path::Path) -> Snapshot {
    let (settings, db) = fresh_db().await;
    ingest_paths(&settings, &db, dir).await;
    let clean = snapshot(&db).await;
    assert_statistics_exact(&clean);
    clean
}

/// A killed run's last insert can land after the next run read its checkpoints (the engine
/// had the whole request): its events are then stored twice. The next run that reads the
/// session finds the second copy and rebuilds the session from its log.
#[tokio::test]
async fn a_killed_runs_late_insert_is_found_and_the_session_rebuilt() {
    let dir = scratch("late");
    write_sessions(&dir, 0x1a7e, 3, 4, "lateword");
    let (settings, db) = fresh_db().await;
    ingest_paths(&settings, &db, &dir).await;
    let session: u64 = db
        .read("t", "SELECT min(session_key) FROM events")
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    // What the late insert stores: the session's events again, under an older write, with
    // their postings and the statistics the index views add for them.
    for sql in [
        "INSERT INTO term_df SELECT term, toUInt8(kind % 128) AS t, toInt64(count()) FROM postings WHERE sess = {s:UInt64} GROUP BY term, t",
        "INSERT INTO corpus_stats SELECT toUInt8(event_type) AS t, toInt64(count()), toInt64(sum(doc_len)) FROM events WHERE session_key = {s:UInt64} AND searchable GROUP BY t",
        "INSERT INTO postings SELECT * FROM postings WHERE sess = {s:UInt64}",
        "INSERT INTO events SELECT * REPLACE (batch - 1 AS batch) FROM events WHERE session_key = {s:UInt64}",
    ] {
        db.write("t", sql)
            .param("s", session)
            .setting("insert_deduplicate", "0")
            .execute(&db, db.default_deadline())
            .await
            .unwrap();
    }
    // The logs grow, so the next run reads every session.
    write_sessions(&dir, 0x1a7e, 3, 5, "lateword");
    let summary = ingest_paths(&settings, &db, &dir).await;
    assert_eq!(summary.rebuilt, 1, "{summary}");
    let after = snapshot(&db).await;
    assert_statistics_exact(&after);
    after.assert_same_as(&clean_run(&dir).await);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two runs of the same logs at once: the second waits for the first, then finds nothing new.
#[tokio::test]
async fn two_ingests_of_the_same_logs_at_once_store_one_copy() {
    let dir = scratch("twice");
    write_sessions(&dir, 0x2b2b, 40, 20, "twiceword");
    let (settings, db) = fresh_db().await;
    let database = settings.clickhouse.database.clone();
    let mut first = ingest(&dir, &database).spawn().unwrap();
    let mut second = ingest(&dir, &database).spawn().unwrap();
    assert!(first.wait().unwrap().success());
    assert!(second.wait().unwrap().success());
    let after = snapshot(&db).await;
    assert_statistics_exact(&after);
    after.assert_same_as(&clean_run(&dir).await);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// How many events the store holds (0 while it cannot say).
async fn stored_events(db: &Db) -> u64 {
    db.read("t", "SELECT count() FROM events")
        .fetch_optional(db, db.default_deadline())
        .await
        .ok()
        .flatten()
        .unwrap_or(0)
}

/// The engine killed under a running ingest: the ingest says so and fails; once `up` has
/// started the engine again, a re-run converges on what one clean run stores.
#[tokio::test]
async fn ingest_whose_engine_is_killed_fails_and_a_rerun_converges() {
    let dir = scratch("engine");
    write_sessions(&dir, 0xe9e9, 100, 25, "engineword");
    let up = Up::start("crash-engine").await;
    let run = || {
        let mut command = ingest(&dir, "moraine");
        command
            .env("MORAINE_MCP_CLICKHOUSE__URL", &up.engine_url)
            .stderr(Stdio::piped());
        command
    };
    let mut settings = config_for(&up.engine_url);
    settings.clickhouse.database = "moraine".into();
    let config = settings.validate().unwrap();
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    let child = run().spawn().unwrap();
    // Killed once the ingest has stored its first rows, so the kill lands among its writes
    // (a fixed delay could land while it still starts up, and the write gate waits out a
    // restarting engine).
    let started = std::time::Instant::now();
    while stored_events(&db).await == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the ingest stored nothing"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let engine = up.engine();
    kill(Pid::from_raw(engine as i32), Signal::SIGKILL).unwrap();
    assert!(gone(engine, Duration::from_secs(5)).await);
    let output = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("clickhouse"), "{said}");
    up.wait_healthy(Duration::from_secs(60)).await;
    let output = run().output().unwrap();
    let rerun_said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{rerun_said}");
    // Shown only if the test fails: which recovery paths the rerun took (repair, retractions,
    // rebuilds) is what tells apart the ways a killed insert can leave the store.
    eprintln!(
        "first run:\n{said}\nrerun:\n{rerun_said}\nengine log:\n{}",
        up.engine_log_tail(200)
    );
    let after = snapshot(&db).await;
    assert_statistics_exact(&after);
    after.assert_same_as(&clean_run(&dir).await);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An engine that died inside an event insert may have stored the postings of the insert (and
/// the statistics the other views add) without its events: the checkpoint did not move, so the
/// next run writes those events again, and their postings must not be there twice. An event key
/// is unique within its session only: another session stored whole holds events under the
/// same keys as the orphans, and must neither hide them nor lose its own postings.
#[tokio::test]
async fn postings_stored_without_their_events_are_dropped_before_the_next_run() {
    let dir = scratch("orphans");
    write_sessions(&dir, 0x0f0f, 3, 5, "orphanword");
    write_sessions(&dir, 0x0f10, 1, 5, "orphanword");
    let (whole_settings, whole) = fresh_db().await;
    ingest_paths(&whole_settings, &whole, &dir).await;
    let clean = snapshot(&whole).await;
    // The logs as the died run found them: one turn shorter.
    write_sessions(&dir, 0x0f0f, 3, 4, "orphanword");
    let (settings, db) = fresh_db().await;
    ingest_paths(&settings, &db, &dir).await;
    // What the died insert stored of the last turn: its postings and the views' statistics.
    for sql in [
        "INSERT INTO term_df SELECT term, toUInt8(kind % 128) AS t, toInt64(count()) FROM {whole:Identifier}.postings \
         WHERE (sess, doc) NOT IN (SELECT session_key, event_key FROM events) GROUP BY term, t",
        "INSERT INTO corpus_stats SELECT toUInt8(event_type) AS t, toInt64(count()), toInt64(sum(doc_len)) \
         FROM {whole:Identifier}.events WHERE (session_key, event_key) NOT IN (SELECT session_key, event_key FROM events) \
         AND searchable GROUP BY t",
        "INSERT INTO postings SELECT * FROM {whole:Identifier}.postings \
         WHERE (sess, doc) NOT IN (SELECT session_key, event_key FROM events)",
    ] {
        db.write("t", sql)
            .param("whole", whole_settings.clickhouse.database.as_str())
            .setting("insert_deduplicate", "0")
            .execute(&db, db.default_deadline())
            .await
            .unwrap();
    }
    let config = settings.clone().validate().unwrap();
    let lock = IngestLock::acquire(&config).await.unwrap();
    lock.note_failed_write();
    drop(lock);
    write_sessions(&dir, 0x0f0f, 3, 5, "orphanword");
    ingest_paths(&settings, &db, &dir).await;
    let after = snapshot(&db).await;
    assert_statistics_exact(&after);
    after.assert_same_as(&clean);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Statistics left wrong by an engine that died inside an insert (one view's rows stored, not
/// another's) are found and corrected.
#[tokio::test]
async fn statistics_a_dead_engine_left_wrong_are_corrected() {
    let dir = scratch("statistics");
    write_sessions(&dir, 0x57a7, 5, 4, "statword");
    let (settings, db) = fresh_db().await;
    ingest_paths(&settings, &db, &dir).await;
    let clean = snapshot(&db).await;
    assert!(
        !moraine_mcp::ingest::writer::repair_statistics(&db)
            .await
            .unwrap()
    );
    for sql in [
        "INSERT INTO corpus_stats VALUES (1, 500, 12345)",
        "INSERT INTO term_df SELECT term, 2, 3 FROM postings LIMIT 7",
        "INSERT INTO term_df VALUES (42, 1, 1)",
    ] {
        db.write("t", sql)
            .setting("insert_deduplicate", "0")
            .execute(&db, db.default_deadline())
            .await
            .unwrap();
    }
    assert!(
        moraine_mcp::ingest::writer::repair_statistics(&db)
            .await
            .unwrap()
    );
    let repaired = snapshot(&db).await;
    assert_statistics_exact(&repaired);
    repaired.assert_same_as(&clean);
    std::fs::remove_dir_all(&dir).unwrap();
}
