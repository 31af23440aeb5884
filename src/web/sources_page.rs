//! The sources page: each machine or person whose logs the store holds, with its last write,
//! its sessions and events, and how long it has been quiet; the sources `GET
//! /ingest/v1/sources` shows the same credential (those it may read, and its own).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use maud::html;

use super::Web;
use super::layout::{self, Nav};
use super::person::Person;
use crate::ingest::sources;

/// A source that has not written for longer than this is marked quiet.
const QUIET_AFTER_SECS: u64 = 24 * 3600;

/// `GET /ui/sources`
pub(super) async fn get(State(web): State<Web>, person: Person) -> Response {
    let visible = person.caller.visible_sources();
    let listed = match sources::list(&web.db, &visible).await {
        Ok(listed) => listed,
        Err(error) => {
            tracing::warn!(%error, "the sources page could not read the store");
            return layout::error_page(
                axum::http::StatusCode::BAD_GATEWAY,
                person.signed_in(),
                "the store could not be read; try again shortly",
            );
        }
    };
    let body = html! {
        h1 { "Sources" }
        p { "Each machine or person whose logs this server holds, and how recently it wrote." }
        @if listed.is_empty() {
            p role="status" { "No sources yet." }
        } @else {
            div.table-wrap {
                table {
                    caption.visually-hidden { "Sources and their freshness" }
                    thead {
                        tr {
                            th scope="col" { "Source" }
                            th scope="col" { "Arrives by" }
                            th scope="col" { "Sessions" }
                            th scope="col" { "Events" }
                            th scope="col" { "Logs" }
                            th scope="col" { "Newest event" }
                            th scope="col" { "Last write" }
                            th scope="col" { "Quiet for" }
                        }
                    }
                    tbody {
                        @for s in &listed {
                            @let quiet = s.lag_seconds.is_some_and(|lag| lag > QUIET_AFTER_SECS);
                            tr.quiet[quiet] {
                                th scope="row" {
                                    a href=(layout::link("/ui/sessions", &[("source", &s.source)])) { (s.source) }
                                }
                                td { (if s.origin.is_empty() { "-" } else { &s.origin }) }
                                td.num { (s.sessions) }
                                td.num { (s.events) }
                                td.num { (s.logs) }
                                td { @match &s.newest_event_at { Some(t) => (layout::time(t)), None => "-" } }
                                td { @match &s.last_write_at { Some(t) => (layout::time(t)), None => "-" } }
                                td {
                                    @match s.lag_seconds { Some(lag) => (sources::age(lag)), None => "-" }
                                    @if quiet { " " span.badge { "quiet" } }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    layout::page("Sources", person.signed_in(), Nav::Sources, body).into_response()
}
