//! Both MCP protocol styles over HTTP, stateful sessions, and stdio serving the same tools.

use super::*;

#[tokio::test]
async fn initialize_and_tools_list_in_both_protocol_styles() {
    let (config, db) = fresh_db().await;
    let server = TestServer::start(config, db).await;
    for modern in [false, true] {
        let mut client = if modern {
            Mcp::modern(&server.mcp_url, None).await
        } else {
            Mcp::legacy(&server.mcp_url, None).await
        };
        let list = client.request("tools/list", None, json!({})).await;
        let tools = list["result"]["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["search_sessions", "list_sessions", "open"]);
        for tool in tools {
            assert_eq!(tool["inputSchema"]["type"], "object");
            assert_eq!(tool["outputSchema"]["type"], "object");
            assert_eq!(tool["annotations"]["readOnlyHint"], true);
        }
        if modern {
            assert_eq!(list["result"]["resultType"], "complete");
        }
        // An unknown tool stays a JSON-RPC error.
        let unknown = client
            .request(
                "tools/call",
                Some("nope"),
                json!({"name": "nope", "arguments": {}}),
            )
            .await;
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    }
    // Stateless by default: no session is issued and GET has no stream.
    let get = send(
        "GET",
        &server.mcp_url,
        &[("accept", "text/event-stream")],
        "",
    )
    .await;
    assert_eq!(get.status, 405);
    server.stop().await;
}

#[tokio::test]
async fn stateful_mode_issues_sessions() {
    let (mut config, db) = fresh_db().await;
    config.server.stateful = true;
    let server = TestServer::start(config, db).await;
    let init = send(
        "POST",
        &server.mcp_url,
        &[("content-type", "application/json"), ("accept", "application/json, text/event-stream")],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": common::LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).to_string(),
    )
    .await;
    assert_eq!(init.status, 200);
    assert!(
        init.headers
            .get("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let session = init
        .headers
        .get("mcp-session-id")
        .cloned()
        .expect("a session id");
    assert_eq!(init.json()["result"]["serverInfo"]["name"], "moraine-mcp");
    // The instructions every agent gets name every harness the service reads.
    let instructions = init.json()["result"]["instructions"]
        .as_str()
        .unwrap()
        .to_owned();
    for harness in moraine_mcp::vocab::Harness::all() {
        assert!(instructions.contains(harness.title()), "{instructions}");
    }
    let mut client = Mcp::legacy(&server.mcp_url, None).await;
    let list = client.request("tools/list", None, json!({})).await;
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 3);
    // A request without the session is refused; ending the session is accepted.
    let bare = send(
        "POST",
        &server.mcp_url,
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
    )
    .await;
    assert_eq!(bare.status, 400);
    let delete = send(
        "DELETE",
        &server.mcp_url,
        &[("mcp-session-id", &session)],
        "",
    )
    .await;
    assert!(delete.status == 200 || delete.status == 202, "{delete:?}");
    server.stop().await;
}

#[tokio::test]
async fn stdio_mode_serves_the_same_tools() {
    let (config, _db) = fresh_db().await;
    let mut child = Command::new(BIN)
        .args(["serve", "--stdio", "--require-clickhouse"])
        .env("MORAINE_MCP_CLICKHOUSE__URL", &config.clickhouse.url)
        .env(
            "MORAINE_MCP_CLICKHOUSE__DATABASE",
            &config.clickhouse.database,
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut exchange = |message: Value| -> Option<Value> {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        message.get("id")?;
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        Some(serde_json::from_str(&line).unwrap())
    };
    let init = exchange(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": common::LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "moraine-mcp");
    exchange(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let list = exchange(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).unwrap();
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 3);
    let call = exchange(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "open", "arguments": {"id": "nope"}}})).unwrap();
    assert_eq!(call["result"]["isError"], true);
    assert_eq!(
        call["result"]["structuredContent"]["error"]["code"],
        "invalid_id"
    );
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
}
