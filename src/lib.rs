//! moraine-mcp: session search for AI coding agents, served as a remote MCP server over ClickHouse.
//!
//! Layout:
//! - [`cli`]: the `moraine-mcp` commands (serve, migrate, up, ingest, bench, healthcheck); `up`
//!   (embedded engine, ingest and server on one machine) has a module of its own.
//! - [`app`]: assembling the service (tools, search log, router, listener), the one way the CLI,
//!   the benchmark and the tests start it.
//! - [`config`]: the TOML configuration, environment overrides and validation into a `Config`.
//! - `server`: the HTTP surface (MCP endpoint, Host/Origin checks, limits, /healthz, /metrics),
//!   with `auth` (bearer tokens, callers) and `mcp` (the rmcp handler) behind it.
//! - `tools`: one module per MCP tool (`search_sessions`, `list_sessions`, `open`), each with its
//!   schema, SQL, wire types and text rendering; `tools::context` is what they share.
//! - [`harness`]: one module per agent harness (detection, where its logs are, reading its
//!   records into drafts, rendering its stores), behind one trait and one registry.
//! - [`ingest`]: agent logs → sessions, turns, events and the search index; [`rows`] are the
//!   stored rows ingest writes and the tools read.
//! - [`db`] (the shared ClickHouse handle), [`migrate`] (schema), [`embedded`] (the local engine).
//! - `tokenize` (shared by indexing and queries), `text`, [`ids`], [`vocab`], [`metrics`]
//!   (with `capacity`, the store's size in them), `telemetry`, `demo`, `bench` (the benchmark
//!   harness), `eval` (the retrieval evaluation).

pub mod app;
pub(crate) mod auth;
#[cfg(feature = "bench")]
pub(crate) mod bench;
pub(crate) mod capacity;
pub mod cli;
pub mod config;
pub mod db;
pub mod demo;
pub mod embedded;
#[cfg(feature = "bench")]
pub(crate) mod eval;
pub mod forget;
pub mod fuzzing;
pub mod harness;
pub(crate) mod http_client;
pub mod http_error;
pub mod ids;
pub mod ingest;
pub(crate) mod mcp;
pub mod metrics;
pub mod migrate;
pub mod push;
pub mod rows;
pub mod semantic;
pub(crate) mod server;
pub(crate) mod telemetry;
pub(crate) mod text;
pub mod token_admin;
pub(crate) mod tokenize;
pub(crate) mod tools;
pub(crate) mod up;
pub mod vocab;
pub(crate) mod web;
