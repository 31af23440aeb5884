//! What generated logs are made of: a Zipf vocabulary of real and synthetic words and code
//! identifiers, session texts with their own topic words, IDs and times, and a JSON Lines
//! writer that counts the events ingest will make of each record.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use rand::{Rng, RngCore};
use rand_distr::{Distribution, Zipf};
use rand_pcg::Pcg64Mcg;
use serde_json::Value;

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

/// Words by Zipf rank: common words, then synthetic words and identifiers interleaved.
pub(super) struct Vocabulary {
    pub(super) words: Vec<String>,
    zipf: Zipf<f64>,
}

impl Vocabulary {
    pub(super) fn new(rng: &mut Pcg64Mcg) -> Self {
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
pub(super) struct Writer<'a> {
    pub(super) vocabulary: &'a Vocabulary,
    pub(super) topic: Vec<String>,
    pub(super) repo: String,
}

impl Writer<'_> {
    pub(super) fn token(&self, rng: &mut Pcg64Mcg) -> String {
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

    pub(super) fn sentence(&self, rng: &mut Pcg64Mcg, words: usize) -> String {
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

    pub(super) fn sentence_in(&self, rng: &mut Pcg64Mcg, words: std::ops::Range<usize>) -> String {
        let count = rng.random_range(words);
        self.sentence(rng, count)
    }

    /// A tool output: usually short, sometimes kilobytes of log lines, rarely over 64 KiB.
    pub(super) fn output(&self, rng: &mut Pcg64Mcg) -> String {
        let words = match rng.random_range(0..100) {
            0 => rng.random_range(9000..14000),
            1..=14 => rng.random_range(300..3000),
            _ => rng.random_range(5..120),
        };
        self.sentence(rng, words)
    }
}

pub(super) fn hex(rng: &mut Pcg64Mcg, len: usize) -> String {
    const DIGITS: &[u8] = b"0123456789abcdef";
    (0..len)
        .map(|_| DIGITS[rng.random_range(0..16)] as char)
        .collect()
}

pub(super) fn uuid(rng: &mut Pcg64Mcg) -> String {
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

pub(super) fn iso(ms: i64) -> String {
    crate::text::format_ts(ms)
}

/// Writes one JSON record per line and counts the events ingest will make of it.
pub(super) struct Log {
    out: BufWriter<File>,
    at: i64,
    events: u64,
}

impl Log {
    pub(super) fn create(path: &Path, started: i64) -> std::io::Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        Ok(Self {
            out: BufWriter::with_capacity(1 << 20, File::create(path)?),
            at: started,
            events: 0,
        })
    }

    pub(super) fn finish(mut self) -> std::io::Result<u64> {
        self.out.flush()?;
        Ok(self.events)
    }

    pub(super) fn record(&mut self, value: Value, events: u64) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, &value)?;
        self.out.write_all(b"\n")?;
        self.events += events;
        Ok(())
    }

    pub(super) fn tick(&mut self, rng: &mut Pcg64Mcg) -> String {
        self.at += rng.random_range(200..40_000);
        iso(self.at)
    }
}
