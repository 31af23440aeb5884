//! The traversal contract: every path between hits, events, turns and sessions.

use super::*;

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

#[tokio::test]
async fn traversal_session_to_its_sub_agents_and_back() {
    let mut c = client().await;
    let sessions = all_sessions(&mut c).await;
    let mut parents = 0;
    for item in &sessions {
        let e = c.ok("open", json!({"id": item["id"]})).await;
        let traversal = &e["data"]["traversal"];
        for child in traversal["subagent_session_ids"].as_array().unwrap() {
            parents += 1;
            let opened = c.ok("open", json!({"id": child})).await;
            assert_eq!(opened["data"]["traversal"]["parent_session_id"], item["id"]);
            assert_eq!(
                opened["data"]["session"]["source"],
                item["session"]["source"]
            );
            assert!(
                opened["data"]["traversal"]["subagent_session_ids"]
                    .as_array()
                    .unwrap()
                    .is_empty()
            );
        }
    }
    // The Claude Code fixture's sub-agent log (subagents/agent-a7f3e9b.jsonl) under its session.
    assert!(parents >= 1, "no session names a sub-agent");
    let orphans = sessions.len();
    assert!(orphans > parents);
}
