//! What a harness adapter makes of one log record: draft events, before turns are assigned.

use serde_json::Value;

use crate::vocab::EventType;

/// How an event ends its turn (the spec's terminal events).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Ending {
    /// A final assistant response or a task-complete marker.
    Completed,
    /// Cancellation or user interrupt.
    Interrupted,
    /// Crash, API error or runtime exit.
    Failed,
}

/// One event as the adapter saw it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Draft {
    pub event_type: EventType,
    /// Milliseconds since the epoch, when the record had a timestamp.
    pub ts: Option<i64>,
    /// The full text: what `open` shows and what is indexed.
    pub text: String,
    /// Tool-call arguments as JSON text.
    pub arguments: String,
    pub tool_name: String,
    pub tool_call_id: String,
    pub exit_code: Option<i32>,
    pub is_error: bool,
    /// The model that produced this event (assistant output and reasoning).
    pub model: String,
    /// The source record, narrowed to this event's part of it, as JSON.
    pub raw: String,
    /// A real user input: starts a turn.
    pub starts_turn: bool,
    /// A harness marker that announces the next turn (Codex `turn_context`, `task_started`): after
    /// a finished turn it opens the next one, which the user input that follows then joins.
    pub opens_turn: bool,
    pub ending: Option<Ending>,
    /// Work of a sub-agent inside the parent's file: never starts or ends a parent turn.
    pub sidechain: bool,
    /// An assistant message that is progress commentary rather than a final answer.
    pub commentary: bool,
    /// A call to, or result of, one of this service's own tools.
    pub self_tool: bool,
    /// A web search call.
    pub web_search: bool,
    /// Harness bookkeeping (snapshots, hook progress, mode changes, command output): kept and
    /// searchable, but it does not change how a turn ended.
    pub bookkeeping: bool,
    /// An answer from a log that records no stop reasons: if nothing but bookkeeping follows it
    /// in its turn, it ended the turn.
    pub may_end_turn: bool,
    /// A tool call whose result was logged before it: the call names that result.
    pub names_earlier_result: bool,
}

impl Draft {
    pub fn new(event_type: EventType, ts: Option<i64>, text: String, raw: String) -> Self {
        Self {
            event_type,
            ts,
            text,
            arguments: String::new(),
            tool_name: String::new(),
            tool_call_id: String::new(),
            exit_code: None,
            is_error: false,
            model: String::new(),
            raw,
            starts_turn: false,
            opens_turn: false,
            ending: None,
            sidechain: false,
            commentary: false,
            self_tool: false,
            web_search: false,
            bookkeeping: false,
            may_end_turn: false,
            names_earlier_result: false,
        }
    }

    /// Harness bookkeeping: a `system` event that does not change how a turn ended.
    pub fn bookkeeping(ts: Option<i64>, text: String, raw: String) -> Self {
        let mut draft = Self::new(EventType::System, ts, text, raw);
        draft.bookkeeping = true;
        draft
    }

    /// Marks the work of a sub-agent logged in its parent's file: it never starts or ends one of
    /// the parent's turns.
    pub fn mark_sidechain(&mut self) {
        self.sidechain = true;
        self.starts_turn = false;
        self.ending = None;
    }
}

/// Recognises this service's own MCP tools under the server names agents register it as.
pub struct SelfTools {
    names: Vec<String>,
}

impl SelfTools {
    const TOOLS: [&'static str; 3] = ["search_sessions", "list_sessions", "open"];

    pub fn new(server_names: &[String]) -> Self {
        let mut names = Vec::new();
        for server in server_names {
            // Claude Code and Codex spell MCP tools mcp__<server>__<tool>, Gemini CLI and Qwen
            // Code <server>__<tool> (when two servers share a tool name), Droid
            // <server>___<tool>, OpenCode <server>_<tool>, Cursor mcp_<server>_<tool>, Copilot
            // CLI <server>-<tool>; others <server>.<tool> or <server>/<tool>. Hyphens in the
            // server's name may become underscores.
            for server in [server.clone(), server.replace('-', "_")] {
                for tool in Self::TOOLS {
                    for sep in ["__", "___", "_", "-", ".", "/"] {
                        for prefix in ["", "mcp__", "mcp_"] {
                            names.push(format!("{prefix}{server}{sep}{tool}"));
                        }
                    }
                }
            }
        }
        names.sort();
        names.dedup();
        Self { names }
    }

    pub fn matches(&self, tool_name: &str) -> bool {
        self.names
            .binary_search_by(|n| n.as_str().cmp(tool_name))
            .is_ok()
    }
}

/// Tool names that are web searches.
pub fn is_web_search(tool_name: &str) -> bool {
    let lower = tool_name.to_ascii_lowercase();
    lower == "web_search"
        || lower == "websearch"
        || lower == "web_search_call"
        || lower.ends_with("__web_search")
}

/// Parses an RFC 3339 timestamp into milliseconds since the epoch.
pub fn parse_ts(value: Option<&Value>) -> Option<i64> {
    crate::text::rfc3339_ms(value?.as_str()?)
}

/// Renders a tool call the way the spec's example does: `name(key="value", other=[...])`.
pub fn render_call(name: &str, arguments: &Value) -> String {
    match arguments {
        Value::Object(map) if !map.is_empty() => {
            let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{name}({})", parts.join(", "))
        }
        Value::Object(_) | Value::Null => format!("{name}()"),
        Value::String(s) => format!("{name}({s})"),
        other => format!("{name}({other})"),
    }
}

/// Finds an exit status in command output: `Exit code: 1`, `Exit code 1`, `exited with code 1`.
pub fn exit_code_in_text(text: &str) -> Option<i32> {
    static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = PATTERN.get_or_init(|| {
        regex::Regex::new(r"(?im)^(?:error:\s*)?(?:exit code:?|process exited with code|exited with code)\s*(-?\d+)")
            .expect("valid regex")
    });
    let head = &text[..crate::text::floor_char_boundary(text, 4096)];
    re.captures(head)?.get(1)?.as_str().parse().ok()
}

/// Joins the `text` fields of content blocks (`[{type, text}, …]`) or returns a plain string.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            texts.join("\n")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn test_render_call_matches_the_spec_example() {
        let args =
            json!({"cmd": "cargo test --workspace --locked", "workdir": "/home/dev/src/moraine"});
        assert_eq!(
            render_call("exec_command", &args),
            r#"exec_command(cmd="cargo test --workspace --locked", workdir="/home/dev/src/moraine")"#
        );
    }

    #[test]
    fn test_exit_codes() {
        assert_eq!(
            exit_code_in_text("Exit code: 101\nWall time: 3s\nOutput:\n"),
            Some(101)
        );
        assert_eq!(exit_code_in_text("Error: Exit code 1\nfailed"), Some(1));
        assert_eq!(exit_code_in_text("all good"), None);
    }

    #[test]
    fn test_self_tools() {
        let s = SelfTools::new(&["moraine".into(), "moraine-mcp".into()]);
        assert!(s.matches("mcp__moraine__search_sessions"));
        assert!(s.matches("moraine__open"));
        assert!(s.matches("mcp__moraine_mcp__list_sessions"));
        // Droid, OpenCode, Cursor and Copilot CLI spellings.
        assert!(s.matches("moraine___search_sessions"));
        assert!(s.matches("moraine_search_sessions"));
        assert!(s.matches("mcp_moraine_list_sessions"));
        assert!(s.matches("moraine-mcp-open"));
        assert!(!s.matches("open"));
        assert!(!s.matches("moraine_search"));
        assert!(!s.matches("mcp__github__search_issues"));
    }

    #[test]
    fn test_timestamps() {
        assert_eq!(
            parse_ts(Some(&json!("2026-04-29T18:42:31.125Z"))),
            Some(1_777_488_151_125)
        );
        assert_eq!(parse_ts(Some(&json!("nope"))), None);
    }
}
