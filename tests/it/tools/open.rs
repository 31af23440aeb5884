//! open: the input permutation matrix for sessions, turns and events.

use super::*;

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
