//! Cluster mode's schema on the embedded engine: the shard tables its DDL creates, with the
//! cluster-only parts (`ON CLUSTER`, replication) taken out, are the single-node tables — the
//! same columns, types, defaults, codecs, keys, settings and views.

use crate::common;

use moraine_mcp::db::Db;
use moraine_mcp::db::cluster::{Cluster, Target, condition_target};
use moraine_mcp::migrate::cluster_statements;

/// A table's definition with the database names taken out.
#[derive(Debug, PartialEq, serde::Deserialize, clickhouse::Row)]
struct TableDef {
    name: String,
    engine: String,
    engine_full: String,
    sorting_key: String,
    primary_key: String,
    partition_key: String,
    as_select: String,
}

#[derive(Debug, PartialEq, serde::Deserialize, clickhouse::Row)]
struct ColumnDef {
    table: String,
    name: String,
    position: u64,
    r#type: String,
    default_kind: String,
    default_expression: String,
    compression_codec: String,
}

async fn definitions(db: &Db, database: &str) -> (Vec<TableDef>, Vec<ColumnDef>) {
    let deadline = db.default_deadline();
    let tables = db
        .read(
            "test_tables",
            "SELECT name, engine, replaceAll(engine_full, {d:String}, 'DB') AS engine_full, \
             sorting_key, primary_key, partition_key, replaceAll(as_select, {d:String}, 'DB') AS as_select \
             FROM system.tables WHERE database = {d:String} AND name != 'schema_migrations' ORDER BY name",
        )
        .param("d", database)
        .fetch_all(db, deadline)
        .await
        .unwrap();
    let columns = db
        .read(
            "test_columns",
            "SELECT table, name, position, type, default_kind, default_expression, compression_codec \
             FROM system.columns WHERE database = {d:String} AND table != 'schema_migrations' \
             ORDER BY table, position",
        )
        .param("d", database)
        .fetch_all(db, deadline)
        .await
        .unwrap();
    (tables, columns)
}

/// `sql` as one node runs it: no `ON CLUSTER`, no replication (nor its deduplication setting),
/// the service's database named as the shards' (the tables on every node are compared with the
/// rest).
fn on_one_node(sql: &str, cluster: &Cluster) -> String {
    let replicated = regex::Regex::new(r"Replicated(\w*MergeTree)\('[^']*', '[^']*'(, )?").unwrap();
    let sql = sql.replace(&format!(" ON CLUSTER {}", cluster.name), "");
    let sql = replicated.replace_all(&sql, "${1}(").into_owned();
    let window = regex::Regex::new(r"\breplicated_deduplication_window").unwrap();
    let sql = window
        .replace_all(&sql, "non_replicated_deduplication_window")
        .into_owned();
    sql.replace(
        &format!("{}.", cluster.database),
        &format!("{}.", cluster.local),
    )
}

#[tokio::test]
async fn the_cluster_shard_tables_are_the_single_node_tables() {
    let (config, single) = common::fresh_db().await;
    let cluster = Cluster::new("moraine", &format!("{}_c", config.clickhouse.database));
    let deadline = single.default_deadline();
    single
        .write("test_database", "CREATE DATABASE {d:Identifier}")
        .param("d", &cluster.local)
        .execute(&single, deadline)
        .await
        .unwrap();
    let local = single.with_database(&cluster.local);

    let script = cluster_statements(&cluster).unwrap();
    let mut ran = 0;
    for (_, condition, statement) in &script {
        if let Some(condition) = condition.as_ref().filter(|_| statement.conditional) {
            let checked = match condition_target(condition) {
                Target::Local => &local,
                Target::Service => &single,
            };
            let holds: Option<u8> = checked
                .read("test_condition", condition)
                .fetch_optional(checked, deadline)
                .await
                .unwrap();
            if holds != Some(1) {
                continue;
            }
        }
        // The shards' statements, and the tables on every node. What goes through Distributed
        // tables (their creation, and inserts) needs a cluster: the tables are empty here.
        let runs_here = match statement.target {
            Target::Local => true,
            Target::Service => {
                statement.sql.starts_with("CREATE TABLE") && !statement.sql.contains("Distributed(")
            }
        };
        if !runs_here {
            continue;
        }
        let sql = on_one_node(&statement.sql, &cluster);
        assert!(
            !sql.contains("Replicated") && !sql.contains("ON CLUSTER"),
            "{sql}"
        );
        local
            .write("test_statement", &sql)
            .execute(&local, deadline)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        ran += 1;
    }
    assert!(ran > 20, "only {ran} statements ran");

    let (single_tables, single_columns) = definitions(&single, &config.clickhouse.database).await;
    let (shard_tables, shard_columns) = definitions(&local, &cluster.local).await;
    assert!(single_tables.len() >= 15, "{single_tables:?}");
    assert_eq!(
        shard_tables.iter().map(|t| &t.name).collect::<Vec<_>>(),
        single_tables.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    for (shard, single) in shard_tables.iter().zip(&single_tables) {
        assert_eq!(shard, single);
    }
    assert_eq!(shard_columns, single_columns);
}
