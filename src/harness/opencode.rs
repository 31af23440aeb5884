//! OpenCode sessions — the SQLite store `~/.local/share/opencode/opencode*.db` (tables
//! `session`, `message`, `part`; and `session_message` in 2.x), the JSON tree
//! `storage/{session,message,part}/` of versions before 1.2, and `opencode export` files —
//! rendered one message per line and normalised into draft events.
//!
//! Rows are rewritten in place as a reply streams (a tool part goes pending → running →
//! completed), so a session is rendered as it stands and read on where it only grew. A turn
//! starts at a user message with text the user wrote (not a synthetic one); it ends at an
//! assistant message whose finish reason is not a request for tools, or at an error.

use super::identity::{self, Identity, dir_name, id_text};
use super::{DefaultSource, LogFormat, ReadContext};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::adapter::{AdapterOutput, ToolNames};
use super::draft::{Draft, Ending, SelfTools};
use super::rendered::{self, Rendering, invalid};
use super::store::{self, Store};
use crate::vocab::EventType;

/// The sessions of a store with the size of their rows. Sizes come from each table in one pass,
/// as byte lengths the rows record (no row is read whole).
pub(crate) fn sessions(path: &Path) -> io::Result<Vec<(String, u64)>> {
    Store::open(path)?.snapshot(|db| {
        let mut sizes: HashMap<String, i64> = HashMap::new();
        let mut order = Vec::new();
        if store::has_table(db, "session")? {
            let mut query = db.prepare("SELECT id FROM session ORDER BY time_created, id")?;
            for id in query.query_map([], |row| row.get::<_, String>(0))? {
                let id = id?;
                sizes.insert(id.clone(), 0);
                order.push(id);
            }
        }
        for table in ["message", "part", "session_message"] {
            if !store::has_table(db, table)? {
                continue;
            }
            // Table names come from the list above, never from input.
            let sql = format!(
                "SELECT session_id, sum(octet_length(data)) FROM {table} GROUP BY session_id"
            );
            let mut query = db.prepare(&sql)?;
            let rows = query.query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, Option<i64>>(1)?))
            })?;
            for row in rows {
                let (id, size) = row?;
                let size = size.unwrap_or(0);
                match sizes.get_mut(&id) {
                    // OpenCode 2 may hold a session's messages again: the larger copy counts.
                    Some(known) if table == "session_message" => *known = (*known).max(size),
                    Some(known) => *known += size,
                    // An OpenCode 2 session the older table does not list.
                    None if table == "session_message" => {
                        order.push(id.clone());
                        sizes.insert(id, size);
                    }
                    None => {}
                }
            }
        }
        Ok(order
            .into_iter()
            .map(|id| {
                let size = sizes.get(&id).copied().unwrap_or(0);
                (id, u64::try_from(size).unwrap_or(0))
            })
            .collect())
    })
}

/// Renders one session: of a store (`opencode.db#<session>`), of the JSON tree (the session's
/// file `storage/session/<project>/<session>.json`), or written by `opencode export`.
pub(crate) fn render(path: &Path) -> io::Result<Vec<u8>> {
    if let Some((store, session)) = super::store_session(path) {
        return render_stored(&store, session);
    }
    let bytes = rendered::read_source(path)?;
    let document: Value = serde_json::from_slice(rendered::json_document(&bytes))
        .map_err(|e| invalid(format!("{}: {e}", path.display())))?;
    match (document.get("info"), document.get("messages")) {
        (Some(info), Some(Value::Array(messages))) => render_export(info, messages),
        _ => render_tree(path, &document),
    }
}

/// The header line of a session from its info (`Session.Info`, as the JSON tree and exports
/// hold it).
fn session_header(info: &Value) -> io::Result<Map<String, Value>> {
    let id = info
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("not an OpenCode session (no session id)"))?;
    let mut header = Map::new();
    header.insert("id".into(), Value::String(id.to_owned()));
    for (from, to) in [
        ("title", "title"),
        ("directory", "directory"),
        ("parentID", "parent_id"),
        ("version", "version"),
    ] {
        if let Some(value) = info.get(from).filter(|v| !v.is_null()) {
            header.insert(to.into(), value.clone());
        }
    }
    if let Some(created) = info.pointer("/time/created") {
        header.insert("time_created".into(), created.clone());
    }
    Ok(header)
}

/// The line of one message with its parts.
fn message_line(out: &mut Rendering, id: String, mut message: Value, parts: Vec<Value>) {
    let created = message
        .pointer("/time/created")
        .cloned()
        .unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut message {
        fields.remove("id");
        fields.remove("sessionID");
    }
    out.push_value(
        "message",
        json!({"id": id, "created": created, "info": message, "parts": parts}),
    );
}

/// A session `opencode export` wrote: `{info, messages: [{info, parts}]}`, oldest first.
fn render_export(info: &Value, messages: &[Value]) -> io::Result<Vec<u8>> {
    let mut out = Rendering::default();
    out.push("session", session_header(info)?);
    for message in messages {
        let Some(info) = message.get("info") else {
            continue;
        };
        let id = info
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let parts = message
            .get("parts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        message_line(&mut out, id, info.clone(), parts);
    }
    Ok(out.into_bytes())
}

fn render_stored(path: &Path, session: &str) -> io::Result<Vec<u8>> {
    let session = session.to_owned();
    Store::open(path)?.snapshot(move |db| {
        let mut out = Rendering::default();
        out.push("session", stored_session(db, &session)?);
        // `message`/`part` hold the history wherever they have rows for the session: OpenCode
        // 1.17 also writes bookkeeping (`model-switched`, `agent-switched`) to `session_message`,
        // which must never stand for the conversation. Only a session without messages there
        // is read from `session_message` (OpenCode 2's one row per conversation item).
        let has_messages = store::has_table(db, "message")?
            && db
                .query_row(
                    "SELECT 1 FROM message WHERE session_id = ?1 LIMIT 1",
                    [&session],
                    |_| Ok(()),
                )
                .optional()?
                .is_some();
        if !has_messages && store::has_table(db, "session_message")? {
            let mut query = db.prepare(
                "SELECT id, type, data FROM session_message WHERE session_id = ?1 ORDER BY seq, id",
            )?;
            let mut rows = query.query([&session])?;
            let mut any = false;
            while let Some(row) = rows.next()? {
                any = true;
                let mut fields = Map::new();
                fields.insert("id".into(), Value::String(row.get(0)?));
                fields.insert("type".into(), Value::String(row.get(1)?));
                fields.insert("data".into(), parse(&row.get::<_, String>(2)?));
                out.push("item", fields);
            }
            if any {
                return Ok(out.into_bytes());
            }
        }
        let mut parts = db.prepare(
            "SELECT id, data FROM part WHERE message_id = ?1 ORDER BY id",
        )?;
        let mut messages = db.prepare(
            "SELECT id, time_created, data FROM message WHERE session_id = ?1 ORDER BY time_created, id",
        )?;
        let mut rows = messages.query([&session])?;
        while let Some(row) = rows.next()? {
            let id: String = row.get(0)?;
            let created: i64 = row.get(1)?;
            let info = parse(&row.get::<_, String>(2)?);
            let part_values = parts
                .query_map([&id], |part| {
                    let mut value = parse(&part.get::<_, String>(1)?);
                    if let Value::Object(fields) = &mut value {
                        fields.insert("id".into(), Value::String(part.get(0)?));
                    }
                    Ok(value)
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            out.push_value(
                "message",
                json!({"id": id, "created": created, "info": info, "parts": part_values}),
            );
        }
        Ok(out.into_bytes())
    })
}

/// The session's header: its id, title, directory, parent and project.
fn stored_session(db: &Connection, session: &str) -> rusqlite::Result<Map<String, Value>> {
    let mut header = Map::new();
    header.insert("id".into(), Value::String(session.to_owned()));
    for table in ["session", "session_v2"] {
        if !store::has_table(db, table)? {
            continue;
        }
        let columns = store::columns(db, table)?;
        let wanted: Vec<&str> = ["title", "directory", "parent_id", "time_created", "version"]
            .into_iter()
            .filter(|c| columns.iter().any(|have| have == c))
            .collect();
        if wanted.is_empty() {
            continue;
        }
        // Column names come from the list above, never from input.
        let sql = format!("SELECT {} FROM {table} WHERE id = ?1", wanted.join(", "));
        let found = db
            .query_row(&sql, [session], |row| {
                let mut values = Vec::new();
                for i in 0..wanted.len() {
                    let value: rusqlite::types::Value = row.get(i)?;
                    values.push(match value {
                        rusqlite::types::Value::Text(text) => Value::String(text),
                        rusqlite::types::Value::Integer(n) => Value::from(n),
                        _ => Value::Null,
                    });
                }
                Ok(values)
            })
            .optional()?;
        if let Some(values) = found {
            for (column, value) in wanted.iter().zip(values) {
                if !value.is_null() {
                    header.insert((*column).to_owned(), value);
                }
            }
            break;
        }
    }
    Ok(header)
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// A session of the JSON tree: `storage/session/<project>/<id>.json` (`info`), its messages in
/// `storage/message/<id>/`, their parts in `storage/part/<message>/`.
fn render_tree(path: &Path, info: &Value) -> io::Result<Vec<u8>> {
    let storage = path
        .ancestors()
        .nth(3)
        .ok_or_else(|| invalid("not an OpenCode session file"))?;
    let header = session_header(info)?;
    let id = header["id"].as_str().unwrap_or_default().to_owned();
    let mut out = Rendering::default();
    out.push("session", header);
    for message_path in json_files(&storage.join("message").join(&id))? {
        // A file being written can be cut short: it is read when whole, next time.
        let Ok(message) = read_json(&message_path) else {
            continue;
        };
        let message_id = message
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| stem(&message_path));
        let parts: Vec<Value> = json_files(&storage.join("part").join(&message_id))?
            .iter()
            .filter_map(|p| read_json(p).ok())
            .collect();
        message_line(&mut out, message_id, message, parts);
    }
    Ok(out.into_bytes())
}

/// The `.json` files in `dir`, by name (OpenCode's ids sort in creation order); none when
/// `dir` does not exist.
fn json_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

fn read_json(path: &Path) -> io::Result<Value> {
    serde_json::from_slice(&rendered::read_source(path)?)
        .map_err(|e| invalid(format!("{}: {e}", path.display())))
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned()
}

/// Finish reasons after which the agent goes on (it asked for tools).
const CONTINUING: &[&str] = &["tool-calls", "unknown"];

/// Adapter state carried across runs in the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct OpenCodeState {
    tools: ToolNames,
}

pub(crate) struct OpenCode<'a> {
    pub state: &'a mut OpenCodeState,
    pub self_tools: &'a SelfTools,
}

impl OpenCode<'_> {
    /// Normalises one rendered record.
    pub(crate) fn read(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        match record.get("record").and_then(Value::as_str) {
            Some("session") => {
                if let Some(dir) = record.get("directory").and_then(Value::as_str) {
                    out.cwd = Some(dir.to_owned());
                }
                let title = record.get("title").and_then(Value::as_str).unwrap_or("");
                // Until OpenCode names a session it is "New session - <time>".
                if !title.is_empty() && !is_default_title(title) {
                    out.title = Some(title.to_owned());
                }
            }
            Some("message") => self.message(record, out),
            Some("item") => self.item(record, raw, out),
            _ => out.drafts.push(Draft::new(
                EventType::Unknown,
                None,
                String::new(),
                raw.to_owned(),
            )),
        }
    }

    fn message(&mut self, record: &Value, out: &mut AdapterOutput) {
        let info = record.get("info").unwrap_or(&Value::Null);
        let ts = info
            .pointer("/time/created")
            .or_else(|| record.get("created"))
            .and_then(Value::as_i64);
        let parts = record
            .get("parts")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let role = info.get("role").and_then(Value::as_str).unwrap_or("");
        let model = info
            .get("modelID")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if let Some(cwd) = info.pointer("/path/cwd").and_then(Value::as_str) {
            out.cwd = Some(cwd.to_owned());
        }
        let summary = info.get("summary").and_then(Value::as_bool) == Some(true);
        let mut drafts = Vec::new();
        for part in parts {
            let raw = part.to_string();
            let pts = part.pointer("/time/start").and_then(Value::as_i64).or(ts);
            let text = || {
                part.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
            let mut draft = match (role, kind) {
                (_, "text") if summary => Draft::new(EventType::Compaction, pts, text(), raw),
                ("user", "text") => {
                    let injected = part.get("synthetic").and_then(Value::as_bool) == Some(true);
                    if injected {
                        Draft::bookkeeping(pts, text(), raw)
                    } else {
                        let mut d = Draft::new(EventType::UserInput, pts, text(), raw);
                        d.starts_turn = true;
                        d
                    }
                }
                ("user", "file") => {
                    let name = ["filename", "url"]
                        .iter()
                        .find_map(|k| part.get(*k).and_then(Value::as_str))
                        .unwrap_or("file");
                    Draft::new(EventType::UserInput, pts, format!("[{name}]"), raw)
                }
                ("user", "compaction") => Draft::new(
                    EventType::Compaction,
                    pts,
                    "context compaction requested".into(),
                    raw,
                ),
                ("user", "agent" | "subtask") => {
                    let what = ["prompt", "name"]
                        .iter()
                        .find_map(|k| part.get(*k).and_then(Value::as_str))
                        .unwrap_or("");
                    Draft::new(EventType::UserInput, pts, what.to_owned(), raw)
                }
                (_, "text") => {
                    let mut d = Draft::new(EventType::AssistantResponse, pts, text(), raw);
                    d.model.clone_from(&model);
                    d
                }
                (_, "reasoning") => {
                    let mut d = Draft::new(EventType::Reasoning, pts, text(), raw);
                    d.model.clone_from(&model);
                    d
                }
                (_, "tool") => {
                    self.tool(part, pts, &model, &mut drafts);
                    continue;
                }
                // Steps, snapshots and patches: the agent's bookkeeping.
                (_, "step-start" | "step-finish" | "snapshot" | "patch" | "retry") => continue,
                _ => Draft::new(EventType::Unknown, pts, text(), raw),
            };
            if draft.text.is_empty() && draft.event_type != EventType::Unknown {
                continue;
            }
            draft.model.clone_from(&model);
            drafts.push(draft);
        }
        if role == "assistant" {
            self.ending(info, ts, &mut drafts);
        }
        // A user message holding only a synthetic prompt ("continue") starts no turn.
        out.drafts.extend(drafts);
    }

    /// How an assistant message ends its turn: an error, or a finish reason that is not a
    /// request for tools (its last answer is then the final one).
    fn ending(&self, info: &Value, ts: Option<i64>, drafts: &mut Vec<Draft>) {
        if let Some(error) = info.get("error").filter(|e| !e.is_null()) {
            let name = error.get("name").and_then(Value::as_str).unwrap_or("error");
            let message = error
                .pointer("/data/message")
                .and_then(Value::as_str)
                .unwrap_or(name);
            let ended = info
                .pointer("/time/completed")
                .and_then(Value::as_i64)
                .or(ts);
            let mut draft = Draft::new(
                EventType::Runtime,
                ended,
                message.to_owned(),
                error.to_string(),
            );
            if name == "MessageAbortedError" {
                draft.ending = Some(Ending::Interrupted);
            } else {
                draft.is_error = true;
                draft.ending = Some(Ending::Failed);
            }
            drafts.push(draft);
            return;
        }
        let finish = info.get("finish").and_then(Value::as_str).unwrap_or("");
        let completed = info.pointer("/time/completed").is_some();
        if completed && !finish.is_empty() && !CONTINUING.contains(&finish) {
            if let Some(answer) = drafts
                .iter_mut()
                .rev()
                .find(|d| d.event_type == EventType::AssistantResponse)
            {
                answer.ending = Some(Ending::Completed);
            } else if let Some(last) = drafts.last_mut() {
                last.ending = Some(Ending::Completed);
            }
        }
    }

    /// A tool part: the call, and its result once it has one.
    fn tool(&mut self, part: &Value, ts: Option<i64>, model: &str, drafts: &mut Vec<Draft>) {
        let name = part.get("tool").and_then(Value::as_str).unwrap_or("tool");
        let id = part.get("callID").and_then(Value::as_str).unwrap_or("");
        let state = part.get("state").unwrap_or(&Value::Null);
        let input = state.get("input").unwrap_or(&Value::Null);
        let mut call_raw = part.clone();
        if let Some(state) = call_raw.get_mut("state").and_then(Value::as_object_mut) {
            state.remove("output");
            state.remove("metadata");
        }
        let mut call =
            self.state
                .tools
                .call(ts, name, id, input, call_raw.to_string(), self.self_tools);
        call.model = model.to_owned();
        drafts.push(call);
        let status = state.get("status").and_then(Value::as_str).unwrap_or("");
        let text = match status {
            "completed" => state.get("output").and_then(Value::as_str),
            "error" => state.get("error").and_then(Value::as_str),
            _ => return,
        }
        .unwrap_or("")
        .to_owned();
        let ended = state.pointer("/time/end").and_then(Value::as_i64).or(ts);
        let mut result = self.state.tools.result(ended, id, text, state.to_string());
        result.is_error = status == "error";
        if name == "bash" {
            result.exit_code = state
                .pointer("/metadata/exit")
                .and_then(Value::as_i64)
                .and_then(|c| i32::try_from(c).ok());
        }
        drafts.push(result);
    }

    /// An OpenCode 2 conversation item.
    fn item(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        let data = record.get("data").unwrap_or(&Value::Null);
        let ts = data.pointer("/time/created").and_then(Value::as_i64);
        let text = |key: &str| {
            data.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let drafts = &mut out.drafts;
        match record.get("type").and_then(Value::as_str).unwrap_or("") {
            "user" => {
                let mut draft = Draft::new(EventType::UserInput, ts, text("text"), raw.to_owned());
                draft.starts_turn = true;
                drafts.push(draft);
            }
            "assistant" => {
                let model = data
                    .pointer("/model/id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let mut made = Vec::new();
                for content in data
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let body = content
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    match content.get("type").and_then(Value::as_str).unwrap_or("") {
                        "text" => made.push(Draft::new(
                            EventType::AssistantResponse,
                            ts,
                            body,
                            content.to_string(),
                        )),
                        "reasoning" => made.push(Draft::new(
                            EventType::Reasoning,
                            ts,
                            body,
                            content.to_string(),
                        )),
                        "tool" => {
                            // The 2.x shape, as a 1.x tool part.
                            let state = content.get("state").cloned().unwrap_or(Value::Null);
                            let output: Vec<&str> = state
                                .get("content")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                                .filter_map(|c| c.get("text").and_then(Value::as_str))
                                .collect();
                            let mut part = json!({"tool": content.get("name"), "callID": content.get("id"), "state": state});
                            if let Some(state) = part["state"].as_object_mut() {
                                state.insert("output".into(), Value::String(output.join("\n")));
                            }
                            self.tool(&part, ts, &model, &mut made);
                        }
                        _ => {}
                    }
                }
                for draft in &mut made {
                    draft.model.clone_from(&model);
                }
                self.ending(data, ts, &mut made);
                drafts.extend(made);
            }
            "compaction" => drafts.push(Draft::new(
                EventType::Compaction,
                ts,
                text("summary"),
                raw.to_owned(),
            )),
            "shell" => {
                let mut call = Draft::new(EventType::ToolCall, ts, text("command"), raw.to_owned());
                call.tool_name = "shell".into();
                let mut result =
                    Draft::new(EventType::ToolResponse, ts, text("output"), raw.to_owned());
                result.tool_name = "shell".into();
                drafts.extend([call, result]);
            }
            other => {
                let body = ["text", "model", "agent"]
                    .iter()
                    .find_map(|k| data.get(*k).and_then(Value::as_str))
                    .unwrap_or("");
                let text = format!("{}: {body}", other.replace('-', " "));
                drafts.push(Draft::bookkeeping(ts, text, raw.to_owned()));
            }
        }
    }
}

/// OpenCode's placeholder titles.
fn is_default_title(title: &str) -> bool {
    title.starts_with("New session - ") || title.starts_with("Child session - ")
}

// ---- The harness's log format -------------------------------------------------------------

/// Where OpenCode keeps its logs and how they are recognised and named.
pub(crate) struct Format;

/// Reads one record of a OpenCode log.
pub(crate) fn read(
    state: &mut OpenCodeState,
    cx: &ReadContext<'_>,
    record: &Value,
    raw: &str,
    out: &mut AdapterOutput,
) {
    OpenCode {
        state,
        self_tools: cx.self_tools,
    }
    .read(record, raw, out);
}

impl LogFormat for Format {
    fn default_sources(&self) -> &'static [DefaultSource] {
        &[
            DefaultSource {
                name: "opencode",
                glob: "~/.local/share/opencode/opencode*.db",
            },
            DefaultSource {
                name: "opencode-legacy",
                glob: "~/.local/share/opencode/storage/session/*/*.json",
            },
        ]
    }

    fn path_hints(&self) -> &'static [&'static str] {
        &["/opencode/"]
    }

    fn scan_names(&self) -> &'static [&'static str] {
        &["opencode.db", "ses_*.json"]
    }

    fn is_store(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "db")
    }

    /// The store, and the JSON tree's session files (in `storage/session/<project>/`).
    fn is_log_name(&self, path: &Path) -> bool {
        match path.extension().and_then(|e| e.to_str()) {
            Some("db") => true,
            Some("json") => dir_name(path, 2) == Some("session"),
            _ => false,
        }
    }

    /// A session of its JSON tree (`{"id": "ses_…"}`), or one `opencode export` wrote
    /// (`{"info": {"id": "ses_…"}, "messages"}`).
    fn detect_document(&self, document: &Value) -> bool {
        [document.get("id"), document.pointer("/info/id")]
            .into_iter()
            .flatten()
            .any(|id| id.as_str().is_some_and(|id| id.starts_with("ses_")))
    }

    /// `storage/session/<project>/<session>.json`.
    fn identity_from_name(&self, path: &Path) -> Option<Identity> {
        let stem = identity::stem(path)?;
        stem.starts_with("ses_").then(|| Identity::main(stem))
    }

    /// A rendered session's header (an export, a session of the tree).
    fn identity_from_record(&self, record: &Map<String, Value>) -> Option<Identity> {
        (record.get("record").and_then(Value::as_str) == Some("session"))
            .then(|| id_text(record.get("id")))
            .flatten()
            .map(|id| Identity::main(&id))
    }

    fn is_rendered(&self, _path: &Path) -> bool {
        true
    }

    fn render(&self, path: &Path) -> io::Result<Vec<u8>> {
        render(path)
    }

    fn store_sessions(&self, path: &Path) -> io::Result<Vec<(String, u64)>> {
        sessions(path)
    }

    /// A session of the JSON tree its store imported.
    fn superseded(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "json")
    }
}
