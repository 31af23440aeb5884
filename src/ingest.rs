//! Ingest: agent session logs → sessions, turns, events and the search index.
pub mod adapter;
pub mod claude;
pub mod codex;
pub mod draft;
pub mod redact;
pub mod rows;
pub mod session;
