//! Credential redaction, applied to each raw log line before it is parsed, so searchable text and
//! stored payloads never hold the secret.
//!
//! Patterns never match `"` or `\`, so a replacement cannot break the JSON string it sits in.

use regex::{Regex, RegexSet};

use crate::config::RedactionConfig;

/// One kind of credential and how to find it. `secret` is the capture group that is replaced
/// (0 = the whole match), so context such as `postgres://user:` survives.
struct Rule {
    kind: &'static str,
    regex: Regex,
    secret: usize,
}

/// Built-in rules: widely used key formats with distinctive shapes, plus bearer headers,
/// private-key blocks, URL passwords and `password=`-style assignments.
const BUILTIN: &[(&str, &str, usize)] = &[
    (
        "private_key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:\\[nr]|[^\x22\\])*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
        0,
    ),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", 0),
    (
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b",
        0,
    ),
    ("api_key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}", 0),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", 0),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}\b", 0),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        0,
    ),
    (
        "bearer_token",
        r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)",
        1,
    ),
    (
        "url_password",
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@\x22\\]+:([^\s@/\x22\\]{3,})@",
        1,
    ),
    (
        "password",
        r"(?i)\b(?:password|passwd|pwd|secret|api_key|apikey|access_token|auth_token)\b\s*[=:]\s*([^\s\x22\\',;]{8,})",
        1,
    ),
];

/// Replaces credentials in text and counts what it replaced.
pub struct Redactor {
    enabled: bool,
    prefilter: RegexSet,
    rules: Vec<Rule>,
}

impl Redactor {
    /// Compiles the built-in rules plus `config.extra_patterns` (already validated).
    pub fn new(config: &RedactionConfig) -> Result<Self, regex::Error> {
        let mut rules = Vec::new();
        for &(kind, pattern, secret) in BUILTIN {
            rules.push(Rule {
                kind,
                regex: Regex::new(pattern)?,
                secret,
            });
        }
        for pattern in &config.extra_patterns {
            rules.push(Rule {
                kind: "custom",
                regex: Regex::new(pattern)?,
                secret: 0,
            });
        }
        let prefilter = RegexSet::new(rules.iter().map(|r| r.regex.as_str()))?;
        Ok(Self {
            enabled: config.enabled,
            prefilter,
            rules,
        })
    }

    /// Returns the redacted line (borrowed when nothing matched) and the number of redactions.
    pub fn redact<'a>(&self, line: &'a str) -> (std::borrow::Cow<'a, str>, usize) {
        if !self.enabled {
            return (line.into(), 0);
        }
        let matched = self.prefilter.matches(line);
        if !matched.matched_any() {
            return (line.into(), 0);
        }
        let mut text = line.to_owned();
        let mut count = 0;
        for index in matched.iter() {
            let rule = &self.rules[index];
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
                text = out;
            }
        }
        (text.into(), count)
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
