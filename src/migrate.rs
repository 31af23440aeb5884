//! Schema migrations: the numbered `sql/NNN_*.sql` files, applied in order and recorded with
//! their checksums. Applying twice changes nothing; editing an applied migration is an error.
//! A statement preceded by `-- only if: <SELECT returning 1 or 0>` runs only when its condition
//! holds, so that a migration cut off part way (its record is written last) can run again.

use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::config::ClickHouseConfig;
use crate::db::{Db, DbError, base_client, gate};

use crate::db::cluster;

use cluster::Cluster;

/// One migration file, embedded in the binary.
pub struct Migration {
    pub version: u32,
    pub name: &'static str,
    pub sql: &'static str,
}

macro_rules! migration {
    ($version:literal, $name:literal) => {
        Migration {
            version: $version,
            name: $name,
            sql: include_str!(concat!("../sql/", $name, ".sql")),
        }
    };
}

/// Every migration, in order. A test checks this list against the `sql/` directory.
pub const MIGRATIONS: &[Migration] = &[
    migration!(1, "001_canonical"),
    migration!(2, "002_search_index"),
    migration!(3, "003_ingest_checkpoints"),
    migration!(4, "004_query_log"),
    migration!(5, "005_service_keys"),
    migration!(6, "006_archive"),
    migration!(7, "007_archive_codec"),
    migration!(8, "008_write_once"),
    migration!(9, "009_impact_tiers"),
    migration!(10, "010_point_lookups"),
    migration!(11, "011_statistics_by_type"),
    migration!(12, "012_index_format"),
    migration!(13, "013_session_vectors"),
];

/// The longest one migration statement may run.
const STATEMENT_DEADLINE: Duration = Duration::from_secs(6 * 3600);

/// The schema version this binary expects.
pub fn latest_version() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(
        "migration {version} ({name}) was changed after it was applied: checksum {applied} in the database, {current} in this build"
    )]
    Edited {
        version: u32,
        name: String,
        applied: String,
        current: String,
    },
    #[error("the database has schema version {found}, newer than this build's {expected}")]
    TooNew { found: u32, expected: u32 },
    #[error(transparent)]
    Cluster(#[from] cluster::Unsupported),
    #[error(
        "the migration's lease in write_gate could not be renewed for a while, so writers may have resumed; the migration stopped before its next statement: run migrate again"
    )]
    LeaseLost,
}

/// What a run did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MigrateReport {
    pub applied: Vec<u32>,
    pub already: Vec<u32>,
}

#[derive(Debug, clickhouse::Row, serde::Deserialize)]
struct Applied {
    version: u32,
    checksum: String,
}

const CREATE_MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations \
    (version UInt32, name String, checksum String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) \
    ENGINE = MergeTree ORDER BY version";

/// Creates the database if needed and applies every pending migration.
pub async fn migrate(config: &ClickHouseConfig, db: &Db) -> Result<MigrateReport, MigrateError> {
    migrate_to(config, db, latest_version()).await
}

/// Creates the database if needed and applies the pending migrations up to `version` (an
/// older schema, as a database that has not been upgraded yet has it).
pub async fn migrate_to(
    config: &ClickHouseConfig,
    db: &Db,
    version: u32,
) -> Result<MigrateReport, MigrateError> {
    let deadline = db.default_deadline();
    let plan = Plan::new(config, db);
    // The databases may not exist yet, so these statements run on a client without one.
    match &plan.cluster {
        None => base_client(config)
            .query("CREATE DATABASE IF NOT EXISTS {db:Identifier}")
            .param("db", &config.database)
            .execute()
            .await
            .map_err(DbError::from_clickhouse)?,
        Some((cluster, _)) => {
            for sql in cluster.create_databases() {
                base_client(config)
                    .query(&sql)
                    .execute()
                    .await
                    .map_err(DbError::from_clickhouse)?;
            }
        }
    }
    for table in [CREATE_MIGRATIONS_TABLE, gate::CREATE_TABLE] {
        for (target, sql, _) in plan.statements(table)? {
            target
                .write("migrate_table", &sql)
                .execute(target, deadline)
                .await?;
        }
    }
    let pending = |applied: &[Applied]| {
        MIGRATIONS
            .iter()
            .any(|m| m.version <= version && !applied.iter().any(|a| a.version == m.version))
    };
    let applied = read_applied(db).await?;
    if !pending(&applied) {
        return apply(&plan, db, version, &applied, None).await;
    }
    // Writers pause and other migrations wait while this one runs (see `gate`); what is
    // pending is read again once it is this run's turn.
    let lease = gate::MigratorLease::acquire(db).await?;
    let report = match read_applied(db).await {
        Ok(applied) => apply(&plan, db, version, &applied, Some(&lease)).await,
        Err(error) => Err(error.into()),
    };
    lease.end().await;
    report
}

async fn read_applied(db: &Db) -> Result<Vec<Applied>, DbError> {
    db.read(
        "migrate_applied",
        "SELECT version, checksum FROM schema_migrations ORDER BY version",
    )
    .fetch_all(db, db.default_deadline())
    .await
}

/// Applies the migrations up to `version` that `applied` (as `schema_migrations` lists them)
/// does not hold, after checking that those it holds are this build's; each statement only
/// while `lease` holds.
async fn apply(
    plan: &Plan<'_>,
    db: &Db,
    version: u32,
    applied: &[Applied],
    lease: Option<&gate::MigratorLease>,
) -> Result<MigrateReport, MigrateError> {
    let lease_holds = || lease.is_none_or(gate::MigratorLease::holds);
    if let Some(newest) = applied.iter().map(|a| a.version).max()
        && newest > latest_version()
    {
        return Err(MigrateError::TooNew {
            found: newest,
            expected: latest_version(),
        });
    }
    let mut report = MigrateReport::default();
    for migration in MIGRATIONS.iter().filter(|m| m.version <= version) {
        let checksum = sha256_hex(migration.sql);
        if let Some(done) = applied.iter().find(|a| a.version == migration.version) {
            if done.checksum != checksum {
                return Err(MigrateError::Edited {
                    version: migration.version,
                    name: migration.name.to_owned(),
                    applied: done.checksum.clone(),
                    current: checksum,
                });
            }
            report.already.push(migration.version);
            continue;
        }
        for statement in statements(migration.sql) {
            let holds = match &statement.only_if {
                None => true,
                Some(condition) => {
                    let checked = plan.conditions(condition);
                    let holds: Option<u8> = checked
                        .read("migrate_condition", condition)
                        .fetch_optional(checked, checked.default_deadline())
                        .await?;
                    holds == Some(1)
                }
            };
            for (target, sql, conditional) in plan.statements(&statement.sql)? {
                if conditional && !holds {
                    continue;
                }
                if !lease_holds() {
                    return Err(MigrateError::LeaseLost);
                }
                // A migration may copy a table: the query timeout meant for tool calls is far
                // too short for that on a large index.
                target
                    .write("migrate_statement", &sql)
                    .execute(target, Instant::now() + STATEMENT_DEADLINE)
                    .await?;
            }
        }
        if !lease_holds() {
            return Err(MigrateError::LeaseLost);
        }
        db.write(
            "migrate_record",
            "INSERT INTO schema_migrations (version, name, checksum) VALUES ({v:UInt32}, {n:String}, {c:String})",
        )
        .param("v", migration.version)
        .param("n", migration.name)
        .param("c", &checksum)
        .execute(db, db.default_deadline())
        .await?;
        tracing::info!(
            version = migration.version,
            name = migration.name,
            "applied migration"
        );
        report.applied.push(migration.version);
    }
    db.client().clear_cached_metadata().await;
    Ok(report)
}

/// Where migration statements run: as written on one node; rewritten, in the service's or the
/// shards' database, on a cluster.
struct Plan<'a> {
    db: &'a Db,
    cluster: Option<(Cluster, Db)>,
}

impl<'a> Plan<'a> {
    fn new(config: &ClickHouseConfig, db: &'a Db) -> Self {
        let cluster = Cluster::configured(config).map(|cluster| {
            let local = db.with_database(&cluster.local);
            (cluster, local)
        });
        Self { db, cluster }
    }

    /// Each statement to run, where, and whether only when its condition holds.
    fn statements(&self, sql: &str) -> Result<Vec<(&Db, String, bool)>, MigrateError> {
        let Some((cluster, local)) = &self.cluster else {
            return Ok(vec![(self.db, sql.to_owned(), true)]);
        };
        Ok(cluster
            .rewrite(sql)?
            .into_iter()
            .map(|statement| {
                let target = match statement.target {
                    cluster::Target::Local => local,
                    cluster::Target::Service => self.db,
                };
                (target, statement.sql, statement.conditional)
            })
            .collect())
    }

    /// Where `condition` is checked (see [`cluster::condition_target`]).
    fn conditions(&self, condition: &str) -> &Db {
        match &self.cluster {
            Some((_, local)) if cluster::condition_target(condition) == cluster::Target::Local => {
                local
            }
            _ => self.db,
        }
    }
}

/// Every statement `migrate` runs on an empty database, in order, as SQL text: what an operator
/// reviews before creating a cluster's schema (`moraine-mcp migrate --print`).
pub fn script(config: &ClickHouseConfig) -> Result<String, MigrateError> {
    let Some(cluster) = Cluster::configured(config) else {
        let mut out = format!(
            "-- moraine-mcp schema version {}, on one node, in database {}.\n",
            latest_version(),
            config.database
        );
        for (name, statement) in all_statements() {
            if let Some(name) = name {
                out.push_str(&format!("\n-- {name}\n"));
            }
            if let Some(condition) = &statement.only_if {
                out.push_str(&format!("{ONLY_IF} {condition}\n"));
            }
            out.push_str(&format!("{};\n", statement.sql));
        }
        return Ok(out);
    };
    let mut out = format!(
        "-- moraine-mcp schema version {}, on cluster {}: Distributed tables in database {}, \
         the shards' replicated tables in {}.\n-- Each statement is preceded by the database it \
         runs in, and by the condition it runs under, if any.\n\n{};\n",
        latest_version(),
        cluster.name,
        cluster.database,
        cluster.local,
        cluster.create_databases().join(";\n"),
    );
    for (name, condition, statement) in cluster_statements(&cluster)? {
        if let Some(name) = name {
            out.push_str(&format!("\n-- {name}\n"));
        }
        match condition {
            Some(condition) if statement.conditional => {
                let checked = match cluster::condition_target(&condition) {
                    cluster::Target::Local => &cluster.local,
                    cluster::Target::Service => &cluster.database,
                };
                out.push_str(&format!(
                    "{ONLY_IF} {condition}\n-- (checked in {checked})\n"
                ));
            }
            Some(_) => out.push_str("-- (whether or not the condition above held)\n"),
            None => {}
        }
        let database = match statement.target {
            cluster::Target::Local => &cluster.local,
            cluster::Target::Service => &cluster.database,
        };
        out.push_str(&format!("-- in {database}\n{};\n", statement.sql));
    }
    Ok(out)
}

/// A migration's name (at its first statement) and each of its statements, the migrations
/// table's first.
fn all_statements() -> impl Iterator<Item = (Option<&'static str>, Statement)> {
    let tables = [
        ("schema_migrations", CREATE_MIGRATIONS_TABLE),
        ("write_gate", gate::CREATE_TABLE),
    ];
    tables
        .into_iter()
        .chain(MIGRATIONS.iter().map(|m| (m.name, m.sql)))
        .flat_map(|(name, sql)| {
            statements(sql)
                .into_iter()
                .enumerate()
                .map(move |(i, statement)| ((i == 0).then_some(name), statement))
        })
}

/// What a cluster runs to migrate an empty database, statement by statement: the migration's
/// name at its first statement, the condition a statement runs under, and the statement.
pub type ClusterScript = Vec<(
    Option<&'static str>,
    Option<String>,
    cluster::ClusterStatement,
)>;

/// Every migration rewritten for `cluster`, in order.
pub fn cluster_statements(cluster: &Cluster) -> Result<ClusterScript, MigrateError> {
    let mut out = Vec::new();
    for (name, statement) in all_statements() {
        let mut name = name;
        for rewritten in cluster.rewrite(&statement.sql)? {
            out.push((name.take(), statement.only_if.clone(), rewritten));
        }
    }
    Ok(out)
}

/// Lower-case hex SHA-256 of `bytes`: migration checksums, the engine's requirements stamp and
/// the embedding model's wheel.
pub(crate) fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    let digest = Sha256::digest(bytes.as_ref());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// One statement of a migration, and the condition it runs under.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Statement {
    pub(crate) sql: String,
    only_if: Option<String>,
}

const ONLY_IF: &str = "-- only if:";

/// Splits a migration into statements: split at `;` ending a line, `--` comment lines dropped
/// except `-- only if:` (which applies to the statement after it).
pub(crate) fn statements(sql: &str) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut only_if: Option<String> = None;
    let mut finish = |current: &mut String, only_if: &mut Option<String>| {
        let sql = current.trim().trim_end_matches(';').trim().to_owned();
        if !sql.is_empty() {
            out.push(Statement {
                sql,
                only_if: only_if.take(),
            });
        }
        current.clear();
    };
    for line in sql.lines() {
        let trimmed = line.trim_start();
        if let Some(condition) = trimmed.strip_prefix(ONLY_IF) {
            only_if = Some(condition.trim().to_owned());
            continue;
        }
        if trimmed.starts_with("--") {
            continue;
        }
        current.push_str(line);
        current.push('\n');
        if line.trim_end().ends_with(';') {
            finish(&mut current, &mut only_if);
        }
    }
    finish(&mut current, &mut only_if);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_migration_list_matches_the_sql_directory() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/sql");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        files.sort();
        let listed: Vec<String> = MIGRATIONS
            .iter()
            .map(|m| format!("{}.sql", m.name))
            .collect();
        assert_eq!(files, listed);
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1);
            assert!(m.name.starts_with(&format!("{:03}_", m.version)));
        }
    }

    #[test]
    fn test_statements_split() {
        let sql = "-- comment; here\nCREATE TABLE a (x UInt8)\nENGINE = Null;\n\nSELECT 1;\n";
        let sqls: Vec<String> = statements(sql).into_iter().map(|s| s.sql).collect();
        assert_eq!(
            sqls,
            ["CREATE TABLE a (x UInt8)\nENGINE = Null", "SELECT 1"]
        );
        let guarded = statements("SELECT 1;\n-- only if: SELECT 0\nDROP TABLE a;\nSELECT 2;\n");
        assert_eq!(guarded[0].only_if, None);
        assert_eq!(guarded[1].only_if.as_deref(), Some("SELECT 0"));
        assert_eq!(guarded[1].sql, "DROP TABLE a");
        assert_eq!(guarded[2].only_if, None);
        for m in MIGRATIONS {
            assert!(!statements(m.sql).is_empty());
        }
    }

    #[test]
    fn test_conditions_on_rows_are_checked_over_every_shard() {
        let conditions: Vec<String> = MIGRATIONS
            .iter()
            .flat_map(|m| statements(m.sql))
            .filter_map(|s| s.only_if)
            .collect();
        assert!(conditions.len() > 20);
        let (rows, schema): (Vec<&String>, Vec<&String>) = conditions
            .iter()
            .partition(|c| cluster::condition_target(c) == cluster::Target::Service);
        // 012's and 013's: whether any event is stored, asked of the Distributed table.
        assert_eq!(rows, ["SELECT toUInt8(count() = 0) FROM events"; 2]);
        assert!(schema.iter().all(|c| c.contains("FROM system.tables")));
    }
}
