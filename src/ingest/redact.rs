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
    /// The rule matches a name and whatever follows it (`password = …`): the value is replaced
    /// only when it is not code (see [`is_code`]).
    assignment: bool,
}

/// The rule whose matches are `name = value` assignments rather than credential shapes.
const ASSIGNMENT_RULE: &str = "password";

/// Values that name something rather than hold it: a type, a literal or a placeholder.
const CODE_WORDS: &[&str] = &[
    "undefined",
    "optional",
    "required",
    "nullable",
    "placeholder",
    "password",
    "redacted",
    "string",
    "boolean",
    "integer",
];

/// Whether an assigned value is code (a variable, a member, a call, a type, a template or an
/// environment reference) rather than a literal secret: `config.apiKey`, `process.env.TOKEN`,
/// `getPassword()`, `secretValue`, `API_KEY_ENV`, `${DB_PASSWORD}`, `Optional[str]`. A literal
/// with the shape of a word (`correcthorsebattery`) or of random characters stays a secret.
fn is_code(value: &str) -> bool {
    let bytes = value.as_bytes();
    if value.contains(['(', ')', '[', ']', '{', '}', '<', '>'])
        || matches!(bytes.first(), Some(b'$' | b'&' | b'*'))
        || CODE_WORDS.iter().any(|w| value.eq_ignore_ascii_case(w))
        || bytes.iter().all(|&b| b == bytes[0])
    {
        return true;
    }
    let identifier = |part: &str| {
        part.as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    // A member path: `config.apiKey`, `settings.SECRET_KEY`.
    if value.contains('.') && value.split('.').all(identifier) {
        return true;
    }
    // A name in camelCase or snake_case: words, not the short runs of a random string.
    if identifier(value) {
        let parts = crate::tokenize::identifier_parts(value);
        let digits = bytes.iter().filter(|b| b.is_ascii_digit()).count();
        let wordlike = |part: &str| {
            let vowel = part.bytes().any(|b| b"aeiouyAEIOUY".contains(&b));
            if part.bytes().all(|b| b.is_ascii_digit()) {
                part.len() <= 3
            } else {
                part.len() >= 2 && (vowel || part.len() <= 4)
            }
        };
        // Words run together with digits (`hunter2hunter2`, `summer2024`) are how people
        // write passwords: only `_` or a camelCase hump makes a name.
        let humped = bytes
            .windows(2)
            .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
        return (humped || value.contains('_'))
            && parts.len() <= 6
            && digits <= 3
            && parts.iter().all(|p| wordlike(&value[p.clone()]));
    }
    false
}

/// Where a credential may begin: at a word boundary, or right after a JSON escape — logs are
/// redacted as raw JSON lines, where a key on a line of its own follows `\n`, and the `n`
/// would otherwise hide the boundary.
macro_rules! token_start {
    () => {
        r"(?:\\[nrtbf]|\\u[0-9A-Fa-f]{4}|(?-u:\b))"
    };
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
        concat!(token_start!(), r"((?:AKIA|ASIA)[0-9A-Z]{16})(?-u:\b)"),
        1,
        &["akia", "asia"],
    ),
    (
        "github_token",
        concat!(
            token_start!(),
            r"(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})(?-u:\b)"
        ),
        1,
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    ),
    (
        "api_key",
        concat!(token_start!(), r"(sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,})"),
        1,
        &["sk-"],
    ),
    (
        "slack_token",
        concat!(token_start!(), r"(xox[abposr]-[A-Za-z0-9\-]{10,})"),
        1,
        &["xox"],
    ),
    (
        "google_api_key",
        concat!(token_start!(), r"(AIza[0-9A-Za-z_\-]{35})(?-u:\b)"),
        1,
        &["aiza"],
    ),
    (
        "jwt",
        concat!(
            token_start!(),
            r"(eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})"
        ),
        1,
        &["eyj"],
    ),
    (
        "bearer_token",
        concat!(
            r"(?i)",
            token_start!(),
            r"bearer\s+([A-Za-z0-9\-._~+/]{16,}=*)"
        ),
        1,
        &["bearer"],
    ),
    (
        "url_password",
        r"(?-u:\b)[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@\x22\\]+:([^\s@/\x22\\]{3,})@",
        1,
        &["://"],
    ),
    (
        "password",
        // The name may carry a prefix (`db_password`, `CLIENT_SECRET`) or `_key`/`_token`.
        concat!(
            r"(?i)",
            token_start!(),
            r"(?:[a-z0-9]+[_\-])*(?:password|passwd|pwd|secret|api_?key|access_?token|auth_?token)(?:[_\-]?(?:key|token))?(?-u:\b)\s*[=:]\s*([^\s\x22\\',;]{8,})"
        ),
        1,
        &[
            "password",
            "passwd",
            "pwd",
            "secret",
            "api_key",
            "apikey",
            "access_token",
            "accesstoken",
            "auth_token",
            "authtoken",
        ],
    ),
];

/// What a credential is replaced with.
#[derive(Debug, Clone, Copy)]
enum Replacement {
    /// `[REDACTED:kind]`, in what is indexed and shown.
    Label,
    /// As many `*` as it has bytes, in the archive.
    Stars,
}

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
                assignment: kind == ASSIGNMENT_RULE,
            });
        }
        let mut always = Vec::new();
        for pattern in &config.extra_patterns {
            always.push(rules.len());
            rules.push(Rule {
                kind: "custom",
                regex: Regex::new(pattern)?,
                secret: 0,
                assignment: false,
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

    /// Only the built-in rules, always on: what masks the archive, on the server and, to
    /// compare fingerprints with it, in `push` clients, whatever either's configuration says.
    pub fn builtin() -> Self {
        Self::new(&RedactionConfig {
            enabled: true,
            extra_patterns: Vec::new(),
        })
        .expect("the built-in rules compile")
    }

    /// Returns the redacted line (borrowed when nothing matched) and the number of redactions.
    pub fn redact<'a>(&self, line: &'a str) -> (std::borrow::Cow<'a, str>, usize) {
        self.replace(line, Replacement::Label)
    }

    /// Every credential in `bytes` overwritten with `*`, line by line: the same length, so
    /// offsets into the masked bytes are those of the log. Lines that are not UTF-8 stay.
    pub fn mask<'a>(&self, bytes: &'a [u8]) -> (std::borrow::Cow<'a, [u8]>, usize) {
        if !self.enabled {
            return (bytes.into(), 0);
        }
        if self.always.is_empty() {
            return self.mask_lines_with_literals(bytes);
        }
        self.mask_every_line(bytes)
    }

    /// [`Redactor::mask`] when every rule has literals: one scan of all the bytes for them, and
    /// only the lines holding one are looked at (most hold none).
    fn mask_lines_with_literals<'a>(&self, bytes: &'a [u8]) -> (std::borrow::Cow<'a, [u8]>, usize) {
        let mut out: Option<Vec<u8>> = None;
        let mut count = 0;
        // Bytes before `copied` are in `out` (once there is one); lines before `done` are seen.
        let (mut copied, mut done) = (0, 0);
        for found in self.literals.find_iter(bytes) {
            let at = found.start();
            if at < done {
                continue;
            }
            let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i + 1);
            done = end;
            let Ok(line) = std::str::from_utf8(&bytes[start..end]) else {
                continue;
            };
            let (masked, n) = self.replace(line, Replacement::Stars);
            if n == 0 {
                continue;
            }
            count += n;
            let out = out.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
            out.extend_from_slice(&bytes[copied..start]);
            out.extend_from_slice(masked.as_bytes());
            copied = end;
        }
        match out {
            Some(mut out) => {
                out.extend_from_slice(&bytes[copied..]);
                (out.into(), count)
            }
            None => (bytes.into(), 0),
        }
    }

    fn mask_every_line<'a>(&self, bytes: &'a [u8]) -> (std::borrow::Cow<'a, [u8]>, usize) {
        let mut out: Option<Vec<u8>> = None;
        let mut count = 0;
        let mut start = 0;
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            let masked = std::str::from_utf8(line)
                .ok()
                .map(|text| self.replace(text, Replacement::Stars))
                .filter(|(_, n)| *n > 0);
            match masked {
                Some((text, n)) => {
                    count += n;
                    let out = out.get_or_insert_with(|| bytes[..start].to_vec());
                    out.extend_from_slice(text.as_bytes());
                }
                None => {
                    if let Some(out) = out.as_mut() {
                        out.extend_from_slice(line);
                    }
                }
            }
            start += line.len();
        }
        match out {
            Some(out) => (out.into(), count),
            None => (bytes.into(), 0),
        }
    }

    fn replace<'a>(
        &self,
        line: &'a str,
        replacement: Replacement,
    ) -> (std::borrow::Cow<'a, str>, usize) {
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
                // Already replaced by an earlier rule (a token inside a URL), or code.
                if secret.as_str().starts_with("[REDACTED:")
                    || secret.as_str().bytes().all(|b| b == b'*')
                    || (rule.assignment && is_code(secret.as_str()))
                {
                    continue;
                }
                out.push_str(&text[last..secret.start()]);
                match replacement {
                    Replacement::Label => {
                        out.push_str("[REDACTED:");
                        out.push_str(rule.kind);
                        out.push(']');
                    }
                    Replacement::Stars => {
                        out.extend(std::iter::repeat_n('*', secret.as_str().len()));
                    }
                }
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
            // In a raw JSON line, a key or an assignment on a line of its own follows an escape.
            (
                r#"{"out":"cat .env\nSECRET_KEY=abcdefgh1234\nPASSWORD=hunter2hunter2\n"}"#,
                r#"{"out":"cat .env\nSECRET_KEY=[REDACTED:password]\nPASSWORD=[REDACTED:password]\n"}"#,
            ),
            (
                r#"{"out":"dump:\nAKIAFAKEFAKEFAKE1234\tghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123\n"}"#,
                r#"{"out":"dump:\n[REDACTED:aws_access_key]\t[REDACTED:github_token]\n"}"#,
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(r.redact(input).0, expected, "{input}");
        }
    }

    #[test]
    fn test_masking_keeps_every_offset() {
        let r = Redactor::builtin();
        let log = b"{\"a\":\"key AKIAFAKEFAKEFAKE1234\"}\n\xff\xfe AKIAFAKEFAKEFAKE1234\n{\"b\":\"url postgres://u:hunter2secret@h/db\"}";
        let (masked, count) = r.mask(log);
        assert_eq!(count, 2);
        assert_eq!(masked.len(), log.len());
        let text = String::from_utf8_lossy(&masked);
        assert!(text.contains("key ********************\""), "{text}");
        assert!(text.contains("u:*************@h"), "{text}");
        // A line that is not UTF-8 is kept as it is; masking again changes nothing.
        assert!(masked.windows(20).any(|w| w == b"AKIAFAKEFAKEFAKE1234"));
        assert_eq!(r.mask(&masked).1, 0);
        // Configured patterns, which have no literals, are looked for on every line.
        let (masked, count) = redactor().mask(b"ok\nid corp-deadbeef\nx");
        assert_eq!((&masked[..], count), (&b"ok\nid *************\nx"[..], 1));
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

    /// Deterministic pseudo-random characters from `alphabet` (a fixed LCG: the corpus is the
    /// same on every run).
    fn random(seed: &mut u64, alphabet: &[u8], len: usize) -> String {
        (0..len)
            .map(|_| {
                *seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                alphabet[(*seed >> 33) as usize % alphabet.len()] as char
            })
            .collect()
    }

    /// Code that names credentials without holding any: assignments, fields, parameters and
    /// configuration references in the languages agents work in.
    fn code_corpus() -> Vec<String> {
        let names = [
            "password",
            "passwd",
            "pwd",
            "secret",
            "api_key",
            "apiKey",
            "access_token",
            "auth_token",
            "PASSWORD",
            "Secret",
        ];
        let values = [
            "config.apiKey",
            "process.env.API_KEY",
            "self.password",
            "settings.SECRET_KEY",
            "req.body.password",
            "getPassword()",
            "secretValue",
            "password_hash",
            "API_KEY_ENV",
            "undefined",
            "Optional[str]",
            "${DB_PASSWORD}",
            "$DB_PASSWORD",
            "os.environ[KEY]",
            "credentials.accessToken",
            "Option<String>",
            "placeholder",
            "readSecret(path)",
            "userPassword",
            "auth.token_value",
            "********",
            "xxxxxxxxxxxx",
            "opts.secretKey",
            "env::var(KEY)",
        ];
        let shapes = [
            "{k}: {v}",
            "{k} = {v}",
            "{k}={v}",
            "const {k} = {v};",
            "  {k}: {v},",
        ];
        let mut out = Vec::new();
        for k in names {
            for v in values {
                for shape in shapes {
                    out.push(shape.replace("{k}", k).replace("{v}", v));
                }
            }
        }
        out
    }

    /// Credentials of every kind the built-in rules know, in the places they turn up.
    fn secret_corpus() -> Vec<(&'static str, String)> {
        const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        const PASSWORD: &[u8] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#%+-";
        let mut seed = 7;
        let mut out = Vec::new();
        for _ in 0..20 {
            let mut r = |alphabet: &[u8], len| random(&mut seed, alphabet, len);
            out.push((
                "aws_access_key",
                format!("aws_access_key_id = AKIA{}", r(UPPER, 16)),
            ));
            out.push((
                "github_token",
                format!("git clone https://x:ghp_{}@github.com/o/r", r(ALNUM, 36)),
            ));
            out.push((
                "github_token",
                format!("GH_TOKEN=github_pat_{}", r(ALNUM, 82)),
            ));
            out.push((
                "api_key",
                format!("export OPENAI_API_KEY=sk-proj-{}", r(ALNUM, 48)),
            ));
            out.push((
                "api_key",
                format!("ANTHROPIC_API_KEY=sk-ant-api03-{}", r(ALNUM, 40)),
            ));
            out.push((
                "slack_token",
                format!("token: xoxb-{}-{}", r(UPPER, 12), r(ALNUM, 24)),
            ));
            out.push(("google_api_key", format!("key=AIza{}", r(ALNUM, 35))));
            out.push((
                "jwt",
                format!("eyJ{}.eyJ{}.{}", r(ALNUM, 20), r(ALNUM, 30), r(ALNUM, 43)),
            ));
            out.push((
                "bearer_token",
                format!("curl -H 'Authorization: Bearer {}'", r(ALNUM, 40)),
            ));
            out.push((
                "url_password",
                format!(
                    "DATABASE_URL=postgres://app:{}@db:5432/app",
                    r(PASSWORD, 16)
                ),
            ));
            out.push(("password", format!("password = {}", r(PASSWORD, 14))));
            out.push(("password", format!("api_key: {}", r(ALNUM, 32))));
            out.push(("password", format!("secret={}", r(b"0123456789abcdef", 40))));
            out.push((
                "private_key",
                format!(
                    "-----BEGIN RSA PRIVATE KEY-----\\n{}\\n-----END RSA PRIVATE KEY-----",
                    r(ALNUM, 64)
                ),
            ));
        }
        for phrase in [
            "password = correcthorsebattery",
            "PASSWORD=hunter2hunter2",
            "db_password: S3cure!Passw0rd",
            "access_token: 9f8e7d6c5b4a3210ffee",
        ] {
            out.push(("password", phrase.to_owned()));
        }
        out
    }

    /// Precision and recall of the built-in rules on the two corpora. The figures are the
    /// ones in docs/harnesses.md; run with `--nocapture` to see them.
    #[test]
    fn test_precision_and_recall_on_code_and_secrets() {
        let r = Redactor::new(&RedactionConfig::default()).unwrap();
        let code = code_corpus();
        let false_positives: Vec<&String> =
            code.iter().filter(|line| r.redact(line).1 > 0).collect();
        let secrets = secret_corpus();
        let missed: Vec<&(&str, String)> = secrets
            .iter()
            .filter(|(kind, line)| {
                let (out, _) = r.redact(line);
                !out.contains(&format!("[REDACTED:{kind}]"))
            })
            .collect();
        let true_positives = secrets.len() - missed.len();
        let precision = true_positives as f64 / (true_positives + false_positives.len()) as f64;
        let recall = true_positives as f64 / secrets.len() as f64;
        println!(
            "redaction: {} code lines, {} redacted by mistake; {} secrets, {} missed; precision {:.3}, recall {:.3}",
            code.len(),
            false_positives.len(),
            secrets.len(),
            missed.len(),
            precision,
            recall
        );
        assert!(missed.is_empty(), "missed: {missed:?}");
        assert!(
            false_positives.is_empty(),
            "code redacted: {false_positives:?}"
        );
    }
}
