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
    // Health and metrics stay open; metrics count by method and outcome, never by who: the
    // token's name (and its source, which is its name) shows only to a `metrics` token.
    let metrics = send("GET", &format!("{}/metrics", server.base), &[], "").await;
    assert_eq!(metrics.status, 200);
    let auth = "moraine_mcp_auth_requests_total";
    assert!(
        common::metric_sum(
            &metrics.body,
            auth,
            &["method=\"static\"", "outcome=\"accepted\""]
        ) >= 1.0
    );
    assert!(
        common::metric_sum(
            &metrics.body,
            auth,
            &["method=\"static\"", "outcome=\"rejected\""]
        ) >= 1.0
    );
    assert!(
        common::metric_sum(
            &metrics.body,
            auth,
            &["method=\"none\"", "outcome=\"missing\""]
        ) >= 1.0
    );
    assert!(!metrics.body.contains("laptop"));
    assert!(!metrics.body.contains("s3cret"));
    server.stop().await;
}

/// Polls `probe` (at most 15 s) until it returns `want`: a change the server reads within a
/// second or two.
async fn until_status(mut probe: impl AsyncFnMut() -> u16, want: u16, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let got = probe().await;
        if got == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: still {got}, not {want}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `moraine-mcp tokens --file <file> <args>`: its standard output, trimmed.
fn tokens_command(file: &std::path::Path, args: &[&str]) -> String {
    let home = tempfile_dir("tokens-home");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_moraine-mcp"))
        .arg("tokens")
        .arg("--file")
        .arg(file)
        .args(args)
        .env("HOME", &home)
        .env_remove("MORAINE_MCP_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tokens {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("moraine-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn static_tokens_are_added_rotated_and_revoked_while_the_server_runs() {
    let (mut config, db) = fresh_db().await;
    let dir = tempfile_dir("tokens-file");
    let file = dir.join("tokens.toml");
    config.auth.tokens_file = file.display().to_string();
    let server = TestServer::start(config, db).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let url = server.mcp_url.clone();
    let status = |token: String| {
        let (url, body) = (url.clone(), body.clone());
        async move || {
            let auth = format!("Bearer {token}");
            let headers = [
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
                ("authorization", auth.as_str()),
            ];
            send("POST", &url, &headers, &body).await.status
        }
    };
    // A server with a tokens file and no token yet is closed, not open.
    assert_eq!(status("anything-0123456789".into())().await, 401);

    let first = tokens_command(&file, &["add", "laptop", "--scopes", "read"]);
    assert!(first.starts_with("mmcp_") && first.len() > 60, "{first}");
    until_status(status(first.clone()), 200, "an added token").await;
    let listed = tokens_command(&file, &["list"]);
    assert!(
        listed.contains("laptop\tread\tlaptop\t*\tnever"),
        "{listed}"
    );
    assert!(!listed.contains(&first));

    // Rotation: both values work for the overlap, then only the new one.
    let second = tokens_command(&file, &["rotate", "laptop", "--overlap", "3s"]);
    until_status(status(second.clone()), 200, "the rotated-in value").await;
    assert_eq!(
        status(first.clone())().await,
        200,
        "the old value works during the overlap"
    );
    until_status(
        status(first.clone()),
        401,
        "the old value after the overlap",
    )
    .await;
    assert_eq!(status(second.clone())().await, 200);

    // A file broken by hand changes nothing; revoking refuses the token within seconds.
    let good = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, "[[tokens]]\nname = ").unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        status(second.clone())().await,
        200,
        "a broken file keeps the tokens in force"
    );
    std::fs::write(&file, good).unwrap();
    tokens_command(&file, &["revoke", "laptop"]);
    until_status(status(second.clone()), 401, "a revoked token").await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn oauth_is_advertised_only_when_configured_and_static_tokens_still_work() {
    let (mut config, db) = fresh_db().await;
    config.auth.tokens = vec![TokenConfig::reader("ci", "static-token-0123456789")];
    let plain = TestServer::start(config.clone(), db.clone()).await;
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", plain.base);
    assert_eq!(send("GET", &metadata, &[], "").await.status, 404);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let base = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let missing = send("POST", &plain.mcp_url, &base, &body).await;
    assert!(!missing.headers["www-authenticate"].contains("resource_metadata"));
    plain.stop().await;

    // An issuer nothing answers at: metadata and challenges need none, tokens do.
    config.auth.oauth.issuer = "http://127.0.0.1:9".into();
    config.auth.oauth.resource = "http://127.0.0.1:9/mcp".into();
    let server = TestServer::start(config, db).await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let reply = send("GET", &format!("{}{path}", server.base), &[], "").await;
        assert_eq!(reply.status, 200, "{path}");
        let document = reply.json();
        assert_eq!(document["resource"], "http://127.0.0.1:9/mcp");
        assert_eq!(
            document["authorization_servers"],
            json!(["http://127.0.0.1:9"])
        );
        assert_eq!(document["scopes_supported"], json!(["read", "ingest"]));
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    }
    let missing = send("POST", &server.mcp_url, &base, &body).await;
    assert_eq!(missing.status, 401);
    let challenge = &missing.headers["www-authenticate"];
    assert!(
        challenge.starts_with("Bearer ")
            && challenge.contains(
                r#"resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp""#
            )
            && challenge.contains(r#"scope="read""#)
            && !challenge.contains("error="),
        "{challenge}"
    );
    // A valid static token is served, never challenged, though OAuth is advertised.
    let mut client = Mcp::legacy(&server.mcp_url, Some("static-token-0123456789")).await;
    client.ok("search_sessions", json!({"query": "x"})).await;
    let with = |token: &'static str| {
        let mut headers = base.to_vec();
        headers.push(("authorization", token));
        headers
    };
    // Not a JWT, and no introspection configured: refused at once.
    let opaque = send(
        "POST",
        &server.mcp_url,
        &with("Bearer not-a-known-token-0123"),
        &body,
    )
    .await;
    assert_eq!(opaque.status, 401);
    assert!(opaque.headers["www-authenticate"].contains(r#"error="invalid_token""#));
    // `alg: none` is refused before any key is looked for.
    let none = "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.";
    let reply = send("POST", &server.mcp_url, &with(none), &body).await;
    assert_eq!(reply.status, 401);
    // A well-formed RS256 token while the issuer cannot be reached: 503, to try again.
    let rs = "Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJ4In0.c2ln";
    let reply = send("POST", &server.mcp_url, &with(rs), &body).await;
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert!(reply.headers.contains_key("retry-after"));
    let metrics = send("GET", &format!("{}/metrics", server.base), &[], "")
        .await
        .body;
    let auth = "moraine_mcp_auth_requests_total";
    for (method, outcome, at_least) in [
        ("static", "accepted", 1.0),
        ("oauth", "invalid", 2.0),
        ("oauth", "unavailable", 1.0),
        ("oauth", "expired", 0.0),
        ("none", "missing", 1.0),
    ] {
        let labels = [
            format!("method=\"{method}\""),
            format!("outcome=\"{outcome}\""),
        ];
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        assert!(
            metrics.contains(&format!("method=\"{method}\",outcome=\"{outcome}\"")),
            "{method} {outcome} exported"
        );
        assert!(
            common::metric_sum(&metrics, auth, &labels) >= at_least,
            "{method} {outcome}"
        );
    }
    server.stop().await;
}
