//! Benchmark sessions in the formats of the harnesses after Codex and Claude Code: JSON Lines
//! logs, Continue's whole-file sessions, Aider's Markdown history and two SQLite stores (Cursor's,
//! OpenCode's), each shaped like its fixture.

use std::path::Path;

use rand::Rng;
use rand_pcg::Pcg64Mcg;
use serde_json::{Value, json};

use super::words::{Log, Writer, hex, iso, uuid};

/// What one generated session looks like, whatever the format: turns of a prompt, a few tool
/// steps (some with reasoning first, some failing) and an answer.
struct Script {
    turns: Vec<Turn>,
}

struct Turn {
    prompt: String,
    steps: Vec<Step>,
    answer: String,
}

struct Step {
    thought: Option<String>,
    command: String,
    output: String,
    exit: i32,
}

impl Script {
    fn new(turns: u32, w: &Writer<'_>, rng: &mut Pcg64Mcg) -> Self {
        let turns = (0..turns)
            .map(|_| Turn {
                prompt: w.sentence_in(rng, 4..40),
                steps: (0..rng.random_range(0..6))
                    .map(|_| Step {
                        thought: (rng.random_range(0..3) == 0).then(|| w.sentence_in(rng, 10..60)),
                        command: format!(
                            "{} {}",
                            ["cargo test", "rg -n", "npm test", "pytest -k", "go vet"]
                                [rng.random_range(0..5)],
                            w.token(rng)
                        ),
                        output: w.output(rng),
                        exit: if rng.random_range(0..5) == 0 { 1 } else { 0 },
                    })
                    .collect(),
                answer: w.sentence_in(rng, 15..150),
            })
            .collect();
        Self { turns }
    }
}

/// Gemini CLI: `tmp/<project>/chats/session-*.jsonl`, a header then one record per message.
pub(super) fn write_gemini(
    path: &Path,
    id: &str,
    started: i64,
    turns: u32,
    w: &Writer<'_>,
    rng: &mut Pcg64Mcg,
) -> std::io::Result<u64> {
    let script = Script::new(turns, w, rng);
    let mut log = Log::create(path, started)?;
    let ts = iso(started);
    log.record(json!({"sessionId": id, "projectHash": hex(rng, 64), "startTime": ts, "lastUpdated": ts, "kind": "main"}), 1)?;
    let mut n = 0;
    for turn in &script.turns {
        n += 1;
        let ts = log.tick(rng);
        log.record(json!({"id": format!("u-{n}"), "timestamp": ts, "type": "user", "content": [{"text": turn.prompt}]}), 1)?;
        for step in &turn.steps {
            n += 1;
            let ts = log.tick(rng);
            let call = format!("run_shell_command-{n}");
            let thoughts: Vec<Value> = step
                .thought
                .iter()
                .map(|t| json!({"subject": "Next step", "description": t, "timestamp": ts}))
                .collect();
            let output = format!("Output: {}\nExit Code: {}", step.output, step.exit);
            log.record(json!({"id": format!("g-{n}"), "timestamp": ts, "type": "gemini", "content": "", "thoughts": thoughts, "model": "gemini-2.5-pro", "toolCalls": [{"id": call, "name": "run_shell_command", "args": {"command": step.command}, "status": if step.exit == 0 { "success" } else { "error" }, "timestamp": ts, "result": [{"functionResponse": {"id": call, "name": "run_shell_command", "response": {"output": output}}}]}]}), 2 + u64::from(step.thought.is_some()))?;
        }
        n += 1;
        let ts = log.tick(rng);
        log.record(json!({"id": format!("g-{n}"), "timestamp": ts, "type": "gemini", "content": turn.answer, "model": "gemini-2.5-pro", "tokens": {"input": 2000, "output": 100, "cached": 0, "thoughts": 0, "tool": 0, "total": 2100}}), 1)?;
    }
    log.finish()
}

/// Qwen Code: `projects/<slug>/chats/<session>.jsonl`, records chained by `parentUuid`.
pub(super) fn write_qwen(
    path: &Path,
    id: &str,
    started: i64,
    turns: u32,
    w: &Writer<'_>,
    rng: &mut Pcg64Mcg,
) -> std::io::Result<u64> {
    let script = Script::new(turns, w, rng);
    let mut log = Log::create(path, started)?;
    let mut parent: Option<String> = None;
    let mut next = |log: &mut Log, rng: &mut Pcg64Mcg, record: Value, events: u64| {
        let uuid = uuid(rng);
        let ts = log.tick(rng);
        let mut record = record;
        record["uuid"] = json!(uuid);
        record["parentUuid"] = json!(parent);
        record["sessionId"] = json!(id);
        record["timestamp"] = json!(ts);
        record["cwd"] = json!(format!("/home/dev/{}", w.repo));
        parent = Some(uuid);
        log.record(record, events)
    };
    for (t, turn) in script.turns.iter().enumerate() {
        next(
            &mut log,
            rng,
            json!({"type": "user", "message": {"role": "user", "parts": [{"text": turn.prompt}]}}),
            1,
        )?;
        for (s, step) in turn.steps.iter().enumerate() {
            let call = format!("call_{t}_{s}");
            let mut parts: Vec<Value> = step
                .thought
                .iter()
                .map(|t| json!({"text": t, "thought": true}))
                .collect();
            parts.push(json!({"functionCall": {"id": call, "name": "run_shell_command", "args": {"command": step.command}}}));
            next(
                &mut log,
                rng,
                json!({"type": "assistant", "model": "qwen3-coder-plus", "message": {"role": "model", "parts": parts}}),
                1 + u64::from(step.thought.is_some()),
            )?;
            let output = format!(
                "Command: {}\nOutput: {}\nExit Code: {}",
                step.command, step.output, step.exit
            );
            next(
                &mut log,
                rng,
                json!({"type": "tool_result", "message": {"role": "user", "parts": [{"functionResponse": {"id": call, "name": "run_shell_command", "response": {"output": output}}}]}, "toolCallResult": {"callId": call, "status": if step.exit == 0 { "success" } else { "error" }}}),
                1,
            )?;
        }
        next(
            &mut log,
            rng,
            json!({"type": "assistant", "model": "qwen3-coder-plus", "message": {"role": "model", "parts": [{"text": turn.answer}]}}),
            1,
        )?;
    }
    log.finish()
}

/// GitHub Copilot CLI: `session-state/<session>/events.jsonl`, one event per line.
pub(super) fn write_copilot(
    path: &Path,
    id: &str,
    started: i64,
    turns: u32,
    w: &Writer<'_>,
    rng: &mut Pcg64Mcg,
) -> std::io::Result<u64> {
    let script = Script::new(turns, w, rng);
    let mut log = Log::create(path, started)?;
    let mut n = 0u64;
    let mut event = |log: &mut Log, rng: &mut Pcg64Mcg, kind: &str, data: Value, events: u64| {
        n += 1;
        let ts = log.tick(rng);
        log.record(json!({"type": kind, "id": format!("e{n}"), "parentId": (n > 1).then(|| format!("e{}", n - 1)), "timestamp": ts, "data": data}), events)
    };
    event(
        &mut log,
        rng,
        "session.start",
        json!({"sessionId": id, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.40", "selectedModel": "claude-sonnet-4.5", "context": {"cwd": format!("/home/dev/{}", w.repo)}}),
        1,
    )?;
    for (t, turn) in script.turns.iter().enumerate() {
        event(
            &mut log,
            rng,
            "user.message",
            json!({"content": turn.prompt, "attachments": []}),
            1,
        )?;
        event(
            &mut log,
            rng,
            "assistant.turn_start",
            json!({"turnId": t.to_string()}),
            0,
        )?;
        for (s, step) in turn.steps.iter().enumerate() {
            let call = format!("call_{t}_{s}");
            if let Some(thought) = &step.thought {
                event(
                    &mut log,
                    rng,
                    "assistant.reasoning",
                    json!({"reasoningId": format!("r-{t}-{s}"), "content": thought}),
                    1,
                )?;
            }
            event(
                &mut log,
                rng,
                "assistant.message",
                json!({"messageId": format!("m-{t}-{s}"), "content": "", "toolRequests": [{"toolCallId": call, "name": "bash", "arguments": {"command": step.command}, "type": "function"}]}),
                1,
            )?;
            let content = format!("{}\n<exited with exit code {}>", step.output, step.exit);
            event(
                &mut log,
                rng,
                "tool.execution_complete",
                json!({"toolCallId": call, "success": step.exit == 0, "result": {"content": content}}),
                1,
            )?;
        }
        event(
            &mut log,
            rng,
            "assistant.message",
            json!({"messageId": format!("m-{t}"), "content": turn.answer, "toolRequests": []}),
            1,
        )?;
        event(
            &mut log,
            rng,
            "assistant.turn_end",
            json!({"turnId": t.to_string()}),
            0,
        )?;
    }
    log.finish()
}

/// Factory Droid: `sessions/<slug>/<session>.jsonl`, Anthropic-style messages.
pub(super) fn write_droid(
    path: &Path,
    id: &str,
    started: i64,
    turns: u32,
    w: &Writer<'_>,
    rng: &mut Pcg64Mcg,
) -> std::io::Result<u64> {
    let script = Script::new(turns, w, rng);
    let mut log = Log::create(path, started)?;
    log.record(json!({"type": "session_start", "id": id, "title": w.sentence_in(rng, 3..8), "owner": "dev", "version": 2, "cwd": format!("/home/dev/{}", w.repo)}), 1)?;
    let mut n = 0;
    let mut message = |log: &mut Log, rng: &mut Pcg64Mcg, message: Value, events: u64| {
        n += 1;
        let ts = log.tick(rng);
        log.record(
            json!({"type": "message", "id": format!("m-{n}"), "timestamp": ts, "message": message}),
            events,
        )
    };
    for (t, turn) in script.turns.iter().enumerate() {
        message(
            &mut log,
            rng,
            json!({"role": "user", "content": [{"type": "text", "text": turn.prompt}]}),
            1,
        )?;
        for (s, step) in turn.steps.iter().enumerate() {
            let call = format!("toolu_{t}_{s}");
            let mut content: Vec<Value> = step
                .thought
                .iter()
                .map(|t| json!({"type": "thinking", "thinking": t}))
                .collect();
            content.push(json!({"type": "tool_use", "id": call, "name": "Execute", "input": {"command": step.command}}));
            message(
                &mut log,
                rng,
                json!({"role": "assistant", "modelId": "claude-sonnet-4-5", "content": content}),
                1 + u64::from(step.thought.is_some()),
            )?;
            let output = format!("{}\n[Process exited with code {}]", step.output, step.exit);
            message(
                &mut log,
                rng,
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "is_error": step.exit != 0, "content": output}]}),
                1,
            )?;
        }
        message(
            &mut log,
            rng,
            json!({"role": "assistant", "modelId": "claude-sonnet-4-5", "content": [{"type": "text", "text": turn.answer}]}),
            1,
        )?;
        log.record(json!({"type": "agent_turn_outcome", "turnId": format!("m-{t}"), "reason": "completed", "resultKind": "text"}), 0)?;
    }
    log.finish()
}

/// OpenClaw: `agents/<agent>/sessions/<session>.jsonl`, a `session` header, then entries
/// chained by `parentId`.
pub(super) fn write_openclaw(
    path: &Path,
    id: &str,
    started: i64,
    turns: u32,
    w: &Writer<'_>,
    rng: &mut Pcg64Mcg,
) -> std::io::Result<u64> {
    let script = Script::new(turns, w, rng);
    let mut log = Log::create(path, started)?;
    log.record(json!({"type": "session", "version": 3, "id": id, "timestamp": iso(started), "cwd": format!("/home/dev/{}", w.repo)}), 0)?;
    let mut parent: Option<String> = None;
    let mut entry = |log: &mut Log, rng: &mut Pcg64Mcg, mut entry: Value, events: u64| {
        let id = hex(rng, 8);
        entry["id"] = json!(id);
        entry["parentId"] = json!(parent);
        entry["timestamp"] = json!(log.tick(rng));
        parent = Some(id);
        log.record(entry, events)
    };
    entry(
        &mut log,
        rng,
        json!({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"}),
        1,
    )?;
    let assistant = |content: Vec<Value>, stop: &str| json!({"type": "message", "message": {"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": {"input": 2000, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2100}, "stopReason": stop}});
    for (t, turn) in script.turns.iter().enumerate() {
        entry(
            &mut log,
            rng,
            json!({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": turn.prompt}]}}),
            1,
        )?;
        for (s, step) in turn.steps.iter().enumerate() {
            let call = format!("call_{t}_{s}");
            let mut content: Vec<Value> = step
                .thought
                .iter()
                .map(|t| json!({"type": "thinking", "thinking": t}))
                .collect();
            content.push(json!({"type": "toolCall", "id": call, "name": "exec", "arguments": {"command": step.command}}));
            entry(
                &mut log,
                rng,
                assistant(content, "toolUse"),
                1 + u64::from(step.thought.is_some()),
            )?;
            entry(
                &mut log,
                rng,
                json!({"type": "message", "message": {"role": "toolResult", "toolCallId": call, "toolName": "exec", "content": [{"type": "text", "text": step.output}], "details": {"status": "completed", "exitCode": step.exit}, "isError": step.exit != 0}}),
                1,
            )?;
        }
        entry(
            &mut log,
            rng,
            assistant(vec![json!({"type": "text", "text": turn.answer})], "stop"),
            1,
        )?;
    }
    log.finish()
}

/// Continue: `sessions/<session>.json`, the whole session in one document (the index beside it,
/// `sessions.json`, dates it: its entry is returned).
pub(super) fn write_continue(
    path: &Path,
    id: &str,
    started: i64,
    turns: u32,
    w: &Writer<'_>,
    rng: &mut Pcg64Mcg,
) -> std::io::Result<(u64, Value)> {
    let script = Script::new(turns, w, rng);
    let mut history = Vec::new();
    let mut events = 0u64;
    let mut at = started;
    for (t, turn) in script.turns.iter().enumerate() {
        history.push(json!({"message": {"id": uuid(rng), "role": "user", "content": [{"type": "text", "text": turn.prompt}]}, "contextItems": []}));
        events += 1;
        for (s, step) in turn.steps.iter().enumerate() {
            let call = json!({"id": format!("call_{t}_{s}"), "type": "function", "function": {"name": "run_terminal_command", "arguments": json!({"command": step.command}).to_string()}});
            let mut item = json!({"message": {"id": uuid(rng), "role": "assistant", "content": "", "toolCalls": [call]}, "contextItems": [],
                "toolCallStates": [{"toolCallId": format!("call_{t}_{s}"), "toolCall": call, "status": "done", "parsedArgs": {"command": step.command},
                                    "output": [{"name": "Terminal", "description": "Terminal command output", "content": step.output}]}]});
            events += 2;
            if let Some(thought) = &step.thought {
                at += rng.random_range(200..40_000);
                item["reasoning"] =
                    json!({"active": false, "text": thought, "startAt": at, "endAt": at + 900});
                events += 1;
            }
            history.push(item);
        }
        history.push(json!({"message": {"id": uuid(rng), "role": "assistant", "content": turn.answer}, "contextItems": [],
            "promptLogs": [{"modelTitle": "Claude Sonnet 4.5", "modelProvider": "anthropic", "prompt": "", "completion": turn.answer, "completionOptions": {"model": "claude-sonnet-4-5"}}]}));
        events += 1;
    }
    let title = w.sentence_in(rng, 3..8);
    let session = json!({"sessionId": id, "title": title, "workspaceDirectory": format!("file:///home/dev/{}", w.repo), "history": history, "mode": "agent", "chatModelTitle": "Claude Sonnet 4.5"});
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, serde_json::to_vec_pretty(&session)?)?;
    let entry = json!({"sessionId": id, "title": title, "dateCreated": started.to_string(), "workspaceDirectory": format!("file:///home/dev/{}", w.repo), "messageCount": script.turns.len()});
    Ok((events, entry))
}

/// Aider: one run of a `.aider.chat.history.md` (Markdown: `#### ` prompts, `> ` output,
/// answers with their reasoning between Aider's thinking tags).
pub(super) fn write_aider(
    path: &Path,
    started: i64,
    turns: u32,
    w: &Writer<'_>,
    rng: &mut Pcg64Mcg,
) -> std::io::Result<u64> {
    use std::fmt::Write as _;
    const TAG: &str = "thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b";
    let script = Script::new(turns, w, rng);
    let local = chrono::DateTime::from_timestamp_millis(started)
        .unwrap_or_default()
        .with_timezone(&chrono::Local)
        .format("%Y-%m-%d %H:%M:%S");
    let mut text = format!(
        "\n# aider chat started at {local}\n\n> Aider v0.86.2  \n> Model: gpt-4.1 with diff edit format  \n"
    );
    // The banner, then per turn: the prompt, the answer (and its reasoning), Aider's output.
    let mut events = 1;
    for turn in &script.turns {
        let _ = write!(text, "\n#### {}  \n", turn.prompt);
        let thought = turn.steps.iter().find_map(|s| s.thought.as_deref());
        text.push('\n');
        if let Some(thought) = thought {
            let _ = write!(text, "<{TAG}>\n{thought}\n</{TAG}>\n\n");
            events += 1;
        }
        let _ = write!(text, "{}\n\n", turn.answer);
        for step in &turn.steps {
            let _ = writeln!(
                text,
                "> Applied edit to {}  ",
                step.command.replace(' ', "_")
            );
        }
        let _ = writeln!(
            text,
            "> Tokens: {}k sent, {} received.  ",
            rng.random_range(1..40),
            rng.random_range(20..900)
        );
        events += 3;
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)?;
    Ok(events)
}

/// The SQLite stores: Cursor's `state.vscdb` and OpenCode's `opencode.db`, each holding many
/// sessions, written in one transaction per store.
pub(super) struct Stores {
    cursor: rusqlite::Connection,
    opencode: rusqlite::Connection,
}

fn sql(e: rusqlite::Error) -> std::io::Error {
    std::io::Error::other(e)
}

impl Stores {
    pub(super) fn create(cursor: &Path, opencode: &Path) -> std::io::Result<Self> {
        for path in [cursor, opencode] {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
        }
        let cursor = rusqlite::Connection::open(cursor).map_err(sql)?;
        cursor
            .execute_batch(
                "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
                 CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
                 BEGIN;",
            )
            .map_err(sql)?;
        let opencode = rusqlite::Connection::open(opencode).map_err(sql)?;
        // OpenCode's tables and indexes as its migrations create them.
        opencode
            .execute_batch(
                "CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, vcs TEXT, name TEXT, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
                 CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
                 CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
                 CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
                 CREATE INDEX session_project_idx ON session (project_id);
                 CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
                 CREATE INDEX part_message_id_id_idx ON part (message_id, id);
                 CREATE INDEX part_session_idx ON part (session_id);
                 INSERT INTO project VALUES ('bench', '/home/dev/bench', 'git', 'bench', 0, 0);
                 BEGIN;",
            )
            .map_err(sql)?;
        Ok(Self { cursor, opencode })
    }

    /// One Cursor conversation: its bubbles, then the composer document listing them.
    pub(super) fn write_cursor(
        &self,
        id: &str,
        started: i64,
        turns: u32,
        w: &Writer<'_>,
        rng: &mut Pcg64Mcg,
    ) -> std::io::Result<u64> {
        let script = Script::new(turns, w, rng);
        let mut at = started;
        let mut headers = Vec::new();
        let mut events = 1u64;
        let mut bubble = |rng: &mut Pcg64Mcg, kind: u8, mut value: Value, count: u64| {
            at += rng.random_range(200..40_000);
            let bubble = format!("b{}", headers.len());
            value["_v"] = json!(3);
            value["type"] = json!(kind);
            value["bubbleId"] = json!(bubble);
            value["createdAt"] = json!(iso(at));
            let text = value.to_string();
            events += count;
            headers.push(json!({"bubbleId": bubble, "type": kind}));
            self.cursor
                .execute(
                    "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
                    (format!("bubbleId:{id}:{bubble}"), text),
                )
                .map(drop)
                .map_err(sql)
        };
        for (t, turn) in script.turns.iter().enumerate() {
            bubble(rng, 1, json!({"text": turn.prompt}), 1)?;
            for (s, step) in turn.steps.iter().enumerate() {
                if let Some(thought) = &step.thought {
                    bubble(
                        rng,
                        2,
                        json!({"text": "", "thinking": {"text": thought}}),
                        1,
                    )?;
                }
                let args = json!({"command": step.command}).to_string();
                let result = json!({"output": step.output, "exitCodeV2": step.exit}).to_string();
                bubble(
                    rng,
                    2,
                    json!({"capabilityType": 15, "toolFormerData": {"tool": 15, "name": "run_terminal_command_v2", "toolCallId": format!("toolu_{t}_{s}"), "status": "completed", "rawArgs": args, "params": args, "result": result}}),
                    2,
                )?;
            }
            bubble(
                rng,
                2,
                json!({"text": turn.answer, "modelInfo": {"modelName": "claude-4.5-sonnet"}}),
                1,
            )?;
        }
        let composer = json!({"_v": 18, "composerId": id, "name": w.sentence_in(rng, 3..8), "createdAt": started, "lastUpdatedAt": at, "unifiedMode": "agent", "status": "completed", "fullConversationHeadersOnly": headers}).to_string();
        self.cursor
            .execute(
                "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
                (format!("composerData:{id}"), composer),
            )
            .map_err(sql)?;
        Ok(events)
    }

    /// One OpenCode session: a message per prompt and per assistant step, with its parts.
    pub(super) fn write_opencode(
        &self,
        index: u64,
        started: i64,
        turns: u32,
        w: &Writer<'_>,
        rng: &mut Pcg64Mcg,
    ) -> std::io::Result<u64> {
        let script = Script::new(turns, w, rng);
        let session = format!("ses_{index:012x}{}", hex(rng, 14));
        let mut at = started;
        let mut events = 0u64;
        let mut messages = 0u64;
        let mut message = |rng: &mut Pcg64Mcg, mut info: Value, parts: Vec<(Value, u64)>| {
            at += rng.random_range(200..40_000);
            info["time"] = if info["role"] == "user" {
                json!({"created": at})
            } else {
                json!({"created": at, "completed": at + 1000})
            };
            messages += 1;
            let id = format!("msg_{index:012x}{messages:06}");
            let info = info.to_string();
            self.opencode
                .execute(
                    "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
                    (&id, &session, at, info),
                )
                .map_err(sql)?;
            for (p, (part, count)) in parts.into_iter().enumerate() {
                let part = part.to_string();
                events += count;
                self.opencode
                    .execute(
                        "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                        (
                            format!("prt_{index:012x}{messages:06}{p:03}"),
                            &id,
                            &session,
                            at,
                            part,
                        ),
                    )
                    .map_err(sql)?;
            }
            Ok::<_, std::io::Error>(())
        };
        for (t, turn) in script.turns.iter().enumerate() {
            message(
                rng,
                json!({"role": "user", "agent": "build"}),
                vec![(json!({"type": "text", "text": turn.prompt}), 1)],
            )?;
            for (s, step) in turn.steps.iter().enumerate() {
                let mut parts = vec![(json!({"type": "step-start"}), 0)];
                if let Some(thought) = &step.thought {
                    parts.push((json!({"type": "reasoning", "text": thought}), 1));
                }
                parts.push((json!({"type": "tool", "callID": format!("toolu_{index}_{t}_{s}"), "tool": "bash", "state": {"status": "completed", "input": {"command": step.command}, "output": step.output, "title": step.command, "metadata": {"exit": step.exit}}}), 2));
                parts.push((json!({"type": "step-finish", "reason": "tool-calls"}), 0));
                message(
                    rng,
                    json!({"role": "assistant", "modelID": "claude-sonnet-4", "providerID": "anthropic", "mode": "build", "finish": "tool-calls"}),
                    parts,
                )?;
            }
            message(
                rng,
                json!({"role": "assistant", "modelID": "claude-sonnet-4", "providerID": "anthropic", "mode": "build", "finish": "stop"}),
                vec![
                    (json!({"type": "step-start"}), 0),
                    (json!({"type": "text", "text": turn.answer}), 1),
                    (json!({"type": "step-finish", "reason": "stop"}), 0),
                ],
            )?;
        }
        self.opencode
            .execute(
                "INSERT INTO session VALUES (?1, 'bench', NULL, ?2, '/home/dev/bench', ?3, '1.2.10', ?4, ?5)",
                (&session, format!("s{index}"), w.sentence_in(rng, 3..8), started, at),
            )
            .map_err(sql)?;
        Ok(events)
    }

    /// Commits both stores.
    pub(super) fn finish(self) -> std::io::Result<()> {
        self.cursor.execute_batch("COMMIT").map_err(sql)?;
        self.opencode.execute_batch("COMMIT").map_err(sql)
    }
}
