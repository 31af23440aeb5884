//! list_sessions: the input permutation matrix, overlap semantics, paging and cursors.

use super::*;

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

#[tokio::test]
async fn the_readme_examples_answer_on_the_demo_sessions() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let example = |tool: &str| -> Value {
        let line = readme
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{tool} ")))
            .unwrap_or_else(|| panic!("no {tool} example in the README"));
        serde_json::from_str(line).unwrap()
    };
    let (config, db) = common::fresh_db().await;
    let demo_dir = std::path::PathBuf::from(&config.embedded.data_dir).join("demo");
    let logs = common::demo_logs(&demo_dir, None);
    let settings = config.clone().validate().unwrap();
    moraine_mcp::ingest::run(&settings, &db, logs, false)
        .await
        .unwrap();
    let server = TestServer::start(config, db).await;
    let mut c = Mcp::legacy(&server.mcp_url, None).await;
    let listed = c.ok("list_sessions", example("list_sessions")).await;
    assert!(
        !listed["data"]["sessions"].as_array().unwrap().is_empty(),
        "the README's list_sessions example lists nothing on the demo: {listed}"
    );
    let found = c.ok("search_sessions", example("search_sessions")).await;
    assert!(!hits(&found).is_empty(), "{found}");
    server.stop().await;
}
