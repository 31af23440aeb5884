//! An event's page: its whole content as `open` returns it (a part at a time for a text longer
//! than `open`'s limit), the tool call's arguments and exit status, and the log record.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;

use super::Web;
use super::layout::{self, Nav};
use super::person::Person;
use super::session_page::open;
use crate::tools::open::wire::OpenData;

/// `GET /ui/event/{id}?offset=N` (the N-th character of its text on).
pub(super) async fn get(
    State(web): State<Web>,
    person: Person,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    let pairs = layout::pairs(raw.as_deref());
    let offset = layout::value(&pairs, "offset").parse::<u64>().unwrap_or(0);
    let view = match open(&web, &person.caller, &id, Some(("content_offset", offset))).await {
        Ok(OpenData::Event(view)) => view,
        Ok(_) => {
            return layout::error_page(
                StatusCode::NOT_FOUND,
                person.signed_in(),
                "that ID is not an event's",
            );
        }
        Err(error) => return layout::tool_error(person.signed_in(), &error),
    };
    let e = &view.event;
    let c = &view.content;
    let kind = e.event_type.as_str().replace('_', " ");
    let in_session = format!(
        "/ui/session/{}?turn={}&event={}#{}",
        view.session.id, view.turn.ordinal, e.id, e.id
    );
    let pretty = |value: &serde_json::Value| {
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    };
    let body = html! {
        p.crumbs {
            a href=(format!("/ui/session/{}", view.session.id)) {
                (layout::title_of(&view.session.title))
            }
            " › "
            a href=(in_session) { "turn " (view.turn.ordinal) }
        }
        h1 { (kind) @if let Some(tool) = &e.tool_name { " · " (tool) } }
        dl.facts {
            dt { "Time" } dd { (layout::time(&e.timestamp)) }
            @if let Some(model) = &e.model { dt { "Model" } dd { (model) } }
            @if let Some(Some(code)) = c.exit_code { dt { "Exit status" } dd { (code) } }
            @if let Some(true) = c.is_error { dt { "Outcome" } dd { "error" } }
            dt { "ID" } dd { code { (e.id) } }
        }
        @if let Some(arguments) = &c.arguments {
            h2 { "Arguments" }
            pre.text { (pretty(arguments)) }
        }
        h2 { "Content" @if offset > 0 { ", from character " (offset) } }
        pre.text { (c.text) }
        nav.pager aria-label="Parts and neighbours" {
            @if let Some(previous) = &view.traversal.previous_event_id {
                a rel="prev" href=(format!("/ui/event/{previous}")) { "← Previous event" }
            }
            @if let Some(next) = c.next_content_offset {
                a href=(format!("/ui/event/{}?offset={next}", e.id)) { "Show more (the text goes on) →" }
            }
            @if let Some(next) = &view.traversal.next_event_id {
                a rel="next" href=(format!("/ui/event/{next}")) { "Next event →" }
            }
        }
        details.raw {
            summary { "Log record" }
            pre.text { (pretty(&c.raw)) }
        }
    };
    layout::page(&kind, person.signed_in(), Nav::Sessions, body).into_response()
}
