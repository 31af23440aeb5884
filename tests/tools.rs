//! The three tools against the v1 spec, on the fixtures in the real engine, over real HTTP with
//! an MCP client: every row of the input permutation matrices, every required traversal path,
//! the end-to-end discovery workflow, completion flags, published schemas, hostile input, and
//! the query log. Every response is validated against the published output schema by the client.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::{Mcp, TestServer, shared_fixture_server};
use moraine_mcp::ids;
use moraine_mcp::ingest::files::{Harness, session_key};
use serde_json::{Value, json};

const DEFAULT_TYPES: [&str; 3] = ["user_input", "assistant_response", "tool_response"];

async fn client() -> Mcp {
    Mcp::legacy(&shared_fixture_server().mcp_url, None).await
}

async fn modern() -> Mcp {
    Mcp::modern(&shared_fixture_server().mcp_url, None).await
}

fn claude_session(native: &str) -> String {
    ids::session_id(session_key(Harness::ClaudeCode, native))
}

fn codex_session(native: &str) -> String {
    ids::session_id(session_key(Harness::Codex, native))
}

/// claude:interrupt — complete, interrupted (twice) and unfinished turns.
fn claude_interrupt() -> String {
    claude_session("3bb35e09-7345-45db-b8a5-b0bec6d352d2")
}

/// codex:basic — three completed turns.
fn codex_basic() -> String {
    codex_session("23435693-bfda-4cfd-8fa1-17c536123c31")
}

/// codex:interrupt — complete, interrupted and unfinished turns.
fn codex_interrupt() -> String {
    codex_session("1e75913d-f698-4b80-b2a2-dcd2d5861587")
}

fn hits(envelope: &Value) -> &Vec<Value> {
    envelope["data"]["results"].as_array().unwrap()
}

fn strs(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

// ---------- search_sessions: the permutation matrix ----------

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

async fn second_turn_of(c: &mut Mcp, session: &str) -> String {
    let opened = c.ok("open", json!({"id": session})).await;
    opened["data"]["turns"][1]["id"]
        .as_str()
        .unwrap()
        .to_owned()
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

// ---------- search behaviour ----------

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
    if let Some(hit) = hits(&big).first() {
        assert_eq!(hit["snippet"]["truncated"], true);
        assert!(hit["snippet"]["text"].as_str().unwrap().len() < 1000);
    }
}

#[tokio::test]
async fn a_single_term_ranks_exactly_as_when_summed_with_a_term_that_matches_nothing() {
    // One-term queries skip the per-document aggregation; a second term with no postings takes
    // the summing path and must give the same hits, order and scores.
    let mut c = client().await;
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

// ---------- list_sessions: the permutation matrix ----------

const WINDOW: (&str, &str) = ("2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z");

async fn all_sessions(c: &mut Mcp) -> Vec<Value> {
    let e = c
        .ok(
            "list_sessions",
            json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 50}),
        )
        .await;
    e["data"]["sessions"].as_array().unwrap().clone()
}

#[tokio::test]
async fn list_range_uses_defaults_and_overlap_semantics() {
    let mut c = client().await;
    let e = c
        .ok(
            "list_sessions",
            json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1}),
        )
        .await;
    assert_eq!(e["schema_version"], "moraine.mcp.list_sessions.v1");
    assert_eq!(
        e["request"],
        json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 20, "cursor": null, "mode": null, "sort": "desc"})
    );
    let sessions = all_sessions(&mut c).await;
    assert_eq!(sessions.len(), 12);
    for item in &sessions {
        let s = &item["session"];
        assert_eq!(item["id"], s["id"]);
        assert_eq!(item["open"]["session_id"], s["id"]);
        for key in [
            "title",
            "source",
            "harness",
            "started_at",
            "updated_at",
            "completed",
            "turn_count",
            "event_count",
            "mode",
        ] {
            assert!(!s[key].is_null(), "{key}");
        }
        // Metadata only: nothing from the events.
        assert!(s.get("snippet").is_none() && s.get("text").is_none());
    }
    // Boundaries: start is inclusive on updated_at, end exclusive on started_at.
    let target = &sessions[5]["session"];
    let (started, updated) = (
        target["started_at"].as_str().unwrap(),
        target["updated_at"].as_str().unwrap(),
    );
    let id = target["id"].clone();
    let listed = |e: &Value| {
        e["data"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == id)
    };
    let e = c
        .ok(
            "list_sessions",
            json!({"start_datetime": updated, "end_datetime": "2030-01-01T00:00:00Z", "limit": 50}),
        )
        .await;
    assert!(listed(&e), "updated_at == start is inside");
    let e = c
        .ok(
            "list_sessions",
            json!({"start_datetime": "2020-01-01T00:00:00Z", "end_datetime": started, "limit": 50}),
        )
        .await;
    assert!(!listed(&e), "started_at == end is outside");
    // Offsets are honoured: the same instant written with an offset.
    let e = c.ok("list_sessions", json!({"start_datetime": "2026-02-28T19:00:00-05:00", "end_datetime": WINDOW.1, "limit": 50})).await;
    assert_eq!(e["data"]["sessions"].as_array().unwrap().len(), 12);
}

#[tokio::test]
async fn list_range_and_limit() {
    let mut c = client().await;
    for limit in [1, 5, 50] {
        let e = c
            .ok(
                "list_sessions",
                json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": limit}),
            )
            .await;
        let count = e["data"]["sessions"].as_array().unwrap().len();
        assert_eq!(count, (limit as usize).min(12));
        assert_eq!(e["data"]["truncated"], limit < 12);
        assert_eq!(e["data"]["next_cursor"].is_string(), limit < 12);
    }
}

#[tokio::test]
async fn list_range_and_cursor_pages_deterministically() {
    let mut c = client().await;
    let everything: Vec<Value> = all_sessions(&mut c)
        .await
        .iter()
        .map(|s| s["id"].clone())
        .collect();
    for sort in ["desc", "asc"] {
        let mut seen = Vec::new();
        let mut cursor = Value::Null;
        let mut pages = 0;
        loop {
            let e = c
                .ok("list_sessions", json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 5, "cursor": cursor, "sort": sort}))
                .await;
            for item in e["data"]["sessions"].as_array().unwrap() {
                assert_eq!(
                    item["rank"].as_u64().unwrap() as usize,
                    seen.len() + 1,
                    "ranks continue across pages"
                );
                seen.push(item["id"].clone());
            }
            pages += 1;
            cursor = e["data"]["next_cursor"].clone();
            if cursor.is_null() {
                break;
            }
        }
        assert_eq!(pages, 3);
        let mut expected = everything.clone();
        if sort == "asc" {
            expected.reverse();
        }
        assert_eq!(seen, expected, "{sort}");
    }
    // The same cursor twice gives the same page.
    let first = c
        .ok(
            "list_sessions",
            json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 4}),
        )
        .await;
    let cursor = first["data"]["next_cursor"].clone();
    let a = c.ok("list_sessions", json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 4, "cursor": cursor})).await;
    let b = c.ok("list_sessions", json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 4, "cursor": cursor})).await;
    assert_eq!(a["data"], b["data"]);
}

#[tokio::test]
async fn list_range_and_mode() {
    let mut c = client().await;
    let sessions = all_sessions(&mut c).await;
    let modes: HashSet<String> = sessions
        .iter()
        .map(|s| s["session"]["mode"].as_str().unwrap().to_owned())
        .collect();
    assert!(modes.len() >= 2, "{modes:?}");
    for mode in ["web_search", "mcp_internal", "tool_calling", "chat"] {
        let e = c.ok("list_sessions", json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "mode": mode, "limit": 50})).await;
        let listed = e["data"]["sessions"].as_array().unwrap();
        assert_eq!(
            listed.len(),
            sessions
                .iter()
                .filter(|s| s["session"]["mode"] == mode)
                .count(),
            "{mode}"
        );
        assert!(listed.iter().all(|s| s["session"]["mode"] == mode));
    }
}

#[tokio::test]
async fn list_range_and_sort_asc() {
    let mut c = client().await;
    let e = c.ok("list_sessions", json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "sort": "asc", "limit": 50})).await;
    let keys: Vec<(String, String)> = e["data"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["session"]["updated_at"].as_str().unwrap().to_owned(),
                s["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let e = c
        .ok(
            "list_sessions",
            json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 50}),
        )
        .await;
    let desc: Vec<(String, String)> = e["data"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["session"]["updated_at"].as_str().unwrap().to_owned(),
                s["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    sorted.reverse();
    assert_eq!(desc, sorted);
}

#[tokio::test]
async fn list_missing_datetime_is_invalid_request() {
    let mut c = client().await;
    for args in [
        json!({"start_datetime": WINDOW.0}),
        json!({"end_datetime": WINDOW.1}),
        json!({}),
    ] {
        let (code, _) = c.err("list_sessions", args).await;
        assert_eq!(code, "invalid_request");
    }
}

#[tokio::test]
async fn list_datetime_without_timezone_is_invalid_request() {
    let mut c = client().await;
    for bad in [
        "2026-03-01T00:00:00",
        "2026-03-01",
        "March 1st",
        "2026-13-01T00:00:00Z",
    ] {
        let (code, e) = c
            .err(
                "list_sessions",
                json!({"start_datetime": bad, "end_datetime": WINDOW.1}),
            )
            .await;
        assert_eq!(code, "invalid_request", "{bad}");
        assert_eq!(e["error"]["details"]["field"], "start_datetime");
    }
}

#[tokio::test]
async fn list_end_not_after_start_is_invalid_request() {
    let mut c = client().await;
    for (start, end) in [
        (WINDOW.1, WINDOW.0),
        (WINDOW.0, WINDOW.0),
        ("2026-03-01T05:00:00+05:00", WINDOW.0),
    ] {
        let (code, e) = c
            .err(
                "list_sessions",
                json!({"start_datetime": start, "end_datetime": end}),
            )
            .await;
        assert_eq!(code, "invalid_request");
        assert_eq!(e["error"]["details"]["field"], "end_datetime");
    }
}

#[tokio::test]
async fn list_unknown_field_is_invalid_request() {
    let mut c = client().await;
    let (code, e) = c
        .err(
            "list_sessions",
            json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "page": 2}),
        )
        .await;
    assert_eq!(code, "invalid_request");
    assert_eq!(e["error"]["details"]["field"], "page");
    let (code, _) = c
        .err("search_sessions", json!({"query": "x", "limit": 2}))
        .await;
    assert_eq!(code, "invalid_request");
    let (code, _) = c
        .err("open", json!({"id": codex_basic(), "verbose": true}))
        .await;
    assert_eq!(code, "invalid_request");
}

#[tokio::test]
async fn list_invalid_mode_or_sort_is_invalid_request() {
    let mut c = client().await;
    for (field, value) in [
        ("mode", "fast"),
        ("mode", "WEB_SEARCH"),
        ("sort", "newest"),
        ("sort", "DESC"),
    ] {
        let (code, e) = c
            .err(
                "list_sessions",
                json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, field: value}),
            )
            .await;
        assert_eq!(code, "invalid_request");
        assert_eq!(e["error"]["details"]["field"], field);
    }
}

#[tokio::test]
async fn list_cursor_with_changed_filter_or_sort_or_tampering_is_invalid_request() {
    let mut c = client().await;
    let first = c
        .ok(
            "list_sessions",
            json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 3}),
        )
        .await;
    let cursor = first["data"]["next_cursor"].as_str().unwrap().to_owned();
    for changed in [
        json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 3, "cursor": cursor, "sort": "asc"}),
        json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 3, "cursor": cursor, "mode": "chat"}),
        json!({"start_datetime": "2026-03-02T00:00:00Z", "end_datetime": WINDOW.1, "limit": 3, "cursor": cursor}),
        json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 3, "cursor": cursor, "harness": "codex"}),
    ] {
        let (code, e) = c.err("list_sessions", changed).await;
        assert_eq!(code, "invalid_request");
        assert_eq!(e["error"]["details"]["field"], "cursor");
    }
    // A different limit is fine: it is not a filter.
    c.ok(
        "list_sessions",
        json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 7, "cursor": cursor}),
    )
    .await;
    let mut tampered = cursor.clone().into_bytes();
    tampered[5] = if tampered[5] == b'A' { b'B' } else { b'A' };
    for bad in [
        String::from_utf8(tampered).unwrap(),
        "garbage".into(),
        format!("{cursor}x"),
    ] {
        let (code, _) = c
            .err(
                "list_sessions",
                json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "cursor": bad}),
            )
            .await;
        assert_eq!(code, "invalid_request");
    }
}

// ---------- open: the permutation matrix ----------

#[tokio::test]
async fn open_a_session_gives_metadata_and_every_turn() {
    let mut c = client().await;
    let id = claude_interrupt();
    let e = c.ok("open", json!({"id": id})).await;
    assert_eq!(e["schema_version"], "moraine.mcp.open.v1");
    assert_eq!(e["request"], json!({"id": id}));
    let data = &e["data"];
    assert_eq!(data["kind"], "session");
    assert_eq!(data["session"]["id"], id);
    assert_eq!(data["session"]["turn_count"], 4);
    let turns = data["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 4);
    for (i, turn) in turns.iter().enumerate() {
        assert_eq!(turn["ordinal"], i + 1);
        assert_eq!(turn["open"]["turn_id"], turn["id"]);
        let tools = strs(&turn["tools_called"]);
        assert_eq!(
            tools.iter().collect::<HashSet<_>>().len(),
            tools.len(),
            "unique"
        );
        let types = strs(&turn["event_types"]);
        assert_eq!(
            types.iter().collect::<HashSet<_>>().len(),
            types.len(),
            "unique"
        );
        assert!(
            turn.get("events").is_none(),
            "no payloads in a session view"
        );
    }
    assert_eq!(
        turns[0]["user_input"]["text"]
            .as_str()
            .unwrap()
            .chars()
            .next(),
        Some('L')
    );
    assert_eq!(e["performance"]["sla_target_ms"], 500);
}

#[tokio::test]
async fn open_a_turn_gives_its_events_and_traversal() {
    let mut c = client().await;
    let turn_id = second_turn_of(&mut c, &codex_basic()).await;
    let e = c.ok("open", json!({"id": turn_id})).await;
    let data = &e["data"];
    assert_eq!(data["kind"], "turn");
    assert_eq!(data["turn"]["id"], turn_id);
    assert_eq!(data["turn"]["session_id"], codex_basic());
    assert_eq!(data["turn"]["ordinal"], 2);
    let events = data["events"].as_array().unwrap();
    assert_eq!(
        events.len() as u64,
        data["turn"]["event_count"].as_u64().unwrap()
    );
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["ordinal"], i + 1);
        assert!(event.get("content").is_none(), "summaries only");
        assert!(event["summary"].as_str().unwrap().chars().count() <= 201);
    }
    assert_eq!(data["traversal"]["first_event_id"], events[0]["id"]);
    assert_eq!(
        data["traversal"]["last_event_id"],
        events.last().unwrap()["id"]
    );
    let terminal: Vec<&Value> = events.iter().filter(|e| e["terminal"] == true).collect();
    assert_eq!(terminal.len(), 1);
    assert_eq!(terminal[0]["id"], data["turn"]["terminal_event_id"]);
    let tool_calls: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_call").collect();
    assert!(tool_calls.iter().all(|e| e["tool_name"].is_string()));
    assert_eq!(e["performance"]["sla_target_ms"], 300);
}

#[tokio::test]
async fn open_an_event_gives_full_content_and_traversal() {
    let mut c = client().await;
    let e = c.ok("search_sessions", json!({"query": "cargo test tidepool health", "event_types": ["tool_call", "tool_response"], "within_id": codex_basic()})).await;
    let mut seen_call = false;
    let mut seen_response = false;
    for hit in hits(&e) {
        let opened = c.ok("open", json!({"id": hit["id"]})).await;
        let data = &opened["data"];
        assert_eq!(data["kind"], "event");
        assert_eq!(data["event"]["id"], hit["id"]);
        assert_eq!(data["content"]["truncated"], false);
        match data["event"]["type"].as_str().unwrap() {
            "tool_call" => {
                seen_call = true;
                assert_eq!(data["content"]["format"], "tool_call");
                assert!(data["content"]["tool_name"].is_string());
                assert!(data["content"]["arguments"].is_object(), "{data:#}");
            }
            "tool_response" => {
                seen_response = true;
                assert_eq!(data["content"]["format"], "tool_response");
                assert!(data["content"]["tool_name"].is_string());
                assert!(data["content"].get("exit_code").is_some());
            }
            _ => {}
        }
    }
    assert!(seen_call && seen_response);
    // The large output comes back whole.
    let big = c.ok("search_sessions", json!({"query": "test", "event_types": ["tool_response"], "within_id": codex_session("33e88032-33f5-4f07-a6c6-c2d8de63befd"), "n_hits": 50})).await;
    let mut longest = 0;
    for hit in hits(&big) {
        let opened = c.ok("open", json!({"id": hit["id"]})).await;
        longest = longest.max(opened["data"]["content"]["text"].as_str().unwrap().len());
    }
    assert!(longest > 64 * 1024, "{longest}");
}

#[tokio::test]
async fn open_missing_or_blank_id_is_invalid_request() {
    let mut c = client().await;
    for args in [
        json!({}),
        json!({"id": ""}),
        json!({"id": "   "}),
        json!({"id": null}),
        json!({"id": 5}),
    ] {
        let (code, _) = c.err("open", args.clone()).await;
        assert_eq!(code, "invalid_request", "{args}");
    }
}

#[tokio::test]
async fn open_malformed_id_is_invalid_id() {
    let mut c = client().await;
    for bad in [
        "not-a-valid-id",
        "session",
        "ses_123",
        "event:",
        "event:evt 1",
        "trace:abc",
    ] {
        let (code, e) = c.err("open", json!({"id": bad})).await;
        assert_eq!(code, "invalid_id", "{bad}");
        assert_eq!(e["error"]["message"], "id is not a valid Moraine MCP ID");
    }
}

#[tokio::test]
async fn open_well_formed_unknown_id_is_not_found() {
    let mut c = client().await;
    let real_event = c.ok("open", json!({"id": codex_basic()})).await["data"]["turns"][1]["user_input"]["event_id"]
        .as_str()
        .unwrap()
        .to_owned();
    for unknown in [
        "event:evt_01J9DOESNOTEXIST000000000000".to_owned(),
        "session:ses_0000000000001".to_owned(),
        "turn:turn_ZZZ".to_owned(),
        // A real event's token under the turn prefix names no turn (that event does not start one).
        real_event.replace("event:evt_", "turn:turn_"),
    ] {
        let (code, e) = c.err("open", json!({"id": unknown})).await;
        assert_eq!(code, "not_found", "{unknown}");
        assert_eq!(e["error"]["details"]["id"], unknown);
    }
}

// ---------- traversal contract ----------

async fn a_hit(c: &mut Mcp) -> Value {
    let e = c
        .ok(
            "search_sessions",
            json!({"query": "healthz 503 json", "within_id": codex_basic()}),
        )
        .await;
    hits(&e)[0].clone()
}

#[tokio::test]
async fn traversal_search_hit_to_event() {
    let mut c = client().await;
    let hit = a_hit(&mut c).await;
    let e = c.ok("open", json!({"id": hit["open"]["event_id"]})).await;
    assert_eq!(e["data"]["event"]["id"], hit["id"]);
}

#[tokio::test]
async fn traversal_search_hit_to_turn() {
    let mut c = client().await;
    let hit = a_hit(&mut c).await;
    let e = c.ok("open", json!({"id": hit["open"]["turn_id"]})).await;
    assert!(
        e["data"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|ev| ev["id"] == hit["id"])
    );
    assert_eq!(e["data"]["turn"]["ordinal"], hit["turn"]["ordinal"]);
}

#[tokio::test]
async fn traversal_search_hit_to_session() {
    let mut c = client().await;
    let hit = a_hit(&mut c).await;
    let e = c.ok("open", json!({"id": hit["open"]["session_id"]})).await;
    assert!(
        e["data"]["turns"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == hit["turn"]["id"])
    );
}

#[tokio::test]
async fn traversal_listed_session_to_session() {
    let mut c = client().await;
    for item in all_sessions(&mut c).await {
        let e = c
            .ok("open", json!({"id": item["open"]["session_id"]}))
            .await;
        assert_eq!(e["data"]["session"]["id"], item["id"]);
        assert_eq!(
            e["data"]["session"]["turn_count"],
            item["session"]["turn_count"]
        );
        assert_eq!(
            e["data"]["turns"].as_array().unwrap().len() as u64,
            item["session"]["turn_count"].as_u64().unwrap()
        );
    }
}

#[tokio::test]
async fn traversal_event_to_parent_turn_and_session() {
    let mut c = client().await;
    let hit = a_hit(&mut c).await;
    let event = c.ok("open", json!({"id": hit["id"]})).await;
    let turn = c
        .ok("open", json!({"id": event["data"]["traversal"]["turn_id"]}))
        .await;
    assert!(
        turn["data"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["id"] == hit["id"])
    );
    let session = c
        .ok(
            "open",
            json!({"id": event["data"]["traversal"]["session_id"]}),
        )
        .await;
    assert_eq!(session["data"]["session"]["id"], hit["session"]["id"]);
    assert_eq!(
        event["data"]["event"]["turn_id"],
        event["data"]["traversal"]["turn_id"]
    );
}

#[tokio::test]
async fn traversal_event_to_adjacent_events() {
    let mut c = client().await;
    let turn_id = second_turn_of(&mut c, &codex_basic()).await;
    let turn = c.ok("open", json!({"id": turn_id})).await;
    let ids: Vec<Value> = turn["data"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    // Walk forwards with next_event_id and backwards with previous_event_id.
    let mut walked = vec![ids[0].clone()];
    loop {
        let e = c.ok("open", json!({"id": walked.last().unwrap()})).await;
        let next = e["data"]["traversal"]["next_event_id"].clone();
        if next.is_null() {
            break;
        }
        walked.push(next);
    }
    assert_eq!(walked, ids);
    let first = c.ok("open", json!({"id": ids[0]})).await;
    assert!(first["data"]["traversal"]["previous_event_id"].is_null());
    let second = c.ok("open", json!({"id": ids[1]})).await;
    assert_eq!(second["data"]["traversal"]["previous_event_id"], ids[0]);
}

#[tokio::test]
async fn traversal_event_to_adjacent_turns() {
    let mut c = client().await;
    let turns: Vec<Value> = c.ok("open", json!({"id": codex_basic()})).await["data"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    let middle = c.ok("open", json!({"id": turns[1]})).await;
    let event = middle["data"]["events"][2]["id"].clone();
    let e = c.ok("open", json!({"id": event})).await;
    assert_eq!(e["data"]["traversal"]["previous_turn_id"], turns[0]);
    assert_eq!(e["data"]["traversal"]["next_turn_id"], turns[2]);
    let first_event =
        c.ok("open", json!({"id": turns[0]})).await["data"]["events"][0]["id"].clone();
    let e = c.ok("open", json!({"id": first_event})).await;
    assert!(e["data"]["traversal"]["previous_turn_id"].is_null());
}

#[tokio::test]
async fn traversal_turn_to_parent_session_and_adjacent_turns() {
    let mut c = client().await;
    let turns: Vec<Value> = c.ok("open", json!({"id": codex_basic()})).await["data"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(turns.len(), 3);
    for (i, turn) in turns.iter().enumerate() {
        let e = c.ok("open", json!({"id": turn})).await;
        let traversal = &e["data"]["traversal"];
        assert_eq!(traversal["session_id"], codex_basic());
        assert_eq!(
            traversal["previous_turn_id"],
            if i == 0 {
                Value::Null
            } else {
                turns[i - 1].clone()
            }
        );
        assert_eq!(
            traversal["next_turn_id"],
            turns.get(i + 1).cloned().unwrap_or(Value::Null)
        );
    }
}

#[tokio::test]
async fn traversal_turn_to_first_and_last_event() {
    let mut c = client().await;
    let turn =
        c.ok("open", json!({"id": claude_interrupt()})).await["data"]["turns"][0]["id"].clone();
    let e = c.ok("open", json!({"id": turn})).await;
    let events = e["data"]["events"].as_array().unwrap();
    let first = c
        .ok(
            "open",
            json!({"id": e["data"]["traversal"]["first_event_id"]}),
        )
        .await;
    assert_eq!(first["data"]["event"]["ordinal"], 1);
    let last = c
        .ok(
            "open",
            json!({"id": e["data"]["traversal"]["last_event_id"]}),
        )
        .await;
    assert_eq!(
        last["data"]["event"]["ordinal"].as_u64().unwrap() as usize,
        events.len()
    );
    assert!(last["data"]["traversal"]["next_event_id"].is_null());
}

#[tokio::test]
async fn traversal_session_to_contained_turns_and_neighbouring_sessions() {
    let mut c = client().await;
    let e = c.ok("open", json!({"id": codex_basic()})).await;
    for turn in e["data"]["turns"].as_array().unwrap() {
        let opened = c.ok("open", json!({"id": turn["id"]})).await;
        assert_eq!(opened["data"]["turn"]["session_id"], codex_basic());
    }
    // Previous and next sessions in time chain through every session exactly once.
    let mut sessions: Vec<Value> = all_sessions(&mut c).await;
    sessions.sort_by(|a, b| {
        (a["session"]["started_at"].as_str(), a["id"].as_str())
            .cmp(&(b["session"]["started_at"].as_str(), b["id"].as_str()))
    });
    let mut at = sessions[0]["id"].clone();
    let first = c.ok("open", json!({"id": at})).await;
    assert!(first["data"]["traversal"]["previous_session_id"].is_null());
    let mut chain = vec![at.clone()];
    loop {
        let e = c.ok("open", json!({"id": at})).await;
        let next = e["data"]["traversal"]["next_session_id"].clone();
        if next.is_null() {
            break;
        }
        let back = c.ok("open", json!({"id": next})).await;
        assert_eq!(back["data"]["traversal"]["previous_session_id"], at);
        chain.push(next.clone());
        at = next;
    }
    assert_eq!(
        chain,
        sessions.iter().map(|s| s["id"].clone()).collect::<Vec<_>>()
    );
}

// ---------- workflows, completion, both protocol styles ----------

#[tokio::test]
async fn end_to_end_discovery_with_only_returned_ids() {
    for style_modern in [false, true] {
        let mut c = if style_modern {
            modern().await
        } else {
            client().await
        };
        // 1. A vague natural-language query.
        let found = c
            .ok(
                "search_sessions",
                json!({"query": "why did the health endpoint break when the database was down"}),
            )
            .await;
        let hit = hits(&found)[0].clone();
        // 2. The event.
        let event = c.ok("open", json!({"id": hit["open"]["event_id"]})).await;
        assert_eq!(event["data"]["kind"], "event");
        // 3. Its turn.
        let turn = c
            .ok("open", json!({"id": event["data"]["traversal"]["turn_id"]}))
            .await;
        assert_eq!(turn["data"]["kind"], "turn");
        // 4. Its session.
        let session = c
            .ok(
                "open",
                json!({"id": turn["data"]["traversal"]["session_id"]}),
            )
            .await;
        assert_eq!(session["data"]["kind"], "session");
        // 5. Adjacent events and turns, by the IDs open returned.
        for key in [
            "previous_event_id",
            "next_event_id",
            "previous_turn_id",
            "next_turn_id",
        ] {
            let id = &event["data"]["traversal"][key];
            if !id.is_null() {
                c.ok("open", json!({"id": id})).await;
            }
        }
        for turn in session["data"]["turns"].as_array().unwrap() {
            c.ok("open", json!({"id": turn["open"]["turn_id"]})).await;
            if let Some(terminal) = turn["open"]["terminal_event_id"].as_str() {
                c.ok("open", json!({"id": terminal})).await;
            }
        }
        // Time-window discovery: list, then open a listed session.
        let listed = c
            .ok(
                "list_sessions",
                json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 2}),
            )
            .await;
        let first = &listed["data"]["sessions"][0];
        let opened = c
            .ok("open", json!({"id": first["open"]["session_id"]}))
            .await;
        assert_eq!(opened["data"]["session"]["id"], first["id"]);
    }
}

#[tokio::test]
async fn completion_and_terminal_flags_for_complete_interrupted_and_unfinished_turns() {
    let mut c = client().await;
    for session in [codex_interrupt(), claude_interrupt()] {
        let e = c.ok("open", json!({"id": session})).await;
        assert_eq!(
            e["data"]["session"]["completed"], false,
            "latest turn is unfinished"
        );
        let turns = e["data"]["turns"].as_array().unwrap();
        // Turn 1 completed with a final response.
        assert_eq!(turns[0]["completed"], true);
        assert!(turns[0]["final_response"].is_object());
        assert!(turns[0]["terminal_event_id"].is_string());
        // Turn 2 interrupted: completed (an interrupt is terminal), no final response.
        assert_eq!(turns[1]["completed"], true);
        assert!(turns[1]["final_response"].is_null());
        let terminal = c
            .ok("open", json!({"id": turns[1]["terminal_event_id"]}))
            .await;
        assert_eq!(terminal["data"]["event"]["terminal"], true);
        assert_eq!(terminal["data"]["event"]["type"], "runtime");
        // The last turn has no terminal event and invents no final response.
        let last = turns.last().unwrap();
        assert_eq!(last["completed"], false);
        assert!(last["terminal_event_id"].is_null());
        assert!(last["final_response"].is_null());
        let opened = c.ok("open", json!({"id": last["id"]})).await;
        assert!(
            opened["data"]["events"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e["terminal"] == false)
        );
        assert_eq!(opened["data"]["turn"]["completed"], false);
    }
    // A completed session in each harness.
    for session in [
        codex_basic(),
        claude_session("5c2b148a-4a39-402e-984c-ed27a60cf6e9"),
    ] {
        let e = c.ok("open", json!({"id": session})).await;
        assert_eq!(e["data"]["session"]["completed"], true);
        assert!(
            e["data"]["turns"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["completed"] == true)
        );
    }
}

// ---------- hostile input ----------

#[tokio::test]
async fn quotes_backslashes_and_sql_in_every_string_field_change_nothing_but_the_result() {
    let mut c = client().await;
    let hostile = [
        "'; DROP TABLE events; --",
        "\\' OR 1=1 --",
        "\" OR \"\"=\"",
        "{s:UInt64}",
        "') UNION SELECT * FROM system.tables --",
        "\\\\\\",
        "\u{0000}nul",
    ];
    let before = c
        .ok(
            "list_sessions",
            json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 50}),
        )
        .await;
    for text in hostile {
        c.ok("search_sessions", json!({"query": text})).await;
        c.ok(
            "search_sessions",
            json!({"query": format!("migration {text}"), "harness": text, "source": text}),
        )
        .await;
        let (code, _) = c
            .err("search_sessions", json!({"query": "x", "within_id": text}))
            .await;
        assert!(code == "invalid_id" || code == "not_found", "{code}");
        let (code, _) = c.err("open", json!({"id": text})).await;
        assert!(code == "invalid_id" || code == "invalid_request", "{code}");
        let (code, _) = c
            .err(
                "list_sessions",
                json!({"start_datetime": text, "end_datetime": WINDOW.1}),
            )
            .await;
        assert_eq!(code, "invalid_request");
        let (code, _) = c
            .err(
                "list_sessions",
                json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "cursor": text}),
            )
            .await;
        assert_eq!(code, "invalid_request");
        let e = c.ok("list_sessions", json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "harness": text, "source": text})).await;
        assert_eq!(e["data"]["result_count"], 0);
        let (code, _) = c
            .err(
                "list_sessions",
                json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "mode": text}),
            )
            .await;
        assert_eq!(code, "invalid_request");
    }
    let after = c
        .ok(
            "list_sessions",
            json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 50}),
        )
        .await;
    assert_eq!(before["data"], after["data"], "the data is untouched");
    // A well-formed ID carrying SQL-looking text is merely unknown.
    let (code, _) = c.err("open", json!({"id": "session:ses_1--DROP"})).await;
    assert_eq!(code, "not_found");
}

// ---------- published schemas ----------

#[tokio::test]
async fn published_schemas_match_their_snapshots() {
    let mut c = client().await;
    let list = c.request("tools/list", None, json!({})).await;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("snapshots")
        .join("tools_list.json");
    // Only JSON Schema's own formats: strict validators warn about Rust-type names like `uint32`.
    fn formats(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(f)) = map.get("format") {
                    found.push(f.clone());
                }
                map.values().for_each(|v| formats(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| formats(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    formats(&list["result"]["tools"], &mut found);
    assert!(
        found.iter().all(|f| f == "date-time"),
        "non-standard formats: {found:?}"
    );
    let actual = serde_json::to_string_pretty(&list["result"]["tools"]).unwrap() + "\n";
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &actual).unwrap();
    }
    let expected =
        std::fs::read_to_string(&path).expect("snapshot exists; regenerate with UPDATE_SCHEMA=1");
    assert_eq!(
        actual, expected,
        "published tool schemas changed; review and regenerate with UPDATE_SCHEMA=1"
    );
}

// ---------- query and hit logs ----------

#[tokio::test]
async fn each_search_is_logged_with_its_hits() {
    let mut c = client().await;
    let marker = format!("healthz logged{}", uuid::Uuid::new_v4().simple());
    let e = c
        .ok(
            "search_sessions",
            json!({"query": format!("healthz {marker}"), "n_hits": 4}),
        )
        .await;
    let expected_hits = hits(&e).len() as u64;
    let db = common::shared_db();
    let give_up = Instant::now() + Duration::from_secs(15);
    loop {
        let rows: Vec<(String, u8, u64)> = db
            .read(
                "t",
                "SELECT q.query_id, any(q.result_count), count(h.rank) FROM search_query_log AS q \
                 LEFT JOIN search_hit_log AS h ON h.query_id = q.query_id WHERE q.query LIKE {m:String} GROUP BY q.query_id",
            )
            .param("m", format!("%{marker}%"))
            .fetch_all(&db, Instant::now() + Duration::from_secs(5))
            .await
            .unwrap();
        if let Some((_, result_count, hit_rows)) = rows.first() {
            assert!(expected_hits > 0);
            assert_eq!(*result_count as u64, expected_hits);
            assert_eq!(*hit_rows, expected_hits);
            break;
        }
        assert!(Instant::now() < give_up, "the search was not logged");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn a_failing_query_log_never_fails_a_search() {
    let (config, db) = common::fresh_db().await;
    common::ingest_paths(&config, &db, &common::fixtures()).await;
    db.write("t", "DROP TABLE search_hit_log")
        .execute(&db, db.default_deadline())
        .await
        .unwrap();
    let server = TestServer::start(config, db).await;
    let mut c = Mcp::legacy(&server.mcp_url, None).await;
    for _ in 0..3 {
        let e = c.ok("search_sessions", json!({"query": "healthz"})).await;
        assert!(!hits(&e).is_empty());
    }
    let give_up = Instant::now() + Duration::from_secs(15);
    loop {
        let metrics = common::send("GET", &format!("{}/metrics", server.base), &[], "").await;
        if metrics
            .body
            .contains("moraine_mcp_query_log_failures_total{reason=\"insert_failed\"}")
        {
            break;
        }
        assert!(Instant::now() < give_up, "the failure was not counted");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    server.stop().await;
}
