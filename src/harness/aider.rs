//! Aider's chat history, `.aider.chat.history.md` at the root of each repository it ran in: one
//! Markdown file, appended to by every run, holding many sessions.
//!
//! Each run starts with `# aider chat started at <local time>`. Then `#### ` lines are what went
//! to the model as the person's message (every line of a multi-line prompt is prefixed), `> `
//! lines are Aider's own output (banner, edits applied, commits, token counts, errors: only the
//! first line of a multi-line message is marked), and everything else is the model's answer,
//! with its reasoning between `<thinking-content-…>` tags. The file is read as a store: each
//! run is a session of its own (`<file>#<id>`), rendered as one record per block, so the run
//! still being written is read on as it grows and the others are never read again. A run that
//! never got a prompt (Aider started and quit) is no session.
//!
//! The history dates only the start of a run. What the person typed is dated by
//! `.aider.input.history` beside it, when it is there: each entry a `# <local time>` line and the
//! input's lines prefixed `+`. A prompt takes the time of the entry that typed it (a prompt sent
//! on by a command, `/ask …`, the command's); what follows it shows that time. Local times are
//! converted with this machine's time zone (where the log is read, or pushed from).

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::adapter::AdapterOutput;
use super::draft::Draft;
use super::identity::Identity;
use super::rendered::{self, Rendering, invalid};
use super::{DefaultSource, LogFormat, ReadContext};
use crate::vocab::EventType;

/// The file name Aider writes its chat history to.
const FILE_NAME: &str = ".aider.chat.history.md";
/// The file beside it where Aider keeps what was typed, each entry dated.
const INPUT_HISTORY: &str = ".aider.input.history";
/// What starts each run.
const HEADER: &str = "# aider chat started at ";
/// The tag Aider wraps a model's reasoning in (its `REASONING_TAG`).
const REASONING_TAG: &str = "thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b";

/// What a line of the history is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// `#### `: sent as the person's message.
    User,
    /// `> `: Aider's own output.
    Tool,
    /// Anything else: the model's answer.
    Assistant,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Tool => "tool",
            Self::Assistant => "assistant",
        }
    }
}

/// One run of Aider as the file holds it.
struct Run<'a> {
    /// The header's local time, `YYYY-MM-DD HH:MM:SS`.
    started: &'a str,
    /// The run's lines after its header (whole lines only).
    lines: Vec<&'a str>,
    /// Bytes of the file the run takes.
    size: u64,
}

impl Run<'_> {
    /// The session ID: the start, and a hash of the first prompt's first line, so that two
    /// repositories' runs started in the same second stay two sessions wherever the file lies.
    fn id(&self) -> Option<String> {
        let first = self.lines.iter().find_map(|line| prompt_line(line))?;
        let hash = xxhash_rust::xxh3::xxh3_64(first.trim().as_bytes());
        Some(format!(
            "{}-{:08x}",
            self.started.replace([' ', ':'], "-"),
            hash >> 32
        ))
    }
}

/// The runs of a history, oldest first. Lines before the first header (a history from before
/// Aider wrote headers) belong to no run.
fn runs(text: &str) -> Vec<Run<'_>> {
    // Only whole lines: the last may still be being written.
    let whole = &text[..text.rfind('\n').map_or(0, |at| at + 1)];
    let mut runs: Vec<Run<'_>> = Vec::new();
    for line in whole.split_inclusive('\n') {
        let size = line.len() as u64;
        let line = line.trim_end_matches(['\n', '\r']);
        match line.strip_prefix(HEADER) {
            Some(started) if is_local_time(started) => runs.push(Run {
                started,
                lines: Vec::new(),
                size,
            }),
            _ => {
                if let Some(run) = runs.last_mut() {
                    run.lines.push(line);
                    run.size += size;
                }
            }
        }
    }
    runs
}

/// `YYYY-MM-DD HH:MM:SS`.
fn is_local_time(text: &str) -> bool {
    text.len() == 19
        && text.char_indices().all(|(i, c)| match i {
            4 | 7 => c == '-',
            10 => c == ' ',
            13 | 16 => c == ':',
            _ => c.is_ascii_digit(),
        })
}

/// A local time of this machine's time zone (`YYYY-MM-DD HH:MM:SS`, with or without a
/// fraction of a second), in ms since the epoch.
fn local_ms(text: &str) -> Option<i64> {
    let naive = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").ok()?;
    let local = naive.and_local_timezone(chrono::Local).earliest()?;
    Some(local.timestamp_millis())
}

/// The text of a prompt line (`#### …`), if it is one.
fn prompt_line(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("####")?;
    match rest.strip_prefix(' ') {
        Some(text) => Some(text),
        None if rest.trim().is_empty() => Some(""),
        None => None,
    }
}

/// A line's role and its text without the marker and Markdown's trailing hard break.
fn classify(line: &str) -> (Role, &str) {
    if let Some(text) = prompt_line(line) {
        return (Role::User, text.strip_suffix("  ").unwrap_or(text));
    }
    if let Some(rest) = line.strip_prefix('>')
        && (rest.is_empty() || rest.starts_with(' '))
    {
        let text = rest.strip_prefix(' ').unwrap_or(rest);
        return (
            Role::Tool,
            text.strip_suffix("  ").unwrap_or(text).trim_end(),
        );
    }
    (Role::Assistant, line)
}

/// The runs that got a prompt, each with its session ID.
fn named_runs(text: &str) -> Vec<(String, Run<'_>)> {
    let mut named: Vec<(String, Run<'_>)> = Vec::new();
    for run in runs(text) {
        let Some(id) = run.id() else { continue };
        // Two runs with the same start and first prompt: the later one is a session of its own.
        let taken = named.iter().filter(|(s, _)| s.starts_with(&id)).count();
        let id = if taken == 0 {
            id
        } else {
            format!("{id}-{}", taken + 1)
        };
        named.push((id, run));
    }
    named
}

/// The sessions of a history file: each run that got a prompt, with its size.
pub(crate) fn sessions(path: &Path) -> io::Result<Vec<(String, u64)>> {
    let bytes = rendered::read_source(path)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(named_runs(&text)
        .into_iter()
        .map(|(id, run)| (id, run.size))
        .collect())
}

/// Renders one run of a history (`.aider.chat.history.md#<id>`): its header, then one record
/// per block of lines of one role.
pub(crate) fn render(path: &Path) -> io::Result<Vec<u8>> {
    let (file, session) =
        super::store_session(path).ok_or_else(|| invalid("not a run of an Aider history"))?;
    let bytes = rendered::read_source(&file)?;
    let text = String::from_utf8_lossy(&bytes);
    let (_, run) = named_runs(&text)
        .into_iter()
        .find(|(id, _)| id == session)
        .ok_or_else(|| invalid(format!("no run {session} in the history")))?;
    let mut out = Rendering::default();
    let mut header = Map::new();
    header.insert("id".into(), Value::String(session.to_owned()));
    header.insert("local_time".into(), Value::String(run.started.to_owned()));
    if let Some(ms) = local_ms(run.started) {
        header.insert("started_at".into(), Value::from(ms));
    }
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        header.insert(
            "cwd".into(),
            Value::String(dir.to_string_lossy().into_owned()),
        );
    }
    out.push("session", header);
    let typed = file
        .parent()
        .map(|dir| typed_inputs(&dir.join(INPUT_HISTORY)))
        .unwrap_or_default();
    let mut typed = TypedInputs::after(&typed, run.started);
    for (role, text) in blocks(&run.lines) {
        let mut fields = Map::new();
        if role == Role::User
            && let Some(at) = typed.dating(&text)
        {
            fields.insert("local_time".into(), Value::String(at.to_owned()));
            if let Some(ms) = local_ms(at) {
                fields.insert("time".into(), Value::from(ms));
            }
        }
        fields.insert("text".into(), Value::String(text));
        out.push(role.as_str(), fields);
    }
    Ok(out.into_bytes())
}

/// The entries of an input history: (local time, what was typed). None when there is none or
/// it cannot be read: the prompts are then dated by their run.
fn typed_inputs(path: &Path) -> Vec<(String, String)> {
    let Ok(bytes) = rendered::read_source(path) else {
        return Vec::new();
    };
    let mut entries: Vec<(String, Vec<String>)> = Vec::new();
    for line in String::from_utf8_lossy(&bytes).lines() {
        if let Some(at) = line.strip_prefix("# ").filter(|at| local_ms(at).is_some()) {
            entries.push((at.to_owned(), Vec::new()));
        } else if let (Some(text), Some((_, lines))) = (line.strip_prefix('+'), entries.last_mut())
        {
            lines.push(text.to_owned());
        }
    }
    entries
        .into_iter()
        .map(|(at, lines)| (at, lines.join("\n").trim().to_owned()))
        .collect()
}

/// A run's prompts matched, in order, with the inputs typed since it started.
struct TypedInputs<'a> {
    entries: &'a [(String, String)],
    next: usize,
}

impl<'a> TypedInputs<'a> {
    /// The inputs typed at or after `started` (local times of one format compare as text).
    fn after(entries: &'a [(String, String)], started: &str) -> Self {
        let first = entries.partition_point(|(at, _)| at.as_str() < started);
        Self {
            entries: &entries[first..],
            next: 0,
        }
    }

    /// When the prompt `text` was typed: the next entry that is it, or the command just matched
    /// that sent it on (`/ask <text>`).
    fn dating(&mut self, text: &str) -> Option<&'a str> {
        let text = text.trim();
        let sent_on = |typed: &str| {
            typed
                .split_once(' ')
                .is_some_and(|(command, rest)| command.starts_with('/') && rest.trim() == text)
        };
        if let Some((at, typed)) = self.next.checked_sub(1).map(|i| &self.entries[i])
            && sent_on(typed)
        {
            return Some(at);
        }
        let found = self.entries[self.next..]
            .iter()
            .position(|(_, typed)| typed == text)?;
        self.next += found + 1;
        Some(&self.entries[self.next - 1].0)
    }
}

/// The run's lines as blocks of one role. Aider writes a blank line before each prompt (a
/// multi-line prompt has none inside it), so a blank line ends a prompt or a block of its own
/// output; inside an answer blank lines are paragraphs.
fn blocks(lines: &[&str]) -> Vec<(Role, String)> {
    let mut out: Vec<(Role, String)> = Vec::new();
    let mut current: Option<(Role, Vec<&str>)> = None;
    let flush = |current: &mut Option<(Role, Vec<&str>)>, out: &mut Vec<(Role, String)>| {
        if let Some((role, lines)) = current.take() {
            let text = lines.join("\n").trim().to_owned();
            if !text.is_empty() {
                out.push((role, text));
            }
        }
    };
    for line in lines {
        if line.trim().is_empty() {
            match &mut current {
                Some((Role::Assistant, lines)) => lines.push(""),
                _ => flush(&mut current, &mut out),
            }
            continue;
        }
        let (role, text) = classify(line);
        match &mut current {
            Some((open, lines)) if *open == role => lines.push(text),
            _ => {
                flush(&mut current, &mut out);
                current = Some((role, vec![text]));
            }
        }
    }
    flush(&mut current, &mut out);
    out
}

/// Adapter state carried across runs in the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct AiderState {
    /// The model the banner named (`> Model: …`), for the answers that follow.
    model: String,
}

/// Reads one record of a rendered Aider run.
pub(crate) fn read(
    state: &mut AiderState,
    _cx: &ReadContext<'_>,
    record: &Value,
    raw: &str,
    out: &mut AdapterOutput,
) {
    let text = record
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match record.get("record").and_then(Value::as_str).unwrap_or("") {
        "session" => {
            out.started_at = record.get("started_at").and_then(Value::as_i64);
            out.cwd = record.get("cwd").and_then(Value::as_str).map(str::to_owned);
        }
        "user" => out.drafts.push(prompt(
            text,
            record.get("time").and_then(Value::as_i64),
            raw,
        )),
        "tool" => {
            if let Some(model) = banner_model(&text) {
                state.model = model.to_owned();
            }
            let mut draft = Draft::new(EventType::Runtime, None, text, raw.to_owned());
            draft.bookkeeping = true;
            out.drafts.push(draft);
        }
        "assistant" => answer(&state.model, &text, raw, out),
        _ => out.drafts.push(Draft::new(
            EventType::Unknown,
            None,
            String::new(),
            raw.to_owned(),
        )),
    }
}

/// A `#### ` block: the person's prompt, unless it is a command run by Aider itself (`/add`,
/// `/run`, …) or a confirmation answered from a remembered choice.
fn prompt(text: String, ts: Option<i64>, raw: &str) -> Draft {
    let command = text.starts_with('/');
    let confirmation = text.contains("(Y)es/(N)o");
    if command || confirmation {
        return Draft::bookkeeping(ts, text, raw.to_owned());
    }
    let mut draft = Draft::new(EventType::UserInput, ts, text, raw.to_owned());
    draft.starts_turn = true;
    draft
}

/// The model's answer, and its reasoning where the answer holds it.
fn answer(model: &str, text: &str, raw: &str, out: &mut AdapterOutput) {
    let open = format!("<{REASONING_TAG}>");
    let close = format!("</{REASONING_TAG}>");
    let mut rest = text;
    let mut answer = String::new();
    while let Some(start) = rest.find(&open) {
        answer.push_str(&rest[..start]);
        let inner = &rest[start + open.len()..];
        let (thought, after) = match inner.find(&close) {
            Some(end) => (&inner[..end], &inner[end + close.len()..]),
            None => (inner, ""),
        };
        if !thought.trim().is_empty() {
            let mut draft = Draft::new(
                EventType::Reasoning,
                None,
                thought.trim().to_owned(),
                raw.to_owned(),
            );
            draft.model = model.to_owned();
            out.drafts.push(draft);
        }
        rest = after;
    }
    answer.push_str(rest);
    let answer = answer.trim();
    if answer.is_empty() {
        return;
    }
    let mut draft = Draft::new(
        EventType::AssistantResponse,
        None,
        answer.to_owned(),
        raw.to_owned(),
    );
    draft.model = model.to_owned();
    // Aider logs no stop reasons: an answer ends its turn when only Aider's own output follows.
    draft.may_end_turn = true;
    out.drafts.push(draft);
}

/// The model a banner line names: `Model: gpt-4o with diff edit format`, `Main model: …`.
fn banner_model(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("Model: ")
        .or_else(|| text.strip_prefix("Main model: "))?;
    rest.split_whitespace().next()
}

/// Where Aider keeps its history and how it is recognised.
pub(crate) struct Format;

impl LogFormat for Format {
    /// Aider writes its history at the root of each repository: the home directory and the
    /// repositories up to three levels below it (add a source for deeper ones).
    fn default_sources(&self) -> &'static [DefaultSource] {
        &[
            DefaultSource {
                name: "aider",
                glob: "~/.aider.chat.history.md",
            },
            DefaultSource {
                name: "aider",
                glob: "~/*/.aider.chat.history.md",
            },
            DefaultSource {
                name: "aider",
                glob: "~/*/*/.aider.chat.history.md",
            },
            DefaultSource {
                name: "aider",
                glob: "~/*/*/*/.aider.chat.history.md",
            },
        ]
    }

    fn scan_names(&self) -> &'static [&'static str] {
        &[FILE_NAME]
    }

    fn is_log_name(&self, path: &Path) -> bool {
        self.is_store(path)
    }

    /// The history file, also under a prefix (`work.aider.chat.history.md`).
    fn is_store(&self, path: &Path) -> bool {
        path.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|name| name.ends_with(FILE_NAME))
    }

    fn store_sessions(&self, path: &Path) -> io::Result<Vec<(String, u64)>> {
        sessions(path)
    }

    fn is_rendered(&self, path: &Path) -> bool {
        super::store_session(path).is_some()
    }

    fn render(&self, path: &Path) -> io::Result<Vec<u8>> {
        render(path)
    }

    fn identity_from_record(&self, record: &Map<String, Value>) -> Option<Identity> {
        (record.get("record").and_then(Value::as_str) == Some("session"))
            .then(|| super::identity::id_text(record.get("id")))
            .flatten()
            .map(|id| Identity::main(&id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HISTORY: &str = "\n# aider chat started at 2026-02-03 09:15:00\n\n\
> Aider v0.86.2  \n> Model: gpt-4o with diff edit format  \n\n\
# aider chat started at 2026-02-03 09:20:00\n\n\
> Aider v0.86.2  \n> Model: o3-mini with diff edit format  \n\n\
#### Fix the flaky retry test  \n#### in tests/net.py  \n\n\
<thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>\nThe sleep is too short.\n\
</thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>\n\n\
Raise the backoff.\n\nDone.\n\n\
> Applied edit to tests/net.py  \n> Tokens: 2.1k sent, 80 received.  \n\n\
#### /ask why?  \n\n#### why?  \n\n";

    #[test]
    fn test_a_run_without_a_prompt_is_no_session_and_runs_are_named_by_start_and_prompt() {
        let all = runs(HISTORY);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].id(), None);
        let id = all[1].id().unwrap();
        assert!(id.starts_with("2026-02-03-09-20-00-"), "{id}");
        // Sizes add up to the bytes after the first line (a blank line before any header).
        assert_eq!(all[0].size + all[1].size, HISTORY.len() as u64 - 1);
    }

    #[test]
    fn test_blocks_split_by_role_and_strip_the_markers() {
        let run = &runs(HISTORY)[1];
        let blocks = blocks(&run.lines);
        let roles: Vec<Role> = blocks.iter().map(|(r, _)| *r).collect();
        assert_eq!(
            roles,
            [
                Role::Tool,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::User,
                Role::User
            ]
        );
        assert_eq!(blocks[1].1, "Fix the flaky retry test\nin tests/net.py");
        assert!(blocks[2].1.ends_with("Raise the backoff.\n\nDone."));
        assert_eq!(blocks[4].1, "/ask why?");
        assert_eq!(blocks[5].1, "why?");
    }

    #[test]
    fn test_answers_give_their_reasoning_and_commands_are_not_prompts() {
        let mut out = AdapterOutput::default();
        answer(
            "o3-mini",
            &format!("<{REASONING_TAG}>\nthink\n</{REASONING_TAG}>\n\nanswer"),
            "{}",
            &mut out,
        );
        let types: Vec<EventType> = out.drafts.iter().map(|d| d.event_type).collect();
        assert_eq!(types, [EventType::Reasoning, EventType::AssistantResponse]);
        assert_eq!(out.drafts[1].text, "answer");
        assert!(out.drafts[1].may_end_turn);
        assert_eq!(out.drafts[1].model, "o3-mini");
        assert!(!prompt("/add x.py".into(), None, "{}").starts_turn);
        let confirmation = "Add file to the chat? (Y)es/(N)o [Yes]: skip";
        assert!(!prompt(confirmation.into(), None, "{}").starts_turn);
        assert!(prompt("???".into(), Some(1), "{}").starts_turn);
        assert_eq!(
            banner_model("Main model: claude-3-7 with diff"),
            Some("claude-3-7")
        );
    }

    #[test]
    fn test_headers_are_local_times() {
        assert!(is_local_time("2026-02-03 09:20:00"));
        assert!(!is_local_time("2026-02-03T09:20:00"));
        assert!(local_ms("2026-02-03 09:20:00").is_some());
        assert_eq!(
            local_ms("2026-02-03 09:20:00.250000"),
            local_ms("2026-02-03 09:20:00").map(|ms| ms + 250)
        );
    }

    #[test]
    fn test_prompts_take_the_time_they_were_typed() {
        let dir = std::env::temp_dir().join(format!("moraine-aider-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join(INPUT_HISTORY);
        std::fs::write(
            &input,
            "\n# 2026-02-03 09:10:00.000000\n+Fix the flaky retry test\n\
             \n# 2026-02-03 09:21:00.500000\n+Fix the flaky retry test\n+in tests/net.py\n\
             \n# 2026-02-03 09:22:00.000000\n+/ask why?\n",
        )
        .unwrap();
        let typed = typed_inputs(&input);
        assert_eq!(typed.len(), 3);
        // An entry typed before the run belongs to an earlier one.
        let mut run = TypedInputs::after(&typed, "2026-02-03 09:20:00");
        let multi_line = "Fix the flaky retry test\nin tests/net.py";
        assert_eq!(run.dating(multi_line), Some("2026-02-03 09:21:00.500000"));
        assert_eq!(run.dating("/ask why?"), Some("2026-02-03 09:22:00.000000"));
        // Sent on by the command just typed.
        assert_eq!(run.dating("why?"), Some("2026-02-03 09:22:00.000000"));
        // A block nobody typed (a remembered confirmation) is not dated.
        assert_eq!(
            run.dating("Add file to the chat? (Y)es/(N)o [Yes]: skip"),
            None
        );

        std::fs::write(dir.join(FILE_NAME), HISTORY).unwrap();
        let id = runs(HISTORY)[1].id().unwrap();
        let rendered = render(&rendered::store_session_path(&dir.join(FILE_NAME), &id)).unwrap();
        let text = String::from_utf8(rendered).unwrap();
        let users: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["record"] == "user")
            .collect();
        let times: Vec<Option<i64>> = users.iter().map(|r| r["time"].as_i64()).collect();
        let at = |t| local_ms(t);
        assert_eq!(
            times,
            [
                at("2026-02-03 09:21:00.5"),
                at("2026-02-03 09:22:00"),
                at("2026-02-03 09:22:00")
            ]
        );
        // Without the input history, prompts are dated by their run.
        std::fs::remove_file(&input).unwrap();
        let rendered = render(&rendered::store_session_path(&dir.join(FILE_NAME), &id)).unwrap();
        assert!(!String::from_utf8(rendered).unwrap().contains("\"time\""));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
