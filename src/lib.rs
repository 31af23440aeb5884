//! moraine-mcp: session search for AI coding agents, served as a remote MCP server over ClickHouse.
pub mod config;
pub mod db;
pub mod ids;
pub mod ingest;
pub mod metrics;
pub mod migrate;
pub mod tokenize;
pub mod vocab;
pub mod embedded;
