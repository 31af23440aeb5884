//! The three tools against the v1 spec, on the fixtures in the real engine, over real HTTP with
//! an MCP client, one module per concern: each tool's input permutation matrix and behaviour,
//! every required traversal path, the end-to-end workflows and completion flags, hostile input,
//! and the query log. Every response is validated against the published output schema by the
//! client. (The published schemas' snapshot is a unit test of `tools`.)

use crate::common;

mod hostile;
mod list;
mod open;
mod project;
mod querylog;
mod search;
mod traversal;
mod workflows;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::{Mcp, TestServer, shared_fixture_server};
use moraine_mcp::ids;
use moraine_mcp::ingest::files::session_key;
use moraine_mcp::vocab::Harness;
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

async fn second_turn_of(c: &mut Mcp, session: &str) -> String {
    let opened = c.ok("open", json!({"id": session})).await;
    opened["data"]["turns"][1]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}
