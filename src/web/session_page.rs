//! A session's page: its metadata, then its turns twenty at a time, each turn's events in
//! order — the person's prompt and the answer in full (up to `open`'s limit), reasoning and
//! tool calls and outputs collapsed — with an anchor per turn and per event. Every read is an
//! `open` call: the session's for its turns, each turn's for its events, and an event's where
//! a prompt or answer is longer than its summary. A turn's page shows one turn the same way.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde_json::{Map, json};

use super::Web;
use super::layout::{self, Nav};
use super::person::Person;
use crate::auth::Caller;
use crate::tools::Answer;
use crate::tools::envelope::ErrorBody;
use crate::tools::open::Open;
use crate::tools::open::wire::{Content, EventSummary, OpenData, SessionView, TurnView};
use crate::vocab::EventType;

/// Turns per page.
const TURNS_PER_PAGE: u64 = 20;
/// `open` calls a page makes at once.
const CONCURRENT_OPENS: usize = 4;
/// Events of one turn a page shows; the rest are a link away. What a page reads and holds is
/// bounded whatever a log holds.
const EVENTS_PER_TURN: usize = 100;
/// Prompts and answers longer than their summary that one batch of turns opens whole; others
/// show their summary and a link.
const FULL_TEXTS_PER_BATCH: usize = 8;
/// Bytes of a prompt or answer shown in the page; the event's page has the rest.
const INLINE_BYTES: usize = 20_000;

/// An `open` call, from `offset` (`offset` or `content_offset`) when given.
pub(super) async fn open(
    web: &Web,
    caller: &Caller,
    id: &str,
    offset: Option<(&str, u64)>,
) -> Result<OpenData, ErrorBody> {
    let mut args = Map::new();
    args.insert("id".into(), json!(id));
    if let Some((key, offset)) = offset {
        args.insert(key.into(), json!(offset));
    }
    web.tools
        .run::<Open>(args, caller)
        .await
        .map(|answer: Answer<Open>| answer.data)
}

/// `open` of each of `ids`, a few at a time, in order.
async fn open_all(web: &Web, caller: &Caller, ids: &[String]) -> Vec<Result<OpenData, ErrorBody>> {
    let mut opened = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(CONCURRENT_OPENS) {
        let mut calls = Vec::with_capacity(chunk.len());
        for id in chunk {
            calls.push(open(web, caller, id, None));
        }
        opened.extend(futures_util::future::join_all(calls).await);
    }
    opened
}

/// The full texts of the events on a page whose prompt or answer was cut in its summary.
async fn full_texts(web: &Web, caller: &Caller, turns: &[TurnView]) -> HashMap<String, Content> {
    let wanted: Vec<String> = turns
        .iter()
        .flat_map(|t| t.events.iter().take(EVENTS_PER_TURN))
        .filter(|e| e.truncated && is_conversation(e.event_type))
        .map(|e| e.id.clone())
        .take(FULL_TEXTS_PER_BATCH)
        .collect();
    let opened = open_all(web, caller, &wanted).await;
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
    }
    // `open`'s offset is a 32-bit count: no session has more pages than that.
    .min(u64::from(u32::MAX) / TURNS_PER_PAGE);
    let target = layout::value(&pairs, "event").to_owned();
    let view = match open(
        &web,
        &person.caller,
        &id,
        Some(("offset", page * TURNS_PER_PAGE)),
    )
    .await
    {
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
    let (head, tail) = layout::page_parts(
        layout::title_of(&view.session.title),
        person.signed_in(),
        Nav::Sessions,
    );
    // The page is sent as it is made: the session's part at once, then its turns a few at a
    // time as their `open`s answer. A person who leaves stops the rest.
    let (sender, receiver) = tokio::sync::mpsc::channel::<String>(2);
    let caller = person.caller.clone();
    tokio::spawn(async move {
        let shown: Vec<String> = view
            .turns
            .iter()
            .take(TURNS_PER_PAGE as usize)
            .map(|t| t.id.clone())
            .collect();
        let pager = turn_pager(&view, page, shown.len() as u64);
        let first = head + &session_intro(&view).into_string() + &pager.clone().into_string();
        if sender.send(first).await.is_err() {
            return;
        }
        for chunk in shown.chunks(CONCURRENT_OPENS) {
            let mut part = String::new();
            let mut turns = Vec::new();
            for (turn, opened) in chunk.iter().zip(open_all(&web, &caller, chunk).await) {
                match opened {
                    Ok(OpenData::Turn(view)) => turns.push(*view),
                    Ok(_) => {}
                    Err(error) => part.push_str(
                        &html! {
                            p.error role="alert" { "Turn " code { (turn) } " could not be opened: " (error.message) }
                        }
                        .into_string(),
                    ),
                }
            }
            let texts = full_texts(&web, &caller, &turns).await;
            for turn in &turns {
                part.push_str(&turn_section(turn, 0, &texts, &target).into_string());
            }
            if sender.send(part).await.is_err() {
                return;
            }
        }
        let end = if shown.len() > 3 {
            pager.into_string()
        } else {
            String::new()
        };
        let _ = sender.send(end + &tail).await;
    });
    let body = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let part = receiver.recv().await?;
        Some((Ok::<_, std::convert::Infallible>(part), receiver))
    });
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        Body::from_stream(body),
    )
        .into_response()
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
    let view = match open(&web, &person.caller, &id, Some(("offset", offset))).await {
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
    let texts = full_texts(&web, &person.caller, std::slice::from_ref(&view)).await;
    let body = html! {
        p.crumbs {
            a href=(format!("/ui/session/{}?turn={}#turn-{}", view.session.id, view.turn.ordinal, view.turn.ordinal)) {
                (layout::title_of(&view.session.title))
            }
        }
        h1 { "Turn " (view.turn.ordinal) @if offset > 0 { ", from event " (offset + 1) } }
        (turn_section(&view, offset, &texts, ""))
    };
    layout::page(
        &format!("Turn {}", view.turn.ordinal),
        person.signed_in(),
        Nav::Sessions,
        body,
    )
    .into_response()
}

/// The session's part of its page: what it is, and the sessions around it.
fn session_intro(view: &SessionView) -> Markup {
    let s = &view.session;
    html! {
        h1 { (layout::title_of(&s.title)) }
        dl.facts {
            dt { "Harness" } dd { (s.harness) }
            dt { "Source" } dd { (s.source) }
            dt { "Project" } dd {
                @match &s.project {
                    Some(project) => { (project.name) " " span.path { "(" (project.path) ")" } }
                    None => { "unknown" }
                }
            }
            dt { "Model" } dd { (s.model.as_deref().unwrap_or("not recorded")) }
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
    }
}

/// Where page `page` (of `shown` turns) stands among the session's pages of turns, with links
/// to the others and a form to go to a turn.
fn turn_pager(view: &SessionView, page: u64, shown: u64) -> Markup {
    let s = &view.session;
    let total = s.turn_count;
    let pages = u64::from(total).div_ceil(TURNS_PER_PAGE).max(1);
    let first = page * TURNS_PER_PAGE + 1;
    let page_link = |p: u64| format!("/ui/session/{}?page={}", s.id, p + 1);
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
                form.jump method="get" action=(format!("/ui/session/{}", s.id)) {
                    label for="jump-turn" { "Turn" }
                    input #jump-turn type="number" name="turn" min="1" max=(total) inputmode="numeric";
                    button type="submit" { "Go" }
                }
            }
        }
    }
}

/// A turn's events (the first [`EVENTS_PER_TURN`] of those `open` listed from event `offset`),
/// and a link to the rest.
fn turn_section(
    turn: &TurnView,
    offset: u64,
    texts: &HashMap<String, Content>,
    target: &str,
) -> Markup {
    let ordinal = turn.turn.ordinal;
    let rest = (turn.events.len() > EVENTS_PER_TURN)
        .then_some(offset + EVENTS_PER_TURN as u64)
        .or(turn.next_offset);
    html! {
        section.turn id=(format!("turn-{ordinal}")) aria-labelledby=(format!("turn-{ordinal}-h")) {
            h2 id=(format!("turn-{ordinal}-h")) {
                a.anchor href=(format!("#turn-{ordinal}")) { "Turn " (ordinal) }
                " " span.meta { (layout::time(&turn.turn.started_at)) " · " (turn.turn.event_count) " events"
                    @if !turn.turn.completed { " · in progress" } }
            }
            @for event in turn.events.iter().take(EVENTS_PER_TURN) {
                (event_block(event, texts.get(&event.id), event.id == target))
            }
            @if let Some(next) = rest {
                p { a href=(format!("/ui/turn/{}?offset={next}", turn.turn.id)) { "More events of this turn →" } }
            }
        }
    }
}

fn event_block(event: &EventSummary, full: Option<&Content>, target: bool) -> Markup {
    let id = event.id.as_str();
    let more = format!("/ui/event/{id}");
    let (text, cut) = match full {
        Some(content) => {
            let shown = crate::text::floor_char_boundary(&content.text, INLINE_BYTES);
            (
                &content.text[..shown],
                content.truncated || shown < content.text.len(),
            )
        }
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
