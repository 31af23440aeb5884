//! A deterministic, realistic corpus of agent session logs for the benchmark, written in both
//! log formats so it loads through the product's own ingest path.
//!
//! Shape (after the measurements in the performance research): sessions of a few to a thousand
//! turns, interleaved in time; events of every type with agent-like proportions; words from a
//! Zipf-distributed vocabulary of English, code identifiers, paths and near-unique hex tokens,
//! with per-session topic words; short chat messages and long-tailed tool outputs.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rand::{Rng, RngCore, SeedableRng};
use rand_distr::{Distribution, LogNormal, Zipf};
use rand_pcg::Pcg64Mcg;
use serde_json::{Value, json};

use crate::vocab::Harness;

/// Words agents really use, most frequent first; the head of the vocabulary.
const COMMON: &[&str] = &[
    "the",
    "to",
    "and",
    "of",
    "in",
    "is",
    "it",
    "for",
    "that",
    "this",
    "with",
    "on",
    "src",
    "test",
    "error",
    "file",
    "be",
    "not",
    "run",
    "fix",
    "we",
    "function",
    "build",
    "from",
    "use",
    "add",
    "value",
    "return",
    "if",
    "can",
    "check",
    "type",
    "data",
    "config",
    "should",
    "now",
    "line",
    "code",
    "new",
    "update",
    "failed",
    "cargo",
    "rust",
    "json",
    "server",
    "request",
    "response",
    "query",
    "table",
    "schema",
    "migration",
    "index",
    "cache",
    "docker",
    "npm",
    "python",
    "import",
    "module",
    "struct",
    "impl",
    "async",
    "await",
    "result",
    "option",
    "string",
    "path",
    "lib",
    "main",
    "mod",
    "let",
    "self",
    "pub",
    "warning",
    "tests",
    "passed",
    "output",
    "command",
    "exit",
    "status",
    "debug",
    "release",
    "version",
    "client",
    "api",
    "http",
    "url",
    "token",
    "user",
    "session",
    "event",
    "log",
    "logs",
    "time",
    "timeout",
    "retry",
    "connection",
    "database",
    "clickhouse",
    "postgres",
    "sql",
    "select",
    "insert",
    "delete",
    "create",
    "field",
    "column",
    "key",
    "map",
    "list",
    "array",
    "vec",
    "hash",
    "set",
    "get",
    "set_value",
    "handler",
    "router",
    "route",
    "middleware",
    "auth",
    "login",
    "password",
    "secret",
    "env",
    "variable",
    "default",
    "option_b",
    "feature",
    "flag",
    "branch",
    "commit",
    "merge",
    "diff",
    "patch",
    "review",
    "ci",
    "pipeline",
    "job",
    "step",
    "stage",
    "deploy",
    "image",
    "container",
    "volume",
    "port",
    "host",
    "network",
    "dns",
    "tls",
    "cert",
    "memory",
    "cpu",
    "disk",
    "slow",
    "fast",
    "latency",
    "throughput",
    "benchmark",
    "profile",
    "flaky",
    "race",
    "lock",
    "thread",
    "spawn",
    "channel",
    "stream",
    "buffer",
    "parse",
    "serialize",
    "deserialize",
    "format",
    "unicode",
    "utf8",
    "bytes",
];

/// The most frequent real words, most frequent first (query sampling uses them).
pub(crate) fn common_words() -> &'static [&'static str] {
    COMMON
}

/// Syllables for synthetic natural-language words.
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ren", "tor", "vas", "bel", "dun", "fi", "gar", "hol", "jin", "ket", "lum",
    "mor", "nal", "pra", "quo", "ril", "sen", "tal", "ul", "ver", "wyn", "xe", "yor", "zan", "ast",
    "bri", "cor", "del", "eth", "fon",
];

/// Sizes of the vocabulary's parts.
const NATURAL_WORDS: usize = 30_000;
const IDENTIFIERS: usize = 60_000;

/// What to generate.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    /// Approximate number of events to write.
    pub events: u64,
    pub seed: u64,
}

/// What was generated.
#[derive(Debug, Clone)]
pub(crate) struct Generated {
    pub dir: PathBuf,
    pub files: usize,
    pub events: u64,
    pub bytes: u64,
    /// Native session ids of the sessions with exactly 100 and 1000 turns.
    pub hundred_turns: (Harness, String),
    pub thousand_turns: (Harness, String),
}

struct Vocabulary {
    words: Vec<String>,
    zipf: Zipf<f64>,
}

impl Vocabulary {
    fn new(rng: &mut Pcg64Mcg) -> Self {
        let mut words: Vec<String> = COMMON.iter().map(|w| (*w).to_owned()).collect();
        let natural: Vec<String> = (0..NATURAL_WORDS)
            .map(|_| {
                let n = rng.random_range(2..=4);
                (0..n)
                    .map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())])
                    .collect()
            })
            .collect();
        // Interleave identifiers with natural words so both appear at every frequency.
        for i in 0..IDENTIFIERS.max(NATURAL_WORDS) {
            if i < NATURAL_WORDS {
                words.push(natural[i].clone());
            }
            if i < IDENTIFIERS {
                let a = &natural[rng.random_range(0..NATURAL_WORDS)];
                let b = &natural[rng.random_range(0..NATURAL_WORDS)];
                words.push(match rng.random_range(0..3) {
                    0 => format!("{a}_{b}"),
                    1 => format!("{a}{}{}", b[..1].to_uppercase(), &b[1..]),
                    _ => format!("{}_{}", a.to_uppercase(), b.to_uppercase()),
                });
            }
        }
        let zipf = Zipf::new(words.len() as f64, 1.0).expect("valid zipf");
        Self { words, zipf }
    }

    fn word(&self, rng: &mut Pcg64Mcg) -> &str {
        let rank = self.zipf.sample(rng) as usize;
        &self.words[(rank - 1).min(self.words.len() - 1)]
    }
}

/// Builds texts with a session's own topic words mixed in.
struct Writer<'a> {
    vocabulary: &'a Vocabulary,
    topic: Vec<String>,
    repo: String,
}

impl Writer<'_> {
    fn token(&self, rng: &mut Pcg64Mcg) -> String {
        match rng.random_range(0..100) {
            0..=11 => self.topic[rng.random_range(0..self.topic.len())].clone(),
            12..=14 => format!("{}/{}.rs", self.repo, self.vocabulary.word(rng)),
            15..=16 => {
                let len = rng.random_range(8..=40);
                hex(rng, len)
            }
            17..=19 => rng.random_range(0..5000u32).to_string(),
            _ => self.vocabulary.word(rng).to_owned(),
        }
    }

    fn sentence(&self, rng: &mut Pcg64Mcg, words: usize) -> String {
        let mut out = String::with_capacity(words * 8);
        for i in 0..words {
            if i > 0 {
                out.push(if rng.random_range(0..12) == 0 {
                    '\n'
                } else {
                    ' '
                });
            }
            out.push_str(&self.token(rng));
        }
        out
    }

    fn sentence_in(&self, rng: &mut Pcg64Mcg, words: std::ops::Range<usize>) -> String {
        let count = rng.random_range(words);
        self.sentence(rng, count)
    }

    /// A tool output: usually short, sometimes kilobytes of log lines, rarely over 64 KiB.
    fn output(&self, rng: &mut Pcg64Mcg) -> String {
        let words = match rng.random_range(0..100) {
            0 => rng.random_range(9000..14000),
            1..=14 => rng.random_range(300..3000),
            _ => rng.random_range(5..120),
        };
        self.sentence(rng, words)
    }
}

fn hex(rng: &mut Pcg64Mcg, len: usize) -> String {
    const DIGITS: &[u8] = b"0123456789abcdef";
    (0..len)
        .map(|_| DIGITS[rng.random_range(0..16)] as char)
        .collect()
}

fn uuid(rng: &mut Pcg64Mcg) -> String {
    let mut bytes = [0u8; 16];
    rng.fill_bytes(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let h: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

fn iso(ms: i64) -> String {
    crate::text::format_ts(ms)
}

/// Generates about `spec.events` events into `dir` (replacing its contents).
pub(crate) fn generate(spec: &Spec, dir: &Path) -> std::io::Result<Generated> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir.join("codex"))?;
    std::fs::create_dir_all(dir.join("claude").join("-bench-project"))?;
    let mut rng = Pcg64Mcg::seed_from_u64(spec.seed);
    let vocabulary = Vocabulary::new(&mut rng);
    let turns_per_session = LogNormal::new(2.2, 0.9).expect("valid lognormal");
    let start_2025: i64 = 1_735_689_600_000;
    let year_ms: i64 = 365 * 24 * 3600 * 1000;
    let mut generated = Generated {
        dir: dir.to_owned(),
        files: 0,
        events: 0,
        bytes: 0,
        hundred_turns: (Harness::Codex, String::new()),
        thousand_turns: (Harness::Codex, String::new()),
    };
    let mut index = 0u64;
    while generated.events < spec.events {
        // The first two sessions are the landmarks open(session) is measured on.
        let turns = match index {
            0 => 1000,
            1 => 100,
            _ => (turns_per_session.sample(&mut rng) as u32).clamp(1, 250),
        };
        let codex = index.is_multiple_of(2);
        let topic: Vec<String> = (0..30)
            .map(|_| vocabulary.words[rng.random_range(200..20_000)].clone())
            .collect();
        let writer = Writer {
            vocabulary: &vocabulary,
            topic,
            repo: format!("src/{}", vocabulary.words[rng.random_range(200..3000)]),
        };
        let id = uuid(&mut rng);
        let started = start_2025 + rng.random_range(0..year_ms);
        let (path, events) = if codex {
            let stamp = iso(started).replace([':', '.'], "-");
            let path = dir
                .join("codex")
                .join(format!("rollout-{}-{id}.jsonl", &stamp[..19]));
            let events = write_codex(&path, &id, started, turns, &writer, &mut rng)?;
            (path, events)
        } else {
            let path = dir
                .join("claude")
                .join("-bench-project")
                .join(format!("{id}.jsonl"));
            let events = write_claude(&path, &id, started, turns, &writer, &mut rng)?;
            (path, events)
        };
        let harness = if codex {
            Harness::Codex
        } else {
            Harness::ClaudeCode
        };
        match index {
            0 => generated.thousand_turns = (harness, id.clone()),
            1 => generated.hundred_turns = (harness, id.clone()),
            _ => {}
        }
        generated.bytes += std::fs::metadata(&path)?.len();
        generated.events += events;
        generated.files += 1;
        index += 1;
    }
    Ok(generated)
}

/// Writes one JSON record per line and counts the events ingest will make of it.
struct Log {
    out: BufWriter<File>,
    at: i64,
    events: u64,
}

impl Log {
    fn record(&mut self, value: Value, events: u64) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, &value)?;
        self.out.write_all(b"\n")?;
        self.events += events;
        Ok(())
    }

    fn tick(&mut self, rng: &mut Pcg64Mcg) -> String {
        self.at += rng.random_range(200..40_000);
        iso(self.at)
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
    let mut log = Log {
        out: BufWriter::with_capacity(1 << 20, File::create(path)?),
        at: started,
        events: 0,
    };
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
    log.out.flush()?;
    Ok(log.events)
}

fn write_claude(
    path: &Path,
    id: &str,
    started: i64,
    turns: u32,
    w: &Writer<'_>,
    rng: &mut Pcg64Mcg,
) -> std::io::Result<u64> {
    let mut log = Log {
        out: BufWriter::with_capacity(1 << 20, File::create(path)?),
        at: started,
        events: 0,
    };
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
    log.out.flush()?;
    Ok(log.events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_generation_is_deterministic_and_sized() {
        let base = std::env::temp_dir().join(format!("moraine-corpus-{}", std::process::id()));
        let a = generate(
            &Spec {
                events: 3000,
                seed: 7,
            },
            &base.join("a"),
        )
        .unwrap();
        let b = generate(
            &Spec {
                events: 3000,
                seed: 7,
            },
            &base.join("b"),
        )
        .unwrap();
        assert!(a.events >= 3000);
        assert_eq!((a.events, a.files, a.bytes), (b.events, b.files, b.bytes));
        assert_eq!(a.thousand_turns, b.thousand_turns);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
