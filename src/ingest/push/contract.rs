//! The ingest API's contract, one set of types for both sides: what `push` sends and the
//! server reads (status requests, append and batch parameters), what the server answers (each
//! log's status, each append's outcome) and its refusal codes.

use serde::{Deserialize, Serialize};

pub use crate::http_error::{ErrorBody, ErrorCode};
pub use crate::ingest::sources::{SourceStatus, SourcesAnswer};
use crate::vocab::Harness;

/// Longest accepted log path, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;
/// Most logs one status request may ask about.
pub const MAX_STATUS_FILES: usize = 10_000;

/// A log as a client names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogName {
    pub harness: Harness,
    pub path: String,
    /// The session the client found this log to hold, when its own look at the log and its
    /// siblings made it a session of its own under the ID the log names (Gemini CLI's
    /// sub-agent chats saved under their parent's ID): so the server decides as the client
    /// did, whatever order the logs arrive in. Only that form is taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// Where a pushed log stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogStatus {
    pub harness: Harness,
    pub path: String,
    /// Bytes received and archived; the next append starts here.
    pub received: u64,
    /// Bytes parsed (whole lines).
    pub parsed: u64,
    pub generation: u32,
    /// XXH3 of the first and the last (up to) 4 KiB before `received`, as 16 hex digits, so a
    /// client can tell whether its file still starts with what was sent; null for a new log.
    pub head_hash: Option<String>,
    pub tail_hash: Option<String>,
}

/// What one append did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Appended {
    pub received: u64,
    pub parsed: u64,
    pub generation: u32,
    /// The range was already stored: nothing was written.
    pub duplicate: bool,
    pub bytes: u64,
    pub lines: u64,
    pub events: u64,
    pub malformed: u64,
    pub redactions: u64,
    pub sessions: u64,
    /// Events dated later than the server's clock allows: shown at the time they were
    /// received (the laptop's clock is probably wrong).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub future_events: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a batch did for one log, as the answer lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Outcome {
    Refused(LogRefusal),
    Appended(Appended),
}

/// A log of a batch that was refused, with the same fields as a refused single append.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LogRefusal {
    pub error: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u32>,
}

/// `POST /ingest/v1/status`: where each of `files` stands.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusRequest {
    pub files: Vec<LogName>,
    /// The source to write as, on a server without tokens (a token's own source otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The answer to a status request: the logs in the order asked.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusAnswer {
    pub source: String,
    pub files: Vec<LogStatus>,
}

/// `POST /ingest/v1/append`'s query: the log, and where its bytes (the body) start.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppendQuery {
    pub harness: Harness,
    pub path: String,
    pub offset: u64,
    /// The log was rewritten: what is stored is replaced (with `offset` 0).
    #[serde(default)]
    pub replace: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// See [`LogName::session`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl AppendQuery {
    pub fn log(&self) -> LogName {
        LogName {
            harness: self.harness,
            path: self.path.clone(),
            session: self.session.clone(),
        }
    }
}

/// `POST /ingest/v1/batch`'s query (the body is described in [`super::batch`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The answer to a batch: one outcome per log, in the order of the batch's head.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchAnswer {
    pub source: String,
    pub logs: Vec<Outcome>,
}

impl LogRefusal {
    /// The server holds other bytes than the client thought: it asks where the log stands
    /// and sends from there.
    pub fn is_mismatch(&self) -> bool {
        matches!(
            self.error,
            ErrorCode::OffsetMismatch | ErrorCode::ContentMismatch
        )
    }
}
