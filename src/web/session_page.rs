//! A session's page: its metadata, then its turns twenty at a time, each turn's events in
//! order — the person's prompt and the answer in full (up to `open`'s limit), reasoning and
//! tool calls and outputs collapsed — with an anchor per turn and per event. Every read is an
//! `open` call: the session's for its turns, each turn's for its events, and an event's where
//! a prompt or answer is longer than its summary. A turn's page shows one turn the same way.

use std::collections::HashMap;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde_json::{Map, json};

use super::Web;
use super::layout::{self, Nav};
use super::person::Person;
use crate::tools::Answer;
use crate::tools::envelope::ErrorBody;
use crate::tools::open::Open;
use crate::tools::open::wire::{Content, EventSummary, OpenData, SessionView, TurnView};
use crate::vocab::EventType;

/// Turns per page.
const TURNS_PER_PAGE: u64 = 20;
/// `open` calls a page makes at once.
const CONCURRENT_OPENS: usize = 4;

/// An `open` call, from `offset` (`offset` or `content_offset`) when given.
pub(super) async fn open(
    web: &Web,
    person: &Person,
    id: &str,
    offset: Option<(&str, u64)>,
) -> Result<OpenData, ErrorBody> {
    let mut args = Map::new();
    args.insert("id".into(), json!(id));
    if let Some((key, offset)) = offset {
        args.insert(key.into(), json!(offset));
    }
    web.tools
        .run::<Open>(args, &person.caller)
        .await
        .map(|answer: Answer<Open>| answer.data)
}

/// `open` of each of `ids`, a few at a time, in order.
async fn open_all(web: &Web, person: &Person, ids: &[String]) -> Vec<Result<OpenData, ErrorBody>> {
    let mut opened = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(CONCURRENT_OPENS) {
        let mut calls = Vec::with_capacity(chunk.len());
        for id in chunk {
            calls.push(open(web, person, id, None));
        }
        opened.extend(futures_util::future::join_all(calls).await);
    }
    opened
}

/// The full texts of the events on a page whose prompt or answer was cut in its summary.
async fn full_texts(web: &Web, person: &Person, turns: &[TurnView]) -> HashMap<String, Content> {
    let wanted: Vec<String> = turns
        .iter()
        .flat_map(|t| &t.events)
        .filter(|e| e.truncated && is_conversation(e.event_type))
        .map(|e| e.id.clone())
        .collect();
    let opened = open_all(web, person, &wanted).await;
    wanted
        .into_iter()
        .zip(opened)
        .filter_map(|(id, opened)| match opened {
            Ok(OpenData::Event(view)) => Some((id, view.content)),
            _ => None,
        })
        .collect()
}

fn is_conversation(kind: EventType) -> bool {
    matches!(kind, EventType::UserInput | EventType::AssistantResponse)
}

/// `GET /ui/session/{id}?page=N` or `?turn=N` (the page holding turn N), `&event=ID` (opened
/// and marked).
pub(super) async fn get(
    State(web): State<Web>,
    person: Person,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    let pairs = layout::pairs(raw.as_deref());
    let page = match layout::value(&pairs, "turn").parse::<u64>() {
        Ok(turn) if turn > 0 => (turn - 1) / TURNS_PER_PAGE,
        _ => layout::value(&pairs, "page")
            .parse::<u64>()
            .unwrap_or(1)
            .saturating_sub(1),
    };
    let target = layout::value(&pairs, "event").to_owned();
    let view = match open(&web, &person, &id, Some(("offset", page * TURNS_PER_PAGE))).await {
        Ok(OpenData::Session(view)) => view,
        Ok(_) => {
            return layout::error_page(
                StatusCode::NOT_FOUND,
                person.signed_in(),
                "that ID is not a session's",
            );
        }
        Err(error) => return layout::tool_error(person.signed_in(), &error),
    };
    let shown: Vec<_> = view
        .turns
        .iter()
        .take(TURNS_PER_PAGE as usize)
        .map(|t| t.id.clone())
        .collect();
    let opened = open_all(&web, &person, &shown).await;
    let mut turns = Vec::new();
    let mut failures = Vec::new();
    for (turn, opened) in shown.iter().zip(opened) {
        match opened {
            Ok(OpenData::Turn(view)) => turns.push(*view),
            Ok(_) => {}
            Err(error) => failures.push((turn.clone(), error.message)),
        }
    }
    let texts = full_texts(&web, &person, &turns).await;
    let body = session_body(&view, page, &turns, &failures, &texts, &target);
    let title = if view.session.title.is_empty() {
        "Session"
    } else {
        &view.session.title
    };
    layout::page(title, person.signed_in(), Nav::Sessions, body).into_response()
}

/// `GET /ui/turn/{id}?offset=N`: one turn's events, from the N-th (for turns of more events
/// than one answer lists).
pub(super) async fn turn(
    State(web): State<Web>,
    person: Person,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    let pairs = layout::pairs(raw.as_deref());
    let offset = layout::value(&pairs, "offset").parse::<u64>().unwrap_or(0);
    let view = match open(&web, &person, &id, Some(("offset", offset))).await {
        Ok(OpenData::Turn(view)) => *view,
        Ok(_) => {
            return layout::error_page(
                StatusCode::NOT_FOUND,
                person.signed_in(),
                "that ID is not a turn's",
            );
        }
        Err(error) => return layout::tool_error(person.signed_in(), &error),
    };
    let texts = full_texts(&web, &person, std::slice::from_ref(&view)).await;
    let body = html! {
        p.crumbs {
            a href=(format!("/ui/session/{}?turn={}#turn-{}", view.session.id, view.turn.ordinal, view.turn.ordinal)) {
                (view.session.title)
            }
        }
        h1 { "Turn " (view.turn.ordinal) @if offset > 0 { ", from event " (offset + 1) } }
        (turn_section(&view, &texts, ""))
    };
    layout::page(
        &format!("Turn {}", view.turn.ordinal),
        person.signed_in(),
        Nav::Sessions,
        body,
    )
    .into_response()
}

fn session_body(
    view: &SessionView,
    page: u64,
    turns: &[TurnView],
    failures: &[(String, String)],
    texts: &HashMap<String, Content>,
    target: &str,
) -> Markup {
    let s = &view.session;
    let pages = u64::from(s.turn_count).div_ceil(TURNS_PER_PAGE).max(1);
    let first = page * TURNS_PER_PAGE + 1;
    let mut models: Vec<&str> = turns
        .iter()
        .flat_map(|t| &t.events)
        .filter_map(|e| e.model.as_deref())
        .collect();
    models.sort_unstable();
    models.dedup();
    let page_link = |p: u64| format!("/ui/session/{}?page={}", s.id, p + 1);
    html! {
        h1 { (if s.title.is_empty() { "(untitled session)" } else { &s.title }) }
        dl.facts {
            dt { "Harness" } dd { (s.harness) }
            dt { "Source" } dd { (s.source) }
            dt { "Project" } dd {
                @match &s.project {
                    Some(project) => { (project.name) " " span.path { "(" (project.path) ")" } }
                    None => { "unknown" }
                }
            }
            dt { "Model" } dd { @if models.is_empty() { "not recorded" } @else { (models.join(", ")) } }
            dt { "Started" } dd { (layout::time(&s.started_at)) }
            dt { "Updated" } dd { (layout::time(&s.updated_at)) @if !s.completed { " (in progress)" } }
            dt { "Size" } dd { (s.turn_count) " turns, " (s.event_count) " events" }
            @if let Some(parent) = &view.traversal.parent_session_id {
                dt { "Sub-agent of" } dd { a href=(format!("/ui/session/{parent}")) { "the parent session" } }
            }
            @if !view.traversal.subagent_session_ids.is_empty() {
                dt { "Sub-agents" }
                dd.subagents {
                    @for (i, child) in view.traversal.subagent_session_ids.iter().enumerate() {
                        a href=(format!("/ui/session/{child}")) { "sub-agent " (i + 1) } " "
                    }
                }
            }
            dt { "ID" } dd { code { (s.id) } }
        }
        nav.pager aria-label="Sessions around this one" {
            @if let Some(previous) = &view.traversal.previous_session_id {
                a rel="prev" href=(format!("/ui/session/{previous}")) { "← Previous session" }
            }
            @if let Some(next) = &view.traversal.next_session_id {
                a rel="next" href=(format!("/ui/session/{next}")) { "Next session →" }
            }
        }
        (turn_pager(page, pages, first, turns.len() as u64, s.turn_count, &page_link, &s.id))
        @for (turn, message) in failures {
            p.error role="alert" { "Turn " code { (turn) } " could not be opened: " (message) }
        }
        @for turn in turns {
            (turn_section(turn, texts, target))
        }
        @if turns.len() > 3 {
            (turn_pager(page, pages, first, turns.len() as u64, s.turn_count, &page_link, &s.id))
        }
    }
}

fn turn_pager(
    page: u64,
    pages: u64,
    first: u64,
    shown: u64,
    total: u32,
    page_link: &dyn Fn(u64) -> String,
    session: &str,
) -> Markup {
    html! {
        nav.pager aria-label="Pages of turns" {
            @if page > 0 {
                a href=(page_link(page - 1)) { "← Earlier turns" }
            }
            span {
                @if shown == 0 { "No turns" } @else { "Turns " (first) "–" (first + shown - 1) " of " (total) }
            }
            @if page + 1 < pages {
                a href=(page_link(page + 1)) { "Later turns →" }
            }
            @if pages > 1 {
                form.jump method="get" action=(format!("/ui/session/{session}")) {
                    label for="jump-turn" { "Turn" }
                    input #jump-turn type="number" name="turn" min="1" max=(total) inputmode="numeric";
                    button type="submit" { "Go" }
                }
            }
        }
    }
}

fn turn_section(turn: &TurnView, texts: &HashMap<String, Content>, target: &str) -> Markup {
    let ordinal = turn.turn.ordinal;
    html! {
        section.turn id=(format!("turn-{ordinal}")) aria-labelledby=(format!("turn-{ordinal}-h")) {
            h2 id=(format!("turn-{ordinal}-h")) {
                a.anchor href=(format!("#turn-{ordinal}")) { "Turn " (ordinal) }
                " " span.meta { (layout::time(&turn.turn.started_at)) " · " (turn.turn.event_count) " events"
                    @if !turn.turn.completed { " · in progress" } }
            }
            @for event in &turn.events {
                (event_block(event, texts.get(&event.id), event.id == target))
            }
            @if let Some(next) = turn.next_offset {
                p { a href=(format!("/ui/turn/{}?offset={next}", turn.turn.id)) { "More events of this turn →" } }
            }
        }
    }
}

fn event_block(event: &EventSummary, full: Option<&Content>, target: bool) -> Markup {
    let id = event.id.as_str();
    let more = format!("/ui/event/{id}");
    let (text, cut) = match full {
        Some(content) => (content.text.as_str(), content.truncated),
        None => (event.summary.as_str(), event.truncated),
    };
    let tool = event.tool_name.as_deref().unwrap_or("tool");
    html! {
        @match event.event_type {
            EventType::UserInput => {
                div.event.prompt.target[target] id=(id) {
                    h3 { a.anchor href=(format!("#{id}")) { "Prompt" } " " (layout::time(&event.timestamp)) }
                    pre.text { (text) }
                    @if cut { a href=(more) { "Show more" } }
                }
            }
            EventType::AssistantResponse => {
                div.event.answer.target[target] id=(id) {
                    h3 {
                        a.anchor href=(format!("#{id}")) { "Answer" }
                        @if let Some(model) = &event.model { " " span.meta { (model) } }
                    }
                    pre.text { (text) }
                    @if cut { a href=(more) { "Show more" } }
                }
            }
            EventType::ToolCall | EventType::ToolResponse | EventType::Reasoning => {
                details.event.collapsed.target[target] id=(id) open[target] {
                    summary {
                        @match event.event_type {
                            EventType::ToolCall => { "Tool call · " (tool) }
                            EventType::ToolResponse => { "Output · " (tool) }
                            _ => { "Reasoning" }
                        }
                    }
                    pre.text { (text) }
                    p.links {
                        @if cut { a href=(more) { "Show more" } " · " }
                        a.anchor href=(format!("#{id}")) { "Link here" }
                    }
                }
            }
            _ => {
                p.event.minor.target[target] id=(id) {
                    span.kind { (event.event_type.as_str()) } " " (text)
                }
            }
        }
    }
}
