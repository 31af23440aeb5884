//! Credential redaction, applied to each raw log line before it is parsed, so searchable text and
//! stored payloads never hold the secret.
//!
//! Patterns never match `"` or `\`, so a replacement cannot break the JSON string it sits in.

use regex::Regex;

use crate::config::RedactionConfig;

/// One kind of credential and how to find it. `secret` is the capture group that is replaced
/// (0 = the whole match), so context such as `postgres://user:` survives.
struct Rule {
    kind: &'static str,
    regex: Regex,
    secret: usize,
}

/// Built-in rules: widely used key formats with distinctive shapes, plus bearer headers,
/// private-key blocks, URL passwords and `password=`-style assignments. Each lists literals
/// (matched case-insensitively) of which every match contains one: a rule only runs on lines
/// holding one of its literals, and most lines hold none.
const BUILTIN: &[(&str, &str, usize, &[&str])] = &[
    (
        "private_key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:\\[nr]|[^\x22\\])*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
        0,
        &["private key-----"],
    ),
    (
        "aws_access_key",
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        0,
        &["akia", "asia"],
    ),
    (
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b",
        0,
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    ),
    (
        "api_key",
        r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}",
        0,
        &["sk-"],
    ),
    (
        "slack_token",
        r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",
        0,
        &["xox"],
    ),
    (
        "google_api_key",
        r"\bAIza[0-9A-Za-z_\-]{35}\b",
        0,
        &["aiza"],
    ),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        0,
        &["eyj"],
    ),
    (
        "bearer_token",
        r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)",
        1,
        &["bearer"],
    ),
    (
        "url_password",
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@\x22\\]+:([^\s@/\x22\\]{3,})@",
        1,
        &["://"],
    ),
    (
        "password",
        r"(?i)\b(?:password|passwd|pwd|secret|api_key|apikey|access_token|auth_token)\b\s*[=:]\s*([^\s\x22\\',;]{8,})",
        1,
        &[
            "password",
            "passwd",
            "pwd",
            "secret",
            "api_key",
            "apikey",
            "access_token",
            "auth_token",
        ],
    ),
];

/// Replaces credentials in text and counts what it replaced.
pub struct Redactor {
    enabled: bool,
    rules: Vec<Rule>,
    /// Every rule's literals; pattern `i` belongs to rule `literal_rule[i]`.
    literals: aho_corasick::AhoCorasick,
    literal_rule: Vec<usize>,
    /// Rules without literals (configured extra patterns) run on every line.
    always: Vec<usize>,
}

impl Redactor {
    /// Compiles the built-in rules plus `config.extra_patterns` (already validated).
    pub fn new(config: &RedactionConfig) -> Result<Self, regex::Error> {
        let mut rules = Vec::new();
        let mut patterns = Vec::new();
        let mut literal_rule = Vec::new();
        for &(kind, pattern, secret, literals) in BUILTIN {
            for literal in literals {
                patterns.push(*literal);
                literal_rule.push(rules.len());
            }
            rules.push(Rule {
                kind,
                regex: Regex::new(pattern)?,
                secret,
            });
        }
        let mut always = Vec::new();
        for pattern in &config.extra_patterns {
            always.push(rules.len());
            rules.push(Rule {
                kind: "custom",
                regex: Regex::new(pattern)?,
                secret: 0,
            });
        }
        let literals = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(&patterns)
            .expect("valid literals");
        Ok(Self {
            enabled: config.enabled,
            rules,
            literals,
            literal_rule,
            always,
        })
    }

    /// Returns the redacted line (borrowed when nothing matched) and the number of redactions.
    pub fn redact<'a>(&self, line: &'a str) -> (std::borrow::Cow<'a, str>, usize) {
        if !self.enabled {
            return (line.into(), 0);
        }
        let mut triggered: Vec<usize> = self.always.clone();
        // Literals of different rules never overlap, so non-overlapping matches find every rule.
        for found in self.literals.find_iter(line) {
            let rule = self.literal_rule[found.pattern().as_usize()];
            if !triggered.contains(&rule) {
                triggered.push(rule);
            }
        }
        if triggered.is_empty() {
            return (line.into(), 0);
        }
        triggered.sort_unstable();
        let mut text = std::borrow::Cow::Borrowed(line);
        let mut count = 0;
        for index in triggered {
            let rule = &self.rules[index];
            if !rule.regex.is_match(&text) {
                continue;
            }
            let mut out = String::with_capacity(text.len());
            let mut last = 0;
            for caps in rule.regex.captures_iter(&text) {
                let Some(secret) = caps.get(rule.secret) else {
                    continue;
                };
                out.push_str(&text[last..secret.start()]);
                out.push_str("[REDACTED:");
                out.push_str(rule.kind);
                out.push(']');
                last = secret.end();
                count += 1;
            }
            if last > 0 {
                out.push_str(&text[last..]);
                text = std::borrow::Cow::Owned(out);
            }
        }
        (text, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        Redactor::new(&RedactionConfig {
            enabled: true,
            extra_patterns: vec!["corp-[0-9a-f]{8}".into()],
        })
        .unwrap()
    }

    #[test]
    fn test_redacts_common_credentials() {
        let r = redactor();
        let cases = [
            (
                "key AKIAFAKEFAKEFAKE1234 here",
                "key [REDACTED:aws_access_key] here",
            ),
            (
                "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx",
                "export OPENAI_API_KEY=[REDACTED:api_key]",
            ),
            (
                "token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123",
                "token [REDACTED:github_token]",
            ),
            (
                "curl -H 'Authorization: Bearer abcdef0123456789abcdef'",
                "curl -H 'Authorization: Bearer [REDACTED:bearer_token]'",
            ),
            (
                "postgres://app:hunter2secret@db.internal:5432/app",
                "postgres://app:[REDACTED:url_password]@db.internal:5432/app",
            ),
            (
                "password = correcthorsebattery",
                "password = [REDACTED:password]",
            ),
            ("id corp-deadbeef", "id [REDACTED:custom]"),
        ];
        for (input, expected) in cases {
            assert_eq!(r.redact(input).0, expected, "{input}");
        }
    }

    #[test]
    fn test_private_key_inside_a_json_string_keeps_the_json_valid() {
        let r = redactor();
        let line = r#"{"text":"key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEFAKEFAKE\nQUJD\n-----END RSA PRIVATE KEY-----\ndone"}"#;
        let (out, count) = r.redact(line);
        assert_eq!(count, 1);
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["text"], "key:\n[REDACTED:private_key]\ndone");
    }

    #[test]
    fn test_each_kind_passes_the_prefilter() {
        let r = Redactor::new(&RedactionConfig::default()).unwrap();
        let samples = [
            "-----BEGIN OPENSSH PRIVATE KEY-----\\nabc\\n-----END OPENSSH PRIVATE KEY-----",
            "ASIAFAKEFAKEFAKE1234",
            "github_pat_11AAAAAAA0abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ",
            "xoxb-1234567890-abcdef",
            "AIzaBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlZmFrZQ",
            "APIKEY=abcdefgh12345678",
            "Access_Token: abcdefgh12345678",
        ];
        for sample in samples {
            assert!(r.redact(sample).1 > 0, "{sample} was not redacted");
        }
    }

    #[test]
    fn test_clean_text_is_borrowed_and_disabled_does_nothing() {
        let r = redactor();
        let (out, count) = r.redact("cargo test --workspace");
        assert!(matches!(out, std::borrow::Cow::Borrowed(_)));
        assert_eq!(count, 0);
        let off = Redactor::new(&RedactionConfig {
            enabled: false,
            extra_patterns: vec![],
        })
        .unwrap();
        assert_eq!(off.redact("AKIAFAKEFAKEFAKE1234").1, 0);
    }
}
