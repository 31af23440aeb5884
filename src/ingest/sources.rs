//! Who pushed what: each source's logs, sessions, events and last write, for `moraine-mcp
//! sources` and `GET /ingest/v1/sources` (one type for both sides).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::db::{Db, DbError};
use crate::text::{format_ts, now_ms};

/// Where one source stands in the store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceStatus {
    pub source: String,
    /// How its logs arrive: `push` (the ingest API) or `local` (read on this machine).
    pub origin: String,
    /// Log files (or stores) read, and their bytes.
    pub logs: u64,
    pub bytes: u64,
    pub sessions: u64,
    pub events: u64,
    /// The newest event's time (RFC 3339), if any.
    pub newest_event_at: Option<String>,
    /// When its logs were last written to the store (RFC 3339).
    pub last_write_at: Option<String>,
    /// Seconds since then: how far behind the laptop the store may be.
    pub lag_seconds: Option<u64>,
}

/// The answer of `GET /ingest/v1/sources`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourcesAnswer {
    pub sources: Vec<SourceStatus>,
}

/// Which sources a caller may see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visible {
    All,
    Only(Vec<String>),
}

// Both read per source, from the sessions (a few rows per session) and the checkpoints (one
// row per log), never the events: the cost grows with the logs, not the corpus.
const SESSIONS_SQL: &str = "SELECT toString(source), count(), sum(event_count), \
     toUnixTimestamp64Milli(max(updated_at)) FROM sessions FINAL \
     WHERE {all:Bool} OR has({only:Array(String)}, toString(source)) GROUP BY source";
const LOGS_SQL: &str = "SELECT toString(source), toString(argMax(origin, updated_at)), count(), \
     sum(received), toUnixTimestamp64Milli(max(updated_at)) FROM ingest_checkpoints FINAL \
     WHERE {all:Bool} OR has({only:Array(String)}, toString(source)) GROUP BY source";

/// Each visible source's status, by name.
pub async fn list(db: &Db, visible: &Visible) -> Result<Vec<SourceStatus>, DbError> {
    let (all, only) = match visible {
        Visible::All => (true, Vec::new()),
        Visible::Only(names) => (false, names.clone()),
    };
    let sessions: Vec<(String, u64, u64, i64)> = db
        .read("sources_sessions", SESSIONS_SQL)
        .param("all", all)
        .param("only", &only)
        .fetch_all(db, db.default_deadline())
        .await?;
    let logs: Vec<(String, String, u64, u64, i64)> = db
        .read("sources_logs", LOGS_SQL)
        .param("all", all)
        .param("only", &only)
        .fetch_all(db, db.default_deadline())
        .await?;
    let mut by_name: BTreeMap<String, SourceStatus> = BTreeMap::new();
    for (name, count, events, newest) in sessions {
        let status = entry(&mut by_name, name);
        status.sessions = count;
        status.events = events;
        status.newest_event_at = (newest > 0).then(|| format_ts(newest));
    }
    let now = now_ms();
    for (name, origin, files, bytes, last) in logs {
        let status = entry(&mut by_name, name);
        status.origin = origin;
        status.logs = files;
        status.bytes = bytes;
        if last > 0 {
            status.last_write_at = Some(format_ts(last));
            status.lag_seconds = u64::try_from((now - last) / 1000).ok();
        }
    }
    Ok(by_name.into_values().collect())
}

fn entry(by_name: &mut BTreeMap<String, SourceStatus>, name: String) -> &mut SourceStatus {
    by_name.entry(name.clone()).or_insert_with(|| SourceStatus {
        source: name,
        ..SourceStatus::default()
    })
}

/// The statuses as a table for a terminal.
pub fn table(sources: &[SourceStatus]) -> String {
    let mut rows = vec![[
        "SOURCE".to_owned(),
        "ORIGIN".to_owned(),
        "LOGS".to_owned(),
        "SESSIONS".to_owned(),
        "EVENTS".to_owned(),
        "NEWEST EVENT".to_owned(),
        "LAST WRITE".to_owned(),
        "LAG".to_owned(),
    ]];
    for s in sources {
        let time = |t: &Option<String>| t.as_deref().map_or("-".to_owned(), minutes);
        rows.push([
            s.source.clone(),
            if s.origin.is_empty() { "-" } else { &s.origin }.to_owned(),
            s.logs.to_string(),
            s.sessions.to_string(),
            s.events.to_string(),
            time(&s.newest_event_at),
            time(&s.last_write_at),
            s.lag_seconds.map_or("-".to_owned(), age),
        ]);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// `2026-11-27T15:04:05.123Z` as `2026-11-27 15:04 UTC`.
pub fn minutes(ts: &str) -> String {
    match (ts.get(..10), ts.get(11..16)) {
        (Some(day), Some(time)) => format!("{day} {time} UTC"),
        _ => ts.to_owned(),
    }
}

/// A lag in the largest unit that fits: `42s`, `5m`, `3h`, `2d`.
pub fn age(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_table_aligns_columns_and_shows_gaps_as_dashes() {
        let text = table(&[
            SourceStatus {
                source: "alice".into(),
                origin: "push".into(),
                logs: 3,
                bytes: 900,
                sessions: 3,
                events: 120,
                newest_event_at: Some("2026-05-01T10:00:00.000Z".into()),
                last_write_at: Some("2026-11-27T15:04:05.123Z".into()),
                lag_seconds: Some(7260),
            },
            SourceStatus {
                source: "demo".into(),
                ..SourceStatus::default()
            },
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].starts_with("alice   push"), "{text}");
        assert!(lines[1].contains("2026-05-01 10:00 UTC"), "{text}");
        assert!(lines[1].ends_with("2h"), "{text}");
        assert!(lines[2].starts_with("demo    -"), "{text}");
        // Every row's third column starts where its header does.
        let at = lines[0].find("LOGS").unwrap();
        assert_eq!(&lines[1][at..at + 1], "3", "{text}");
    }

    #[test]
    fn test_age_uses_the_largest_unit_that_fits() {
        assert_eq!(age(59), "59s");
        assert_eq!(age(60), "1m");
        assert_eq!(age(3 * 3600 + 1), "3h");
        assert_eq!(age(2 * 86_400), "2d");
    }
}
