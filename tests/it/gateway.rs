//! The embedded-engine gateway, driven by the `clickhouse` crate exactly as the service drives
//! it: DDL, both RowBinary formats, server-side parameters, LZ4 and plain inserts, and inserts
//! that fail or are abandoned committing nothing; and the gateway's own unit tests (request
//! framing, native blocks, multipart) under the engine environment's Python.

use crate::common;

use std::time::Duration;

use clickhouse::{Client, Compression};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, clickhouse::Row, Serialize, Deserialize)]
struct Item {
    id: u64,
    name: String,
    tags: Vec<String>,
    score: Option<f64>,
    at: i64,
}

fn item(id: u64) -> Item {
    Item {
        id,
        name: format!("it's \"item\" \\ {id} ünïcode"),
        tags: vec!["a".into(), format!("t{id}")],
        score: id.is_multiple_of(2).then_some(id as f64 / 2.0),
        at: 1_777_488_151_125 + id as i64,
    }
}

async fn client(compression: Compression) -> Client {
    let url = common::shared_engine_url();
    let database = format!("gw_{}", uuid::Uuid::new_v4().simple());
    let root = Client::default().with_url(&url);
    root.query("CREATE DATABASE {db:Identifier}")
        .param("db", &database)
        .execute()
        .await
        .unwrap();
    let client = Client::default()
        .with_url(&url)
        .with_database(&database)
        .with_compression(compression);
    client
        .query(
            "CREATE TABLE items (id UInt64, name String, tags Array(String), score Nullable(Float64), \
             at DateTime64(3, 'UTC'), CONSTRAINT positive CHECK id > 0) ENGINE = MergeTree ORDER BY id",
        )
        .execute()
        .await
        .unwrap();
    client
}

async fn count(client: &Client) -> u64 {
    client
        .query("SELECT count() FROM items")
        .fetch_one::<u64>()
        .await
        .unwrap()
}

#[tokio::test]
async fn ddl_inserts_and_selects_in_both_row_formats() {
    for compression in [Compression::Lz4, Compression::None] {
        let client = client(compression).await;
        let rows: Vec<Item> = (1..=2000).map(item).collect();
        let mut insert = client.insert::<Item>("items").await.unwrap();
        for row in &rows {
            insert.write(row).await.unwrap();
        }
        insert.end().await.unwrap();
        assert_eq!(count(&client).await, 2000);

        // With validation: RowBinaryWithNamesAndTypes, including for an empty result.
        let back: Vec<Item> = client
            .query("SELECT ?fields FROM items ORDER BY id")
            .fetch_all()
            .await
            .unwrap();
        assert_eq!(back, rows);
        let none: Vec<Item> = client
            .query("SELECT ?fields FROM items WHERE id = 0")
            .fetch_all()
            .await
            .unwrap();
        assert!(none.is_empty());
        // Without validation: plain RowBinary.
        let plain = client.clone().with_validation(false);
        let back: Vec<Item> = plain
            .query("SELECT ?fields FROM items WHERE id <= 10 ORDER BY id")
            .fetch_all()
            .await
            .unwrap();
        assert_eq!(back, rows[..10]);
    }
}

#[tokio::test]
async fn server_side_parameters_carry_any_text_verbatim() {
    let client = client(Compression::Lz4).await;
    let tricky = "quote ' double \" backslash \\ tab\t newline\n {braces} '); DROP TABLE items; --";
    let echoed: String = client
        .query("SELECT {s:String}")
        .param("s", tricky)
        .fetch_one()
        .await
        .unwrap();
    assert_eq!(echoed, tricky);
    let ids: Vec<u64> = client
        .query("SELECT arrayJoin({ids:Array(UInt64)}) AS id ORDER BY id")
        .param("ids", vec![3u64, 1, 2])
        .fetch_all()
        .await
        .unwrap();
    assert_eq!(ids, [1, 2, 3]);
    let words: Vec<String> = client
        .query("SELECT arrayJoin({w:Array(String)})")
        .param("w", vec![tricky.to_owned(), "ü".to_owned()])
        .fetch_all()
        .await
        .unwrap();
    assert_eq!(words, [tricky, "ü"]);
    assert_eq!(count(&client).await, 0, "the table survived");
}

#[tokio::test]
async fn an_insert_failing_in_the_engine_commits_nothing() {
    let client = client(Compression::Lz4).await;
    let mut insert = client.insert::<Item>("items").await.unwrap();
    insert.write(&item(1)).await.unwrap();
    insert.write(&item(0)).await.unwrap(); // violates CHECK id > 0
    let error = insert.end().await.unwrap_err();
    assert!(
        error.to_string().contains("469") || error.to_string().contains("VIOLATED_CONSTRAINT"),
        "{error}"
    );
    assert_eq!(count(&client).await, 0);
    // The gateway recovers: the next query is answered correctly.
    assert_eq!(
        client
            .query("SELECT toUInt8(42)")
            .fetch_one::<u8>()
            .await
            .unwrap(),
        42
    );
}

#[tokio::test]
async fn an_abandoned_insert_commits_nothing() {
    for compression in [Compression::Lz4, Compression::None] {
        let client = client(compression).await;
        let mut insert = client.insert::<Item>("items").await.unwrap();
        for id in 1..=5000 {
            insert.write(&item(id)).await.unwrap();
        }
        drop(insert); // no end(): the request body is cut off
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(count(&client).await, 0);
    }
}

#[tokio::test]
async fn errors_are_reported_and_do_not_poison_later_queries() {
    let client = client(Compression::Lz4).await;
    let error = client
        .query("SELECT * FROM no_such_table")
        .fetch_all::<u8>()
        .await
        .unwrap_err();
    assert!(error.to_string().contains("Code: 60"), "{error}");
    let error = client
        .query("SELECT throwIf(1, 'boom')")
        .fetch_all::<u8>()
        .await
        .unwrap_err();
    assert!(error.to_string().contains("boom"), "{error}");
    let error = client
        .query("SELECT 1")
        .with_setting("no_such_setting", "1")
        .fetch_all::<u8>()
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("115") || error.to_string().contains("UNKNOWN_SETTING"),
        "{error}"
    );
    let value: u8 = client.query("SELECT 7").fetch_one().await.unwrap();
    assert_eq!(value, 7);
}

#[test]
fn the_gateways_unit_tests_pass_under_the_engine_python() {
    let environment = common::environment();
    let tests = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/embedded");
    let run = std::process::Command::new(environment.python())
        .args(["-m", "unittest", "discover", "-s", tests])
        .output()
        .expect("the engine Python runs");
    let report = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{report}");
    // Not an empty discovery: the suite ran tests.
    let ran: u32 = report
        .lines()
        .find_map(|l| l.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(ran >= 50, "{report}");
}
