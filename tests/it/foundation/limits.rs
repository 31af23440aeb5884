//! Limits: bodies over the limit, a full query pool and a short deadline.

use super::*;

#[tokio::test]
async fn bodies_over_the_limit_are_refused() {
    let (mut config, db) = fresh_db().await;
    config.server.request_body_limit_bytes = 64 * 1024;
    let server = TestServer::start(config, db).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_sessions", "arguments": {"query": "x".repeat(100_000)}}}).to_string();
    let reply = send(
        "POST",
        &server.mcp_url,
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        &big,
    )
    .await;
    assert_eq!(reply.status, 413);

    // The same body sent chunked, without a Content-Length to refuse up front.
    let address = server.base.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n"
    );
    for chunk in big.as_bytes().chunks(8192) {
        request.push_str(&format!(
            "{:x}\r\n{}\r\n",
            chunk.len(),
            std::str::from_utf8(chunk).unwrap()
        ));
    }
    request.push_str("0\r\n\r\n");
    // The server may answer (and close) before reading everything; a failed write is fine.
    let _ = stream.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "{answer}");

    let missing = send("GET", &format!("{}/nowhere", server.base), &[], "").await;
    assert_eq!(missing.status, 404);
    // Only the endpoint itself is MCP; paths below it are not.
    let below = send("POST", &format!("{}/extra", server.mcp_url), &[], "{}").await;
    assert_eq!(below.status, 404);
    server.stop().await;
}

#[tokio::test]
async fn a_full_query_pool_answers_busy_and_a_short_deadline_answers_deadline_exceeded() {
    let (mut config, _db) = fresh_db().await;
    config.clickhouse.max_concurrent_queries = 1;
    config.clickhouse.queue_timeout_ms = 50;
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    let server = TestServer::start(config.clone(), db.clone()).await;
    let holder = db.clone();
    let hold = tokio::spawn(async move {
        holder
            .read("test_hold", "SELECT sleep(2)")
            .fetch_all::<u8>(&holder, Instant::now() + Duration::from_secs(10))
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let direct = db
        .read("test_try", "SELECT 1")
        .fetch_all::<u8>(&db, Instant::now() + Duration::from_secs(5))
        .await;
    assert!(matches!(direct, Err(DbError::Busy)), "{direct:?}");
    // The write gate's leases do not wait for a slot: they are renewed on time however busy.
    let permit = db.enter_write(WhenMigrating::Refuse).await;
    assert!(permit.is_ok(), "{permit:?}");
    drop(permit);
    let mut client = Mcp::legacy(&server.mcp_url, None).await;
    let (code, envelope) = client
        .err("search_sessions", json!({"query": "anything"}))
        .await;
    assert_eq!(code, "busy");
    assert_eq!(envelope["error"]["details"]["retryable"], true);
    hold.await.unwrap().unwrap();
    server.stop().await;

    let (mut config, db) = fresh_db().await;
    config.tools.search_deadline_ms = 1;
    let server = TestServer::start(config, db).await;
    let mut client = Mcp::legacy(&server.mcp_url, None).await;
    let (code, envelope) = client
        .err("search_sessions", json!({"query": "anything"}))
        .await;
    assert_eq!(code, "deadline_exceeded");
    assert_eq!(envelope["error"]["details"]["retryable"], true);
    server.stop().await;
}
