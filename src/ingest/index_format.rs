//! Which tokenizer built the index (`sql/012_index_format.sql`): a store indexed by an earlier
//! one lacks some terms (stems, bare versions) or the sessions' vectors until `moraine-mcp
//! reindex` rebuilds it.

use crate::db::{Db, DbError};

/// The format this build's ingest writes. 1: every store before the format was recorded;
/// 2: stems of inflected words and bare versions; 3: each session's vector (`session_vectors`). A
/// change to what ingest indexes bumps it, with a migration recording the new format for a
/// store with nothing indexed yet.
pub const INDEX_FORMAT: u32 = 3;
/// The format ingest writes with `semantic.enabled = false`: words without vectors.
const WORDS_ONLY: u32 = 2;

/// The format ingest writes under `config`.
pub fn written(config: &crate::config::Config) -> u32 {
    if config.semantic.enabled {
        INDEX_FORMAT
    } else {
        WORDS_ONLY
    }
}

/// The format the store last recorded (1 when none is: indexed before formats were kept). The
/// last, not the highest: a full reindex without the model records format 2 after 3.
pub async fn recorded(db: &Db) -> Result<u32, DbError> {
    let newest: Option<u32> = db
        .read(
            "index_format",
            "SELECT argMax(format, (recorded_at, format)) FROM index_format FINAL",
        )
        .fetch_optional(db, db.default_deadline())
        .await?;
    Ok(newest.unwrap_or(0).max(1))
}

/// Records that ingest of `format` (see [`written`]) built the whole index.
pub async fn record(db: &Db, format: u32) -> Result<(), DbError> {
    db.write(
        "index_format_record",
        "INSERT INTO index_format (format) VALUES ({format:UInt32})",
    )
    .param("format", format)
    .execute(db, db.default_deadline())
    .await
}

/// A warning for the operator when the index holds less than ingest writes under `config` (none
/// when it does not, or when the store cannot say).
pub async fn stale_warning(db: &Db, config: &crate::config::Config) -> Option<String> {
    match recorded(db).await {
        Ok(format) if format < written(config) => Some(stale_message(format)),
        Ok(_) => None,
        Err(error) => {
            tracing::debug!(%error, "cannot read the index format");
            None
        }
    }
}

fn stale_message(format: u32) -> String {
    let words = if format < 2 {
        "some inflections (`released` for `releases`) and bare versions (`1.12.3` in \
         `v1.12.3`), and "
    } else {
        ""
    };
    format!(
        "the index was built by an earlier version (format {format}; this version writes \
         {INDEX_FORMAT}): searches miss {words}the sessions' meaning (sessions asked about in \
         other words) until `moraine-mcp reindex` rebuilds it from the stored logs"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_the_migration_records_this_format_for_an_empty_store() {
        let migration = crate::migrate::MIGRATIONS
            .iter()
            .rev()
            .find(|m| m.sql.contains("INSERT INTO index_format"))
            .expect("a migration records the format");
        assert!(
            migration.sql.contains(&format!(
                "INSERT INTO index_format (format) VALUES ({INDEX_FORMAT});"
            )),
            "{}: the format recorded for a new store must be INDEX_FORMAT",
            migration.name
        );
        assert!(stale_message(1).contains("moraine-mcp reindex"));
        assert!(stale_message(1).contains("inflections"));
        assert!(!stale_message(2).contains("inflections") && stale_message(2).contains("meaning"));
    }
}
