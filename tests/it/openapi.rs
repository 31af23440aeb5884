//! `openapi/openapi.yaml` against live servers: every documented path, method and status is
//! produced by a real request, and nothing the server serves is left undocumented; the
//! challenges of `401` and `403` take the two forms the document shows (with and without OAuth).

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{TestServer, exchange, fresh_db, request};
use moraine_mcp::config::{Scope, Settings, TokenConfig};
use moraine_mcp::db::Db;
use moraine_mcp::metrics::Metrics;
use serde_json::json;

/// One request and the status it must get: (server, path, method, headers, body, status).
type Case<'a> = (
    &'a str,
    &'a str,
    &'a str,
    Vec<(&'a str, &'a str)>,
    &'a str,
    u16,
);

const TOKEN: &str = "openapi-test-token-0123456789";
/// The `WWW-Authenticate` challenge of a POST that must be answered `status`.
async fn challenge(
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    status: u16,
) -> String {
    let head = exchange(addr, &request("POST", addr, path, headers, body)).await;
    assert_eq!(head.status, status, "POST {path} {headers:?}");
    head.headers
        .get("www-authenticate")
        .cloned()
        .unwrap_or_default()
}

/// A well-formed RS256 access token (unsigned): checking it needs the issuer's keys.
const ACCESS_TOKEN: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJ4In0.c2ln";
/// An issuer nothing answers at.
const ISSUER: &str = "http://127.0.0.1:9";
const INGEST_TOKEN: &str = "openapi-ingest-token-0123456789";
const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// (path, METHOD, status) for every response the document lists.
fn documented() -> BTreeSet<(String, String, u16)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi/openapi.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let doc: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let mut out = BTreeSet::new();
    for (route, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let upper = method.to_ascii_uppercase();
            if !METHODS.contains(&upper.as_str()) {
                continue;
            }
            for status in operation["responses"].as_object().unwrap().keys() {
                out.insert((route.clone(), upper.clone(), status.parse().unwrap()));
            }
        }
    }
    out
}

fn address(server: &TestServer) -> String {
    server.base.trim_start_matches("http://").to_owned()
}

fn configured(mut config: Settings, stateful: bool) -> Settings {
    let mut ingest = TokenConfig::reader("openapi-ingest", INGEST_TOKEN);
    ingest.scopes = vec![Scope::Ingest];
    config.auth.tokens = vec![TokenConfig::reader("openapi", TOKEN), ingest];
    config.server.stateful = stateful;
    config.server.request_body_limit_bytes = 64 * 1024;
    // A short request timeout, to see the 503 of a stalled upload; every inner deadline below it.
    config.server.request_timeout_secs = 1;
    config.clickhouse.health_timeout_ms = 500;
    config.tools.search_deadline_ms = 900;
    config.tools.list_deadline_ms = 900;
    config.tools.open_deadline_ms = 900;
    config.clone().validate().unwrap();
    config
}

#[tokio::test]
async fn every_documented_status_is_served_and_nothing_served_is_undocumented() {
    let (config, db) = fresh_db().await;
    let stateless = TestServer::start(configured(config.clone(), false), db.clone()).await;
    let stateful = TestServer::start(configured(config.clone(), true), db.clone()).await;
    let mut down_config = configured(config.clone(), false);
    down_config.clickhouse.url = "http://127.0.0.1:1".into();
    let down_db = Db::new(&down_config.clickhouse, Metrics::new(&down_config.sla));
    let down = TestServer::start(down_config, down_db).await;
    // Bodies stall out before the request timeout.
    let mut slow_config = configured(config.clone(), false);
    slow_config.server.request_timeout_secs = 5;
    slow_config.server.body_timeout_secs = 1;
    slow_config.ingest.max_concurrent_requests = 1;
    // And /metrics closed to all but a `metrics` token.
    slow_config.auth.protect_metrics = true;
    let slow = TestServer::start(slow_config, db.clone()).await;
    // OAuth beside the static tokens, with an authorization server that never answers (and
    // /metrics closed, so it checks credentials too).
    let mut oauth_config = configured(config.clone(), false);
    oauth_config.auth.oauth.issuer = ISSUER.into();
    oauth_config.auth.oauth.resource = format!("{ISSUER}/mcp");
    oauth_config.auth.protect_metrics = true;
    oauth_config.clone().validate().unwrap();
    let oauth = TestServer::start(oauth_config, db.clone()).await;
    let (a, s, d) = (address(&stateless), address(&stateful), address(&down));
    let w = address(&slow);
    let o = address(&oauth);
    let access_bearer = format!("Bearer {ACCESS_TOKEN}");
    let access = ("Authorization", access_bearer.as_str());

    let bearer = format!("Bearer {TOKEN}");
    let auth = ("Authorization", bearer.as_str());
    let ingest_bearer = format!("Bearer {INGEST_TOKEN}");
    let ingest_auth = ("Authorization", ingest_bearer.as_str());
    let status_body =
        r#"{"files": [{"harness": "codex", "path": "/home/a/.codex/sessions/x.jsonl"}]}"#;
    let line = "{\"type\":\"session_meta\",\"timestamp\":\"2026-05-01T00:00:00Z\",\"payload\":{\"id\":\"0194f3a2-7b1c-7d3e-9f00-1a2b3c4d5e6f\"}}\n";
    let append = "/ingest/v1/append?harness=codex&path=/home/a/.codex/sessions/x.jsonl&offset=0";
    let batch_body = format!(
        "{{\"logs\":[{{\"harness\":\"codex\",\"path\":\"/home/a/.codex/sessions/y.jsonl\",\"offset\":0,\"length\":{}}}]}}\n{line}",
        line.len()
    );
    let batch = "/ingest/v1/batch";
    // Over the ingest API's default body limit as sent.
    let ingest_huge =
        (moraine_mcp::config::IngestConfig::default().max_request_bytes + 1).to_string();
    let ingest_huge = ingest_huge.as_str();
    let json_type = ("Content-Type", "application/json");
    let accept_both = ("Accept", "application/json, text/event-stream");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "openapi-test", "version": "1"}}})
    .to_string();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let huge = "104857600";
    let crowd: Vec<(&str, &str)> = vec![("X-Pad", "1"); 101];

    // A stateful session, for the GET stream and DELETE.
    let opened = exchange(
        &s,
        &request("POST", &s, "/mcp", &[auth, json_type, accept_both], &init),
    )
    .await;
    assert_eq!(opened.status, 200);
    let session = opened
        .headers
        .get("mcp-session-id")
        .expect("a session ID")
        .clone();
    let session_header = ("Mcp-Session-Id", session.as_str());
    let version = ("MCP-Protocol-Version", "2025-11-25");

    let base = [auth, json_type, accept_both];
    let with = |extra: &[(&'static str, &'static str)]| -> Vec<(&str, &str)> {
        let mut all: Vec<(&str, &str)> = base.to_vec();
        all.extend_from_slice(extra);
        all
    };
    // (server, path, method, headers, body, expected status)
    let cases: Vec<Case<'_>> = vec![
        (&a, "/mcp", "POST", with(&[]), &init, 200),
        (
            &a,
            "/mcp",
            "POST",
            with(&[("MCP-Protocol-Version", "2025-11-25")]),
            &initialized,
            202,
        ),
        (
            &a,
            "/mcp",
            "POST",
            with(&[("MCP-Protocol-Version", "1999-01-01")]),
            &list,
            400,
        ),
        (&a, "/mcp", "POST", vec![json_type, accept_both], &list, 401),
        (
            &a,
            "/mcp",
            "POST",
            with(&[("Origin", "http://evil.example")]),
            &list,
            403,
        ),
        (
            &s,
            "/mcp",
            "POST",
            with(&[("Mcp-Session-Id", "no-such-session"), version]),
            &list,
            404,
        ),
        (
            &a,
            "/mcp",
            "POST",
            vec![auth, json_type, ("Accept", "application/json")],
            &list,
            406,
        ),
        (
            &a,
            "/mcp",
            "POST",
            with(&[("Content-Length", huge)]),
            "",
            413,
        ),
        (
            &a,
            "/mcp",
            "POST",
            vec![auth, ("Content-Type", "text/plain"), accept_both],
            &list,
            415,
        ),
        // Two Host headers (RFC 9112).
        (
            &a,
            "/mcp",
            "POST",
            with(&[("Host", "second.example")]),
            &list,
            400,
        ),
        // A body that stalls: the body timeout answers before the request timeout.
        (
            &w,
            "/mcp",
            "POST",
            with(&[("Content-Length", "100")]),
            "",
            408,
        ),
        // Declares a body and never sends it: the request timeout answers.
        (
            &a,
            "/mcp",
            "POST",
            with(&[("Content-Length", "100")]),
            "",
            503,
        ),
        (
            &s,
            "/mcp",
            "GET",
            vec![
                auth,
                ("Accept", "text/event-stream"),
                session_header,
                version,
            ],
            "",
            200,
        ),
        (
            &s,
            "/mcp",
            "GET",
            vec![auth, ("Accept", "text/event-stream")],
            "",
            400,
        ),
        (
            &s,
            "/mcp",
            "GET",
            vec![("Accept", "text/event-stream")],
            "",
            401,
        ),
        (
            &s,
            "/mcp",
            "GET",
            vec![
                auth,
                ("Accept", "text/event-stream"),
                ("Origin", "http://evil.example"),
            ],
            "",
            403,
        ),
        (
            &s,
            "/mcp",
            "GET",
            vec![
                auth,
                ("Accept", "text/event-stream"),
                ("Mcp-Session-Id", "gone"),
                version,
            ],
            "",
            404,
        ),
        (
            &a,
            "/mcp",
            "GET",
            vec![auth, ("Accept", "text/event-stream")],
            "",
            405,
        ),
        (
            &s,
            "/mcp",
            "GET",
            vec![
                auth,
                ("Accept", "application/json"),
                session_header,
                version,
            ],
            "",
            406,
        ),
        (
            &a,
            "/mcp",
            "GET",
            vec![auth, ("Content-Length", huge)],
            "",
            413,
        ),
        (&s, "/mcp", "DELETE", vec![auth], "", 400),
        // More header fields than the server reads.
        (&a, "/mcp", "POST", crowd.clone(), "", 431),
        (&a, "/healthz", "GET", crowd.clone(), "", 431),
        (&s, "/mcp", "DELETE", vec![], "", 401),
        (
            &s,
            "/mcp",
            "DELETE",
            vec![auth, ("Origin", "http://evil.example")],
            "",
            403,
        ),
        (&a, "/mcp", "DELETE", vec![auth], "", 405),
        (
            &a,
            "/mcp",
            "DELETE",
            vec![auth, ("Content-Length", huge)],
            "",
            413,
        ),
        (
            &s,
            "/mcp",
            "DELETE",
            vec![auth, session_header, version],
            "",
            202,
        ),
        (&a, "/healthz", "GET", vec![], "", 200),
        (
            &a,
            "/healthz",
            "GET",
            vec![("Host", "second.example")],
            "",
            400,
        ),
        (&d, "/healthz", "GET", vec![], "", 503),
        (
            &a,
            "/healthz",
            "GET",
            vec![("Content-Length", huge)],
            "",
            413,
        ),
        (&a, "/healthz", "HEAD", vec![], "", 200),
        (&d, "/healthz", "HEAD", vec![], "", 503),
        (
            &a,
            "/healthz",
            "HEAD",
            vec![("Content-Length", huge)],
            "",
            413,
        ),
        (
            &a,
            "/ingest/v1/status",
            "POST",
            vec![ingest_auth, json_type],
            status_body,
            200,
        ),
        (
            &a,
            "/ingest/v1/status",
            "POST",
            vec![ingest_auth, json_type],
            "not json",
            400,
        ),
        (
            &a,
            "/ingest/v1/status",
            "POST",
            vec![json_type],
            status_body,
            401,
        ),
        (
            &a,
            "/ingest/v1/status",
            "POST",
            vec![auth, json_type],
            status_body,
            403,
        ),
        (
            &w,
            "/ingest/v1/status",
            "POST",
            vec![ingest_auth, ("Content-Length", "100")],
            "",
            408,
        ),
        (
            &a,
            "/ingest/v1/status",
            "POST",
            vec![ingest_auth, ("Content-Length", ingest_huge)],
            "",
            413,
        ),
        (
            &d,
            "/ingest/v1/status",
            "POST",
            vec![ingest_auth, json_type],
            status_body,
            503,
        ),
        (&a, append, "POST", vec![ingest_auth], line, 200),
        (
            &a,
            "/ingest/v1/append?harness=vim&path=/x&offset=0",
            "POST",
            vec![ingest_auth],
            line,
            400,
        ),
        (&a, append, "POST", vec![], line, 401),
        (&a, append, "POST", vec![auth], line, 403),
        (
            &w,
            append,
            "POST",
            vec![ingest_auth, ("Content-Length", "100")],
            "",
            408,
        ),
        (
            &a,
            "/ingest/v1/append?harness=codex&path=/home/a/.codex/sessions/x.jsonl&offset=99999",
            "POST",
            vec![ingest_auth],
            line,
            409,
        ),
        (
            &a,
            append,
            "POST",
            vec![ingest_auth, ("Content-Length", ingest_huge)],
            "",
            413,
        ),
        (
            &a,
            append,
            "POST",
            vec![ingest_auth, ("Content-Encoding", "br")],
            line,
            415,
        ),
        (&d, append, "POST", vec![ingest_auth], line, 503),
        (&a, batch, "POST", vec![ingest_auth], &batch_body, 200),
        (&a, batch, "POST", vec![ingest_auth], line, 400),
        (&a, batch, "POST", vec![], &batch_body, 401),
        (&a, batch, "POST", vec![auth], &batch_body, 403),
        (
            &w,
            batch,
            "POST",
            vec![ingest_auth, ("Content-Length", "100")],
            "",
            408,
        ),
        (
            &a,
            batch,
            "POST",
            vec![ingest_auth, ("Content-Length", ingest_huge)],
            "",
            413,
        ),
        (
            &a,
            batch,
            "POST",
            vec![ingest_auth, ("Content-Encoding", "br")],
            &batch_body,
            415,
        ),
        (&d, batch, "POST", vec![ingest_auth], &batch_body, 503),
        (&a, "/metrics", "GET", vec![], "", 200),
        (
            &a,
            "/metrics",
            "GET",
            vec![("Content-Length", huge)],
            "",
            413,
        ),
        (&a, "/ingest/v1/sources", "GET", vec![auth], "", 200),
        (&a, "/ingest/v1/sources", "GET", vec![ingest_auth], "", 200),
        (&a, "/ingest/v1/sources", "GET", vec![], "", 401),
        (&d, "/ingest/v1/sources", "GET", vec![auth], "", 503),
        (&a, "/ingest/v1/sources", "HEAD", vec![auth], "", 200),
        (&a, "/ingest/v1/sources", "HEAD", vec![], "", 401),
        (&w, "/metrics", "GET", vec![], "", 401),
        (&w, "/metrics", "GET", vec![auth], "", 403),
        (&w, "/metrics", "HEAD", vec![], "", 401),
        (&w, "/metrics", "HEAD", vec![auth], "", 403),
        (&a, "/metrics", "HEAD", vec![], "", 200),
        (
            &a,
            "/metrics",
            "HEAD",
            vec![("Content-Length", huge)],
            "",
            413,
        ),
        // The protected-resource metadata: served with OAuth, not found without.
        (
            &o,
            "/.well-known/oauth-protected-resource/mcp",
            "GET",
            vec![],
            "",
            200,
        ),
        (
            &o,
            "/.well-known/oauth-protected-resource",
            "GET",
            vec![],
            "",
            200,
        ),
        (
            &a,
            "/.well-known/oauth-protected-resource/mcp",
            "GET",
            vec![],
            "",
            404,
        ),
        (
            &a,
            "/.well-known/oauth-protected-resource",
            "GET",
            vec![],
            "",
            404,
        ),
        // An access token while the authorization server cannot be asked: 503, on every route
        // that checks credentials.
        (
            &o,
            "/mcp",
            "POST",
            vec![access, json_type, accept_both],
            &list,
            503,
        ),
        (
            &o,
            "/mcp",
            "GET",
            vec![access, ("Accept", "text/event-stream")],
            "",
            503,
        ),
        (&o, "/mcp", "DELETE", vec![access], "", 503),
        (
            &o,
            "/ingest/v1/status",
            "POST",
            vec![access, json_type],
            status_body,
            503,
        ),
        (&o, append, "POST", vec![access], line, 503),
        (&o, batch, "POST", vec![access], &batch_body, 503),
        (&o, "/ingest/v1/sources", "GET", vec![access], "", 503),
        (&o, "/metrics", "GET", vec![access], "", 503),
        // A valid static token still works beside OAuth.
        (
            &o,
            "/mcp",
            "POST",
            vec![auth, json_type, accept_both],
            &init,
            200,
        ),
    ];

    let mut served = BTreeSet::new();
    for (addr, path, method, headers, body, expected) in &cases {
        let head = exchange(addr, &request(method, addr, path, headers, body)).await;
        assert_eq!(head.status, *expected, "{method} {path} {headers:?}");
        let route = path.split('?').next().unwrap().to_owned();
        served.insert((route, method.to_string(), head.status));
    }
    // The ingest API's one slot (on `w`) held by an upload that stalls: the next request waits
    // for nothing and is told to come back.
    for path in ["/ingest/v1/status", "/ingest/v1/append", "/ingest/v1/batch"] {
        let mut holder = tokio::net::TcpStream::connect(&w).await.unwrap();
        let held = request(
            "POST",
            &w,
            append,
            &[ingest_auth, ("Content-Length", "100")],
            "",
        );
        tokio::io::AsyncWriteExt::write_all(&mut holder, held.as_bytes())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let head = exchange(&w, &request("POST", &w, path, &[ingest_auth], "{}")).await;
        assert_eq!(head.status, 429, "{path}");
        assert!(head.headers.contains_key("retry-after"));
        served.insert((path.to_owned(), "POST".to_owned(), head.status));
        drop(holder);
        // Until the slot is free again (the stalled upload times out).
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    // The challenges: RFC 9728's resource_metadata and scope with OAuth, a realm without.
    let metadata_url = format!("{ISSUER}/.well-known/oauth-protected-resource/mcp");
    let unknown_headers = [
        ("Authorization", "Bearer not-a-known-token-0123"),
        json_type,
        accept_both,
    ];
    let missing = challenge(&o, "/mcp", &[json_type, accept_both], &list, 401).await;
    assert_eq!(
        missing,
        format!(r#"Bearer scope="read", resource_metadata="{metadata_url}""#)
    );
    let unknown = challenge(&o, "/mcp", &unknown_headers, &list, 401).await;
    assert!(
        unknown.starts_with(r#"Bearer error="invalid_token", error_description=""#)
            && unknown.ends_with(&format!(
                r#"scope="read", resource_metadata="{metadata_url}""#
            )),
        "{unknown}"
    );
    let scope = challenge(&o, "/ingest/v1/status", &[auth, json_type], &list, 403).await;
    assert_eq!(
        scope,
        format!(
            r#"Bearer error="insufficient_scope", error_description="the ingest scope is needed", scope="ingest", resource_metadata="{metadata_url}""#
        )
    );
    assert_eq!(
        challenge(&a, "/mcp", &[json_type, accept_both], &list, 401).await,
        r#"Bearer realm="moraine-mcp""#
    );
    assert_eq!(
        challenge(&a, "/mcp", &unknown_headers, &list, 401).await,
        r#"Bearer realm="moraine-mcp", error="invalid_token", error_description="the bearer token is not known""#
    );
    assert_eq!(
        challenge(&a, "/ingest/v1/status", &[auth, json_type], &list, 403).await,
        r#"Bearer realm="moraine-mcp", error="insufficient_scope", error_description="the ingest scope is needed""#
    );
    let unavailable = exchange(
        &o,
        &request("POST", &o, "/mcp", &[access, json_type, accept_both], &list),
    )
    .await;
    assert_eq!(unavailable.status, 503);
    assert_eq!(
        unavailable.headers.get("retry-after").map(String::as_str),
        Some("5")
    );

    let documented = documented();
    let undocumented: Vec<_> = served.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "served but not documented: {undocumented:?}"
    );
    let unseen: Vec<_> = documented.difference(&served).collect();
    assert!(
        unseen.is_empty(),
        "documented but never produced: {unseen:?}"
    );

    // Every other method on a documented path, and paths the document does not name, are not
    // served (405 or 404) by either kind of server.
    let paths: BTreeSet<&str> = documented.iter().map(|(p, _, _)| p.as_str()).collect();
    for addr in [&a, &s] {
        for path in &paths {
            for method in METHODS {
                if documented.iter().any(|(p, m, _)| p == path && m == method) {
                    continue;
                }
                let head =
                    exchange(addr, &request(method, addr, path, &[auth, accept_both], "")).await;
                assert!(
                    head.status == 405 || head.status == 404,
                    "{method} {path} answered {}",
                    head.status
                );
            }
        }
        // Only GET / is served (a browser sent to the web pages, outside this document).
        let root = exchange(
            addr,
            &request("POST", addr, "/", &[auth, json_type, accept_both], "{}"),
        )
        .await;
        assert_eq!(root.status, 404, "POST /");
        for path in [
            "/mcp/",
            "/mcp/extra",
            "/health",
            "/metrics/x",
            "/.well-known/oauth-protected-resource",
        ] {
            for method in ["GET", "POST"] {
                let head = exchange(
                    addr,
                    &request(method, addr, path, &[auth, json_type, accept_both], "{}"),
                )
                .await;
                assert_eq!(head.status, 404, "{method} {path}");
            }
        }
    }

    stateless.stop().await;
    stateful.stop().await;
    down.stop().await;
    slow.stop().await;
    oauth.stop().await;
}
