//! The ingest API under faults and hostile bodies: the engine killed again and again while a
//! laptop pushes (the store ends as one clean ingest: no posting twice, statistics exact), and
//! bodies whose credential masking is costly (the server stays responsive while they are read).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use moraine_mcp::db::Db;
use moraine_mcp::metrics::Metrics;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::common::{
    assert_statistics_exact, config_for, fresh_db, ingest_paths, snapshot, try_get, write_sessions,
};
use crate::own_engine::{BIN, Up, gone};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moraine-pushes-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `moraine-mcp push` of `dir` to `server` (no token: a loopback server without tokens).
fn push(dir: &std::path::Path, server: &str) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["push", "--no-progress", "--server", server])
        .args(["--retry-for", "120"])
        .arg(dir)
        .env("HOME", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

#[tokio::test]
async fn a_push_whose_engine_is_killed_again_and_again_stores_one_clean_copy() {
    let dir = scratch("engine-kills");
    write_sessions(&dir, 0x9e51, 300, 20, "pushkillword");
    let up = Up::start("push-engine-kills").await;
    let mut child = push(&dir, &up.base).spawn().unwrap();
    let mut kills = 0;
    for pause in [400, 900, 700, 1200] {
        tokio::time::sleep(Duration::from_millis(pause)).await;
        if child.try_wait().unwrap().is_some() {
            break;
        }
        let engine = up.engine();
        kill(Pid::from_raw(engine as i32), Signal::SIGKILL).unwrap();
        assert!(gone(engine, Duration::from_secs(5)).await);
        kills += 1;
        up.wait_healthy(Duration::from_secs(60)).await;
    }
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    // Logs whose requests failed while the engine was down are sent by running push again.
    let mut rounds = 0;
    let mut ok = output.status.success();
    while !ok && rounds < 5 {
        rounds += 1;
        ok = push(&dir, &up.base).output().unwrap().status.success();
    }
    assert!(ok, "push did not converge; server log:\n{}", up.log());
    eprintln!("engine killed {kills} times during the push; {rounds} more pushes to finish");
    assert!(kills >= 1, "the push ended before the engine was killed");
    let mut settings = config_for(&up.engine_url);
    settings.clickhouse.database = "moraine".into();
    let config = settings.validate().unwrap();
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    let pushed = snapshot(&db).await;
    assert_statistics_exact(&pushed);
    let (clean_settings, clean_db) = fresh_db().await;
    ingest_paths(&clean_settings, &clean_db, &dir).await;
    pushed.assert_same_as(&snapshot(&clean_db).await);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Log lines mentioning `pwd` among non-ASCII text, the shape that took the credential rules
/// off their fast path: pushed three at a time while `/healthz` is asked every 50 ms. Every
/// push is stored, every probe answered; the slowest probe is reported. The long form sends
/// larger bodies: `MORAINE_MASK_MIB=16 cargo test --test resilience masking -- --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_costly_to_mask_leave_the_server_responsive() {
    let mib: usize = std::env::var("MORAINE_MASK_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let (settings, db) = fresh_db().await;
    let server = crate::common::TestServer::start(settings, db.clone()).await;
    let line = "{\"type\":\"user\",\"sessionId\":\"s\",\"message\":{\"role\":\"user\",\"content\":\"用户 pwd 登录失败，密码错误，请重试。连接到数据库失败，服务器返回错误代码\"}}\n";
    let body: String = line.repeat((mib << 20) / line.len());
    let pushes: Vec<_> = (0..3)
        .map(|i| {
            let url = format!(
                "{}/ingest/v1/append?harness=claude-code&path=/logs/mask-{i}.jsonl&offset=0",
                server.base
            );
            let body = body.clone();
            tokio::spawn(async move { crate::common::send("POST", &url, &[], &body).await })
        })
        .collect();
    let health = format!("{}/healthz", server.base);
    let mut slowest = Duration::ZERO;
    let mut probes = 0;
    while pushes.iter().any(|p| !p.is_finished()) {
        let started = Instant::now();
        assert_eq!(try_get(&health).await, Some(200));
        slowest = slowest.max(started.elapsed());
        probes += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for push in pushes {
        assert_eq!(push.await.unwrap().status, 200);
    }
    eprintln!(
        "3 bodies of {mib} MiB: {probes} health probes while they were read, slowest {slowest:?}"
    );
    let stored: Option<u64> = db
        .read("t", "SELECT uniqExact(file_key) FROM raw_chunks")
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap();
    assert_eq!(stored, Some(3));
    server.stop().await;
}

/// An insert the engine cut part way through can store a batch's postings (and the
/// statistics the other views add) without its events; the checkpoint did not move, so the
/// client sends the range again. The server repairs before it writes anything more: no
/// posting is then stored twice.
#[tokio::test]
async fn a_push_after_a_cut_write_repairs_the_index_before_writing() {
    let dir = scratch("cut-write");
    write_sessions(&dir, 0x0c07, 3, 5, "cutword");
    let (whole_settings, whole) = fresh_db().await;
    ingest_paths(&whole_settings, &whole, &dir).await;
    let clean = snapshot(&whole).await;
    // The logs as the cut write found them: one turn shorter, pushed whole.
    write_sessions(&dir, 0x0c07, 3, 4, "cutword");
    let (settings, db) = fresh_db().await;
    let server = crate::common::TestServer::start(settings, db.clone()).await;
    let client =
        moraine_mcp::push::Client::new(&server.base, None, None, Duration::from_secs(30)).unwrap();
    let logs = |dir: &std::path::Path| {
        moraine_mcp::ingest::files::from_paths(&[dir.to_owned()], None, None).0
    };
    moraine_mcp::push::push_logs(&client, &logs(&dir), 1 << 20, false)
        .await
        .unwrap();
    // What the cut insert of the last turn stored: its postings and the views' statistics.
    for sql in [
        "INSERT INTO term_df SELECT term, toUInt8(kind % 128) AS t, toInt64(count()) FROM {whole:Identifier}.postings \
         WHERE doc NOT IN (SELECT event_key FROM events) GROUP BY term, t",
        "INSERT INTO corpus_stats SELECT toUInt8(event_type) AS t, toInt64(count()), toInt64(sum(doc_len)) \
         FROM {whole:Identifier}.events WHERE event_key NOT IN (SELECT event_key FROM events) AND searchable GROUP BY t",
        "INSERT INTO postings SELECT * FROM {whole:Identifier}.postings \
         WHERE doc NOT IN (SELECT event_key FROM events)",
    ] {
        db.write("t", sql)
            .param("whole", whole_settings.clickhouse.database.as_str())
            .setting("insert_deduplicate", "0")
            .execute(&db, db.default_deadline())
            .await
            .unwrap();
    }
    moraine_mcp::ingest::lock::note_failed_write_of(&server.config);
    write_sessions(&dir, 0x0c07, 3, 5, "cutword");
    moraine_mcp::push::push_logs(&client, &logs(&dir), 1 << 20, false)
        .await
        .unwrap();
    let after = snapshot(&db).await;
    assert_statistics_exact(&after);
    after.assert_same_as(&clean);
    assert!(!moraine_mcp::ingest::lock::failed_write_noted_of(
        &server.config
    ));
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Archive statements a server has run (`ingest_archive` queries in `/metrics`).
async fn archive_reads(base: &str) -> f64 {
    let metrics = crate::common::send("GET", &format!("{base}/metrics"), &[], "").await;
    crate::common::metric_sum(
        &metrics.body,
        "moraine_mcp_clickhouse_query_duration_seconds_count",
        &["query=\"ingest_archive\""],
    )
}

/// A request sent again after its answer was lost (its write went through) is recognised by
/// the checkpoint's fingerprints, without reading the archive; a request continuing many logs
/// reads what it needs of the archive in one statement, not one per log. (A resend that read
/// the archive once per log could outlast the request's time limit again and again.)
#[tokio::test]
async fn a_resend_is_answered_from_the_checkpoint_and_a_request_reads_the_archive_once() {
    let dir = scratch("resend");
    write_sessions(&dir, 0x5e5d, 40, 3, "resendword");
    let (settings, db) = fresh_db().await;
    let server = crate::common::TestServer::start(settings, db.clone()).await;
    let logs = moraine_mcp::ingest::files::from_paths(std::slice::from_ref(&dir), None, None).0;
    // One log sent, then the same request again.
    let log = &logs[0];
    let bytes = std::fs::read(&log.path).unwrap();
    let url = format!(
        "{}/ingest/v1/append?harness=claude-code&path={}&offset=0",
        server.base,
        log.path.display()
    );
    let text = String::from_utf8(bytes.clone()).unwrap();
    let first = crate::common::send("POST", &url, &[], &text).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let before = archive_reads(&server.base).await;
    let again = crate::common::send("POST", &url, &[], &text).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.json()["duplicate"], true);
    assert_eq!(
        archive_reads(&server.base).await,
        before,
        "the resend read the archive"
    );
    // The same bytes but one changed: refused as other bytes.
    let changed = text.replacen("resendword", "resendWORD", 1);
    let refused = crate::common::send("POST", &url, &[], &changed).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    // Every log pushed, then each grows by a line: one request continues all forty.
    let client =
        moraine_mcp::push::Client::new(&server.base, None, None, Duration::from_secs(30)).unwrap();
    moraine_mcp::push::push_logs(&client, &logs, 16 << 20, false)
        .await
        .unwrap();
    for log in &logs {
        let mut text = std::fs::read_to_string(&log.path).unwrap();
        text.push_str(&format!(
            "{}\n",
            serde_json::json!({"type": "user", "sessionId": "x", "timestamp": "2026-06-01T00:00:00.000Z",
                "message": {"role": "user", "content": "one more resendword line"}})
        ));
        std::fs::write(&log.path, text).unwrap();
    }
    let before = archive_reads(&server.base).await;
    let grown = moraine_mcp::ingest::files::from_paths(std::slice::from_ref(&dir), None, None).0;
    let pushed = moraine_mcp::push::push_logs(&client, &grown, 16 << 20, false)
        .await
        .unwrap();
    assert_eq!((pushed.sent, pushed.failed), (40, 0));
    let reads = archive_reads(&server.base).await - before;
    eprintln!("40 logs continued in one request: {reads} archive statements");
    assert!(reads <= 2.0, "{reads} archive statements for one request");
    let stored = snapshot(&db).await;
    assert_statistics_exact(&stored);
    let (clean_settings, clean_db) = fresh_db().await;
    ingest_paths(&clean_settings, &clean_db, &dir).await;
    stored.assert_same_as(&snapshot(&clean_db).await);
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Requests longer than the ingest API's time limit: each is answered 503 when its limit
/// passes, but the server goes on to decide and write what it brought (holding its slot), so
/// the client's resend finds it stored and the push completes instead of starting over again
/// and again.
#[tokio::test]
async fn requests_past_the_time_limit_finish_and_their_resends_find_them_stored() {
    let dir = scratch("past-limit");
    write_sessions(&dir, 0x7113, 150, 20, "limitword");
    let (mut settings, db) = fresh_db().await;
    settings.ingest.request_timeout_secs = 1;
    let server = crate::common::TestServer::start(settings, db.clone()).await;
    let logs = moraine_mcp::ingest::files::from_paths(std::slice::from_ref(&dir), None, None).0;
    let client =
        moraine_mcp::push::Client::new(&server.base, None, None, Duration::from_secs(120)).unwrap();
    let started = Instant::now();
    let pushed = moraine_mcp::push::push_logs(&client, &logs, 16 << 20, false)
        .await
        .unwrap();
    eprintln!(
        "{} logs pushed through a 1 s time limit in {:.1} s",
        pushed.sent,
        started.elapsed().as_secs_f64()
    );
    assert_eq!((pushed.sent, pushed.failed), (150, 0));
    let metrics = crate::common::send("GET", &format!("{}/metrics", server.base), &[], "").await;
    let timed_out = crate::common::metric_sum(
        &metrics.body,
        "moraine_mcp_http_requests_total",
        &["status=\"503\""],
    );
    eprintln!(
        "{timed_out} requests answered 503 at the limit; the client sent smaller requests {} times",
        pushed.shrunk
    );
    // A request the server could not answer in time is sent again smaller.
    assert!(timed_out == 0.0 || pushed.shrunk > 0);
    let stored = snapshot(&db).await;
    assert_statistics_exact(&stored);
    let (clean_settings, clean_db) = fresh_db().await;
    ingest_paths(&clean_settings, &clean_db, &dir).await;
    stored.assert_same_as(&snapshot(&clean_db).await);
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// D17: an ingest request holds its body once: what is parsed, fingerprinted and archived are
/// pieces of it, not copies, and a compressed body is decoded into a buffer of its size. What
/// it parses into (each event's text and record) comes on top.
#[tokio::test]
async fn an_ingest_request_holds_its_body_about_once() {
    let up = Up::start("push-memory").await;
    let append = |path: &str, body: Vec<u8>| {
        let url = format!(
            "{}/ingest/v1/append?harness=claude-code&path=/logs/{path}&offset=0",
            up.base
        );
        async move {
            crate::common::send_bytes(
                "POST",
                &url,
                &[("content-encoding", "zstd")],
                zstd::bulk::compress(&body, 3).unwrap(),
            )
            .await
        }
    };
    // A build's worth of tool output: each line a command's result of about 4 KiB.
    let line = |n: usize| {
        let output: String = (0..400)
            .map(|w| format!("w{} ", (n * 31 + w * 7) % 50_000))
            .collect();
        format!(
            "{{\"type\":\"user\",\"sessionId\":\"0b9e1f2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b\",\"uuid\":\"u{n}\",\"timestamp\":\"2026-05-01T10:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"t{n}\",\"content\":\"{output}\"}}]}}}}\n"
        )
    };
    // Warmed up by a small request first: the first one sets up what every later one shares.
    let small: Vec<u8> = (0..200).flat_map(|n| line(n).into_bytes()).collect();
    assert_eq!(append("warm-up.jsonl", small).await.status, 200);
    let mut body = Vec::new();
    let mut n = 0;
    while body.len() < 32 << 20 {
        body.extend(line(n).into_bytes());
        n += 1;
    }
    let size = body.len() as u64;
    let before = crate::http::peak_memory(up.child.id());
    let reply = append("big.jsonl", body).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let grown = crate::http::peak_memory(up.child.id()).saturating_sub(before);
    eprintln!(
        "a {} MiB body ({n} lines) raised the server's peak memory by {} MiB ({:.1}x)",
        size >> 20,
        grown >> 20,
        grown as f64 / size as f64
    );
    // 8.4 times the body before (three copies of it, a decode buffer grown by doubling, the
    // archive encoded as one row); 5.2 times now, the parsed events (their text, record and
    // index terms) being 3.4 of it.
    assert!(
        grown < 6 * size,
        "{} MiB for a {} MiB body",
        grown >> 20,
        size >> 20
    );
}
