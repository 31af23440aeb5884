//! search_sessions: the input permutation matrix, ranking, snippets, filters and own traffic.

use super::*;

#[tokio::test]
async fn search_query_only_uses_defaults() {
    let mut c = client().await;
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "  ClickHouse migration  "}),
        )
        .await;
    assert_eq!(e["schema_version"], "moraine.mcp.search_sessions.v1");
    assert_eq!(e["tool"], "search_sessions");
    assert_eq!(
        e["request"],
        json!({"query": "ClickHouse migration", "within_id": null, "event_types": DEFAULT_TYPES, "n_hits": 10})
    );
    assert_eq!(e["data"]["limit"], 10);
    assert!(!hits(&e).is_empty());
    assert_eq!(e["data"]["result_count"], hits(&e).len());
    for hit in hits(&e) {
        assert!(
            DEFAULT_TYPES.contains(&hit["event"]["type"].as_str().unwrap()),
            "{hit}"
        );
    }
    assert!(e["warnings"].is_array());
    assert_eq!(e["performance"]["sla_target_ms"], 750);
}

#[tokio::test]
async fn search_query_and_n_hits_is_honoured_exactly() {
    let mut c = client().await;
    for n in [1, 3, 7, 50] {
        let e = c
            .ok("search_sessions", json!({"query": "the", "n_hits": n}))
            .await;
        assert_eq!(e["data"]["limit"], n);
        let count = hits(&e).len();
        assert!(count <= n as usize);
        if e["data"]["truncated"] == true {
            assert_eq!(count, n as usize, "truncated results must fill n_hits");
        }
    }
    let small = c
        .ok("search_sessions", json!({"query": "the", "n_hits": 3}))
        .await;
    assert_eq!(hits(&small).len(), 3);
    assert_eq!(small["data"]["truncated"], true);
    let ranks: Vec<u64> = hits(&small)
        .iter()
        .map(|h| h["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(ranks, [1, 2, 3]);
}

#[tokio::test]
async fn search_query_and_event_types_searches_only_those_types() {
    let mut c = client().await;
    let e = c
        .ok("search_sessions", json!({"query": "health handler", "event_types": ["reasoning", "tool_call", "reasoning"]}))
        .await;
    // Deduplicated, in canonical order.
    assert_eq!(
        e["request"]["event_types"],
        json!(["reasoning", "tool_call"])
    );
    assert!(!hits(&e).is_empty());
    for hit in hits(&e) {
        assert!(
            ["reasoning", "tool_call"].contains(&hit["event"]["type"].as_str().unwrap()),
            "{hit}"
        );
    }
}

#[tokio::test]
async fn search_within_a_session_stays_in_it() {
    let mut c = client().await;
    let session = codex_basic();
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "healthz 503", "within_id": session}),
        )
        .await;
    assert_eq!(e["request"]["within_id"], session);
    assert!(!hits(&e).is_empty());
    for hit in hits(&e) {
        assert_eq!(hit["session"]["id"], session);
        assert!(DEFAULT_TYPES.contains(&hit["event"]["type"].as_str().unwrap()));
    }
    assert_eq!(e["performance"]["sla_target_ms"], 500);
    // A session with no matching events: success, empty.
    let none = c
        .ok(
            "search_sessions",
            json!({"query": "zebra xylophone", "within_id": session}),
        )
        .await;
    assert!(hits(&none).is_empty());
    assert_eq!(none["data"]["truncated"], false);
}

#[tokio::test]
async fn search_within_a_turn_stays_in_it() {
    let mut c = client().await;
    let turn = second_turn_of(&mut c, &codex_basic()).await;
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "cargo test tidepool", "within_id": turn}),
        )
        .await;
    assert!(!hits(&e).is_empty());
    for hit in hits(&e) {
        assert_eq!(hit["turn"]["id"], turn);
        assert_eq!(hit["open"]["turn_id"], turn);
    }
    assert_eq!(e["performance"]["sla_target_ms"], 300);
}

#[tokio::test]
async fn search_within_a_session_and_event_types() {
    let mut c = client().await;
    let session = codex_basic();
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "cargo test", "within_id": session, "event_types": ["tool_call"]}),
        )
        .await;
    assert!(!hits(&e).is_empty());
    for hit in hits(&e) {
        assert_eq!(hit["session"]["id"], session);
        assert_eq!(hit["event"]["type"], "tool_call");
    }
}

#[tokio::test]
async fn search_within_a_turn_and_event_types() {
    let mut c = client().await;
    let turn = second_turn_of(&mut c, &codex_basic()).await;
    let e = c
        .ok("search_sessions", json!({"query": "cargo test tidepool", "within_id": turn, "event_types": ["tool_response"]}))
        .await;
    assert!(!hits(&e).is_empty());
    for hit in hits(&e) {
        assert_eq!(hit["turn"]["id"], turn);
        assert_eq!(hit["event"]["type"], "tool_response");
    }
}

#[tokio::test]
async fn search_within_an_event_is_invalid_request() {
    let mut c = client().await;
    let some = c.ok("search_sessions", json!({"query": "healthz"})).await;
    let event = hits(&some)[0]["id"].clone();
    for within in [event, json!("event:evt_01J9DOESNOTEXIST000000000000")] {
        let (code, e) = c
            .err(
                "search_sessions",
                json!({"query": "x", "within_id": within}),
            )
            .await;
        assert_eq!(code, "invalid_request");
        assert_eq!(
            e["error"]["message"],
            "within_id accepts session and turn IDs, not event IDs"
        );
        assert_eq!(e["error"]["details"]["field"], "within_id");
    }
}

#[tokio::test]
async fn search_blank_query_is_invalid_request() {
    let mut c = client().await;
    for query in ["", "   ", "\n\t"] {
        let (code, e) = c.err("search_sessions", json!({"query": query})).await;
        assert_eq!(code, "invalid_request");
        assert_eq!(e["error"]["message"], "query must be a non-empty string");
        assert_eq!(e["error"]["details"]["field"], "query");
        assert_eq!(e["request"], json!({"query": query}));
    }
    let (code, _) = c.err("search_sessions", json!({})).await;
    assert_eq!(code, "invalid_request");
    let (code, _) = c
        .err("search_sessions", json!({"query": "x".repeat(4097)}))
        .await;
    assert_eq!(code, "invalid_request");
}

#[tokio::test]
async fn search_unknown_within_id_is_not_found() {
    let mut c = client().await;
    for within in [
        "session:ses_0000000000001",
        "turn:turn_0000000000000000000000000A",
        "session:ses_unknownthing",
    ] {
        let (code, _) = c
            .err(
                "search_sessions",
                json!({"query": "x", "within_id": within}),
            )
            .await;
        assert_eq!(code, "not_found", "{within}");
    }
    // A real session's turn past its last ordinal, and a session that was never ingested,
    // searched with terms the corpus does contain.
    let session = session_key(Harness::ClaudeCode, "3bb35e09-7345-45db-b8a5-b0bec6d352d2");
    for within in [ids::turn_id(session, 999), ids::session_id(session ^ 1)] {
        let (code, _) = c
            .err(
                "search_sessions",
                json!({"query": "cargo test", "within_id": within}),
            )
            .await;
        assert_eq!(code, "not_found", "{within}");
    }
}

#[tokio::test]
async fn search_malformed_within_id_is_invalid_id() {
    let mut c = client().await;
    for within in ["nope", "session:", "thread:abc", "session:has space"] {
        let (code, e) = c
            .err(
                "search_sessions",
                json!({"query": "x", "within_id": within}),
            )
            .await;
        assert_eq!(code, "invalid_id", "{within}");
        assert_eq!(e["error"]["details"]["field"], "within_id");
    }
}

#[tokio::test]
async fn search_empty_event_types_is_invalid_request() {
    let mut c = client().await;
    let (code, e) = c
        .err("search_sessions", json!({"query": "x", "event_types": []}))
        .await;
    assert_eq!(code, "invalid_request");
    assert_eq!(e["error"]["details"]["field"], "event_types");
}

#[tokio::test]
async fn search_unsupported_event_type_is_reported_with_the_supported_list() {
    let mut c = client().await;
    for bad in ["debug_trace", "unknown", "USER_INPUT"] {
        let (code, e) = c
            .err(
                "search_sessions",
                json!({"query": "migration", "event_types": ["user_input", bad]}),
            )
            .await;
        assert_eq!(code, "unsupported_event_type");
        assert_eq!(
            e["error"]["message"],
            format!("unsupported event type: {bad}")
        );
        assert_eq!(
            e["error"]["details"]["supported"].as_array().unwrap().len(),
            8
        );
    }
}

#[tokio::test]
async fn search_n_hits_out_of_range_or_not_an_integer_is_invalid_request() {
    let mut c = client().await;
    for n in [
        json!(0),
        json!(-1),
        json!(51),
        json!(1000),
        json!(2.5),
        json!("10"),
        json!(true),
    ] {
        let (code, e) = c
            .err("search_sessions", json!({"query": "x", "n_hits": n}))
            .await;
        assert_eq!(code, "invalid_request", "{n}");
        assert_eq!(e["error"]["details"]["field"], "n_hits");
    }
    // null means the default; 10.0 is an integer in JSON Schema.
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "x", "n_hits": null, "within_id": null, "event_types": null}),
        )
        .await;
    assert_eq!(e["request"]["n_hits"], 10);
    let e = c
        .ok("search_sessions", json!({"query": "x", "n_hits": 4.0}))
        .await;
    assert_eq!(e["request"]["n_hits"], 4);
}

#[tokio::test]
async fn search_ranking_scores_and_snippets_follow_the_spec() {
    let mut c = client().await;
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "cargo test failed", "n_hits": 20}),
        )
        .await;
    let results = hits(&e);
    assert!(results.len() > 3);
    assert_eq!(results[0]["score"], 1.0);
    let mut previous: Option<(f64, String, String)> = None;
    for hit in results {
        let score = hit["score"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&score));
        assert_eq!(hit["id"], hit["event"]["id"]);
        assert_eq!(hit["open"]["event_id"], hit["id"]);
        assert_eq!(hit["open"]["turn_id"], hit["turn"]["id"]);
        assert_eq!(hit["open"]["session_id"], hit["session"]["id"]);
        let snippet = hit["snippet"]["text"].as_str().unwrap();
        assert!(
            !snippet.is_empty() && snippet.chars().count() <= 240,
            "{snippet}"
        );
        let key = (
            score,
            hit["event"]["timestamp"].as_str().unwrap().to_owned(),
            hit["id"].as_str().unwrap().to_owned(),
        );
        if let Some(prev) = previous {
            // score desc, then timestamp desc, then ID asc.
            assert!(
                prev.0 > key.0
                    || (prev.0 == key.0 && (prev.1 > key.1 || (prev.1 == key.1 && prev.2 < key.2))),
                "{prev:?} before {key:?}"
            );
        }
        previous = Some(key);
    }
    // The >64 KiB tool output is found, but its snippet is short.
    let big = c
        .ok(
            "search_sessions",
            json!({"query": "rust_v1.example.ci", "event_types": ["tool_response"]}),
        )
        .await;
    let hit = hits(&big)
        .iter()
        .find(|h| h["snippet"]["truncated"] == true)
        .expect("the >64 KiB tool output is among the hits");
    assert!(hit["snippet"]["text"].as_str().unwrap().len() < 1000);
}

#[tokio::test]
async fn a_single_term_ranks_exactly_as_when_summed_with_a_term_that_matches_nothing() {
    // One-term queries skip the per-document aggregation; a second term with no postings takes
    // the summing path and must give the same hits, order and scores. Ranked by words alone:
    // to the model of meaning, the second term makes another question.
    let mut settings = shared_fixture_server().config.clone();
    settings.semantic.weight = 0.0;
    let server = TestServer::start(settings, common::shared_db()).await;
    let mut c = Mcp::legacy(&server.mcp_url, None).await;
    let ranked = |e: &Value| -> Vec<(String, f64, bool)> {
        hits(e)
            .iter()
            .map(|h| {
                (
                    h["id"].as_str().unwrap().to_owned(),
                    h["score"].as_f64().unwrap(),
                    h["event"]["terminal"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    for (query, within) in [("test", None), ("failed", None), ("error", Some(1))] {
        let mut args = json!({"query": query, "n_hits": 50});
        if within.is_some() {
            let all = c.ok("search_sessions", json!({"query": query})).await;
            args["within_id"] = hits(&all)[0]["session"]["id"].clone();
        }
        let one = c.ok("search_sessions", args.clone()).await;
        args["query"] = json!(format!("{query} zqxjvwkpfh"));
        let two = c.ok("search_sessions", args).await;
        assert!(!hits(&one).is_empty(), "{query} finds something");
        assert_eq!(ranked(&one), ranked(&two), "{query}");
        assert_eq!(one["data"]["truncated"], two["data"]["truncated"]);
    }
    server.stop().await;
}

#[tokio::test]
async fn accented_and_cjk_text_is_findable() {
    let mut c = client().await;
    for (query, needle) in [
        ("café", "caf"),
        ("cafe", "caf"),
        ("Überprüfung", "berpr"),
        ("数据库迁移", "数据库"),
        ("データベース", "データ"),
    ] {
        let e = c
            .ok("search_sessions", json!({"query": query, "n_hits": 5}))
            .await;
        assert!(!hits(&e).is_empty(), "{query} finds nothing");
        assert!(
            hits(&e).iter().any(|h| h["snippet"]["text"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains(needle)),
            "{query}: {e:#}"
        );
    }
}

#[tokio::test]
async fn search_harness_and_source_filters_are_exact() {
    let mut c = client().await;
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "test", "harness": "codex", "n_hits": 50}),
        )
        .await;
    assert!(!hits(&e).is_empty());
    assert_eq!(e["request"]["harness"], "codex");
    assert!(hits(&e).iter().all(|h| h["session"]["harness"] == "codex"));
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "test", "harness": "claude-code", "source": "claude", "n_hits": 50}),
        )
        .await;
    assert!(!hits(&e).is_empty());
    assert!(hits(&e).iter().all(|h| h["session"]["harness"] == "claude-code" && h["session"]["source"] == "claude"));
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "test", "harness": "Codex"}),
        )
        .await;
    assert!(hits(&e).is_empty(), "exact, case-sensitive match");
}

#[tokio::test]
async fn search_keeps_to_the_sessions_of_a_time_window() {
    let mut c = client().await;
    let all = c
        .ok("search_sessions", json!({"query": "test", "n_hits": 50}))
        .await;
    let sessions: Vec<(String, String, String)> = hits(&all)
        .iter()
        .map(|h| {
            let s = &h["session"];
            let text = |k: &str| s[k].as_str().unwrap().to_owned();
            (text("id"), text("started_at"), text("updated_at"))
        })
        .collect();
    assert!(sessions.len() > 1);
    // Sessions updated at or after a time: the one updated then is in, none updated before.
    let (id, started, updated) = sessions[0].clone();
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "test", "n_hits": 50, "start_datetime": updated}),
        )
        .await;
    assert_eq!(e["request"]["start_datetime"], updated);
    assert!(hits(&e).iter().any(|h| h["session"]["id"] == id.as_str()));
    for hit in hits(&e) {
        assert!(
            hit["session"]["updated_at"].as_str().unwrap() >= updated.as_str(),
            "{hit}"
        );
    }
    // Sessions started before a time (exclusive): not the one that started then.
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "test", "n_hits": 50, "end_datetime": started}),
        )
        .await;
    assert!(hits(&e).iter().all(|h| h["session"]["id"] != id.as_str()));
    for hit in hits(&e) {
        assert!(
            hit["session"]["started_at"].as_str().unwrap() < started.as_str(),
            "{hit}"
        );
    }
    let later = c
        .ok(
            "search_sessions",
            json!({"query": "test", "start_datetime": "2100-01-01T00:00:00Z"}),
        )
        .await;
    assert!(hits(&later).is_empty());
    let (code, envelope) = c
        .err(
            "search_sessions",
            json!({"query": "test", "start_datetime": "2026-05-02T00:00:00Z", "end_datetime": "2026-05-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(code, "invalid_request");
    assert_eq!(envelope["error"]["details"]["field"], "end_datetime");
}

#[tokio::test]
async fn this_services_own_tool_traffic_is_not_searched_by_default() {
    let mut c = client().await;
    let all_types = [
        "user_input",
        "assistant_response",
        "reasoning",
        "tool_call",
        "tool_response",
        "compaction",
        "system",
        "runtime",
    ];
    let e = c.ok("search_sessions", json!({"query": "mcp moraine search_sessions schema_version", "event_types": all_types, "n_hits": 50})).await;
    for hit in hits(&e) {
        let opened = c.ok("open", json!({"id": hit["id"]})).await;
        let tool = opened["data"]["event"]["tool_name"].as_str().unwrap_or("");
        assert!(
            !tool.starts_with("mcp__moraine__"),
            "self traffic returned: {hit}"
        );
    }
    // With the switch on, the same traffic is found.
    // A second server over the same fixture data; the switch is read at query time.
    let mut config = shared_fixture_server().config.clone();
    config.tools.include_self_events = true;
    let server = TestServer::start(config, common::shared_db()).await;
    let mut c = Mcp::legacy(&server.mcp_url, None).await;
    let e = c.ok("search_sessions", json!({"query": "mcp moraine search_sessions", "event_types": ["tool_call"], "n_hits": 50})).await;
    let mut found = false;
    for hit in hits(&e) {
        let opened = c.ok("open", json!({"id": hit["id"]})).await;
        found |= opened["data"]["event"]["tool_name"]
            .as_str()
            .unwrap_or("")
            .starts_with("mcp__moraine__");
    }
    assert!(found);
    server.stop().await;
}

#[tokio::test]
async fn a_query_without_searchable_terms_answers_empty_with_a_warning() {
    let mut c = client().await;
    let e = c.ok("search_sessions", json!({"query": "! ? a"})).await;
    assert!(hits(&e).is_empty());
    assert_eq!(e["warnings"].as_array().unwrap().len(), 1);
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "zzqxv vvkwq", "n_hits": 5}),
        )
        .await;
    assert_eq!(e["data"]["result_count"], 0);
    assert_eq!(e["data"]["truncated"], false);
}

#[tokio::test]
async fn a_version_or_a_hyphenated_name_is_found_whole_before_its_parts() {
    let (config, db) = common::fresh_db().await;
    let dir = scratch("compounds");
    let session = |id: &str, prompt: &str| {
        json!({"type": "user", "sessionId": id, "uuid": format!("{id}-u"),
               "timestamp": "2026-05-01T00:00:00.000Z",
               "message": {"role": "user", "content": prompt}})
        .to_string()
            + "\n"
    };
    // Noise: the parts of the version, many times over, in other sessions.
    for (i, prompt) in [
        "12 tests failed in 1 run, 3 of them flaky; 12 again after 12 retries",
        "release 3 has 12 fixes and 1 regression",
        "the rfc says 9728 things",
    ]
    .iter()
    .enumerate()
    {
        std::fs::write(
            dir.join(format!("noise-{i}.jsonl")),
            session(&format!("noise-{i}"), prompt),
        )
        .unwrap();
    }
    std::fs::write(
        dir.join("wanted.jsonl"),
        session("wanted", "pin tokio to 1.12.3 as RFC-9728 asks"),
    )
    .unwrap();
    common::ingest_paths(&config, &db, &dir).await;
    let server = TestServer::start(config, db).await;
    let mut c = Mcp::legacy(&server.mcp_url, None).await;
    for query in ["1.12.3", "rfc-9728"] {
        let e = c.ok("search_sessions", json!({"query": query})).await;
        let first = &hits(&e)[0];
        assert_eq!(
            first["session"]["title"], "pin tokio to 1.12.3 as RFC-9728 asks",
            "{query}: {e}"
        );
    }
    // The parts alone still find it.
    let e = c.ok("search_sessions", json!({"query": "9728"})).await;
    assert!(hits(&e).iter().any(|h| {
        h["session"]["title"]
            .as_str()
            .unwrap()
            .starts_with("pin tokio")
    }));
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fresh store holding one Claude Code session per prompt (titled by it), behind a server.
async fn server_with_prompts(
    name: &str,
    prompts: &[&str],
) -> (TestServer, Mcp, std::path::PathBuf) {
    server_with_prompts_and(name, prompts, |_| {}).await
}

/// [`server_with_prompts`] with settings changed by `change`, for ingest and the server alike.
async fn server_with_prompts_and(
    name: &str,
    prompts: &[&str],
    change: impl FnOnce(&mut moraine_mcp::config::Settings),
) -> (TestServer, Mcp, std::path::PathBuf) {
    let (mut config, db) = common::fresh_db().await;
    change(&mut config);
    let dir = scratch(name);
    for (i, prompt) in prompts.iter().enumerate() {
        let id = format!("{name}-{i}");
        let line = json!({"type": "user", "sessionId": id, "uuid": format!("{id}-u"),
               "timestamp": "2026-05-01T00:00:00.000Z",
               "message": {"role": "user", "content": prompt}})
        .to_string()
            + "\n";
        std::fs::write(dir.join(format!("{id}.jsonl")), line).unwrap();
    }
    common::ingest_paths(&config, &db, &dir).await;
    let server = TestServer::start(config, db).await;
    let c = Mcp::legacy(&server.mcp_url, None).await;
    (server, c, dir)
}

fn titles(e: &Value) -> Vec<String> {
    hits(e)
        .iter()
        .map(|h| h["session"]["title"].as_str().unwrap().to_owned())
        .collect()
}

/// A fresh, empty directory for one test's logs.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("moraine-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A Claude Code log of session `id` in `dir`: one user prompt a minute.
fn write_prompts(dir: &std::path::Path, id: &str, prompts: &[impl AsRef<str>]) {
    let lines: String = prompts
        .iter()
        .enumerate()
        .map(|(i, prompt)| {
            json!({"type": "user", "sessionId": id, "uuid": format!("{id}-{i}"),
                   "timestamp": format!("2026-05-01T00:0{i}:00.000Z"),
                   "message": {"role": "user", "content": prompt.as_ref()}})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.join(format!("{id}.jsonl")), lines).unwrap();
}

/// A page in score order, its best hit scored 1.0.
fn assert_scores_fall(e: &Value) {
    let scores: Vec<f64> = hits(e)
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert_eq!(scores[0], 1.0, "{e}");
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
}

#[tokio::test]
async fn a_prefixed_version_is_found_by_the_bare_version_before_its_parts() {
    let listing = "ls out/: 1 12 3 12 12 1 3 logs";
    let build = "lefthook v1.12.3 installed the hooks";
    let (server, mut c, dir) = server_with_prompts("versions", &[listing, build]).await;
    let e = c.ok("search_sessions", json!({"query": "1.12.3"})).await;
    assert_eq!(titles(&e)[0], build, "{e}");
    assert!(
        titles(&e).contains(&listing.to_owned()),
        "the parts still match"
    );
    let e = c.ok("search_sessions", json!({"query": "v1.12.3"})).await;
    assert_eq!(titles(&e)[0], build, "{e}");
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_word_finds_its_inflections_and_ranks_its_own_form_first() {
    let base = "the login redirect on staging";
    let inflected = "login redirects and a redirected callback on staging";
    let released = "we released the hotfix build";
    let identifier = "the ReleaseHotfix step of the nightly hotfix pipeline";
    let (server, mut c, dir) =
        server_with_prompts("stems", &[base, inflected, released, identifier]).await;
    // Each form finds the other; the form asked for ranks first.
    let e = c.ok("search_sessions", json!({"query": "redirect"})).await;
    assert_eq!(titles(&e)[..2], [base, inflected], "{e}");
    let e = c.ok("search_sessions", json!({"query": "redirects"})).await;
    assert_eq!(titles(&e)[..2], [inflected, base], "{e}");
    // `releases` finds `released` through their stem.
    let e = c
        .ok("search_sessions", json!({"query": "releases hotfix"}))
        .await;
    assert_eq!(titles(&e)[0], released, "{e}");
    // The snippet shows the inflection it matched.
    assert!(
        hits(&e)[0]["snippet"]["text"]
            .as_str()
            .unwrap()
            .contains("released"),
        "{e}"
    );
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A question in other words than the session's reaches it through the thesaurus of coding
/// talk; the words as written still rank first, and an identifier is not read as words.
#[tokio::test]
async fn a_question_in_other_words_finds_the_session_through_the_thesaurus() {
    let slow = "the build is slow on the laptop";
    let sluggish = "sluggish build on the laptop";
    let login = "login fails with a cookie error";
    let hotfix = "release notes for the hotfix";
    let (server, mut c, dir) =
        server_with_prompts("thesaurus", &[slow, sluggish, login, hotfix]).await;
    let e = c.ok("search_sessions", json!({"query": "sluggish"})).await;
    assert_eq!(titles(&e), [sluggish, slow], "{e}");
    let e = c.ok("search_sessions", json!({"query": "sign in"})).await;
    assert_eq!(titles(&e), [login], "{e}");
    let e = c
        .ok("search_sessions", json!({"query": "sign_in_page"}))
        .await;
    assert!(titles(&e).is_empty(), "{e}");
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_session_close_in_meaning_rises_among_the_sessions_words_found() {
    // `server` is the only word of the question either prompt holds, and the shorter prompt
    // holds it with more weight; what the longer one says is what the question asks about.
    // The third prompt says it too, in none of the question's words; the fourth says nothing
    // like it.
    let crash = "the backend server crashed because it ran out of memory every afternoon";
    let readme = "add installation steps for the server to the README";
    let restarts = "the service went down under heavy load and kept restarting";
    let rename = "rename the variable in the parser module";
    let prompts = [crash, readme, restarts, rename];
    let question = json!({"query": "which server was falling over"});
    // The thesaurus is left out, so that only meaning links `falling over` to a crash.
    let words_only = |s: &mut moraine_mcp::config::Settings| s.bm25.related_weight = 0.0;

    let (server, mut c, dir) = server_with_prompts_and("meaning", &prompts, words_only).await;
    let e = c.ok("search_sessions", question.clone()).await;
    // Meaning reorders what words found and adds nothing: the sessions without `server`
    // stay out however close they are.
    assert_eq!(titles(&e), [crash, readme], "{e}");
    assert_eq!(e["data"]["result_count"], 2, "{e}");
    assert_eq!(hits(&e)[0]["score"], 1.0, "{e}");
    // Within a session, hits are ranked by words alone.
    let session = hits(&e)[1]["session"]["id"].as_str().unwrap().to_owned();
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "which server was falling over", "within_id": session}),
        )
        .await;
    assert_eq!(titles(&e), [readme], "{e}");
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();

    // Weighed at 0, or switched off, the order is the words' own. Switched off, no model is
    // fetched: the server starts with an empty model directory and leaves it empty.
    let (server, mut c, dir) = server_with_prompts_and("meaning-unweighed", &prompts, |s| {
        words_only(s);
        s.semantic.weight = 0.0;
    })
    .await;
    let e = c.ok("search_sessions", question.clone()).await;
    assert_eq!(titles(&e), [readme, crash], "{e}");
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
    let empty = std::env::temp_dir().join(format!("moraine-no-model-{}", std::process::id()));
    let (server, mut c, dir) = server_with_prompts_and("meaning-off", &prompts, |s| {
        words_only(s);
        s.semantic.enabled = false;
        s.semantic.model_dir = empty.to_string_lossy().into_owned();
    })
    .await;
    let e = c.ok("search_sessions", question).await;
    assert_eq!(titles(&e), [readme, crash], "{e}");
    assert!(!empty.exists(), "nothing was fetched");
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn events_a_search_leaves_out_do_not_weigh_in_its_statistics() {
    // `zephyr` is in one prompt and in a dozen tool calls; `quokka` in two prompts. Counted over
    // every event, `zephyr` looks the commoner word and the `quokka` prompts would rank first;
    // over what a default search covers (prompts, answers, tool output) it is the rarer one.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("typed-{}", uuid::Uuid::new_v4().simple()));
    let project = dir.join("projects").join("-home-dev-src-zoo");
    std::fs::create_dir_all(&project).unwrap();
    let id = "0000aaaa-0000-4000-8000-00000000beef";
    let mut lines = Vec::new();
    let mut second = 0;
    let mut line = |value: Value| {
        second += 1;
        let mut value = value;
        value["sessionId"] = json!(id);
        value["timestamp"] = json!(format!("2026-05-01T10:00:{second:02}.000Z"));
        lines.push(value.to_string());
    };
    for (t, word) in ["zephyr", "quokka", "quokka"].iter().enumerate() {
        line(json!({"type": "user", "cwd": "/home/dev/src/zoo",
            "message": {"role": "user", "content": format!("{word} note")}}));
        let calls: Vec<Value> = (0..4)
            .map(|i| {
                json!({"type": "tool_use", "id": format!("c{t}{i}"), "name": "Bash",
                "input": {"command": format!("echo zephyr {i}")}})
            })
            .collect();
        line(json!({"type": "assistant",
            "message": {"model": "m", "stop_reason": "tool_use", "content": calls}}));
        let results: Vec<Value> = (0..4)
            .map(|i| json!({"type": "tool_result", "tool_use_id": format!("c{t}{i}"), "content": "done"}))
            .collect();
        line(json!({"type": "user", "message": {"role": "user", "content": results}}));
        line(json!({"type": "assistant",
            "message": {"model": "m", "stop_reason": "end_turn", "content": [{"type": "text", "text": "noted"}]}}));
    }
    std::fs::write(project.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
    let (config, db) = common::fresh_db().await;
    common::ingest_paths(&config, &db, &dir).await;
    let server = TestServer::start(config, db).await;
    let mut c = Mcp::legacy(&server.mcp_url, None).await;
    let found = c
        .ok("search_sessions", json!({"query": "zephyr quokka"}))
        .await;
    let first = &hits(&found)[0];
    assert_eq!(first["event"]["type"], "user_input", "{found}");
    assert!(
        first["snippet"]["text"]
            .as_str()
            .unwrap()
            .contains("zephyr"),
        "the rarer word among the searched events ranks first: {found}"
    );
    // Searching the tool calls too, their statistics count: `zephyr` is common there.
    let all = c
        .ok(
            "search_sessions",
            json!({"query": "zephyr quokka", "event_types": ["user_input", "tool_call"]}),
        )
        .await;
    assert!(
        hits(&all)[0]["snippet"]["text"]
            .as_str()
            .unwrap()
            .contains("quokka"),
        "{all}"
    );
    server.stop().await;
    std::fs::remove_dir_all(dir).unwrap();
}

/// With `bm25.session_weight` above 0, a session whose events together hold the whole question
/// lifts its hits above a session where one event matches a part of it alone; at 0, the
/// default, events rank by their own scores only.
#[tokio::test]
async fn a_session_holding_the_whole_question_ranks_above_one_matching_part_of_it() {
    let (mut config, db) = common::fresh_db().await;
    let dir = scratch("whole");
    let write = |id: &str, prompts: &[&str]| write_prompts(&dir, id, prompts);
    write("part", &["quillon brastle showed up in logs"]);
    write(
        "whole",
        &[
            "quillon brastle on the staging cluster again",
            "fenwick stayed up all night",
            "marrow kept growing",
        ],
    );
    write("noise", &["nothing to see", "still nothing here"]);
    common::ingest_paths(&config, &db, &dir).await;
    let query = json!({"query": "quillon brastle fenwick marrow"});
    let first_title = |e: &Value| hits(e)[0]["session"]["title"].as_str().unwrap().to_owned();
    // The lift against the events' own scores, without meaning.
    config.semantic.weight = 0.0;

    let default = config.bm25.session_weight;
    config.bm25.session_weight = 0.4;
    let server = TestServer::start(config.clone(), db.clone()).await;
    let mut c = Mcp::legacy(&server.mcp_url, None).await;
    let e = c.ok("search_sessions", query.clone()).await;
    assert!(first_title(&e).starts_with("quillon brastle on"), "{e}");
    // Still a BM25 page: scores descending, the best 1.0.
    assert_scores_fall(&e);
    server.stop().await;

    assert_eq!(default, 0.0, "the lift is off by default");
    config.bm25.session_weight = default;
    let server = TestServer::start(config, db).await;
    let mut c = Mcp::legacy(&server.mcp_url, None).await;
    let e = c.ok("search_sessions", query).await;
    assert_eq!(first_title(&e), "quillon brastle showed up in logs", "{e}");
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A global page shows each session's best hit before any session's second
/// (`tools.hits_per_session`, 1 by default), fills what other sessions leave with the best
/// session's next hits, and stays in score order; within a session every hit is kept.
#[tokio::test]
async fn a_global_page_shows_each_sessions_best_hit_before_any_second() {
    let (mut config, db) = common::fresh_db().await;
    // Words alone, so that the order below is BM25's.
    config.semantic.weight = 0.0;
    let dir = scratch("spread");
    let write = |id: &str, prompts: &[String]| write_prompts(&dir, id, prompts);
    // One session of six short prompts about `zephyrine`, each scoring above the four other
    // sessions' one longer prompt each.
    let long: Vec<String> = (0..6).map(|i| format!("zephyrine step {i}")).collect();
    write("long", &long);
    for name in ["alder", "birch", "cedar", "dogwood"] {
        write(
            name,
            &[format!(
                "{name} notes on the zephyrine rollout with many other words around it"
            )],
        );
    }
    common::ingest_paths(&config, &db, &dir).await;

    assert_eq!(config.tools.hits_per_session, 1, "the default");
    let server = TestServer::start(config.clone(), db.clone()).await;
    let mut c = Mcp::legacy(&server.mcp_url, None).await;
    // Five hits: five sessions, the long one's best first.
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "zephyrine", "n_hits": 5}),
        )
        .await;
    let page = titles(&e);
    assert_eq!(page[0], long[0], "{e}");
    let distinct: std::collections::HashSet<&String> = page.iter().collect();
    assert_eq!(distinct.len(), 5, "{page:?}");
    assert_eq!(e["data"]["result_count"], 5);
    assert_eq!(e["data"]["truncated"], true, "more matched: {e}");
    assert_scores_fall(&e);
    // Eight hits: the five sessions, then the long session's next best fill the page, all
    // in score order (the long session's short prompts score higher).
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "zephyrine", "n_hits": 8}),
        )
        .await;
    let page = titles(&e);
    assert_eq!(
        page.iter().filter(|t| **t == long[0]).count(),
        4,
        "{page:?}"
    );
    assert!(page[..4].iter().all(|t| *t == long[0]), "{page:?}");
    assert_scores_fall(&e);
    // Within the long session, every hit.
    let session = hits(&e)[0]["session"]["id"].as_str().unwrap().to_owned();
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "zephyrine", "within_id": session, "n_hits": 10}),
        )
        .await;
    assert_eq!(e["data"]["result_count"], 6, "{e}");
    server.stop().await;

    // Three per session: the long session's three best, then the next sessions.
    config.tools.hits_per_session = 3;
    let server = TestServer::start(config, db).await;
    let mut c = Mcp::legacy(&server.mcp_url, None).await;
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "zephyrine", "n_hits": 5}),
        )
        .await;
    let page = titles(&e);
    assert!(page[..3].iter().all(|t| *t == long[0]), "{page:?}");
    assert!(page[3..].iter().all(|t| *t != long[0]), "{page:?}");
    assert_scores_fall(&e);
    server.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
