//! What the store holds and the room left on its servers, read once a minute into `/metrics`
//! (`moraine_mcp_store_*`), so an operator sees a node filling up before it is full.
//!
//! On a cluster every replica of every shard is read (`clusterAllReplicas`): capacity is a
//! per-server figure, and the shards' tables are the ones that hold the data.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::db::{Db, DbError};
use crate::metrics::Store;

/// How often the figures are read: they change with ingest, over minutes.
pub(crate) const EVERY: Duration = Duration::from_secs(60);

/// Each table's active parts, per server. `«parts»` and `«databases»` name the local system
/// table and database, or every replica's and the service's databases (see [`read`]).
const TABLES_SQL: &str = "SELECT hostName() AS host, table, sum(rows) AS rows, \
     sum(bytes_on_disk) AS bytes, count() AS parts FROM «parts» \
     WHERE «databases» AND active GROUP BY host, table ORDER BY host, table";

/// Each server's disks.
const DISKS_SQL: &str = "SELECT hostName() AS host, name AS disk, free_space AS free, \
     total_space AS total FROM «disks» ORDER BY host, disk";

/// Searchable documents, as BM25 counts them (summed over the shards on a cluster).
const DOCUMENTS_SQL: &str = "SELECT toUInt64(greatest(sum(docs), 0)) FROM corpus_stats";

/// Reads the figures: three small statements over system tables and `corpus_stats`.
pub(crate) async fn read(db: &Db) -> Result<Store, DbError> {
    let deadline = db.default_deadline();
    let (parts, disks, databases) = match db.cluster() {
        None => (
            "system.parts",
            "system.disks",
            "database = currentDatabase()",
        ),
        // The shards' tables hold the data; the service's database holds the tables kept
        // on every server (migrations, signing keys, the write gate). Its `Distributed`
        // tables have no parts, so nothing is counted twice.
        Some(_) => (
            "clusterAllReplicas({cluster:String}, system.parts)",
            "clusterAllReplicas({cluster:String}, system.disks)",
            "database IN ({local:String}, {database:String})",
        ),
    };
    let on_cluster = |query: crate::db::Query| match db.cluster() {
        None => query,
        Some(cluster) => query
            .param("cluster", &cluster.name)
            .param("local", &cluster.local)
            .param("database", &cluster.database)
            // A replica that does not answer leaves the others' figures current (its own
            // go missing, which the dashboard shows) instead of failing the whole read.
            .setting("skip_unavailable_shards", "1"),
    };
    let tables_sql = crate::db::splice(TABLES_SQL, &[("parts", parts), ("databases", databases)]);
    let disks_sql = crate::db::splice(DISKS_SQL, &[("disks", disks)]);
    // Unqueued: a look once a minute never takes a slot a tool call is waiting for.
    let tables = on_cluster(db.read("store_tables", &tables_sql).unqueued())
        .fetch_all(db, deadline)
        .await?;
    let disks = on_cluster(db.read("store_disks", &disks_sql).unqueued())
        .fetch_all(db, deadline)
        .await?;
    let documents: Option<u64> = db
        .read("store_documents", DOCUMENTS_SQL)
        .unqueued()
        .fetch_optional(db, deadline)
        .await?;
    Ok(Store {
        documents: documents.unwrap_or(0),
        tables,
        disks,
        read_at: time::OffsetDateTime::now_utc().unix_timestamp_nanos() as f64 / 1e9,
    })
}

/// Reads the figures into the metrics now and every [`EVERY`] until `shutdown`. A read that
/// fails leaves the last figures (their timestamp shows their age, `MoraineMcpStoreSizeStale`
/// alerts on it) and is tried next time; the first failure after a success is a warning, the
/// rest of a run of failures only debug lines.
pub(crate) async fn watch(db: Db, shutdown: CancellationToken) {
    let mut failing = false;
    loop {
        match read(&db).await {
            Ok(store) => {
                db.metrics().observe_store(&store);
                failing = false;
            }
            Err(error) if !failing => {
                tracing::warn!(%error, "could not read the store's size for /metrics");
                failing = true;
            }
            Err(error) => tracing::debug!(%error, "could not read the store's size"),
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(EVERY) => {}
        }
    }
}
