//! Workflows: discovery from returned IDs only, completion flags, both protocol styles.

use super::*;

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
