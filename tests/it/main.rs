//! The integration tests, one binary sharing one embedded engine: the service foundation, the
//! three tools against the v1 spec, every harness's logs, ingest and push, the gateway, the
//! impact tiers, cluster mode's schema, the OpenAPI document, the retrieval evaluation's inputs
//! and the docs against the tree. The reliability suites, which stop and start engines of their
//! own, are `tests/resilience/`.

#[path = "../common/mod.rs"]
mod common;

mod cluster_schema;
mod docs;
mod eval;
mod foundation;
mod gateway;
mod harnesses;
mod impact_tiers;
mod ingest;
mod openapi;
mod push;
mod tools;
mod web;
