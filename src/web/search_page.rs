//! The search page: a query and the filters `search_sessions` takes, its hits grouped by
//! session in score order with the query's words marked, ten to a page, each linking to its
//! place in the session.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde_json::{Map, Value, json};

use super::Web;
use super::layout::{self, Nav};
use super::person::Person;
use crate::tools::search::SearchSessions;
use crate::tools::search::wire::Hit;
use crate::vocab::EventType;

/// Hits per page.
const PER_PAGE: usize = 10;
/// Pages at most: `search_sessions` answers 50 hits at most.
const MAX_PAGES: usize = 5;

/// The form as asked.
struct Asked {
    query: String,
    types: Vec<String>,
    harness: String,
    source: String,
    project: String,
    from: String,
    to: String,
    page: usize,
}

impl Asked {
    fn parse(raw: Option<&str>) -> Self {
        let pairs = layout::pairs(raw);
        let page = layout::value(&pairs, "page")
            .parse()
            .unwrap_or(1)
            .clamp(1, MAX_PAGES);
        Self {
            query: layout::value(&pairs, "q").to_owned(),
            types: pairs
                .iter()
                .filter(|(k, _)| k == "type")
                .map(|(_, v)| v.clone())
                .collect(),
            harness: layout::value(&pairs, "harness").to_owned(),
            source: layout::value(&pairs, "source").to_owned(),
            project: layout::value(&pairs, "project").to_owned(),
            from: layout::value(&pairs, "from").to_owned(),
            to: layout::value(&pairs, "to").to_owned(),
            page,
        }
    }

    /// The tool's arguments for this page (every hit up to its end), or what is wrong with
    /// the dates.
    fn arguments(&self) -> Result<Map<String, Value>, String> {
        let (start, end) = layout::day_window(&self.from, &self.to)?;
        let mut args = Map::new();
        args.insert("query".into(), json!(self.query));
        args.insert("n_hits".into(), json!(self.page * PER_PAGE));
        if !self.types.is_empty() {
            args.insert("event_types".into(), json!(self.types));
        }
        for (key, value) in [
            ("harness", &self.harness),
            ("source", &self.source),
            ("project", &self.project),
        ] {
            if !value.is_empty() {
                args.insert(key.into(), json!(value));
            }
        }
        for (key, bound) in [("start_datetime", start), ("end_datetime", end)] {
            if let Some(bound) = bound {
                args.insert(key.into(), json!(bound));
            }
        }
        Ok(args)
    }

    /// The link to page `page` of the same search.
    fn page_link(&self, page: usize) -> String {
        let page = page.to_string();
        let mut pairs = vec![
            ("q", self.query.as_str()),
            ("harness", &self.harness),
            ("source", &self.source),
            ("project", &self.project),
            ("from", &self.from),
            ("to", &self.to),
        ];
        pairs.extend(self.types.iter().map(|t| ("type", t.as_str())));
        pairs.push(("page", &page));
        layout::link("/ui/", &pairs)
    }
}

/// `GET /ui/?q=…`
pub(super) async fn get(
    State(web): State<Web>,
    person: Person,
    RawQuery(raw): RawQuery,
) -> Response {
    let asked = Asked::parse(raw.as_deref());
    if asked.query.is_empty() {
        let body = html! {
            h1 { "Search sessions" }
            (form(&asked))
        };
        return layout::page("Search", person.signed_in(), Nav::Search, body).into_response();
    }
    let answer = match asked.arguments() {
        Ok(args) => web
            .tools
            .run::<SearchSessions>(args, &person.caller)
            .await
            .map_err(|e| (layout::status_of(e.code), e.message)),
        Err(message) => Err((StatusCode::BAD_REQUEST, message)),
    };
    let answer = match answer {
        Ok(answer) => answer,
        Err((status, message)) => {
            let body = html! {
                h1 { "Search sessions" }
                (form(&asked))
                p.error role="alert" { (message) }
            };
            return (
                status,
                layout::page("Search", person.signed_in(), Nav::Search, body),
            )
                .into_response();
        }
    };
    let data = answer.data;
    let first = (asked.page - 1) * PER_PAGE;
    let shown: Vec<&Hit> = data.results.iter().skip(first).take(PER_PAGE).collect();
    // The tool was asked for every hit up to this page's end: more match when it says so.
    let more = asked.page < MAX_PAGES && data.truncated;
    let body = html! {
        h1 { "Search sessions" }
        (form(&asked))
        section aria-labelledby="results-heading" {
            h2 #results-heading {
                @if shown.is_empty() {
                    "No hits"
                } @else {
                    "Hits " (first + 1) "–" (first + shown.len())
                    @if data.truncated { " (more match)" }
                }
            }
            @for group in by_session(&shown) {
                (session_group(&group, &asked.query))
            }
            (pager(&asked, more))
        }
    };
    layout::page(
        &format!("{} — search", asked.query),
        person.signed_in(),
        Nav::Search,
        body,
    )
    .into_response()
}

fn form(asked: &Asked) -> Markup {
    html! {
        form.search method="get" action="/ui/" role="search" {
            div.field.query {
                label for="q" { "Words to find" }
                input #q type="search" name="q" value=(asked.query) maxlength="4096" required
                    autofocus[asked.query.is_empty()];
                button type="submit" { "Search" }
            }
            details.filters open[!asked.types.is_empty() || !asked.harness.is_empty() || !asked.source.is_empty() || !asked.project.is_empty() || !asked.from.is_empty() || !asked.to.is_empty()] {
                summary { "Filters" }
                fieldset {
                    legend { "Event kinds (none checked: prompts, answers and tool output)" }
                    @for kind in EventType::SEARCHABLE {
                        label.check {
                            input type="checkbox" name="type" value=(kind.as_str())
                                checked[asked.types.iter().any(|t| t == kind.as_str())];
                            " " (kind.as_str().replace('_', " "))
                        }
                    }
                }
                (layout::scope_fields(&asked.harness, &asked.source, &asked.project))
                div.field {
                    label for="from" { "Sessions active from (UTC day)" }
                    input #from type="date" name="from" value=(asked.from);
                }
                div.field {
                    label for="to" { "Sessions started by (UTC day)" }
                    input #to type="date" name="to" value=(asked.to);
                }
            }
        }
    }
}

/// The hits of one session, in score order.
struct Group<'a> {
    hits: Vec<&'a Hit>,
}

/// Hits grouped by session, sessions ordered by their best hit.
fn by_session<'a>(hits: &[&'a Hit]) -> Vec<Group<'a>> {
    let mut groups: Vec<Group<'a>> = Vec::new();
    for hit in hits {
        match groups
            .iter_mut()
            .find(|g| g.hits[0].session.id == hit.session.id)
        {
            Some(group) => group.hits.push(hit),
            None => groups.push(Group { hits: vec![hit] }),
        }
    }
    groups
}

fn session_group(group: &Group<'_>, query: &str) -> Markup {
    let session = &group.hits[0].session;
    html! {
        article.group {
            h3 {
                a href=(format!("/ui/session/{}", session.id)) {
                    (layout::title_of(&session.title))
                }
            }
            p.meta {
                span { (session.harness) } " · "
                span { "source " (session.source) }
                @if let Some(project) = &session.project {
                    " · " span title=(project.path) { "project " (project.name) }
                }
                " · started " (layout::time(&session.started_at))
            }
            ol.hits {
                @for hit in &group.hits {
                    li {
                        a.hit href=(hit_link(hit)) {
                            span.kind { (hit.event.event_type.as_str().replace('_', " ")) }
                            " in turn " (hit.turn.ordinal)
                        }
                        span.score title="relevance within this answer" { (format!("{:.2}", hit.score)) }
                        p.snippet { (layout::highlighted(&hit.snippet.text, query)) }
                    }
                }
            }
        }
    }
}

/// Where a hit lands: its turn's page of the session, at the event.
pub(super) fn hit_link(hit: &Hit) -> String {
    let turn = hit.turn.ordinal.to_string();
    format!(
        "{}#{}",
        layout::link(
            &format!("/ui/session/{}", hit.session.id),
            &[("turn", &turn), ("event", &hit.event.id)],
        ),
        hit.event.id
    )
}

fn pager(asked: &Asked, more: bool) -> Markup {
    html! {
        nav.pager aria-label="Pages of hits" {
            @if asked.page > 1 {
                a rel="prev" href=(asked.page_link(asked.page - 1)) { "← Previous" }
            }
            span { "Page " (asked.page) }
            @if more {
                a rel="next" href=(asked.page_link(asked.page + 1)) { "Next →" }
            }
        }
    }
}
