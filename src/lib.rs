//! moraine-mcp: session search for AI coding agents, served as a remote MCP server over ClickHouse.
//!
//! Layout:
//! - [`cli`]: the `moraine-mcp` commands (serve, migrate, up, ingest, bench, healthcheck).
//! - [`bench`]: the benchmark harness (generated corpora, HTTP load, the seed-design baseline).
//! - [`config`]: the TOML configuration, environment overrides and validation.
//! - [`server`]: the HTTP surface (MCP endpoint, auth, Host/Origin checks, /healthz, /metrics);
//!   [`mcp`] is the rmcp handler behind it.
//! - [`tools`]: `search_sessions`, `list_sessions` and `open`, their schemas and envelopes.
//! - [`ingest`]: Codex and Claude Code logs → sessions, turns, events and the search index.
//! - [`db`] (the shared ClickHouse handle), [`migrate`] (schema), [`embedded`] (the local engine).
//! - [`tokenize`] (shared by indexing and queries), [`ids`], [`vocab`], [`metrics`],
//!   [`telemetry`], [`demo`].

pub mod app;
pub mod auth;
pub mod bench;
pub mod cli;
pub mod config;
pub mod db;
pub mod demo;
pub mod embedded;
pub mod ids;
pub mod ingest;
pub mod mcp;
pub mod metrics;
pub mod migrate;
pub mod rows;
pub mod server;
pub mod telemetry;
pub mod text;
pub mod tokenize;
pub mod tools;
pub mod up;
pub mod vocab;
