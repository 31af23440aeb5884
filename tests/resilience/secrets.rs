//! Secrets: realistic fake credentials of every kind the redactor knows, in prompts, tool
//! arguments, tool outputs and answers, of a log ingested locally and of one pushed, must be
//! absent from everything the service gives back (search results and snippets, `open` of
//! sessions, turns and events with their raw records) and from every string column of every
//! stored table — the archive of both logs included.

use std::io::Write as _;

use serde_json::{Value, json};

use moraine_mcp::config::{Scope, TokenConfig};

use crate::common::{Mcp, TestServer, fresh_db, ingest_paths};
use crate::own_engine::BIN;

const READER: &str = "secrets-reader-token-0123456789";
const LAPTOP: &str = "secrets-laptop-token-0123456789";

/// One fake credential of each kind, as it would appear in a line, and the part that must
/// not survive.
fn credentials() -> Vec<(&'static str, String, String)> {
    let kinds: Vec<(&'static str, String, String)> = vec![
        ("aws_access_key", "AKIAZ7QX4M2N8P5R3T6W".into(), String::new()),
        ("github_token", "ghp_k3Jf9sLq2Wx8Rt5Yz1Vb7Nm4Pc6Hd0Ga2Ue9".into(), String::new()),
        (
            "github_token",
            "github_pat_11ABCDEFG0k3Jf9sLq2Wx8_Rt5Yz1Vb7Nm4Pc6Hd0Ga2Ue9Tq3Lk8Ws1Xy6Zr4Mn7Bv".into(),
            String::new(),
        ),
        ("api_key", "sk-proj-Qw3Er5Ty7Ui9Op1As2Df4Gh6Jk8Lz0Xc".into(), String::new()),
        ("api_key", "sk-ant-api03-Lm9Nb8Vc7Xz6As5Df4Gh3Jk2Qw1Er0Ty".into(), String::new()),
        ("slack_token", "xoxb-482019375610-3920174856-Zx8Cv7Bn6Mq5Wl4Ek3Rj".into(), String::new()),
        ("google_api_key", "AIzaSyD4f7Gh2Jk9Lm3Np6Qr8St1Uv5Wx0Yz2Ab".into(), String::new()),
        (
            "jwt",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MjQyNDIiLCJyb2xlIjoiYWRtaW4ifQ.Vq3Xk9Lm2Np7Rt5Ws8Yz1Bc4Df6Gh0Jk".into(),
            String::new(),
        ),
        (
            "bearer_token",
            "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0".into(),
            "9f8e7d6c5b4a39281706f5e4d3c2b1a0".into(),
        ),
        (
            "url_password",
            "postgres://app:Tr0ub4dorZx3Qw@db.internal:5432/app".into(),
            "Tr0ub4dorZx3Qw".into(),
        ),
        (
            "password",
            "DB_PASSWORD=Zq8vN2mW4xR7tK1p".into(),
            "Zq8vN2mW4xR7tK1p".into(),
        ),
        (
            "password",
            "client_secret: Hs7Kd2Lq9Vx4Mb1Nz".into(),
            "Hs7Kd2Lq9Vx4Mb1Nz".into(),
        ),
        (
            "private_key",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Fake9Key2Material4Xyz\nQkL3mN8pR2sT6vW9yZ1bC4dF7gH0jK\n-----END RSA PRIVATE KEY-----".into(),
            "MIIEowIBAAKCAQEAq7Fake9Key2Material4Xyz".into(),
        ),
    ];
    kinds
        .into_iter()
        .map(|(kind, line, secret)| {
            let secret = if secret.is_empty() {
                line.clone()
            } else {
                secret
            };
            (kind, line, secret)
        })
        .collect()
}

/// A Claude Code session with one turn per credential: the prompt, the tool call's arguments,
/// the tool's output and the answer all carry it.
fn write_session(dir: &std::path::Path, id: &str) {
    let project = dir.join("projects").join("-home-dev-vault");
    std::fs::create_dir_all(&project).unwrap();
    let mut file = std::fs::File::create(project.join(format!("{id}.jsonl"))).unwrap();
    for (t, (kind, line, _)) in credentials().iter().enumerate() {
        let ts = |k: usize| format!("2026-06-01T10:{:02}:{:02}.000Z", t, k * 10);
        let records = [
            json!({"type": "user", "sessionId": id, "timestamp": ts(0), "cwd": "/home/dev/vault",
                "message": {"role": "user", "content": format!("canaryword {kind}: why does this fail? {line}")}}),
            json!({"type": "assistant", "sessionId": id, "timestamp": ts(1),
                "message": {"model": "m", "stop_reason": "tool_use", "content": [
                    {"type": "tool_use", "id": format!("c{t}"), "name": "Bash",
                     "input": {"command": format!("canaryword check --with '{line}'")}}]}}),
            json!({"type": "user", "sessionId": id, "timestamp": ts(2),
                "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": format!("c{t}"),
                     "content": format!("canaryword config dump:\n{line}\nend")}]}}),
            json!({"type": "assistant", "sessionId": id, "timestamp": ts(3),
                "message": {"model": "m", "stop_reason": "end_turn", "content": [
                    {"type": "text", "text": format!("canaryword: the {kind} {line} is rejected")}]}}),
        ];
        for record in records {
            writeln!(file, "{record}").unwrap();
        }
    }
}

fn assert_clean(what: &str, text: &str) {
    for (kind, _, secret) in credentials() {
        let at = text.find(&secret);
        assert!(
            at.is_none(),
            "a {kind} credential survived in {what}: …{}…",
            text[at.unwrap_or(0).saturating_sub(120)..]
                .chars()
                .take(200)
                .collect::<String>()
        );
    }
}

#[tokio::test]
async fn credentials_are_absent_from_answers_and_stored_tables() {
    let dir = std::env::temp_dir().join(format!("moraine-secrets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (local, laptop) = (dir.join("local"), dir.join("laptop"));
    write_session(&local, "5ec2e75a-0000-4000-8000-00000000c0de");
    write_session(&laptop, "5ec2e75a-0000-4000-8000-00000001a970");
    let (mut config, db) = fresh_db().await;
    // The local log's bytes are archived too.
    config.ingest.archive_local = true;
    let mut pusher = TokenConfig::reader("laptop", LAPTOP);
    pusher.scopes = vec![Scope::Ingest];
    pusher.source = Some("laptop".into());
    config.auth.tokens = vec![TokenConfig::reader("reader", READER), pusher];
    let summary = ingest_paths(&config, &db, &local).await;
    assert!(
        summary.counters.redactions >= credentials().len() as u64,
        "{summary}"
    );
    let server = TestServer::start(config, db.clone()).await;
    let push = |laptop: std::path::PathBuf| {
        let base = server.base.clone();
        async move {
            let pushed = tokio::task::spawn_blocking(move || {
                std::process::Command::new(BIN)
                    .args([
                        "push",
                        "--server",
                        &base,
                        "--token",
                        LAPTOP,
                        "--no-progress",
                    ])
                    .arg(&laptop)
                    .env("HOME", &laptop)
                    .output()
                    .unwrap()
            })
            .await
            .unwrap();
            assert!(
                pushed.status.success(),
                "{}",
                String::from_utf8_lossy(&pushed.stderr)
            );
        }
    };
    push(laptop.clone()).await;
    // Pushed again, and again after it grew by a line ending in a credential: the client's
    // fingerprints of its file, masked as the archive is, match the server's, so the log is
    // continued, never sent again as replaced (a new archive generation).
    push(laptop.clone()).await;
    let log = std::fs::read_dir(laptop.join("projects").join("-home-dev-vault"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut more = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    writeln!(
        more,
        "{}",
        json!({"type": "user", "sessionId": "5ec2e75a-0000-4000-8000-00000001a970", "timestamp": "2026-06-01T11:00:00.000Z",
            "message": {"role": "user", "content": format!("canaryword again {}", credentials()[0].1)}})
    )
    .unwrap();
    drop(more);
    push(laptop.clone()).await;
    let generations: u32 = db
        .read("t", "SELECT max(generation) FROM raw_chunks")
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(generations, 0, "a pushed log was sent again as replaced");
    let mut client = Mcp::legacy(&server.mcp_url, Some(READER)).await;

    // Every event of the session, found by search: results and snippets.
    let all_kinds = json!([
        "user_input",
        "assistant_response",
        "reasoning",
        "tool_call",
        "tool_response",
        "compaction",
        "system",
        "runtime"
    ]);
    let found = client
        .ok(
            "search_sessions",
            json!({"query": "canaryword", "n_hits": 50, "event_types": all_kinds}),
        )
        .await;
    let hits = found["data"]["results"].as_array().unwrap().clone();
    assert_eq!(hits.len(), 50, "{} hits", hits.len());
    assert_clean("search results", &found.to_string());
    for kind in credentials().iter().map(|c| c.0) {
        let found = client
            .ok(
                "search_sessions",
                json!({"query": format!("canaryword {kind}"), "event_types": all_kinds}),
            )
            .await;
        assert_clean("search results", &found.to_string());
    }

    // `open` of the session, of each turn and of each event, with their raw records.
    let mut opened: Vec<String> = Vec::new();
    for hit in &hits {
        opened.push(hit["open"]["session_id"].as_str().unwrap().to_owned());
        for key in ["turn_id", "event_id"] {
            opened.push(hit["open"][key].as_str().unwrap().to_owned());
        }
    }
    opened.sort();
    opened.dedup();
    for id in &opened {
        let answer: Value = client.ok("open", json!({"id": id})).await;
        assert_clean(&format!("open({id})"), &answer.to_string());
    }

    // Every string column of every table.
    let columns: Vec<(String, String)> = db
        .read(
            "t",
            "SELECT table, name FROM system.columns WHERE database = currentDatabase() \
             AND type LIKE '%String%' AND table NOT LIKE '.inner%'",
        )
        .fetch_all(&db, db.default_deadline())
        .await
        .unwrap();
    assert!(columns.len() > 10, "{columns:?}");
    let archived: u64 = db
        .read("t", "SELECT count() FROM raw_chunks")
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert!(archived >= 2, "both logs are archived: {archived} chunks");
    // Masked in place, not left out: the archive keeps every byte's offset.
    let masked: u64 = db
        .read(
            "t",
            "SELECT count() FROM raw_chunks WHERE position(data, '********************') > 0",
        )
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert!(
        masked >= 2,
        "{masked} archived chunks hold masked credentials"
    );
    let secrets: Vec<String> = credentials().into_iter().map(|c| c.2).collect();
    for (table, column) in &columns {
        let engine: String = db
            .read("t", "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = {t:String}")
            .param("t", table)
            .fetch_optional(&db, db.default_deadline())
            .await
            .unwrap()
            .unwrap_or_default();
        if engine == "Null" || engine == "MaterializedView" {
            continue;
        }
        let leaks: u64 = db
            .read(
                "t",
                "SELECT count() FROM {t:Identifier} WHERE multiSearchAny(toString({c:Identifier}), {s:Array(String)})",
            )
            .param("t", table)
            .param("c", column)
            .param("s", &secrets)
            .fetch_optional(&db, db.default_deadline())
            .await
            .unwrap()
            .unwrap_or(0);
        assert_eq!(leaks, 0, "a credential is stored in {table}.{column}");
    }
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
