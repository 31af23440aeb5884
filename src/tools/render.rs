//! The compact text of `content[0].text`, for agents that read text rather than
//! `structuredContent`: the essentials and the IDs to open next.

use std::fmt::Write as _;

use super::envelope::ErrorBody;
use super::list::{ListData, ListRequest};
use super::open::OpenData;
use super::search::{SearchData, SearchRequest};

pub fn search(request: &SearchRequest, data: &SearchData) -> String {
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
            "{}. [{:.2}] {} · {} · {:?} ({}) · turn {}{}",
            hit.rank,
            hit.score,
            hit.event.event_type,
            hit.event.timestamp,
            hit.session.title,
            hit.session.source,
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

pub fn list(request: &ListRequest, data: &ListData) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} session(s) from {} to {} ({})",
        data.result_count, request.start_datetime, request.end_datetime, request.sort
    );
    for item in &data.sessions {
        let s = &item.session;
        let _ = writeln!(
            out,
            "{}. {} {:?} · {} · {} · {} turn(s), {} event(s){}",
            item.rank,
            s.updated_at,
            s.title,
            s.source,
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

pub fn open(data: &OpenData) -> String {
    let mut out = String::new();
    match data {
        OpenData::Session(view) => {
            let s = &view.session;
            let _ = writeln!(
                out,
                "session {} {:?} ({}, {}{}) {} → {}, {} turn(s), {} event(s)",
                s.id,
                s.title,
                s.source,
                s.mode,
                if s.completed { ", completed" } else { "" },
                s.started_at,
                s.updated_at,
                s.turn_count,
                s.event_count
            );
            for turn in &view.turns {
                let _ = write!(
                    out,
                    "turn {} {}{}",
                    turn.ordinal,
                    turn.id,
                    if turn.completed {
                        " (completed)"
                    } else {
                        " (open)"
                    }
                );
                if let Some(user) = &turn.user_input {
                    let _ = write!(out, "\n   user: {}", user.text);
                }
                if let Some(answer) = &turn.final_response {
                    let _ = write!(out, "\n   final: {}", answer.text);
                }
                if !turn.tools_called.is_empty() {
                    let _ = write!(out, "\n   tools: {}", turn.tools_called.join(", "));
                }
                out.push('\n');
            }
            traversal(
                &mut out,
                &[
                    ("previous session", &view.traversal.previous_session_id),
                    ("next session", &view.traversal.next_session_id),
                ],
            );
        }
        OpenData::Turn(view) => {
            let t = &view.turn;
            let _ = writeln!(
                out,
                "turn {} {} of {} {:?}{}",
                t.ordinal,
                t.id,
                t.session_id,
                view.session.title,
                if t.completed {
                    " (completed)"
                } else {
                    " (no terminal event yet)"
                }
            );
            if let Some(user) = &view.summary.user_input {
                let _ = writeln!(out, "user: {}", user.text);
            }
            if let Some(answer) = &view.summary.final_response {
                let _ = writeln!(out, "final: {}", answer.text);
            }
            for event in &view.events {
                let tool = event
                    .tool_name
                    .as_deref()
                    .map(|n| format!(" {n}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{}. {}{tool}{} {}: {}",
                    event.ordinal,
                    event.event_type,
                    if event.terminal { " (terminal)" } else { "" },
                    event.id,
                    event.summary
                );
            }
            traversal(
                &mut out,
                &[
                    ("previous turn", &view.traversal.previous_turn_id),
                    ("next turn", &view.traversal.next_turn_id),
                ],
            );
        }
        OpenData::Event(view) => {
            let e = &view.event;
            let tool = e
                .tool_name
                .as_deref()
                .map(|n| format!(", {n}"))
                .unwrap_or_default();
            let exit = match view.content.exit_code {
                Some(Some(code)) => format!(", exit {code}"),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "event {} ({}{tool}{exit}{}) {} · turn {} of {} {:?}",
                e.id,
                e.event_type,
                if e.terminal { ", terminal" } else { "" },
                e.timestamp,
                view.turn.ordinal,
                view.session.id,
                view.session.title
            );
            if let Some(arguments) = &view.content.arguments {
                let _ = writeln!(out, "arguments: {arguments}");
            }
            out.push_str(&view.content.text);
            out.push('\n');
            traversal(
                &mut out,
                &[
                    ("turn", &Some(view.traversal.turn_id.clone())),
                    ("previous event", &view.traversal.previous_event_id),
                    ("next event", &view.traversal.next_event_id),
                    ("previous turn", &view.traversal.previous_turn_id),
                    ("next turn", &view.traversal.next_turn_id),
                ],
            );
        }
    }
    out
}

pub fn error(tool: &str, body: &ErrorBody) -> String {
    let field = body
        .details
        .get("field")
        .and_then(|f| f.as_str())
        .map(|f| format!(" (field {f})"))
        .unwrap_or_default();
    format!(
        "{tool} failed: {}: {}{field}",
        body.code.as_str(),
        body.message
    )
}

fn traversal(out: &mut String, links: &[(&str, &Option<String>)]) {
    let present: Vec<String> = links
        .iter()
        .filter_map(|(label, id)| id.as_ref().map(|id| format!("{label}: {id}")))
        .collect();
    if !present.is_empty() {
        let _ = writeln!(out, "{}", present.join(" | "));
    }
}
