//! `search_sessions` as compact text: every hit's essentials, its snippet and the IDs to open.

use std::fmt::Write as _;

use super::wire::{SearchData, SearchRequest};

pub(super) fn text(request: &SearchRequest, data: &SearchData) -> String {
    let mut out = String::new();
    let scope = request
        .within_id
        .as_deref()
        .map(|id| format!(" within {id}"))
        .unwrap_or_default();
    let _ = write!(
        out,
        "{} hit(s) for {:?}{scope}",
        data.result_count, request.query
    );
    if data.truncated {
        out.push_str(" (more matches exist: raise n_hits or narrow with within_id / event_types)");
    }
    out.push('\n');
    for hit in &data.results {
        let _ = writeln!(
            out,
            "{}. [{:.2}] {} · {} · {:?} ({}{}) · turn {}{}",
            hit.rank,
            hit.score,
            hit.event.event_type,
            hit.event.timestamp,
            hit.session.title,
            hit.session.source,
            hit.session
                .project
                .as_ref()
                .map(|p| format!(", project {}", p.name))
                .unwrap_or_default(),
            hit.turn.ordinal,
            if hit.turn.completed {
                ", completed"
            } else {
                ""
            },
        );
        let _ = writeln!(out, "   {}", hit.snippet.text);
        let _ = writeln!(
            out,
            "   open: {} | {} | {}",
            hit.open.event_id, hit.open.turn_id, hit.open.session_id
        );
    }
    out
}
