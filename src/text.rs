//! Text helpers shared by ingest and the tools: char boundaries, whitespace-collapsed previews and
//! the RFC 3339 timestamps of the wire format.

/// The largest index ≤ `at` on a char boundary of `text`.
pub(crate) fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    let mut at = at;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A whitespace-collapsed prefix of at most `max_chars` characters (the `…` of a cut counts),
/// and whether it was cut.
pub(crate) fn preview(text: &str, max_chars: usize) -> (String, bool) {
    let mut out = String::with_capacity(max_chars.min(text.len()) + 3);
    let mut count = 0;
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = count > 0;
            continue;
        }
        let needed = if pending_space { 2 } else { 1 };
        if count + needed > max_chars {
            return (format!("{}…", out.trim_end()), true);
        }
        if pending_space {
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        out.push(c);
        count += 1;
    }
    (out, false)
}

/// Milliseconds since the epoch as RFC 3339 UTC with milliseconds, as the spec shows
/// (`2026-04-29T18:42:31.125Z`).
pub(crate) fn format_ts(ms: i64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        at.year(),
        at.month() as u8,
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    )
}

/// Milliseconds since the epoch of an RFC 3339 datetime.
pub(crate) fn rfc3339_ms(text: &str) -> Option<i64> {
    let parsed =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(parsed.unix_timestamp_nanos() / 1_000_000).ok()
}

/// Now, in milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Epoch milliseconds as a `DateTime64(3)` parameter (decimal seconds), clamped to the type's
/// range (1900–2299) so far-off but valid datetimes still compare correctly.
pub(crate) fn db_time(ms: i64) -> String {
    const MIN: i64 = -2_208_988_800_000; // 1900-01-01T00:00:00Z
    const MAX: i64 = 10_413_791_999_999; // 2299-12-31T23:59:59.999Z
    let ms = ms.clamp(MIN, MAX);
    let sign = if ms < 0 { "-" } else { "" };
    format!(
        "{sign}{}.{:03}",
        ms.unsigned_abs() / 1000,
        ms.unsigned_abs() % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_db_time_is_decimal_seconds_within_range() {
        assert_eq!(db_time(1_500), "1.500");
        assert_eq!(db_time(-1_500), "-1.500");
        assert_eq!(db_time(i64::MAX), "10413791999.999");
    }

    #[test]
    fn test_preview_collapses_and_truncates() {
        assert_eq!(preview("  a\n\n b  ", 10), ("a b".into(), false));
        let (p, cut) = preview("hello wonderful world", 12);
        assert!(cut);
        assert_eq!(p, "hello wonder…");
        assert_eq!(preview("数据库迁移失败", 3), ("数据库…".into(), true));
    }

    #[test]
    fn test_timestamps_round_trip() {
        assert_eq!(format_ts(1_777_488_151_125), "2026-04-29T18:42:31.125Z");
        assert_eq!(format_ts(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339_ms("2026-04-29T18:42:31.125Z"),
            Some(1_777_488_151_125)
        );
        assert_eq!(
            rfc3339_ms("2026-04-29T14:42:31.125-04:00"),
            Some(1_777_488_151_125)
        );
        assert_eq!(rfc3339_ms("nope"), None);
    }

    #[test]
    fn test_char_boundaries() {
        assert_eq!(floor_char_boundary("é", 1), 0);
        assert_eq!(floor_char_boundary("abc", 10), 3);
    }
}
