//! The sessions page: sessions of a time window, newest first and grouped by day, with the
//! filters `list_sessions` takes and its cursor for the next page.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde_json::{Map, Value, json};

use super::Web;
use super::layout::{self, Nav};
use super::person::Person;
use crate::tools::list::ListSessions;
use crate::tools::list::wire::ListedSession;

/// Sessions per page (the most `list_sessions` gives).
const PER_PAGE: u32 = 50;
/// The window's start when none is asked: before any agent wrote a log.
const EARLIEST: &str = "2000-01-01T00:00:00Z";

struct Asked {
    from: String,
    to: String,
    harness: String,
    source: String,
    project: String,
    cursor: String,
}

impl Asked {
    fn parse(raw: Option<&str>) -> Self {
        let pairs = layout::pairs(raw);
        let get = |key: &str| layout::value(&pairs, key).to_owned();
        Self {
            from: get("from"),
            to: get("to"),
            harness: get("harness"),
            source: get("source"),
            project: get("project"),
            cursor: get("cursor"),
        }
    }

    /// The tool's arguments, or what is wrong with the dates.
    fn arguments(&self) -> Result<Map<String, Value>, String> {
        let (start, end) = layout::day_window(&self.from, &self.to)?;
        // Without an end, tomorrow's midnight: no clock skew hides today.
        let end = match end {
            Some(end) => end,
            None => {
                let tomorrow = time::OffsetDateTime::now_utc()
                    .date()
                    .next_day()
                    .ok_or_else(|| "the calendar ends here".to_owned())?;
                format!("{tomorrow}T00:00:00Z")
            }
        };
        let start = start.unwrap_or_else(|| EARLIEST.to_owned());
        let mut args = Map::new();
        args.insert("start_datetime".into(), json!(start));
        args.insert("end_datetime".into(), json!(end));
        args.insert("limit".into(), json!(PER_PAGE));
        for (key, value) in [
            ("harness", &self.harness),
            ("source", &self.source),
            ("project", &self.project),
            ("cursor", &self.cursor),
        ] {
            if !value.is_empty() {
                args.insert(key.into(), json!(value));
            }
        }
        Ok(args)
    }

    /// The link to the page the cursor `cursor` starts (none: the first).
    fn page_link(&self, cursor: &str) -> String {
        layout::link(
            "/ui/sessions",
            &[
                ("from", &self.from),
                ("to", &self.to),
                ("harness", &self.harness),
                ("source", &self.source),
                ("project", &self.project),
                ("cursor", cursor),
            ],
        )
    }
}

/// `GET /ui/sessions`
pub(super) async fn get(
    State(web): State<Web>,
    person: Person,
    RawQuery(raw): RawQuery,
) -> Response {
    let asked = Asked::parse(raw.as_deref());
    let answer = match asked.arguments() {
        Ok(args) => web
            .tools
            .run::<ListSessions>(args, &person.caller)
            .await
            .map_err(|e| (layout::status_of(e.code), e.message)),
        Err(message) => Err((StatusCode::BAD_REQUEST, message)),
    };
    let data = match answer {
        Ok(answer) => answer.data,
        Err((status, message)) => {
            let body = html! {
                h1 { "Sessions" }
                (form(&asked))
                p.error role="alert" { (message) }
            };
            return (
                status,
                layout::page("Sessions", person.signed_in(), Nav::Sessions, body),
            )
                .into_response();
        }
    };
    let days = by_day(&data.sessions);
    let body = html! {
        h1 { "Sessions" }
        (form(&asked))
        p.count role="status" {
            (data.result_count) " sessions on this page"
            @if data.truncated { ", more on the next" }
        }
        @for (day, sessions) in &days {
            section.day aria-labelledby=(format!("day-{day}")) {
                h2 #(format!("day-{day}")) { (day) " " span.count { "(" (sessions.len()) ")" } }
                ul.sessions {
                    @for listed in sessions {
                        (session_row(listed))
                    }
                }
            }
        }
        nav.pager aria-label="Pages of sessions" {
            @if !asked.cursor.is_empty() {
                a href=(asked.page_link("")) { "← Newest" }
            }
            @if let Some(next) = &data.next_cursor {
                a rel="next" href=(asked.page_link(next)) { "Older →" }
            }
        }
    };
    layout::page("Sessions", person.signed_in(), Nav::Sessions, body).into_response()
}

fn form(asked: &Asked) -> Markup {
    html! {
        form.filters-bar method="get" action="/ui/sessions" {
            div.field {
                label for="from" { "From" }
                input #from type="date" name="from" value=(asked.from);
            }
            div.field {
                label for="to" { "To" }
                input #to type="date" name="to" value=(asked.to);
            }
            (layout::scope_fields(&asked.harness, &asked.source, &asked.project))
            button type="submit" { "Show" }
        }
    }
}

/// Sessions by the day they were last updated (the listing's order), newest first.
fn by_day(sessions: &[ListedSession]) -> Vec<(String, Vec<&ListedSession>)> {
    let mut days: Vec<(String, Vec<&ListedSession>)> = Vec::new();
    for listed in sessions {
        let day = listed
            .session
            .updated_at
            .get(..10)
            .unwrap_or(&listed.session.updated_at)
            .to_owned();
        match days.last_mut() {
            Some((last, group)) if *last == day => group.push(listed),
            _ => days.push((day, vec![listed])),
        }
    }
    days
}

fn session_row(listed: &ListedSession) -> Markup {
    let s = &listed.session;
    html! {
        li.session {
            a href=(format!("/ui/session/{}", s.id)) {
                (layout::title_of(&s.title))
            }
            p.meta {
                (s.harness) " · source " (s.source)
                @if let Some(project) = &s.project {
                    " · " span title=(project.path) { "project " (project.name) }
                }
                " · " (s.turn_count) " turns, " (s.event_count) " events · updated "
                (layout::time(&s.updated_at))
                @if !s.completed { " · " span.badge { "in progress" } }
            }
        }
    }
}
