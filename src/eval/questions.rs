//! The evaluation's questions: read from TOML, checked, and chosen by split.

use std::collections::HashSet;
use std::path::Path;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// How a question is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    /// An error fragment, a file name, a flag, a version, a function name.
    Identifier,
    /// What the session was about, in its own words.
    Topical,
    /// The answer appears only in a tool's output.
    ToolOutput,
    /// In other words than the session used.
    Paraphrase,
}

impl Kind {
    pub(crate) const ALL: [Self; 4] = [
        Self::Identifier,
        Self::Topical,
        Self::ToolOutput,
        Self::Paraphrase,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Identifier => "identifier",
            Self::Topical => "topical",
            Self::ToolOutput => "tool_output",
            Self::Paraphrase => "paraphrase",
        }
    }
}

/// Which questions: ranking changes are tuned on `dev`; `test` is held out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Split {
    Dev,
    Test,
    All,
}

impl Split {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Dev => "dev",
            Self::Test => "test",
            Self::All => "all",
        }
    }

    /// Whether a question of split `question` is in this one.
    pub(crate) fn holds(self, question: Self) -> bool {
        self == Self::All || self == question
    }
}

/// One question and where its answer is.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Question {
    pub id: String,
    pub kind: Kind,
    pub question: String,
    /// The logs' own session ids (Claude Code's `sessionId`, Codex's `session_meta.id`, …).
    pub sessions: Vec<String>,
    /// The 1-based ordinal of the turn that answers it, in the first of `sessions`.
    #[serde(default)]
    pub turn: Option<u32>,
    pub split: Split,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    question: Vec<Question>,
}

/// The questions of a questions file.
pub(crate) fn load(path: &Path) -> anyhow::Result<Vec<Question>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the questions file {}", path.display()))?;
    parse(&text).with_context(|| format!("in {}", path.display()))
}

/// Parses and checks questions: unique ids, a question and a session each, a turn from 1,
/// and each in `dev` or `test`.
pub(crate) fn parse(text: &str) -> anyhow::Result<Vec<Question>> {
    let file: File = toml::from_str(text)?;
    let mut ids = HashSet::new();
    for q in &file.question {
        anyhow::ensure!(
            ids.insert(q.id.as_str()),
            "question id {} is repeated",
            q.id
        );
        anyhow::ensure!(
            !q.question.trim().is_empty(),
            "question {} has no text",
            q.id
        );
        anyhow::ensure!(!q.sessions.is_empty(), "question {} names no session", q.id);
        anyhow::ensure!(q.turn != Some(0), "question {}: turns count from 1", q.id);
        anyhow::ensure!(
            q.split != Split::All,
            "question {}: split is dev or test",
            q.id
        );
    }
    Ok(file.question)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"
[[question]]
id = "a"
kind = "tool_output"
question = "Which test failed?"
sessions = ["s1"]
turn = 3
split = "dev"

[[question]]
id = "b"
kind = "paraphrase"
question = "Why did it fall over?"
sessions = ["s2", "s3"]
split = "test"
"#;

    #[test]
    fn test_questions_parse_with_and_without_a_turn() {
        let questions = parse(TWO).unwrap();
        assert_eq!(questions.len(), 2);
        assert_eq!(questions[0].kind, Kind::ToolOutput);
        assert_eq!(questions[0].turn, Some(3));
        assert_eq!(questions[1].turn, None);
        assert_eq!(questions[1].sessions, ["s2", "s3"]);
        assert!(Split::All.holds(questions[1].split));
        assert!(!Split::Dev.holds(questions[1].split));
    }

    #[test]
    fn test_a_broken_question_set_is_refused() {
        let repeated = TWO.replace("id = \"b\"", "id = \"a\"");
        assert!(
            parse(&repeated)
                .unwrap_err()
                .to_string()
                .contains("repeated")
        );
        let no_session = TWO.replace("[\"s1\"]", "[]");
        assert!(parse(&no_session).is_err());
        let turn_zero = TWO.replace("turn = 3", "turn = 0");
        assert!(parse(&turn_zero).is_err());
        let split_all = TWO.replace("split = \"dev\"", "split = \"all\"");
        assert!(parse(&split_all).is_err());
        let unknown_kind = TWO.replace("\"paraphrase\"", "\"vibes\"");
        assert!(parse(&unknown_kind).is_err());
    }
}
