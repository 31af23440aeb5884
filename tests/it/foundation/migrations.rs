//! Migrations on the real engine: applied twice alike, one at a time, behind the write gate's
//! leases, and the previous schema's tables upgraded in place.

use super::*;

#[derive(Debug, PartialEq, clickhouse::Row, serde::Deserialize)]
struct TableDef {
    name: String,
    create_table_query: String,
}

async fn schema_of(db: &Db) -> Vec<TableDef> {
    db.read(
        "test_schema",
        "SELECT name, create_table_query FROM system.tables WHERE database = currentDatabase() ORDER BY name",
    )
    .fetch_all(db, db.default_deadline())
    .await
    .unwrap()
}

#[tokio::test]
async fn migrations_apply_twice_with_the_same_result_and_refuse_edits() {
    let (config, db) = fresh_db().await;
    let first = schema_of(&db).await;
    assert!(first.iter().any(|t| t.name == "postings"));
    let again = migrate::migrate(&config.clickhouse, &db).await.unwrap();
    assert!(again.applied.is_empty());
    assert_eq!(
        again.already,
        (1..=migrate::latest_version()).collect::<Vec<_>>()
    );
    assert_eq!(schema_of(&db).await, first);
    let rows: u64 = db
        .read("test_count", "SELECT count() FROM schema_migrations")
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rows, migrate::latest_version() as u64);

    db.write(
        "test_tamper",
        "ALTER TABLE schema_migrations UPDATE checksum = 'edited' WHERE version = 2 SETTINGS mutations_sync = 2",
    )
    .execute(&db, db.default_deadline())
    .await
    .unwrap();
    let error = migrate::migrate(&config.clickhouse, &db).await.unwrap_err();
    assert!(
        matches!(error, MigrateError::Edited { version: 2, .. }),
        "{error}"
    );
}

/// How many times each migration is recorded.
async fn records(db: &Db) -> Vec<(u32, u64)> {
    db.read(
        "t",
        "SELECT version, count() FROM schema_migrations GROUP BY version ORDER BY version",
    )
    .fetch_all(db, db.default_deadline())
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrations_started_at_once_run_one_after_the_other() {
    let config = config_for(&common::shared_engine_url());
    let handle = || Db::new(&config.clickhouse, Metrics::new(&config.sla));
    let (one, two, three) = (handle(), handle(), handle());
    one.wait_until_ready(Duration::from_secs(30)).await.unwrap();
    // Three processes upgrading one new database at once (say `up`, `ingest` and the compose
    // file's `migrate`): each migration is applied by one of them, once.
    let (a, b, c) = tokio::join!(
        migrate::migrate(&config.clickhouse, &one),
        migrate::migrate(&config.clickhouse, &two),
        migrate::migrate(&config.clickhouse, &three),
    );
    let mut applied: Vec<u32> = [a, b, c]
        .into_iter()
        .flat_map(|report| report.unwrap().applied)
        .collect();
    applied.sort_unstable();
    let all: Vec<u32> = (1..=migrate::latest_version()).collect();
    assert_eq!(applied, all, "each migration applied by exactly one run");
    let once: Vec<(u32, u64)> = all.iter().map(|&v| (v, 1)).collect();
    assert_eq!(records(&one).await, once);
}

/// The holders of live writer leases.
async fn live_writers(db: &Db) -> Vec<u64> {
    gate::live(db, gate::Role::Writer).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_migration_waits_for_writes_and_for_the_lease_of_a_writer_that_died() {
    let settings = config_for(&common::shared_engine_url());
    let handle = || Db::new(&settings.clickhouse, Metrics::new(&settings.sla));
    let (migrator, writer, other) = (handle(), handle(), handle());
    migrator
        .wait_until_ready(Duration::from_secs(30))
        .await
        .unwrap();
    migrate::migrate_to(&settings.clickhouse, &migrator, 9)
        .await
        .unwrap();
    // A writer that died with its lease a moment ago (it runs out in 20 s), and one that is
    // writing now.
    writer
        .write(
            "t",
            "INSERT INTO write_gate (role, holder, seq, until) \
             VALUES ('writer', 7, 1, now64(6) + INTERVAL 20 SECOND)",
        )
        .execute(&writer, writer.default_deadline())
        .await
        .unwrap();
    let writing = writer.enter_write(WhenMigrating::Refuse).await.unwrap();
    // A lease says what holds it, for the operator of a migration that waits.
    let labels = gate::live_labelled(&writer, gate::Role::Writer)
        .await
        .unwrap();
    let this = format!(", pid {}", std::process::id());
    assert!(
        labels.iter().any(|(_, label)| label.ends_with(&this)),
        "{labels:?}"
    );
    let config = settings.clickhouse.clone();
    let upgrade = tokio::spawn(async move { migrate::migrate(&config, &migrator).await });
    let still_waiting = |upgrade: &tokio::task::JoinHandle<_>| {
        assert!(
            !upgrade.is_finished(),
            "the upgrade did not wait for writers"
        );
    };
    // The migration announces itself, then waits: another process's write is refused (a push
    // request answered 503), and the schema is untouched while the write runs.
    let started = Instant::now();
    loop {
        match other.enter_write(WhenMigrating::Refuse).await {
            Err(DbError::Migrating) => break,
            Ok(permit) => drop(permit),
            Err(error) => panic!("{error}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "never refused"
        );
        still_waiting(&upgrade);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    still_waiting(&upgrade);
    assert_eq!(records(&writer).await.last().map(|r| r.0), Some(9));
    // The write ends and its process gives its lease up; the migration still waits for the
    // dead writer's lease to run out.
    drop(writing);
    let mut left = live_writers(&writer).await;
    while left.len() > 1 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = live_writers(&writer).await;
    }
    // (On a machine slow enough for the dead lease to have run out already, there is
    // nothing left to see.)
    if left == [7] {
        still_waiting(&upgrade);
        assert_eq!(records(&writer).await.last().map(|r| r.0), Some(9));
    }
    // Then it goes ahead, and a writer that waits for it writes once it is over.
    let waiting = tokio::spawn(async move {
        let permit = other.enter_write(WhenMigrating::Wait).await.unwrap();
        let version = records(&other).await.last().map(|r| r.0);
        drop(permit);
        version
    });
    let limit = Duration::from_secs(120);
    let report = tokio::time::timeout(limit, upgrade).await.unwrap();
    let latest = migrate::latest_version();
    assert_eq!(
        report.unwrap().unwrap().applied,
        (10..=latest).collect::<Vec<_>>()
    );
    let seen = tokio::time::timeout(limit, waiting).await.unwrap();
    assert_eq!(
        seen.unwrap(),
        Some(latest),
        "the waiting write started after the migration"
    );
    // Nothing pending: a migrate run neither announces itself nor waits for writers.
    let writing = writer.enter_write(WhenMigrating::Refuse).await.unwrap();
    let again = tokio::time::timeout(
        Duration::from_secs(60),
        migrate::migrate(&settings.clickhouse, &handle()),
    )
    .await
    .expect("a run with nothing to apply does not wait for writes")
    .unwrap();
    assert!(again.applied.is_empty());
    drop(writing);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_migration_lease_that_ran_out_stays_out_and_says_so() {
    let (settings, db) = fresh_db().await;
    // A lease of 2 s, where its renewals come every 5 s: it runs out before the first.
    let lease = gate::MigratorLease::acquire_lasting(&db, Duration::from_secs(2))
        .await
        .unwrap();
    let writer = Db::new(&settings.clickhouse, Metrics::new(&settings.sla));
    let migrating = writer.enter_write(WhenMigrating::Refuse).await;
    assert!(
        matches!(migrating, Err(DbError::Migrating)),
        "{migrating:?}"
    );
    // Once it has run out, writes resume, and the migration (which checks before each
    // statement) knows it no longer holds the gate.
    let mut permit = writer.enter_write(WhenMigrating::Refuse).await;
    let started = Instant::now();
    while permit.is_err() {
        assert!(started.elapsed() < Duration::from_secs(60), "never ran out");
        tokio::time::sleep(Duration::from_millis(200)).await;
        permit = writer.enter_write(WhenMigrating::Refuse).await;
    }
    assert!(!lease.holds());
    drop(permit);
    // Its renewal, due meanwhile, does not bring it back.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let migrators = gate::live(&db, gate::Role::Migrator).await.unwrap();
    assert_eq!(migrators, Vec::<u64>::new());
    assert!(!lease.holds());
    lease.end().await;
}

/// Rows and a hash of every column of every row of `turns` and of `sessions` (FINAL left out: a
/// row copied twice would count twice).
async fn copied_tables(db: &Db) -> Vec<(u64, u64)> {
    let mut hashes = Vec::new();
    for table in ["turns", "sessions"] {
        let hash: (u64, u64) = db
            .read(
                "t",
                "SELECT count(), sum(cityHash64(*)) FROM {t:Identifier}",
            )
            .param("t", table)
            .fetch_optional(db, db.default_deadline())
            .await
            .unwrap()
            .unwrap();
        hashes.push(hash);
    }
    hashes
}

/// Whether `table` has schema 10's granules.
async fn has_small_granules(db: &Db, table: &str) -> bool {
    let engine: String = db
        .read(
            "t",
            "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = {t:String}",
        )
        .param("t", table)
        .fetch_optional(db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    engine.contains("index_granularity = 128,")
}

#[tokio::test]
async fn turns_and_sessions_of_the_previous_schema_get_small_granules_and_keep_every_row() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("granules-{}", uuid::Uuid::new_v4().simple()));
    let settings = common::without_vectors(config_for(&common::shared_engine_url()));
    let db = Db::new(&settings.clickhouse, Metrics::new(&settings.sla));
    db.wait_until_ready(Duration::from_secs(30)).await.unwrap();
    migrate::migrate_to(&settings.clickhouse, &db, 9)
        .await
        .unwrap();
    assert!(!has_small_granules(&db, "turns").await);
    common::write_sessions(&dir, 7, 12, 6, "granule");
    common::ingest_paths(&settings, &db, &dir).await;
    // An ingest run that has ended holds no lease a migration would wait for.
    assert_eq!(live_writers(&db).await, Vec::<u64>::new());
    let before = common::snapshot(&db).await;
    let hashes = copied_tables(&db).await;
    let sql = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sql/010_point_lookups.sql"),
    )
    .unwrap();
    let create = |table: &str| {
        let from = sql
            .find(&format!("CREATE TABLE IF NOT EXISTS {table}"))
            .unwrap();
        sql[from..from + sql[from..].find(';').unwrap()].to_owned()
    };
    for statement in [
        // A run cut off after copying some turns: the copy starts again from an empty table.
        create("turns_fine"),
        "INSERT INTO turns_fine SELECT * FROM turns LIMIT 3".to_owned(),
        // A run cut off inside the rename of sessions, which had moved the old table away but
        // not yet given the copy its name: the copy takes it, and the old table goes only then.
        create("sessions_fine"),
        "INSERT INTO sessions_fine SELECT * FROM sessions".to_owned(),
        "RENAME TABLE sessions TO sessions_coarse".to_owned(),
    ] {
        db.write("t", &statement)
            .execute(&db, db.default_deadline())
            .await
            .unwrap();
    }

    migrate::migrate_to(&settings.clickhouse, &db, 10)
        .await
        .unwrap();
    assert!(has_small_granules(&db, "turns").await);
    assert!(has_small_granules(&db, "sessions").await);
    let after = copied_tables(&db).await;
    assert_eq!(after, hashes, "every column of every row, once");
    common::snapshot(&db).await.assert_same_as(&before);
    // Cut off before its record: it runs again and changes nothing.
    db.write(
        "t",
        "ALTER TABLE schema_migrations DELETE WHERE version = 10 SETTINGS mutations_sync = 2",
    )
    .execute(&db, db.default_deadline())
    .await
    .unwrap();
    migrate::migrate_to(&settings.clickhouse, &db, 10)
        .await
        .unwrap();
    let again = copied_tables(&db).await;
    assert_eq!(again, hashes);

    // New logs land in the new tables as in a new database.
    migrate::migrate(&settings.clickhouse, &db).await.unwrap();
    common::write_sessions(&dir, 8, 5, 4, "granule");
    common::ingest_paths(&settings, &db, &dir).await;
    let (fresh_settings, fresh) = fresh_db().await;
    let fresh_settings = common::without_vectors(fresh_settings);
    common::ingest_paths(&fresh_settings, &fresh, &dir).await;
    common::snapshot(&db)
        .await
        .assert_same_as(&common::snapshot(&fresh).await);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn statistics_of_the_previous_schema_are_counted_per_event_type_exactly() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("typed-stats-{}", uuid::Uuid::new_v4().simple()));
    let settings = common::without_vectors(config_for(&common::shared_engine_url()));
    let db = Db::new(&settings.clickhouse, Metrics::new(&settings.sla));
    db.wait_until_ready(Duration::from_secs(30)).await.unwrap();
    migrate::migrate_to(&settings.clickhouse, &db, 10)
        .await
        .unwrap();
    common::write_sessions(&dir, 11, 6, 5, "typedword");
    common::ingest_paths(&settings, &db, &dir).await;
    let totals = |db: Db| async move {
        db.read(
            "t",
            "SELECT toInt64(assumeNotNull((SELECT sum(df) FROM term_df))), toInt64(assumeNotNull((SELECT sum(docs) FROM corpus_stats))), \
             toInt64(assumeNotNull((SELECT sum(total_len) FROM corpus_stats)))",
        )
        .fetch_optional::<(i64, i64, i64)>(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap()
    };
    let before = totals(db.clone()).await;
    assert!(before.0 > 0 && before.1 > 0);
    // A run cut off after copying part of the frequencies: the copy starts again, empty.
    let sql = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sql/011_statistics_by_type.sql"),
    )
    .unwrap();
    let from = sql
        .find("CREATE TABLE IF NOT EXISTS term_df_typed")
        .unwrap();
    let create = &sql[from..from + sql[from..].find(';').unwrap()];
    for statement in [
        create,
        "INSERT INTO term_df_typed SELECT term, 1, 5 FROM term_df LIMIT 4",
    ] {
        db.write("t", statement)
            .execute(&db, db.default_deadline())
            .await
            .unwrap();
    }
    migrate::migrate(&settings.clickhouse, &db).await.unwrap();
    assert_eq!(totals(db.clone()).await, before, "no count gained or lost");
    let after = common::snapshot(&db).await;
    common::assert_statistics_exact(&after);
    // Cut off before its record: it runs again and changes nothing.
    db.write(
        "t",
        "ALTER TABLE schema_migrations DELETE WHERE version = 11 SETTINGS mutations_sync = 2",
    )
    .execute(&db, db.default_deadline())
    .await
    .unwrap();
    migrate::migrate(&settings.clickhouse, &db).await.unwrap();
    common::snapshot(&db).await.assert_same_as(&after);
    // New logs are counted per type as in a new database, and a search over the default types
    // ranks with their statistics alone.
    common::write_sessions(&dir, 12, 3, 4, "typedword");
    common::ingest_paths(&settings, &db, &dir).await;
    common::assert_statistics_exact(&common::snapshot(&db).await);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Postings of `term`, and its document frequency in `term_df`.
async fn term_counts(db: &Db, term: &str) -> (u64, i64) {
    db.read(
        "t",
        "SELECT toUInt64(assumeNotNull((SELECT count() FROM postings WHERE term = xxh3({term:String})))), \
                toInt64(assumeNotNull((SELECT sum(df) FROM term_df WHERE term = xxh3({term:String}))))",
    )
    .param("term", term)
    .fetch_optional(db, db.default_deadline())
    .await
    .unwrap()
    .unwrap()
}

/// How many sessions the store holds, and how many session vectors.
async fn sessions_and_vectors(db: &Db) -> (u64, u64) {
    db.read(
        "t",
        "SELECT assumeNotNull((SELECT count() FROM sessions FINAL)), \
         assumeNotNull((SELECT count() FROM session_vectors FINAL))",
    )
    .fetch_optional(db, db.default_deadline())
    .await
    .unwrap()
    .unwrap()
}

#[tokio::test]
async fn an_index_built_by_an_earlier_tokenizer_is_stale_until_a_full_reindex() {
    use moraine_mcp::ingest::index_format::{self, INDEX_FORMAT};
    use moraine_mcp::ingest::reindex::{self, Selection};
    // A new store is of this build's format from the start.
    let (new_settings, new) = fresh_db().await;
    let new_config = new_settings.validate().unwrap();
    assert_eq!(index_format::recorded(&new).await.unwrap(), INDEX_FORMAT);
    assert_eq!(index_format::stale_warning(&new, &new_config).await, None);

    // A store that held sessions before the format was kept, indexed without stems (their
    // postings and frequencies removed here, as the earlier tokenizer never wrote them).
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("index-format-{}", uuid::Uuid::new_v4().simple()));
    let settings = config_for(&common::shared_engine_url());
    let db = Db::new(&settings.clickhouse, Metrics::new(&settings.sla));
    db.wait_until_ready(Duration::from_secs(30)).await.unwrap();
    migrate::migrate_to(&settings.clickhouse, &db, 11)
        .await
        .unwrap();
    common::write_sessions(&dir, 9, 3, 2, "rebuilds");
    // Read as a build before session vectors read it (their table comes with a later
    // migration).
    let mut earlier = settings.clone();
    earlier.semantic.enabled = false;
    common::ingest_paths(&earlier, &db, &dir).await;
    let indexed = term_counts(&db, "~rebuild").await;
    assert!(indexed.0 > 0, "{indexed:?}");
    for table in ["postings", "term_df"] {
        db.write(
            "t",
            "ALTER TABLE {table:Identifier} DELETE WHERE term = xxh3('~rebuild') \
             SETTINGS mutations_sync = 2",
        )
        .param("table", table)
        .execute(&db, db.default_deadline())
        .await
        .unwrap();
    }
    migrate::migrate(&settings.clickhouse, &db).await.unwrap();
    let config = settings.clone().validate().unwrap();
    assert_eq!(index_format::recorded(&db).await.unwrap(), 1);
    let warning = index_format::stale_warning(&db, &config).await.unwrap();
    assert!(warning.contains("moraine-mcp reindex"), "{warning}");

    // A rebuild of one source leaves the rest as it was: still stale.
    let scratch = dir.join("scratch");
    let part = Selection {
        source: Some("elsewhere".into()),
        ..Selection::default()
    };
    let summary = reindex::run(&config, &db, &part, &scratch, false)
        .await
        .unwrap();
    assert!(!summary.index_current);
    assert_eq!(index_format::recorded(&db).await.unwrap(), 1);

    // A rebuild of every log writes the stems and records the format.
    let summary = reindex::run(&config, &db, &Selection::default(), &scratch, false)
        .await
        .unwrap();
    assert!(summary.index_current && summary.missing.is_empty());
    assert_eq!(index_format::recorded(&db).await.unwrap(), INDEX_FORMAT);
    assert_eq!(index_format::stale_warning(&db, &config).await, None);
    assert_eq!(term_counts(&db, "~rebuild").await, (indexed.0, indexed.1));
    // And every session has its vector.
    let (sessions, vectors) = sessions_and_vectors(&db).await;
    assert!(
        sessions > 0 && vectors == sessions,
        "{sessions} sessions, {vectors} vectors"
    );

    // A full rebuild without the model leaves the sessions without vectors and says so, to a
    // service that ranks by meaning; one with the model gives them back.
    let words_only = earlier.clone().validate().unwrap();
    reindex::run(&words_only, &db, &Selection::default(), &scratch, false)
        .await
        .unwrap();
    assert_eq!(sessions_and_vectors(&db).await, (sessions, 0));
    assert_eq!(index_format::recorded(&db).await.unwrap(), 2);
    assert_eq!(index_format::stale_warning(&db, &words_only).await, None);
    let warning = index_format::stale_warning(&db, &config).await.unwrap();
    assert!(warning.contains("meaning"), "{warning}");
    reindex::run(&config, &db, &Selection::default(), &scratch, false)
        .await
        .unwrap();
    assert_eq!(sessions_and_vectors(&db).await, (sessions, sessions));
    assert_eq!(index_format::recorded(&db).await.unwrap(), INDEX_FORMAT);
    std::fs::remove_dir_all(&dir).unwrap();
}
