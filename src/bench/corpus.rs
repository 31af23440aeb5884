//! A deterministic, realistic corpus of agent session logs for the benchmark, written in both
//! log formats so it loads through the product's own ingest path.
//!
//! Shape (after the measurements in the performance research): sessions of a few to a thousand
//! turns, interleaved in time; events of every type with agent-like proportions; words from a
//! Zipf-distributed vocabulary of English, code identifiers, paths and near-unique hex tokens,
//! with per-session topic words; short chat messages and long-tailed tool outputs.

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use rand_pcg::Pcg64Mcg;
use serde_json::{Value, json};

use super::harness_logs::{self, Stores};
use super::words::{Log, Vocabulary, Writer, hex, iso, uuid};
use crate::vocab::Harness;

/// What to generate.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    /// Approximate number of events to write.
    pub events: u64,
    pub seed: u64,
    /// The harnesses sessions are written for, in turn (a harness listed twice gets twice the
    /// sessions). The first two sessions, the landmarks, are always Codex and Claude Code.
    pub harnesses: Vec<Harness>,
}

/// The default mix: Codex and Claude Code two shares of the sessions each, every other harness
/// one (Cursor's and OpenCode's in their SQLite stores).
pub(crate) const MIX: &[Harness] = &[
    Harness::Codex,
    Harness::ClaudeCode,
    Harness::GeminiCli,
    Harness::Cursor,
    Harness::OpenCode,
    Harness::OpenClaw,
    Harness::Codex,
    Harness::ClaudeCode,
    Harness::CopilotCli,
    Harness::QwenCode,
    Harness::Droid,
    Harness::Aider,
    Harness::Continue,
];

/// What was generated.
#[derive(Debug, Clone)]
pub(crate) struct Generated {
    pub dir: PathBuf,
    pub files: usize,
    pub events: u64,
    pub bytes: u64,
    /// Sessions written per harness.
    pub sessions: Vec<(Harness, u64)>,
    /// Native session ids of the sessions with exactly 100 and 1000 turns.
    pub hundred_turns: (Harness, String),
    pub thousand_turns: (Harness, String),
}

impl Generated {
    /// Counts `n` more sessions of `harness`.
    fn count_sessions(&mut self, harness: Harness, n: u64) {
        match self.sessions.iter_mut().find(|(h, _)| *h == harness) {
            Some((_, total)) => *total += n,
            None => self.sessions.push((harness, n)),
        }
    }
    /// Adds a later chunk of the same corpus (its landmarks are in the first).
    pub(crate) fn absorb(&mut self, chunk: Self) {
        self.files += chunk.files;
        self.events += chunk.events;
        self.bytes += chunk.bytes;
        for (harness, n) in chunk.sessions {
            self.count_sessions(harness, n);
        }
    }

    /// The mix, as `harness n, …`.
    pub(crate) fn mix(&self) -> String {
        self.sessions
            .iter()
            .map(|(h, n)| format!("{} {n}", h.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Generates about `spec.events` events into `dir` (replacing its contents).
pub(crate) fn generate(spec: &Spec, dir: &Path) -> std::io::Result<Generated> {
    let mut generator = Generator::new(spec.clone());
    generator.chunk(dir, spec.events)
}

/// Writes a corpus a chunk at a time (each chunk a directory of its own), so that a corpus
/// larger than the disk can hold is ingested chunk by chunk. Each session draws from a
/// generator seeded by the corpus seed and its index: chunks of any size make the same corpus.
pub(crate) struct Generator {
    spec: Spec,
    vocabulary: Vocabulary,
    /// Sessions written so far.
    index: u64,
    /// Events written so far.
    events: u64,
}

impl Generator {
    pub(crate) fn new(spec: Spec) -> Self {
        let mut rng = Pcg64Mcg::seed_from_u64(spec.seed);
        let vocabulary = Vocabulary::new(&mut rng);
        Self {
            spec,
            vocabulary,
            index: 0,
            events: 0,
        }
    }

    /// Whether the corpus has its `spec.events` events.
    pub(crate) fn done(&self) -> bool {
        self.events >= self.spec.events
    }

    /// Writes the next sessions into `dir` (replacing its contents), until the chunk holds
    /// `max_events` events or the corpus is complete. The landmarks (the sessions of exactly
    /// 1000 and 100 turns) are in the first chunk.
    pub(crate) fn chunk(&mut self, dir: &Path, max_events: u64) -> std::io::Result<Generated> {
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        std::fs::create_dir_all(dir)?;
        let turns_per_session = LogNormal::new(2.2, 0.9).expect("valid lognormal");
        let start_2025: i64 = 1_735_689_600_000;
        let year_ms: i64 = 365 * 24 * 3600 * 1000;
        let mut generated = Generated {
            dir: dir.to_owned(),
            files: 0,
            events: 0,
            bytes: 0,
            sessions: Vec::new(),
            hundred_turns: (Harness::Codex, String::new()),
            thousand_turns: (Harness::Codex, String::new()),
        };
        let rotation = if self.spec.harnesses.is_empty() {
            MIX
        } else {
            &self.spec.harnesses[..]
        };
        let cursor_store = dir.join("cursor/User/globalStorage/state.vscdb");
        let opencode_store = dir.join("opencode/opencode.db");
        let mut stores: Option<Stores> = None;
        // Continue's index of the sessions written (it dates them).
        let mut continue_index: Vec<Value> = Vec::new();
        let vocabulary = &self.vocabulary;
        while generated.events < max_events && self.events < self.spec.events {
            let index = self.index;
            let mut rng = Pcg64Mcg::seed_from_u64(
                self.spec.seed ^ index.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            );
            let rng = &mut rng;
            // The first two sessions are the landmarks open(session) is measured on.
            let (turns, harness) = match index {
                0 => (1000, Harness::Codex),
                1 => (100, Harness::ClaudeCode),
                _ => (
                    (turns_per_session.sample(rng) as u32).clamp(1, 250),
                    rotation[(index as usize - 2) % rotation.len()],
                ),
            };
            let topic: Vec<String> = (0..30)
                .map(|_| vocabulary.words[rng.random_range(200..20_000)].clone())
                .collect();
            let writer = Writer {
                vocabulary,
                topic,
                repo: format!("src/{}", vocabulary.words[rng.random_range(200..3000)]),
            };
            let w = &writer;
            let id = uuid(rng);
            let started = start_2025 + rng.random_range(0..year_ms);
            let stamp = iso(started).replace([':', '.'], "-");
            let file = |relative: String| dir.join(relative);
            let (path, events) = match harness {
                Harness::Codex => {
                    let path = file(format!("codex/rollout-{}-{id}.jsonl", &stamp[..19]));
                    let events = write_codex(&path, &id, started, turns, w, rng)?;
                    (Some(path), events)
                }
                Harness::ClaudeCode => {
                    let path = file(format!("claude/-bench-project/{id}.jsonl"));
                    let events = write_claude(&path, &id, started, turns, w, rng)?;
                    (Some(path), events)
                }
                Harness::GeminiCli => {
                    let name = format!("session-{}-{}.jsonl", &stamp[..16], &id[..8]);
                    let path = file(format!("gemini/tmp/bench/chats/{name}"));
                    let events = harness_logs::write_gemini(&path, &id, started, turns, w, rng)?;
                    (Some(path), events)
                }
                Harness::QwenCode => {
                    let path = file(format!("qwen/projects/-bench-project/chats/{id}.jsonl"));
                    let events = harness_logs::write_qwen(&path, &id, started, turns, w, rng)?;
                    (Some(path), events)
                }
                Harness::CopilotCli => {
                    let path = file(format!("copilot/session-state/{id}/events.jsonl"));
                    let events = harness_logs::write_copilot(&path, &id, started, turns, w, rng)?;
                    (Some(path), events)
                }
                Harness::Droid => {
                    let path = file(format!("droid/sessions/-bench-project/{id}.jsonl"));
                    let events = harness_logs::write_droid(&path, &id, started, turns, w, rng)?;
                    (Some(path), events)
                }
                Harness::Aider => {
                    let path = file(format!("aider/{id}/.aider.chat.history.md"));
                    let events = harness_logs::write_aider(&path, started, turns, w, rng)?;
                    (Some(path), events)
                }
                Harness::OpenClaw => {
                    let path = file(format!("openclaw/agents/main/sessions/{id}.jsonl"));
                    let events = harness_logs::write_openclaw(&path, &id, started, turns, w, rng)?;
                    (Some(path), events)
                }
                Harness::Continue => {
                    let path = file(format!("continue/sessions/{id}.json"));
                    let (events, entry) =
                        harness_logs::write_continue(&path, &id, started, turns, w, rng)?;
                    continue_index.push(entry);
                    (Some(path), events)
                }
                Harness::Cursor | Harness::OpenCode => {
                    if stores.is_none() {
                        stores = Some(Stores::create(&cursor_store, &opencode_store)?);
                    }
                    let stores = stores.as_ref().expect("just created");
                    let events = if harness == Harness::Cursor {
                        stores.write_cursor(&id, started, turns, w, rng)?
                    } else {
                        stores.write_opencode(index, started, turns, w, rng)?
                    };
                    (None, events)
                }
            };
            match index {
                0 => generated.thousand_turns = (harness, id.clone()),
                1 => generated.hundred_turns = (harness, id.clone()),
                _ => {}
            }
            if let Some(path) = path {
                generated.bytes += std::fs::metadata(&path)?.len();
                generated.files += 1;
            }
            generated.events += events;
            self.events += events;
            generated.count_sessions(harness, 1);
            self.index += 1;
        }
        if !continue_index.is_empty() {
            let index = dir.join("continue/sessions/sessions.json");
            std::fs::write(&index, serde_json::to_vec(&continue_index)?)?;
            generated.bytes += std::fs::metadata(&index)?.len();
            generated.files += 1;
        }
        if let Some(stores) = stores {
            stores.finish()?;
            for store in [cursor_store, opencode_store] {
                generated.bytes += std::fs::metadata(&store)?.len();
                generated.files += 1;
            }
        }
        Ok(generated)
    }
}

fn write_codex(
    path: &Path,
    id: &str,
    started: i64,
    turns: u32,
    w: &Writer<'_>,
    rng: &mut Pcg64Mcg,
) -> std::io::Result<u64> {
    let mut log = Log::create(path, started)?;
    let ts = log.tick(rng);
    log.record(json!({"timestamp": ts, "type": "session_meta", "payload": {"id": id, "cwd": format!("/home/dev/{}", w.repo), "originator": "codex_cli_rs", "cli_version": "0.98.0"}}), 1)?;
    for _ in 0..turns {
        let ts = log.tick(rng);
        log.record(json!({"timestamp": ts, "type": "turn_context", "payload": {"model": "gpt-5", "cwd": "/home/dev"}}), 1)?;
        let ts = log.tick(rng);
        let prompt = w.sentence_in(rng, 4..40);
        log.record(json!({"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}}), 1)?;
        log.record(json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "user_message", "message": prompt}}), 0)?;
        for step in 0..rng.random_range(0..6) {
            if rng.random_range(0..3) == 0 {
                let ts = log.tick(rng);
                let thought = w.sentence_in(rng, 10..60);
                log.record(json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "agent_reasoning", "text": thought}}), 0)?;
                log.record(json!({"timestamp": ts, "type": "response_item", "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": thought}]}}), 1)?;
            }
            let ts = log.tick(rng);
            let call = format!("call_{}_{step}", hex(rng, 12));
            let cmd = format!(
                "{} {} {}",
                [
                    "cargo test",
                    "rg -n",
                    "npm run build",
                    "python3 -m pytest",
                    "git diff"
                ][rng.random_range(0..5)],
                w.token(rng),
                w.token(rng)
            );
            log.record(json!({"timestamp": ts, "type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": json!({"cmd": cmd, "workdir": "/home/dev"}).to_string(), "call_id": call}}), 1)?;
            let ts = log.tick(rng);
            let code = if rng.random_range(0..5) == 0 { 1 } else { 0 };
            let output = format!(
                "Exit code: {code}\nWall time: 1.2 seconds\nOutput:\n{}",
                w.output(rng)
            );
            log.record(json!({"timestamp": ts, "type": "response_item", "payload": {"type": "function_call_output", "call_id": call, "output": output}}), 1)?;
            if rng.random_range(0..3) == 0 {
                let ts = log.tick(rng);
                let note = w.sentence_in(rng, 8..40);
                log.record(json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "agent_message", "message": note}}), 0)?;
                log.record(json!({"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "assistant", "phase": "commentary", "content": [{"type": "output_text", "text": note}]}}), 1)?;
            }
        }
        let ts = log.tick(rng);
        let answer = w.sentence_in(rng, 15..150);
        log.record(json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "agent_message", "message": answer}}), 0)?;
        log.record(json!({"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "assistant", "phase": "final_answer", "content": [{"type": "output_text", "text": answer}]}}), 1)?;
        let ts = log.tick(rng);
        log.record(json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "task_complete", "last_agent_message": ""}}), 1)?;
    }
    log.finish()
}

fn write_claude(
    path: &Path,
    id: &str,
    started: i64,
    turns: u32,
    w: &Writer<'_>,
    rng: &mut Pcg64Mcg,
) -> std::io::Result<u64> {
    let mut log = Log::create(path, started)?;
    let base = |ts: String, kind: &str, message: Value| json!({"type": kind, "sessionId": id, "timestamp": ts, "cwd": "/home/dev", "isSidechain": false, "message": message});
    for _ in 0..turns {
        let ts = log.tick(rng);
        let prompt = w.sentence_in(rng, 4..40);
        log.record(
            base(ts, "user", json!({"role": "user", "content": prompt})),
            1,
        )?;
        for step in 0..rng.random_range(0..6) {
            if rng.random_range(0..3) == 0 {
                let ts = log.tick(rng);
                let thought = w.sentence_in(rng, 10..60);
                log.record(base(ts, "assistant", json!({"role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "thinking", "thinking": thought}], "stop_reason": null})), 1)?;
            }
            let ts = log.tick(rng);
            let tool = format!("toolu_{}_{step}", hex(rng, 12));
            let command = format!(
                "{} {}",
                ["cargo build", "ls -la", "make test", "go test ./..."][rng.random_range(0..4)],
                w.token(rng)
            );
            log.record(base(ts, "assistant", json!({"role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": command}}], "stop_reason": "tool_use"})), 1)?;
            let ts = log.tick(rng);
            let failed = rng.random_range(0..5) == 0;
            let output = if failed {
                format!("Exit code 1\n{}", w.output(rng))
            } else {
                w.output(rng)
            };
            log.record(base(ts, "user", json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool, "content": output, "is_error": failed}]})), 1)?;
        }
        let ts = log.tick(rng);
        let answer = w.sentence_in(rng, 15..150);
        log.record(base(ts, "assistant", json!({"role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": answer}], "stop_reason": "end_turn"})), 1)?;
    }
    log.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_generation_is_deterministic_and_sized() {
        let base = std::env::temp_dir().join(format!("moraine-corpus-{}", std::process::id()));
        let a = generate(
            &Spec {
                events: 40_000,
                seed: 7,
                harnesses: Vec::new(),
            },
            &base.join("a"),
        )
        .unwrap();
        let b = generate(
            &Spec {
                events: 40_000,
                seed: 7,
                harnesses: Vec::new(),
            },
            &base.join("b"),
        )
        .unwrap();
        assert!(a.events >= 40_000);
        assert_eq!((a.events, a.files, a.bytes), (b.events, b.files, b.bytes));
        assert_eq!(a.thousand_turns, b.thousand_turns);
        assert_eq!(a.sessions, b.sessions);
        // Every harness of the mix is written.
        assert_eq!(a.sessions.len(), Harness::ALL.len(), "{}", a.mix());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn test_chunks_make_the_same_corpus() {
        let base = std::env::temp_dir().join(format!("moraine-chunks-{}", std::process::id()));
        let spec = Spec {
            events: 40_000,
            seed: 9,
            harnesses: Vec::new(),
        };
        let whole = generate(&spec, &base.join("whole")).unwrap();
        let mut generator = Generator::new(spec);
        let mut all: Option<Generated> = None;
        let mut chunks = 0;
        while !generator.done() {
            let chunk = generator
                .chunk(&base.join(format!("chunk-{chunks}")), 8_000)
                .unwrap();
            match &mut all {
                None => all = Some(chunk),
                Some(all) => all.absorb(chunk),
            }
            chunks += 1;
        }
        assert!(chunks > 2, "{chunks} chunks");
        let all = all.unwrap();
        assert_eq!(
            (all.events, all.thousand_turns),
            (whole.events, whole.thousand_turns.clone())
        );
        let sessions = all.sessions;
        let sorted = |mut v: Vec<(Harness, u64)>| {
            v.sort_by_key(|(h, _)| h.as_str());
            v
        };
        assert_eq!(sorted(sessions), sorted(whole.sessions));
        // A log is the same bytes whichever chunk wrote it.
        let claude = |dir: &Path| -> Vec<(String, Vec<u8>)> {
            let mut logs: Vec<(String, Vec<u8>)> =
                glob::glob(&format!("{}/claude/-bench-project/*.jsonl", dir.display()))
                    .unwrap()
                    .map(|p| {
                        let p = p.unwrap();
                        let name = p.file_name().unwrap().to_string_lossy().into_owned();
                        (name, std::fs::read(&p).unwrap())
                    })
                    .collect();
            logs.sort();
            logs
        };
        let mut pieces: Vec<(String, Vec<u8>)> = (0..chunks)
            .flat_map(|c| claude(&base.join(format!("chunk-{c}"))))
            .collect();
        pieces.sort();
        assert_eq!(pieces, claude(&base.join("whole")));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
