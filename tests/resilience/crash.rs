//! Crash safety of ingest: `moraine-mcp ingest` killed with SIGKILL at several points of a large
//! run, then run again, must store exactly what one clean run stores — no duplicate, no lost
//! event, statistics exact. Run with `cargo test --test resilience -- --ignored crash`.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::{assert_statistics_exact, fresh_db, ingest_paths, snapshot, write_sessions};

const BIN: &str = env!("CARGO_BIN_EXE_moraine-mcp");

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
#[ignore = "fails today, two ways: (1) term_df ends below what the postings imply when a kill \
            lands between a retraction's statistics adjustment and its deletes, and the re-run \
            subtracts again; (2) an insert the killed run had sent lands after the re-run read \
            its checkpoints, so a batch is stored twice. Both need events to carry the write \
            that made them (retractions applied once, late inserts recognised)"]
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
    // Each run resumes where the last stopped, so later ones have less left to do.
    for fraction in [0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6] {
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
    assert_eq!(after.events.len(), reference.events.len(), "events");
    assert_eq!(after, reference, "the store differs from one clean run");
    std::fs::remove_dir_all(&dir).unwrap();
}
