//! Who may call: foreign Host and Origin headers, bearer tokens.

use super::*;

#[tokio::test]
async fn foreign_host_or_origin_is_forbidden() {
    let (config, db) = fresh_db().await;
    let server = TestServer::start(config, db).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let base = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let with = |extra: (&'static str, String)| {
        let mut h: Vec<(&str, String)> = base.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        h.push(extra);
        h
    };
    let port = server.base.rsplit(':').next().unwrap().to_owned();
    for (header, value, expected) in [
        ("host", "evil.example.com".to_owned(), 403),
        ("origin", "http://evil.example.com".to_owned(), 403),
        ("origin", format!("http://127.0.0.1:{port}"), 200),
        ("origin", format!("http://localhost:{port}"), 200),
    ] {
        let headers = with((header, value.clone()));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let reply = send("POST", &server.mcp_url, &headers, &body).await;
        assert_eq!(reply.status, expected, "{header}: {value}");
    }
    server.stop().await;
}

#[tokio::test]
async fn bearer_tokens_are_required_when_configured() {
    let (mut config, db) = fresh_db().await;
    config.auth.tokens = vec![TokenConfig::reader("laptop", "s3cret-token-0123456789")];
    let server = TestServer::start(config, db).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let base = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let missing = send("POST", &server.mcp_url, &base, &body).await;
    assert_eq!(missing.status, 401);
    assert!(missing.headers["www-authenticate"].starts_with("Bearer"));
    let mut wrong = base.to_vec();
    wrong.push(("authorization", "Bearer s3cret-token-0123456780"));
    let reply = send("POST", &server.mcp_url, &wrong, &body).await;
    assert_eq!(reply.status, 401);
    assert!(reply.headers["www-authenticate"].contains("invalid_token"));
    let mut client = Mcp::legacy(&server.mcp_url, Some("s3cret-token-0123456789")).await;
    client.ok("search_sessions", json!({"query": "x"})).await;
    // Health and metrics stay open; metrics count the token by its position for an anonymous
    // scraper (its name needs a `metrics` token), and never show the token itself.
    let metrics = send("GET", &format!("{}/metrics", server.base), &[], "").await;
    assert_eq!(metrics.status, 200);
    assert!(metrics.body.contains("token=\"token-1\""));
    assert!(!metrics.body.contains("laptop"));
    assert!(!metrics.body.contains("s3cret"));
    server.stop().await;
}
