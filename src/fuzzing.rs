//! Entry points for the fuzz targets in `fuzz/`: the parsers of bytes that come from outside
//! (agent logs, IDs, list cursors). Each must return, whatever the bytes, without panicking.

use std::sync::OnceLock;

use crate::config::Settings;
use crate::ids::Id;
use crate::ingest::push::LogParser;
use crate::vocab::Harness;

/// Parses `data` as a whole agent log. The first byte picks the harness and the log's name
/// (named as the harness names its logs, or not), the rest is the log.
pub fn agent_log(data: &[u8]) {
    static PARSER: OnceLock<LogParser> = OnceLock::new();
    let parser = PARSER.get_or_init(|| {
        let config = Settings::default()
            .validate()
            .expect("the defaults are valid");
        LogParser::new(&config).expect("the built-in redaction rules compile")
    });
    let Some((&pick, log)) = data.split_first() else {
        return;
    };
    let (harness, path) = match pick % 4 {
        0 => (
            Harness::Codex,
            "sessions/2026/01/02/rollout-2026-01-02T03-04-05-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl",
        ),
        1 => (Harness::Codex, "sessions/other.jsonl"),
        2 => (
            Harness::ClaudeCode,
            "projects/-home-dev/5ec2e75a-0000-4000-8000-00000000c0de.jsonl",
        ),
        _ => (Harness::ClaudeCode, "projects/-home-dev/notes.jsonl"),
    };
    let _ = parser.parse(harness, path, log);
}

/// Parses `data` as a `session:`/`turn:`/`event:` ID.
pub fn id(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Id::parse(text);
    }
}

/// Checks `data` as a `list_sessions` cursor.
pub fn cursor(data: &[u8]) {
    crate::tools::list::check_untrusted_cursor(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fuzz targets' seeds, run as a test so that the entry points keep working.
    #[test]
    fn test_entry_points_take_any_bytes() {
        let claude = br#"{"type":"user","sessionId":"5ec2e75a-0000-4000-8000-00000000c0de","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}"#;
        let codex = br#"{"timestamp":"2026-01-02T03:04:05Z","type":"session_meta","payload":{"id":"0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"}}"#;
        let inputs: Vec<Vec<u8>> = vec![
            Vec::new(),
            vec![0],
            [&[2u8][..], claude, b"\n{\"type\":", &[0xff, 0xfe]].concat(),
            [&[0u8][..], codex, b"\n", codex].concat(),
            b"session:ses_0000000000000".to_vec(),
            b"event:evt_\xff".to_vec(),
            b"eyJ2IjoxfQ.AAAA".to_vec(),
            br#"{"v":1,"f":"fingerprint","t":-1,"k":18446744073709551615,"n":4294967295}"#.to_vec(),
        ];
        for input in &inputs {
            agent_log(input);
            id(input);
            cursor(input);
        }
    }
}
