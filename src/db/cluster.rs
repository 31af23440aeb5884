//! Cluster mode's schema: each migration statement rewritten for a ClickHouse cluster.
//!
//! The service's SQL names its tables without a database, in `clickhouse.database`. On a cluster
//! that database holds a `Distributed` table under each name, over a `Replicated*MergeTree`
//! table of the same name in `<database>_local` on every node. Tables are sharded so that all
//! of a session's rows (session, turns, events, postings) live on one shard: a session-scoped
//! query reads one shard's data, and a query's subqueries over sessions can run shard-locally.
//! The index statistics (`term_df`, `corpus_stats`) are per-shard partial sums written by each
//! shard's views; every reader sums them, so it sees the whole corpus's. The two tables read
//! whole and rarely written (`service_keys`, `schema_migrations`) are replicated to every node.
//!
//! The rewrite knows the statement forms the migrations use and refuses any other, so a new
//! migration that the cluster cannot run fails its unit test rather than an operator's upgrade.

/// Where a table's rows live on a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Split across shards by this expression (each shard's replicas hold the same rows).
    Sharded(&'static str),
    /// A full copy on every node.
    Everywhere,
}

/// Every table the migrations create, and where its rows live (a test checks none is missing).
pub fn placement(table: &str) -> Option<Placement> {
    use Placement::{Everywhere, Sharded};
    Some(match table {
        "sessions" | "turns" | "events" | "event_ingest" | "sessions_fine" | "turns_fine" => {
            Sharded("session_key")
        }
        "postings" | "postings_tiered" | "session_vectors" => Sharded("sess"),
        // Filled on each shard by its index views, for the shard's own documents, so a term's
        // counts are on every shard: the statistics read turns shard pruning off. The key
        // only places the counts a retraction or a repair inserts; it depends on the term
        // alone, so a retraction sent again sends each row where it went the first time, to
        // be deduplicated there by its token.
        "term_df" | "term_df_typed" | "term_df_untyped" => Sharded("term"),
        // A handful of rows, every version of the table: one shard takes what is inserted.
        "corpus_stats" | "corpus_stats_typed" | "corpus_stats_untyped" => Sharded("0"),
        "ingest_checkpoints" | "raw_chunks" => Sharded("file_key"),
        "search_query_log" | "search_hit_log" => Sharded("cityHash64(query_id)"),
        "service_keys" | "schema_migrations" | "write_gate" | "index_format" => Everywhere,
        _ => return None,
    })
}

/// Which database a rewritten statement runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `<database>_local`: the shards' own tables and views.
    Local,
    /// `clickhouse.database`: the `Distributed` tables (and the tables on every node).
    Service,
}

/// Where a migration's `-- only if` condition is checked. A condition on the schema (it reads
/// `system.tables`) is checked in the shards' database, where the tables with keys and settings
/// are; a condition on rows, in the service's, whose `Distributed` tables read every shard (the
/// shards' database of the node `migrate` talks to holds one shard's rows only).
pub fn condition_target(condition: &str) -> Target {
    if condition.contains("FROM system.") {
        Target::Local
    } else {
        Target::Service
    }
}

/// One statement of a migration as a cluster runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterStatement {
    pub target: Target,
    pub sql: String,
    /// Whether it runs only when the migration statement's `-- only if` condition holds. The
    /// `Distributed` tables re-made after a change run always (they are idempotent): a run
    /// cut off between a rename and them finds the condition false when it runs again.
    pub conditional: bool,
}

/// A statement form the cluster rewrite does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cluster mode cannot run this migration statement ({reason}): {head}")]
pub struct Unsupported {
    reason: &'static str,
    head: String,
}

/// The names a cluster deployment uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// The cluster's name in the servers' `remote_servers`.
    pub name: String,
    /// The service's database (the `Distributed` tables).
    pub database: String,
    /// The shards' database (the replicated tables).
    pub local: String,
}

impl Cluster {
    /// `name` and `database` are validated identifiers (letters, digits and `_`), as the
    /// configuration requires: they are spliced into DDL, where no query parameter can go.
    pub fn new(name: &str, database: &str) -> Self {
        Self {
            name: name.to_owned(),
            database: database.to_owned(),
            local: format!("{database}_local"),
        }
    }

    /// The cluster named by `clickhouse.cluster`, if one is.
    pub fn configured(config: &crate::config::ClickHouseConfig) -> Option<Self> {
        (!config.cluster.is_empty()).then(|| Self::new(&config.cluster, &config.database))
    }

    /// A delete from a sharded table: on the shards' own tables, on every server.
    pub fn delete(&self, table: &str, condition: &str) -> String {
        format!(
            "DELETE FROM {}.{table} ON CLUSTER {} WHERE {condition}",
            self.local, self.name
        )
    }

    /// The statements that create both databases on every node.
    pub fn create_databases(&self) -> [String; 2] {
        [&self.database, &self.local].map(|db| {
            format!(
                "CREATE DATABASE IF NOT EXISTS {db} ON CLUSTER {}",
                self.name
            )
        })
    }

    /// Rewrites one migration statement (as `migrate::statements` splits them).
    pub fn rewrite(&self, sql: &str) -> Result<Vec<ClusterStatement>, Unsupported> {
        let words: Vec<&str> = sql.split_whitespace().take(9).collect();
        let unsupported = |reason| Unsupported {
            reason,
            head: words.join(" "),
        };
        let local = |sql: String| ClusterStatement {
            target: Target::Local,
            sql,
            conditional: true,
        };
        let service = |sql: String| ClusterStatement {
            target: Target::Service,
            sql,
            conditional: true,
        };
        match words.as_slice() {
            ["CREATE", "TABLE", "IF", "NOT", "EXISTS", name, ..] => {
                let name = identifier(name).ok_or_else(|| unsupported("a table name"))?;
                match placement(name).ok_or_else(|| unsupported("a table with no placement"))? {
                    // Paths by the table's UUID (the same on every server, as ON CLUSTER creates
                    // it in an Atomic database), so that a renamed table keeps its path and a
                    // new table of the old name gets a path of its own.
                    Placement::Sharded(key) => {
                        let path = "/clickhouse/tables/{uuid}/{shard}";
                        let table = self.replicated(sql, path, "{replica}")?;
                        Ok(vec![
                            local(self.qualify(&table, 5, &self.local)),
                            service(self.distributed(name, key)),
                        ])
                    }
                    Placement::Everywhere => {
                        let path = "/clickhouse/tables/{uuid}/all";
                        let table = self.replicated(sql, path, "{shard}-{replica}")?;
                        Ok(vec![service(self.qualify(&table, 5, &self.database))])
                    }
                }
            }
            [
                "CREATE",
                "MATERIALIZED",
                "VIEW",
                "IF",
                "NOT",
                "EXISTS",
                _,
                "TO",
                target,
                ..,
            ] => {
                let target = identifier(target).ok_or_else(|| unsupported("a view target"))?;
                // The view reads the shard's own tables: it runs in the local database, which
                // names its source, and writes to the local target.
                let (start, end) = span(sql, 8).expect("nine words were read");
                let sql = format!("{}{}.{target}{}", &sql[..start], self.local, &sql[end..]);
                Ok(vec![local(self.qualify(&sql, 6, &self.local))])
            }
            ["ALTER", "TABLE", name, ..] => {
                let name = identifier(name).ok_or_else(|| unsupported("a table name"))?;
                match placement(name) {
                    // One replica's change reaches every node through Keeper.
                    Some(Placement::Everywhere) => Ok(vec![service(sql.to_owned())]),
                    Some(Placement::Sharded(key)) => {
                        // Deduplication of replicated tables has a setting of its own.
                        let sql = sql.replace(
                            "non_replicated_deduplication_window",
                            "replicated_deduplication_window",
                        );
                        let mut out = vec![local(self.qualify(&sql, 2, &self.local))];
                        // A `Distributed` table keeps the columns it was created with.
                        if sql.contains("COLUMN") {
                            out.extend(self.recreate_distributed(name, key));
                        }
                        Ok(out)
                    }
                    None => Err(unsupported("a table with no placement")),
                }
            }
            ["DROP", "VIEW", "IF", "EXISTS", name] => {
                identifier(name).ok_or_else(|| unsupported("a view name"))?;
                Ok(vec![local(self.qualify(sql, 4, &self.local))])
            }
            ["DROP", "TABLE", "IF", "EXISTS", name] => {
                let name = identifier(name).ok_or_else(|| unsupported("a table name"))?;
                let mut out = Vec::new();
                if let Some(Placement::Sharded(_)) = placement(name) {
                    out.push(service(self.drop_sync(&self.database, name)));
                }
                out.push(local(self.drop_sync(&self.local, name)));
                Ok(out)
            }
            ["TRUNCATE", "TABLE", name] => {
                identifier(name).ok_or_else(|| unsupported("a table name"))?;
                Ok(vec![local(self.qualify(sql, 2, &self.local))])
            }
            ["RENAME", "TABLE", ..] => self.rename(sql).ok_or_else(|| unsupported("a rename")),
            ["DELETE", "FROM", name, "WHERE", ..] => {
                let name = identifier(name).ok_or_else(|| unsupported("a table name"))?;
                match placement(name) {
                    Some(Placement::Sharded(_)) => {
                        Ok(vec![local(self.qualify(sql, 2, &self.local))])
                    }
                    Some(Placement::Everywhere) => Ok(vec![service(sql.to_owned())]),
                    None => Err(unsupported("a table with no placement")),
                }
            }
            // Writes go through the `Distributed` tables, which send each row to its shard.
            ["INSERT", "INTO", ..] => Ok(vec![service(sql.to_owned())]),
            // Checks read the shard tables' definitions.
            ["SELECT", ..] => Ok(vec![local(sql.to_owned())]),
            _ => Err(unsupported("a statement form")),
        }
    }

    /// `sql` with the table named by its word `at` qualified by `database` and followed by
    /// `ON CLUSTER`.
    fn qualify(&self, sql: &str, at: usize, database: &str) -> String {
        let (start, end) = span(sql, at).expect("the statement's form was matched");
        format!(
            "{}{database}.{} ON CLUSTER {}{}",
            &sql[..start],
            &sql[start..end],
            self.name,
            &sql[end..]
        )
    }

    /// A `CREATE TABLE` with its `*MergeTree` engine replicated at `path` (a Null table is left
    /// as it is: it stores nothing).
    fn replicated(&self, sql: &str, path: &str, replica: &str) -> Result<String, Unsupported> {
        const ENGINE: &str = "ENGINE = ";
        let unsupported = |reason| Unsupported {
            reason,
            head: sql.split_whitespace().take(6).collect::<Vec<_>>().join(" "),
        };
        let at = sql
            .find(ENGINE)
            .ok_or_else(|| unsupported("an engine clause"))?
            + ENGINE.len();
        let rest = &sql[at..];
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let engine = &rest[..name_len];
        if engine == "Null" {
            return Ok(sql.to_owned());
        }
        if !engine.ends_with("MergeTree") || engine.starts_with("Replicated") {
            return Err(unsupported("a MergeTree engine"));
        }
        let after = &rest[name_len..];
        let (arguments, tail) = match after.strip_prefix('(') {
            Some(inner) => {
                let close = inner
                    .find(')')
                    .ok_or_else(|| unsupported("engine arguments"))?;
                (inner[..close].trim(), &inner[close + 1..])
            }
            None => ("", after),
        };
        let mut replicated = format!("Replicated{engine}('{path}', '{replica}'");
        if !arguments.is_empty() {
            replicated.push_str(", ");
            replicated.push_str(arguments);
        }
        replicated.push(')');
        Ok(format!("{}{replicated}{tail}", &sql[..at]))
    }

    /// The `Distributed` table over a sharded table, under the name the service queries.
    fn distributed(&self, table: &str, key: &str) -> String {
        let Self {
            name,
            database,
            local,
        } = self;
        format!(
            "CREATE TABLE IF NOT EXISTS {database}.{table} ON CLUSTER {name} AS {local}.{table}\n\
             ENGINE = Distributed('{name}', '{local}', '{table}', {key})"
        )
    }

    /// Drops and re-creates a `Distributed` table, to take its shard table's new columns;
    /// unconditionally (see [`ClusterStatement::conditional`]).
    fn recreate_distributed(&self, table: &str, key: &str) -> [ClusterStatement; 2] {
        [
            self.drop_sync(&self.database, table),
            self.distributed(table, key),
        ]
        .map(|sql| ClusterStatement {
            target: Target::Service,
            sql,
            conditional: false,
        })
    }

    /// `SYNC`, so a replicated table's metadata in Keeper is gone before the statement returns
    /// and the name can be created again at once.
    fn drop_sync(&self, database: &str, table: &str) -> String {
        format!(
            "DROP TABLE IF EXISTS {database}.{table} ON CLUSTER {} SYNC",
            self.name
        )
    }

    /// `RENAME TABLE a TO b, …` on the shards; each renamed-to table with a `Distributed`
    /// table over its name gets that table again, with the columns it has now.
    fn rename(&self, sql: &str) -> Option<Vec<ClusterStatement>> {
        let pairs = sql.trim().strip_prefix("RENAME TABLE")?;
        let mut renamed = Vec::new();
        let mut targets = Vec::new();
        for pair in pairs.split(',') {
            let words: Vec<&str> = pair.split_whitespace().collect();
            let [from, "TO", to] = words.as_slice() else {
                return None;
            };
            let (from, to) = (identifier(from)?, identifier(to)?);
            renamed.push(format!("{0}.{from} TO {0}.{to}", self.local));
            targets.push(to);
        }
        let mut out = vec![ClusterStatement {
            target: Target::Local,
            sql: format!(
                "RENAME TABLE {} ON CLUSTER {}",
                renamed.join(", "),
                self.name
            ),
            conditional: true,
        }];
        for to in targets {
            if let Some(Placement::Sharded(key)) = placement(to) {
                out.extend(self.recreate_distributed(to, key));
            }
        }
        Some(out)
    }
}

/// The byte range of the whitespace-separated word `at` (0-based) of `sql`.
fn span(sql: &str, at: usize) -> Option<(usize, usize)> {
    let mut words = sql
        .char_indices()
        .filter(|&(i, c)| !c.is_whitespace() && (i == 0 || sql[..i].ends_with(char::is_whitespace)))
        .map(|(i, _)| i);
    let start = words.nth(at)?;
    let end = sql[start..]
        .find(char::is_whitespace)
        .map_or(sql.len(), |n| start + n);
    Some((start, end))
}

/// `word` if it is a plain identifier (letters, digits and `_`).
fn identifier(word: &str) -> Option<&str> {
    (!word.is_empty() && crate::config::plain_name(word)).then_some(word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::{MIGRATIONS, cluster_statements, statements};

    fn cluster() -> Cluster {
        Cluster::new("moraine", "moraine")
    }

    /// Every statement of every migration, rewritten.
    fn rewritten() -> Vec<ClusterStatement> {
        let script = cluster_statements(&cluster()).unwrap();
        script
            .into_iter()
            .map(|(_, _, statement)| statement)
            .collect()
    }

    /// Where the first statement beginning with `prefix` is.
    fn first(all: &[ClusterStatement], prefix: &str) -> usize {
        all.iter()
            .position(|s| s.sql.starts_with(prefix))
            .unwrap_or_else(|| panic!("no statement begins with {prefix}"))
    }

    #[test]
    fn test_every_table_a_migration_creates_has_a_placement() {
        for migration in MIGRATIONS {
            for statement in statements(migration.sql) {
                let words: Vec<&str> = statement.sql.split_whitespace().collect();
                if let ["CREATE", "TABLE", "IF", "NOT", "EXISTS", name, ..] = words.as_slice() {
                    assert!(placement(name).is_some(), "{name} in {}", migration.name);
                }
            }
        }
    }

    #[test]
    fn test_a_sessions_rows_share_a_shard() {
        // The session-scoped tables are sharded by the same value, so a session lives on one
        // shard whatever table is read.
        for table in ["sessions", "turns", "events", "event_ingest"] {
            assert_eq!(placement(table), Some(Placement::Sharded("session_key")));
        }
        // Postings name the session `sess` (the same value).
        assert_eq!(placement("postings"), Some(Placement::Sharded("sess")));
    }

    #[test]
    fn test_sharded_tables_are_replicated_locally_and_distributed_under_their_name() {
        let all = rewritten();
        let events: Vec<&ClusterStatement> = all
            .iter()
            .filter(|s| {
                s.sql
                    .starts_with("CREATE TABLE IF NOT EXISTS moraine_local.events ")
            })
            .collect();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].target, Target::Local);
        assert!(events[0].sql.contains(
            "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}')"
        ));
        assert!(events[0].sql.contains("ON CLUSTER moraine\n("));
        assert!(all.iter().any(|s| s.target == Target::Service
            && s.sql
                == "CREATE TABLE IF NOT EXISTS moraine.events ON CLUSTER moraine AS moraine_local.events\n\
                    ENGINE = Distributed('moraine', 'moraine_local', 'events', session_key)"));
        let sessions = &all[first(&all, "CREATE TABLE IF NOT EXISTS moraine_local.sessions ")];
        assert!(sessions.sql.contains(
                        "ReplicatedReplacingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}', version)"
        ));
        // The write path stores nothing, so it is not replicated.
        let ingest = &all[first(
            &all,
            "CREATE TABLE IF NOT EXISTS moraine_local.event_ingest ",
        )];
        assert!(ingest.sql.contains("ENGINE = Null"));
    }

    #[test]
    fn test_views_read_and_write_the_shard_tables() {
        let views: Vec<ClusterStatement> = rewritten()
            .into_iter()
            .filter(|s| s.sql.starts_with("CREATE MATERIALIZED VIEW"))
            .collect();
        assert!(views.len() >= 4);
        for view in views {
            assert_eq!(view.target, Target::Local, "{}", view.sql);
            let head: Vec<&str> = view.sql.split_whitespace().take(12).collect();
            assert!(head[6].starts_with("moraine_local."), "{head:?}");
            assert_eq!(&head[7..11], ["ON", "CLUSTER", "moraine", "TO"]);
            assert!(head[11].starts_with("moraine_local."), "{head:?}");
        }
    }

    #[test]
    fn test_tables_on_every_node_are_not_sharded() {
        let all = rewritten();
        let keys = &all[first(&all, "CREATE TABLE IF NOT EXISTS moraine.service_keys ")];
        assert_eq!(keys.target, Target::Service);
        assert!(keys.sql.contains(
                        "ReplicatedReplacingMergeTree('/clickhouse/tables/{uuid}/all', '{shard}-{replica}', created_at)"
        ));
        assert!(!all.iter().any(|s| s.sql.contains("'service_keys', ")));
    }

    #[test]
    fn test_schema_changes_reach_the_distributed_tables() {
        let all = rewritten();
        // 008 adds `batch` to events: the shard tables change, then the Distributed table is
        // made again over them.
        let at = first(
            &all,
            "ALTER TABLE moraine_local.events ON CLUSTER moraine ADD COLUMN",
        );
        assert_eq!(
            all[at + 1].sql,
            "DROP TABLE IF EXISTS moraine.events ON CLUSTER moraine SYNC"
        );
        assert!(
            all[at + 2]
                .sql
                .starts_with("CREATE TABLE IF NOT EXISTS moraine.events ")
        );
        // 009 renames the re-keyed index into place: its Distributed table follows.
        let at = first(&all, "RENAME TABLE");
        assert_eq!(
            all[at].sql,
            "RENAME TABLE moraine_local.postings TO moraine_local.postings_unordered, \
             moraine_local.postings_tiered TO moraine_local.postings ON CLUSTER moraine"
        );
        assert_eq!(
            all[at + 1].sql,
            "DROP TABLE IF EXISTS moraine.postings ON CLUSTER moraine SYNC"
        );
        assert!(
            all[at + 2]
                .sql
                .contains("ENGINE = Distributed('moraine', 'moraine_local', 'postings', sess)")
        );
        // The rename runs only while the index has its old order; the Distributed table is made
        // again whatever the order, so a run cut off after the rename still gets it.
        assert!(all[at].conditional);
        assert!(!all[at + 1].conditional && !all[at + 2].conditional);
        // Deletes run on the shards' tables.
        assert!(all.iter().any(|s| s.target == Target::Local
            && s.sql.starts_with(
                "DELETE FROM moraine_local.ingest_checkpoints ON CLUSTER moraine WHERE"
            )));
    }

    #[test]
    fn test_deletes_run_on_the_shard_tables() {
        assert_eq!(
            cluster().delete("events", "session_key = {s:UInt64}"),
            "DELETE FROM moraine_local.events ON CLUSTER moraine WHERE session_key = {s:UInt64}"
        );
        // The same form as a migration's delete, rewritten.
        let rewritten = cluster()
            .rewrite("DELETE FROM events WHERE session_key = {s:UInt64}")
            .unwrap();
        assert_eq!(
            rewritten[0].sql,
            cluster().delete("events", "session_key = {s:UInt64}")
        );
    }

    #[test]
    fn test_unknown_statement_forms_are_refused() {
        for sql in [
            "CREATE TABLE IF NOT EXISTS mystery (x UInt8) ENGINE = MergeTree ORDER BY x",
            "OPTIMIZE TABLE events FINAL",
            "CREATE TABLE IF NOT EXISTS events (x UInt8) ENGINE = Log",
            "ALTER TABLE mystery ADD COLUMN x UInt8",
        ] {
            assert!(cluster().rewrite(sql).is_err(), "{sql}");
        }
    }

    #[test]
    fn test_the_documented_cluster_schema_is_what_migrate_runs() {
        // docs/cluster-schema.sql is `moraine-mcp migrate --print` with
        // MORAINE_MCP_CLICKHOUSE__CLUSTER=moraine; docs/scaling.md describes it.
        let config = crate::config::ClickHouseConfig {
            cluster: "moraine".into(),
            ..Default::default()
        };
        let printed = crate::migrate::script(&config).unwrap();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cluster-schema.sql");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(path, &printed).unwrap();
        }
        let documented = std::fs::read_to_string(path).unwrap();
        assert!(
            documented == printed,
            "docs/cluster-schema.sql differs from `migrate --print` on a cluster: regenerate it \
             with UPDATE_GOLDEN=1 and review the difference"
        );
    }
}
