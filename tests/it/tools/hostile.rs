//! Hostile input: quotes, backslashes and SQL in every string field.

use super::*;

#[tokio::test]
async fn quotes_backslashes_and_sql_in_every_string_field_change_nothing_but_the_result() {
    let mut c = client().await;
    let hostile = [
        "'; DROP TABLE events; --",
        "\\' OR 1=1 --",
        "\" OR \"\"=\"",
        "{s:UInt64}",
        "') UNION SELECT * FROM system.tables --",
        "\\\\\\",
        "\u{0000}nul",
    ];
    let before = c
        .ok(
            "list_sessions",
            json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 50}),
        )
        .await;
    for text in hostile {
        c.ok("search_sessions", json!({"query": text})).await;
        c.ok(
            "search_sessions",
            json!({"query": format!("migration {text}"), "harness": text, "source": text}),
        )
        .await;
        let (code, _) = c
            .err("search_sessions", json!({"query": "x", "within_id": text}))
            .await;
        assert!(code == "invalid_id" || code == "not_found", "{code}");
        let (code, _) = c.err("open", json!({"id": text})).await;
        assert!(code == "invalid_id" || code == "invalid_request", "{code}");
        let (code, _) = c
            .err(
                "list_sessions",
                json!({"start_datetime": text, "end_datetime": WINDOW.1}),
            )
            .await;
        assert_eq!(code, "invalid_request");
        let (code, _) = c
            .err(
                "list_sessions",
                json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "cursor": text}),
            )
            .await;
        assert_eq!(code, "invalid_request");
        let e = c.ok("list_sessions", json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "harness": text, "source": text})).await;
        assert_eq!(e["data"]["result_count"], 0);
        let (code, _) = c
            .err(
                "list_sessions",
                json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "mode": text}),
            )
            .await;
        assert_eq!(code, "invalid_request");
    }
    let after = c
        .ok(
            "list_sessions",
            json!({"start_datetime": WINDOW.0, "end_datetime": WINDOW.1, "limit": 50}),
        )
        .await;
    assert_eq!(before["data"], after["data"], "the data is untouched");
    // A well-formed ID carrying SQL-looking text is merely unknown.
    let (code, _) = c.err("open", json!({"id": "session:ses_1--DROP"})).await;
    assert_eq!(code, "not_found");
}
