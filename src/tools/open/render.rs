//! `open` as compact text: the object's essentials, its parts and the traversal IDs.

use std::fmt::Write as _;

use super::wire::{EventView, OpenData, SessionView, TurnView};

pub(super) fn text(data: &OpenData) -> String {
    let mut out = String::new();
    match data {
        OpenData::Session(view) => session(&mut out, view),
        OpenData::Turn(view) => turn(&mut out, view),
        OpenData::Event(view) => event(&mut out, view),
    }
    out
}

fn session(out: &mut String, view: &SessionView) {
    let s = &view.session;
    let _ = writeln!(
        out,
        "session {} {:?} ({}{}, {}{}) {} → {}, {} turn(s), {} event(s)",
        s.id,
        s.title,
        s.source,
        s.project
            .as_ref()
            .map(|p| format!(", project {}", p.name))
            .unwrap_or_default(),
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
    more(out, "turns", view.next_offset);
    traversal(
        out,
        &[
            ("previous session", &view.traversal.previous_session_id),
            ("next session", &view.traversal.next_session_id),
            ("parent session", &view.traversal.parent_session_id),
        ],
    );
    if !view.traversal.subagent_session_ids.is_empty() {
        let _ = writeln!(
            out,
            "sub-agent sessions: {}",
            view.traversal.subagent_session_ids.join(", ")
        );
    }
}

fn turn(out: &mut String, view: &TurnView) {
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
    more(out, "events", view.next_offset);
    traversal(
        out,
        &[
            ("previous turn", &view.traversal.previous_turn_id),
            ("next turn", &view.traversal.next_turn_id),
        ],
    );
}

/// Where the rest of a long list is, when only a page of it was listed.
fn more(out: &mut String, what: &str, next_offset: Option<u64>) {
    if let Some(offset) = next_offset {
        let _ = writeln!(out, "more {what} follow: open with offset {offset}");
    }
}

fn event(out: &mut String, view: &EventView) {
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
        out,
        &[
            ("turn", &Some(view.traversal.turn_id.clone())),
            ("previous event", &view.traversal.previous_event_id),
            ("next event", &view.traversal.next_event_id),
            ("previous turn", &view.traversal.previous_turn_id),
            ("next turn", &view.traversal.next_turn_id),
        ],
    );
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
