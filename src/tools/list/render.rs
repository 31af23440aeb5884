//! `list_sessions` as compact text: one line per session and the cursor of the next page.

use std::fmt::Write as _;

use super::wire::{ListData, ListRequest};

pub(super) fn text(request: &ListRequest, data: &ListData) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} session(s) from {} to {} ({})",
        data.result_count,
        request.start_datetime,
        request.end_datetime,
        request.sort.as_str()
    );
    for item in &data.sessions {
        let s = &item.session;
        let _ = writeln!(
            out,
            "{}. {} {:?} · {}{} · {} · {} turn(s), {} event(s){}",
            item.rank,
            s.updated_at,
            s.title,
            s.source,
            s.project
                .as_ref()
                .map(|p| format!(" · project {}", p.name))
                .unwrap_or_default(),
            s.mode,
            s.turn_count,
            s.event_count,
            if s.completed { ", completed" } else { "" },
        );
        let _ = writeln!(out, "   open: {}", item.open.session_id);
    }
    if let Some(cursor) = &data.next_cursor {
        let _ = writeln!(out, "more: pass cursor {cursor:?} with the same request");
    }
    out
}
