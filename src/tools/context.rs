//! What every tool shares: the [`Tool`] contract a tool module fulfils, the [`Context`] each call
//! runs in, and the typed [`Answer`] it gives back.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::ToolAnnotations;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::envelope::{Envelope, Performance, ToolError};
use super::querylog::QueryLog;
use super::schema::{self, InputRules};
use super::stats::Statistics;
use crate::auth::Caller;
use crate::config::Config;
use crate::db::Db;

/// What a tool module provides. Calls reach [`Tool::run`] only with arguments that passed
/// [`Tool::input_schema`] and were read into [`Tool::Args`].
pub(crate) trait Tool {
    /// The tool's wire name.
    const NAME: &'static str;
    const TITLE: &'static str;
    const DESCRIPTION: &'static str;
    /// `schema_version` of the success envelope.
    const SCHEMA_VERSION: &'static str;

    /// The arguments, read with serde once the schema accepted them.
    type Args: DeserializeOwned;
    /// The canonical request echoed in the envelope.
    type Request: Serialize + JsonSchema + Send;
    /// The envelope's `data`.
    type Data: Serialize + JsonSchema + Send;

    /// The input schema published in `tools/list`.
    fn input_schema() -> Value;
    /// How failures of the tool's own fields map to the spec's errors.
    fn input_rules() -> InputRules;
    /// The call's deadline and the SLA target reported when it fails.
    fn budget(config: &Config) -> Budget;
    /// Answers a call of a caller who sees `visible`.
    fn run(
        ctx: &Context,
        visible: &Visibility,
        args: Self::Args,
        deadline: Instant,
    ) -> impl Future<Output = Result<Answer<Self>, ToolError>> + Send;
    /// The compact text of `content[0].text`.
    fn render(answer: &Answer<Self>) -> String;

    /// Runs once a successful call is timed (search records itself in the query log here).
    fn answered(
        _ctx: &Context,
        _answer: &Answer<Self>,
        _performance: &Performance,
        _caller: &Caller,
    ) {
    }

    /// The definition published in `tools/list`.
    fn definition() -> rmcp::model::Tool {
        rmcp::model::Tool::new(
            Self::NAME,
            Self::DESCRIPTION,
            schema::as_object(Self::input_schema()),
        )
        .with_title(Self::TITLE)
        .with_raw_output_schema(schema::as_object(schema::output::<
            Envelope<Self::Request, Self::Data>,
        >()))
        .with_annotations(
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        )
    }
}

/// A tool's successful answer, before the envelope's performance block is added.
pub(crate) struct Answer<T: Tool + ?Sized> {
    pub request: T::Request,
    pub data: T::Data,
    /// Non-fatal notes about the request.
    pub warnings: Vec<String>,
    /// The spec's target for the kind of request this was.
    pub sla_target_ms: u64,
}

/// The sessions a caller may see: every one, or those of some sources. Other sessions do not
/// exist for the caller: not in hits, counts, pages, cursors or traversal links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Visibility {
    All,
    Sources(Arc<[String]>),
}

impl Visibility {
    pub(crate) fn of(caller: &Caller) -> Self {
        match &caller.read_sources {
            None => Self::All,
            Some(sources) => Self::Sources(sources.clone()),
        }
    }

    /// The visible sources, for the `{visible:Array(String)}` parameter (empty for all).
    pub(crate) fn sources(&self) -> &[String] {
        match self {
            Self::All => &[],
            Self::Sources(sources) => sources,
        }
    }

    /// `fragment` (a condition that binds `{visible:Array(String)}`) when restricted.
    pub(crate) fn filter(&self, fragment: &'static str) -> &'static str {
        match self {
            Self::All => "",
            Self::Sources(_) => fragment,
        }
    }

    /// Whether a session of `source` is visible.
    pub(crate) fn shows(&self, source: &str) -> bool {
        match self {
            Self::All => true,
            Self::Sources(sources) => sources.iter().any(|s| s == source),
        }
    }
}

/// Restricts a statement on a table with a `session_key` to visible sessions.
pub(crate) const VISIBLE_SESSION_KEY: &str = "AND session_key IN (SELECT session_key FROM sessions FINAL WHERE source IN {visible:Array(String)})";

/// A call's time limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    pub deadline_ms: u64,
    /// The SLA target an error envelope reports: the tool's default row.
    pub fallback_sla_ms: u64,
}

/// What the tools share: the database, the configuration, the query log and a little cached
/// state.
pub(crate) struct Context {
    pub db: Db,
    pub config: Arc<Config>,
    /// BM25 statistics, cached briefly; also the corpus size that picks the global-search SLA row.
    pub stats: Statistics,
    pub query_log: QueryLog,
    /// The model global searches rank meaning with (none: semantic ranking is off).
    pub embedder: Option<Arc<crate::semantic::Embedder>>,
    cursor_key: tokio::sync::OnceCell<Vec<u8>>,
}

impl Context {
    pub(crate) fn new(db: Db, config: Arc<Config>, query_log: QueryLog) -> Self {
        Self {
            embedder: crate::semantic::loaded(&config.semantic),
            db,
            config,
            stats: Statistics::default(),
            query_log,
            cursor_key: tokio::sync::OnceCell::new(),
        }
    }

    /// The key list_sessions cursors are signed with, shared through the database so every
    /// instance accepts every other instance's cursors.
    pub(crate) async fn cursor_key(&self) -> Result<&[u8], ToolError> {
        let key = self
            .cursor_key
            .get_or_try_init(|| async {
                let deadline =
                    Instant::now() + Duration::from_millis(self.config.tools.list_deadline_ms);
                let key: Option<String> = self
                    .db
                    .read(
                        "cursor_key",
                        "SELECT key FROM service_keys FINAL WHERE name = 'cursor'",
                    )
                    .fetch_optional(&self.db, deadline)
                    .await?;
                key.map(String::into_bytes)
                    .filter(|k| !k.is_empty())
                    .ok_or_else(|| {
                        ToolError::Internal("the cursor key is missing; run migrate".into())
                    })
            })
            .await?;
        Ok(key)
    }
}

/// Reads an optional integer argument. JSON Schema counts `10.0` as an integer, so the schema
/// accepts it, and so must the reader.
pub(crate) fn optional_integer<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u32>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let value = number
        .as_u64()
        .or_else(|| {
            number
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                .map(|f| f as u64)
        })
        .and_then(|n| u32::try_from(n).ok());
    value
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom(format!("{number} is not a small integer")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Args {
        #[serde(default, deserialize_with = "optional_integer")]
        n: Option<u32>,
    }

    #[test]
    fn test_integers_may_be_written_as_whole_floats() {
        let read = |v: Value| serde_json::from_value::<Args>(v).map(|a| a.n);
        assert_eq!(read(serde_json::json!({"n": 10})).unwrap(), Some(10));
        assert_eq!(read(serde_json::json!({"n": 10.0})).unwrap(), Some(10));
        assert_eq!(read(serde_json::json!({"n": null})).unwrap(), None);
        assert_eq!(read(serde_json::json!({})).unwrap(), None);
        assert!(read(serde_json::json!({"n": 2.5})).is_err());
    }
}
