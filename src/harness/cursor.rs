//! Cursor's agent conversations: the SQLite store `<User>/globalStorage/state.vscdb` (one
//! `composerData:<id>` document per conversation, its messages as `bubbleId:<id>:<bubble>`
//! rows, rewritten in place) rendered one bubble per line; and the agent transcripts
//! `~/.cursor/projects/<project>/agent-transcripts/**/<id>.jsonl`, read as they are appended.
//!
//! A turn starts at a user bubble (a `role: user` line with the user's query). In the store it
//! ends at an answer that nothing but bookkeeping follows (a bubble still being generated is
//! rewritten, and the conversation rendered again); in a transcript at its `turn_ended` line.

use super::identity::{Identity, is_uuid, stem};
use super::{DefaultSource, LogFormat, ReadContext};
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::adapter::{AdapterOutput, ToolNames};
use super::draft::{Draft, Ending, SelfTools, parse_ts};
use super::rendered::{Rendering, invalid};
use super::store::{self, Store};
use crate::vocab::EventType;

const COMPOSER_PREFIX: &str = "composerData:";

/// The conversations of a store with the size of their documents.
pub(crate) fn sessions(path: &Path) -> io::Result<Vec<(String, u64)>> {
    Store::open(path)?.snapshot(|db| {
        if !store::has_table(db, "cursorDiskKV")? {
            return Ok(Vec::new());
        }
        // A key range, so the key index is used (`;` follows `:`). A conversation without
        // messages (a chat opened and never used: most of a store's documents) is no session.
        let mut query = db.prepare(
            "SELECT key, octet_length(value) FROM cursorDiskKV \
             WHERE key >= 'composerData:' AND key < 'composerData;' \
               AND json_valid(value) \
               AND coalesce(json_array_length(value, '$.fullConversationHeadersOnly'), 0) \
                 + coalesce(json_array_length(value, '$.conversation'), 0) > 0 \
             ORDER BY key",
        )?;
        let rows = query.query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, Option<i64>>(1)?))
        })?;
        let mut sessions = Vec::new();
        for row in rows {
            let (key, size) = row?;
            if let Some(id) = key.strip_prefix(COMPOSER_PREFIX) {
                sessions.push((id.to_owned(), u64::try_from(size.unwrap_or(0)).unwrap_or(0)));
            }
        }
        Ok(sessions)
    })
}

/// Renders one conversation of a store (`state.vscdb#<composer>`).
pub(crate) fn render(path: &Path) -> io::Result<Vec<u8>> {
    let (store_path, composer) =
        super::store_session(path).ok_or_else(|| invalid("not a Cursor conversation"))?;
    let composer = composer.to_owned();
    Store::open(&store_path)?.snapshot(move |db| {
        let document: Option<String> = db
            .query_row(
                "SELECT CAST(value AS TEXT) FROM cursorDiskKV WHERE key = ?1",
                [format!("{COMPOSER_PREFIX}{composer}")],
                |row| row.get(0),
            )
            .ok();
        let Some(Value::Object(document)) =
            document.and_then(|d| serde_json::from_str::<Value>(&d).ok())
        else {
            return Ok(Vec::new());
        };
        let mut bubbles = Vec::new();
        if let Some(Value::Array(headers)) = document.get("fullConversationHeadersOnly") {
            let mut query =
                db.prepare("SELECT CAST(value AS TEXT) FROM cursorDiskKV WHERE key = ?1")?;
            for entry in headers {
                let Some(id) = entry.get("bubbleId").and_then(Value::as_str) else {
                    continue;
                };
                let mut rows = query.query([format!("bubbleId:{composer}:{id}")])?;
                if let Some(row) = rows.next()?
                    && let Some(text) = row.get::<_, Option<String>>(0)?
                    && let Ok(found) = serde_json::from_str::<Value>(&text)
                {
                    bubbles.push(found);
                }
            }
        } else if let Some(Value::Array(inline)) = document.get("conversation") {
            // Older documents hold their bubbles inline.
            bubbles.clone_from(inline);
        }
        // The conversation's last update dates bubbles that carry no time of their own; it is
        // in the header only then, since it changes at every message.
        let undated = bubbles.iter().any(|b| bubble_time(b).is_none());
        let mut out = Rendering::default();
        out.push("session", header(&composer, &document, undated));
        for bubble in bubbles {
            out.push_value("bubble", bubble);
        }
        Ok(out.into_bytes())
    })
}

/// A conversation's header: its id, title, times (its last update when `undated` bubbles need
/// it), model and folder.
fn header(composer: &str, fields: &Map<String, Value>, undated: bool) -> Map<String, Value> {
    let document = Value::Object(fields.clone());
    let mut header = Map::new();
    header.insert("composerId".into(), Value::String(composer.to_owned()));
    let updated = undated.then_some("lastUpdatedAt");
    for key in ["name", "subtitle", "createdAt", "unifiedMode"]
        .into_iter()
        .chain(updated)
    {
        if let Some(value) = fields.get(key).filter(|v| !v.is_null()) {
            header.insert(key.into(), value.clone());
        }
    }
    if let Some(model) = document
        .pointer("/modelConfig/modelName")
        .and_then(Value::as_str)
        .filter(|m| *m != "default")
    {
        header.insert("model".into(), Value::String(model.to_owned()));
    }
    if let Some(folder) = document
        .pointer("/workspaceIdentifier/uri/fsPath")
        .and_then(Value::as_str)
    {
        header.insert("cwd".into(), Value::String(folder.to_owned()));
    }
    header
}

/// Tool statuses that mean the tool has finished.
const FINISHED: &[&str] = &["completed", "error", "cancelled", "rejected", "skipped"];

/// Adapter state carried across runs in the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CursorState {
    tools: ToolNames,
    model: String,
    /// Tool calls in a transcript have no ids: they are numbered.
    calls: u64,
}

pub(crate) struct Cursor<'a> {
    pub state: &'a mut CursorState,
    pub self_tools: &'a SelfTools,
}

impl Cursor<'_> {
    /// Normalises one record: rendered from the store, or a transcript line.
    pub(crate) fn read(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        match record.get("record").and_then(Value::as_str) {
            Some("session") => {
                if let Some(cwd) = record.get("cwd").and_then(Value::as_str) {
                    out.cwd = Some(cwd.to_owned());
                }
                if let Some(model) = record.get("model").and_then(Value::as_str) {
                    self.state.model = model.to_owned();
                }
                // Bubbles may carry no time: the conversation's own times date it.
                out.started_at = time_field(record.get("createdAt"));
                out.updated_at = time_field(record.get("lastUpdatedAt"));
                let title = ["name", "subtitle"].iter().find_map(|k| {
                    record
                        .get(*k)
                        .and_then(Value::as_str)
                        .filter(|t| !t.is_empty())
                });
                if let Some(title) = title {
                    out.title = Some(title.to_owned());
                }
            }
            Some("bubble") => self.bubble(record, raw, &mut out.drafts),
            Some(_) => out.drafts.push(Draft::new(
                EventType::Unknown,
                None,
                String::new(),
                raw.to_owned(),
            )),
            None => self.line(record, raw, &mut out.drafts),
        }
    }

    fn bubble(&mut self, bubble: &Value, raw: &str, drafts: &mut Vec<Draft>) {
        let ts = bubble_time(bubble);
        if let Some(model) = bubble
            .pointer("/modelInfo/modelName")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty() && *m != "default")
        {
            self.state.model = model.to_owned();
        }
        let text = bubble.get("text").and_then(Value::as_str).unwrap_or("");
        let user = matches!(bubble.get("type"), Some(Value::Number(n)) if n.as_i64() == Some(1))
            || bubble.get("type").and_then(Value::as_str) == Some("user");
        if user {
            if text.trim().is_empty() {
                return;
            }
            let mut draft = Draft::new(EventType::UserInput, ts, text.to_owned(), raw.to_owned());
            draft.starts_turn = true;
            drafts.push(draft);
            return;
        }
        let model = self.state.model.clone();
        if let Some(thinking) = bubble
            .pointer("/thinking/text")
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty())
        {
            let mut draft = Draft::new(
                EventType::Reasoning,
                ts,
                thinking.to_owned(),
                raw.to_owned(),
            );
            draft.model.clone_from(&model);
            drafts.push(draft);
        }
        if let Some(tool) = bubble.get("toolFormerData").filter(|t| t.is_object()) {
            self.tool(tool, bubble, ts, &model, drafts);
            return;
        }
        if !text.trim().is_empty() {
            let mut draft = Draft::new(
                EventType::AssistantResponse,
                ts,
                text.to_owned(),
                raw.to_owned(),
            );
            draft.model = model;
            draft.may_end_turn = true;
            drafts.push(draft);
        }
    }

    /// A tool bubble: the call, and its result once it has finished.
    fn tool(
        &mut self,
        tool: &Value,
        bubble: &Value,
        ts: Option<i64>,
        model: &str,
        drafts: &mut Vec<Draft>,
    ) {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("tool");
        let id = tool
            .get("toolCallId")
            .and_then(Value::as_str)
            .or_else(|| bubble.get("bubbleId").and_then(Value::as_str))
            .unwrap_or("");
        let arguments = ["rawArgs", "params"]
            .iter()
            .map(|k| json_field(tool.get(*k)))
            .find(|v| !v.is_null())
            .unwrap_or(Value::Null);
        let mut call_raw = tool.clone();
        if let Some(fields) = call_raw.as_object_mut() {
            fields.remove("result");
        }
        let raw = call_raw.to_string();
        let mut call = self
            .state
            .tools
            .call(ts, name, id, &arguments, raw, self.self_tools);
        call.model = model.to_owned();
        drafts.push(call);
        let status = tool.get("status").and_then(Value::as_str).unwrap_or("");
        if !FINISHED.contains(&status) {
            return;
        }
        let result = json_field(tool.get("result"));
        let text = match &result {
            Value::String(text) => text.clone(),
            Value::Object(fields) => ["output", "contents"]
                .iter()
                .find_map(|k| fields.get(*k).and_then(Value::as_str))
                .map_or_else(|| result.to_string(), str::to_owned),
            Value::Null => tool
                .pointer("/error/clientVisibleErrorMessage")
                .and_then(Value::as_str)
                .unwrap_or(status)
                .to_owned(),
            other => other.to_string(),
        };
        let raw = json!({"toolCallId": id, "status": status, "result": result});
        let mut response = self.state.tools.result(ts, id, text, raw.to_string());
        let exit = ["exitCodeV2", "exitCode"]
            .iter()
            .find_map(|k| result.get(*k).and_then(Value::as_i64));
        if name.starts_with("run_terminal") {
            // The exit code is left out when it is 0.
            response.exit_code = exit.and_then(|c| i32::try_from(c).ok()).or(Some(0));
        }
        response.is_error = matches!(status, "error" | "rejected")
            || tool.get("error").is_some_and(|e| !e.is_null())
            || response.exit_code.is_some_and(|c| c != 0);
        if status == "cancelled" {
            response.ending = Some(Ending::Interrupted);
        }
        drafts.push(response);
    }

    /// A transcript line: `{role, message: {content}}` or `{type: turn_ended}`.
    fn line(&mut self, record: &Value, raw: &str, drafts: &mut Vec<Draft>) {
        if record.get("type").and_then(Value::as_str) == Some("turn_ended") {
            let status = record.get("status").and_then(Value::as_str).unwrap_or("");
            let error = record.get("error").and_then(Value::as_str).unwrap_or("");
            let mut draft = Draft::new(
                EventType::Runtime,
                None,
                if error.is_empty() {
                    format!("turn ended: {status}")
                } else {
                    error.to_owned()
                },
                raw.to_owned(),
            );
            draft.ending = Some(match status {
                "success" => Ending::Completed,
                _ if error.contains("abort") => Ending::Interrupted,
                _ => Ending::Failed,
            });
            draft.is_error = draft.ending == Some(Ending::Failed);
            drafts.push(draft);
            return;
        }
        let role = record.get("role").and_then(Value::as_str).unwrap_or("");
        let content = record.pointer("/message/content").unwrap_or(&Value::Null);
        let blocks: Vec<Value> = match content {
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            Value::Array(blocks) => blocks.clone(),
            _ => Vec::new(),
        };
        for block in &blocks {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
            let text = block.get("text").and_then(Value::as_str).unwrap_or("");
            let raw = block.to_string();
            let draft = match (role, kind) {
                ("user", "text") => {
                    let (typed, ts) = user_query(text);
                    if typed.is_empty() {
                        // Context for the prompt that follows: in that prompt's turn.
                        let mut context = Draft::bookkeeping(ts, text.to_owned(), raw);
                        context.opens_turn = true;
                        context
                    } else {
                        let mut d = Draft::new(EventType::UserInput, ts, typed, raw);
                        d.starts_turn = true;
                        d
                    }
                }
                ("assistant", "text") => {
                    Draft::new(EventType::AssistantResponse, None, text.to_owned(), raw)
                }
                (_, "thinking") => {
                    let thought = block.get("thinking").and_then(Value::as_str).unwrap_or("");
                    if thought.trim().is_empty() || thought == "[REDACTED]" {
                        continue;
                    }
                    Draft::new(EventType::Reasoning, None, thought.to_owned(), raw)
                }
                (_, "redacted") => continue,
                (_, "tool_use") => {
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let input = block.get("input").unwrap_or(&Value::Null);
                    self.state.calls += 1;
                    let id = format!("call-{}", self.state.calls);
                    self.state
                        .tools
                        .call(None, name, &id, input, raw, self.self_tools)
                }
                (_, "tool_result" | "command_output") => {
                    let output = block
                        .get("output")
                        .or_else(|| block.get("content"))
                        .map(|o| o.as_str().map_or_else(|| o.to_string(), str::to_owned))
                        .unwrap_or_default();
                    // Results name no call: they answer the latest one.
                    let id = format!("call-{}", self.state.calls);
                    self.state.tools.result(None, &id, output, raw)
                }
                ("system", _) => Draft::bookkeeping(None, text.to_owned(), raw),
                _ => Draft::new(EventType::Unknown, None, text.to_owned(), raw),
            };
            drafts.push(draft);
        }
    }
}

/// When a bubble was written: `createdAt` (RFC 3339 or ms), or an older bubble's `timestamp`.
fn bubble_time(bubble: &Value) -> Option<i64> {
    time_field(bubble.get("createdAt")).or_else(|| time_field(bubble.get("timestamp")))
}

/// A time Cursor writes as RFC 3339 text or as ms since the epoch.
fn time_field(value: Option<&Value>) -> Option<i64> {
    parse_ts(value).or_else(|| value.and_then(Value::as_i64))
}

/// A field that holds JSON, as a string or as itself.
fn json_field(value: Option<&Value>) -> Value {
    match value {
        Some(Value::String(text)) if text.is_empty() => Value::Null,
        Some(Value::String(text)) => {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
        }
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

/// What the user typed in a transcript's user text (`<user_query>…</user_query>`, after an
/// optional `<timestamp>` tag and before `<context>`), and the tag's time when it parses.
fn user_query(text: &str) -> (String, Option<i64>) {
    let between = |open: &str, close: &str| {
        let start = text.find(open)? + open.len();
        let end = text[start..].find(close)? + start;
        Some(text[start..end].trim().to_owned())
    };
    let ts = between("<timestamp>", "</timestamp>")
        .and_then(|t| crate::text::rfc3339_ms(&t).or_else(|| tag_time(&t)));
    if let Some(query) = between("<user_query>", "</user_query>") {
        return (query, ts);
    }
    // Without a `<user_query>`, a text that opens with a context element (`<user_info>`,
    // `<agent_transcripts>`, `<context>`, …, closed further on) is what Cursor added.
    if opens_with_element(text) {
        return (String::new(), ts);
    }
    let plain = match text.find("</timestamp>") {
        Some(end) => text[end + "</timestamp>".len()..].trim(),
        None => text.trim(),
    };
    (plain.to_owned(), ts)
}

/// Whether `text` begins with an element `<name>` (a lower-case name of letters, digits, `_`
/// or `-`) that it closes further on: a block of context, not words a person typed.
fn opens_with_element(text: &str) -> bool {
    let Some(rest) = text.trim_start().strip_prefix('<') else {
        return false;
    };
    let Some((name, _)) = rest.split_once('>') else {
        return false;
    };
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        && rest.contains(&format!("</{name}>"))
}

/// The time in a transcript's `<timestamp>` tag as Cursor writes it: `Monday, Sep 1, 2026, 9:00 AM
/// (UTC+2)`.
fn tag_time(tag: &str) -> Option<i64> {
    let parts: Vec<&str> = tag.split(", ").collect();
    let [_, month_day, year, clock] = parts.as_slice() else {
        return None;
    };
    let (month, day) = month_day.split_once(' ')?;
    let month = time::Month::try_from(
        [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ]
        .iter()
        .position(|m| month.starts_with(m))? as u8
            + 1,
    )
    .ok()?;
    let date = time::Date::from_calendar_date(year.parse().ok()?, month, day.parse().ok()?).ok()?;
    let (time_part, zone) = clock.split_once(" (UTC")?;
    let (hm, meridiem) = time_part.split_once(' ')?;
    let (hour, minute) = hm.split_once(':')?;
    let mut hour: u8 = hour.parse().ok()?;
    match meridiem {
        "AM" if hour == 12 => hour = 0,
        "PM" if hour < 12 => hour += 12,
        "AM" | "PM" => {}
        _ => return None,
    }
    let clock = time::Time::from_hms(hour, minute.parse().ok()?, 0).ok()?;
    let zone = zone.strip_suffix(')')?;
    let offset = if zone.is_empty() {
        time::UtcOffset::UTC
    } else {
        let (sign, rest) = zone.split_at(1);
        let (h, m) = rest.split_once(':').unwrap_or((rest, "0"));
        let (h, m): (i8, i8) = (h.parse().ok()?, m.parse().ok()?);
        let sign = if sign == "-" { -1 } else { 1 };
        time::UtcOffset::from_hms(sign * h, sign * m, 0).ok()?
    };
    let at = time::PrimitiveDateTime::new(date, clock).assume_offset(offset);
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

// ---- The harness's log format -------------------------------------------------------------

/// Where Cursor keeps its logs and how they are recognised and named.
pub(crate) struct Format;

/// Reads one record of a Cursor log.
pub(crate) fn read(
    state: &mut CursorState,
    cx: &ReadContext<'_>,
    record: &Value,
    raw: &str,
    out: &mut AdapterOutput,
) {
    Cursor {
        state,
        self_tools: cx.self_tools,
    }
    .read(record, raw, out);
}

impl LogFormat for Format {
    fn default_sources(&self) -> &'static [DefaultSource] {
        &[
            DefaultSource {
                name: "cursor",
                glob: "~/.cursor/projects/*/agent-transcripts/**/*.jsonl",
            },
            DefaultSource {
                name: "cursor-store",
                glob: GLOBAL_STORE,
            },
            DefaultSource {
                name: "cursor-workspaces",
                glob: WORKSPACE_STORES,
            },
        ]
    }

    fn path_hints(&self) -> &'static [&'static str] {
        &["/.cursor/"]
    }

    fn scan_names(&self) -> &'static [&'static str] {
        &["*.jsonl", "*.vscdb"]
    }

    fn is_store(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "vscdb")
    }

    fn is_log_name(&self, path: &Path) -> bool {
        path.extension()
            .is_some_and(|e| e == "jsonl" || e == "vscdb")
    }

    fn detect_record(&self, record: &Map<String, Value>) -> bool {
        let kind = record.get("type").and_then(Value::as_str);
        let message = record.get("message").filter(|m| m.is_object());
        kind == Some("turn_ended")
            || kind.is_none() && record.contains_key("role") && message.is_some()
    }

    /// `agent-transcripts/<session>.jsonl` or `agent-transcripts/<session>/<session>.jsonl`.
    fn identity_from_name(&self, path: &Path) -> Option<Identity> {
        let stem = stem(path)?;
        is_uuid(stem).then(|| Identity::main(stem))
    }

    /// A conversation of a store; the transcripts are read as they are.
    fn is_rendered(&self, path: &Path) -> bool {
        super::store_session(path).is_some()
    }

    fn render(&self, path: &Path) -> io::Result<Vec<u8>> {
        render(path)
    }

    fn store_sessions(&self, path: &Path) -> io::Result<Vec<(String, u64)>> {
        sessions(path)
    }
}

/// Where Cursor keeps its `User` directory's stores (on Windows: `%APPDATA%\\Cursor\\User`).
#[cfg(target_os = "macos")]
const GLOBAL_STORE: &str = "~/Library/Application Support/Cursor/User/globalStorage/state.vscdb";
#[cfg(target_os = "macos")]
const WORKSPACE_STORES: &str =
    "~/Library/Application Support/Cursor/User/workspaceStorage/*/state.vscdb";
#[cfg(not(target_os = "macos"))]
const GLOBAL_STORE: &str = "~/.config/Cursor/User/globalStorage/state.vscdb";
#[cfg(not(target_os = "macos"))]
const WORKSPACE_STORES: &str = "~/.config/Cursor/User/workspaceStorage/*/state.vscdb";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_timestamp_tags_are_read() {
        assert_eq!(
            tag_time("Monday, Sep 1, 2026, 9:00 AM (UTC+2)"),
            crate::text::rfc3339_ms("2026-09-01T07:00:00Z")
        );
        assert_eq!(
            tag_time("Sunday, Aug 2, 2026, 3:51 PM (UTC-7)"),
            crate::text::rfc3339_ms("2026-08-02T22:51:00Z")
        );
        assert_eq!(tag_time("yesterday"), None);
    }

    #[test]
    fn test_the_user_query_is_what_the_user_typed() {
        let text = "<timestamp>Monday, Sep 1, 2026</timestamp>\n<user_query>\nrun the tests\n</user_query>\n<context>x</context>";
        assert_eq!(user_query(text).0, "run the tests");
        assert_eq!(user_query("plain words").0, "plain words");
        assert_eq!(user_query("<user_info>os: linux</user_info>").0, "");
        assert_eq!(
            user_query("<agent_transcripts>\nEarlier sessions: a.jsonl\n</agent_transcripts>").0,
            ""
        );
        // Words that only begin with a bracket are typed.
        assert_eq!(user_query("<div> is not centred").0, "<div> is not centred");
    }

    #[test]
    fn test_fields_hold_json_as_strings_or_values() {
        assert_eq!(json_field(Some(&json!("{\"a\":1}"))), json!({"a": 1}));
        assert_eq!(json_field(Some(&json!({"a": 1}))), json!({"a": 1}));
        assert_eq!(json_field(Some(&json!(""))), Value::Null);
        assert_eq!(json_field(Some(&json!("not json"))), json!("not json"));
    }
}
