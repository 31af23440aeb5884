//! The command line: a bad configuration, SIGTERM, each command's help, and `forget`.

use super::*;

#[test]
fn a_bad_config_exits_non_zero_naming_the_key() {
    let dir = std::env::temp_dir().join(format!("moraine-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(
        &path,
        "[server]\nlisten = \"127.0.0.1:0\"\nlisten_adress = \"x\"\n",
    )
    .unwrap();
    let output = Command::new(BIN)
        .arg("--config")
        .arg(&path)
        .arg("migrate")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("listen_adress"), "{stderr}");

    std::fs::write(&path, "[bm25]\nb = 3.0\n").unwrap();
    let output = Command::new(BIN)
        .arg("--config")
        .arg(&path)
        .arg("migrate")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("bm25.b"));

    let output = Command::new(BIN)
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env("MORAINE_MCP_CLICKHOUSE__URL", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("server.listen"));

    let output = Command::new(BIN)
        .arg("migrate")
        .env("MORAINE_MCP_SERVER__NOPE", "1")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("MORAINE_MCP_SERVER__NOPE"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn sigterm_stops_the_server_gracefully() {
    let (config, _db) = fresh_db().await;
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("MORAINE_MCP_CLICKHOUSE__URL", &config.clickhouse.url)
        .env(
            "MORAINE_MCP_CLICKHOUSE__DATABASE",
            &config.clickhouse.database,
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("is serving MCP at") {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "server exited early"
        );
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn each_commands_help_lists_only_the_options_that_apply_to_it() {
    let help = |command: &str| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_moraine-mcp"))
            .args([command, "--help"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{command} --help failed");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let cases: [(&str, &[&str], &[&str]); 8] = [
        (
            "serve",
            &["--listen", "--stdio", "--clickhouse-url", "--config"],
            &["--harness", "--data-dir", "--server"],
        ),
        (
            "up",
            &["--listen", "--data-dir", "--engine-port", "--no-ingest"],
            &["--clickhouse-url", "--database", "--harness"],
        ),
        (
            "ingest",
            &["--harness", "--source", "--clickhouse-url", "--database"],
            &["--listen", "--data-dir", "--server"],
        ),
        (
            "migrate",
            &["--clickhouse-url", "--database"],
            &["--listen", "--harness"],
        ),
        (
            "reindex",
            &["--harness", "--clickhouse-url"],
            &["--listen", "--data-dir"],
        ),
        (
            "push",
            &["--server", "--token"],
            &["--listen", "--clickhouse-url", "--database", "--data-dir"],
        ),
        (
            "healthcheck",
            &["--url"],
            &["--clickhouse-url", "--harness", "--data-dir"],
        ),
        (
            "forget",
            &[
                "--demo",
                "--session",
                "--source",
                "--everything",
                "--clickhouse-url",
            ],
            &["--listen", "--harness"],
        ),
    ];
    for (command, has, lacks) in cases {
        let text = help(command);
        for option in has {
            assert!(
                text.contains(option),
                "{command} --help lacks {option}:\n{text}"
            );
        }
        for option in lacks {
            assert!(
                !text.contains(option),
                "{command} --help lists {option}:\n{text}"
            );
        }
    }
}

#[tokio::test]
async fn forget_asks_before_dropping_and_a_server_whose_schema_is_gone_says_so_and_recovers() {
    let (settings, db) = fresh_db().await;
    common::ingest_paths(&settings, &db, &common::fixtures()).await;
    let server = TestServer::start(settings.clone(), db.clone()).await;
    let home = std::env::temp_dir().join(format!("moraine-forget-home-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let forget = |extra: &[&str]| {
        Command::new(BIN)
            .args(["forget", "--everything"])
            .args(extra)
            .env("HOME", &home)
            .env("MORAINE_MCP_CLICKHOUSE__URL", &settings.clickhouse.url)
            .env(
                "MORAINE_MCP_CLICKHOUSE__DATABASE",
                &settings.clickhouse.database,
            )
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // Without a terminal to ask on, and without --yes: nothing is dropped.
    let refused = forget(&[]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(
        said.contains("--yes") && said.contains("sessions"),
        "{said}"
    );
    let mut client = Mcp::legacy(&server.mcp_url, None).await;
    let found = client.ok("search_sessions", json!({"query": "test"})).await;
    assert!(found["data"]["result_count"].as_u64().unwrap() > 0);
    // With --yes the database goes; the running server says why it cannot serve.
    let dropped = forget(&["--yes"]);
    assert!(
        dropped.status.success(),
        "{}",
        String::from_utf8_lossy(&dropped.stderr)
    );
    let health = send("GET", &format!("{}/healthz", server.base), &[], "").await;
    assert_eq!(health.status, 503);
    let reason = health.json()["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("migrate"), "{reason}");
    let (code, envelope) = client
        .err("search_sessions", json!({"query": "test"}))
        .await;
    assert_eq!(code, "backend_failure");
    let message = envelope["error"]["message"].as_str().unwrap();
    assert!(message.contains("moraine-mcp migrate"), "{message}");
    // Once the schema is back, it serves again by itself.
    migrate::migrate(&settings.clickhouse, &db).await.unwrap();
    let health = send("GET", &format!("{}/healthz", server.base), &[], "").await;
    assert_eq!(health.status, 200, "{}", health.body);
    client.ok("search_sessions", json!({"query": "test"})).await;
    server.stop().await;
}
