//! The query and hit logs: every search logged, and a failing log never fails a search.

use super::*;

#[tokio::test]
async fn each_search_is_logged_with_its_hits() {
    let mut c = client().await;
    let marker = format!("healthz logged{}", uuid::Uuid::new_v4().simple());
    let e = c
        .ok(
            "search_sessions",
            json!({"query": format!("healthz {marker}"), "n_hits": 4}),
        )
        .await;
    let expected_hits = hits(&e).len() as u64;
    let db = common::shared_db();
    let give_up = Instant::now() + Duration::from_secs(15);
    loop {
        let rows: Vec<(String, u8, u64)> = db
            .read(
                "t",
                "SELECT q.query_id, any(q.result_count), count(h.rank) FROM search_query_log AS q \
                 LEFT JOIN search_hit_log AS h ON h.query_id = q.query_id WHERE q.query LIKE {m:String} GROUP BY q.query_id",
            )
            .param("m", format!("%{marker}%"))
            .fetch_all(&db, Instant::now() + Duration::from_secs(5))
            .await
            .unwrap();
        // The query row and its hit rows are written by separate inserts: wait for both.
        if let Some((_, result_count, hit_rows)) = rows.first()
            && *hit_rows == expected_hits
        {
            assert!(expected_hits > 0);
            assert_eq!(*result_count as u64, expected_hits);
            break;
        }
        assert!(
            Instant::now() < give_up,
            "the search and its {expected_hits} hits were not logged: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn a_failing_query_log_never_fails_a_search() {
    let (config, db) = common::fresh_db().await;
    common::ingest_paths(&config, &db, &common::fixtures()).await;
    db.write("t", "DROP TABLE search_hit_log")
        .execute(&db, db.default_deadline())
        .await
        .unwrap();
    let server = TestServer::start(config, db).await;
    let mut c = Mcp::legacy(&server.mcp_url, None).await;
    for _ in 0..3 {
        let e = c.ok("search_sessions", json!({"query": "healthz"})).await;
        assert!(!hits(&e).is_empty());
    }
    let give_up = Instant::now() + Duration::from_secs(15);
    loop {
        let metrics = common::send("GET", &format!("{}/metrics", server.base), &[], "").await;
        if metrics
            .body
            .contains("moraine_mcp_query_log_failures_total{reason=\"insert_failed\"}")
        {
            break;
        }
        assert!(Instant::now() < give_up, "the failure was not counted");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    server.stop().await;
}
