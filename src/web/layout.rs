//! What every page is made of: the page shell and its navigation, error pages (a tool's error
//! mapped once to an HTTP status), times, query strings, and highlighted snippets. Every text
//! from a session goes through maud's escaping: it is shown, never interpreted.

use std::collections::HashSet;
use std::ops::Range;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use crate::ingest::sources;
use crate::tokenize;
use crate::tools::envelope::{ErrorBody, ErrorCode};
use crate::vocab::Harness;

/// Which navigation entry a page belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Nav {
    Search,
    Sessions,
    Sources,
    None,
}

/// Who a page is for, when someone signed in: their name and their sign-in's CSRF token.
pub(super) type SignedIn<'a> = Option<(&'a str, &'a str)>;

/// A whole page: `title`, the navigation (with the person and a sign-out form when signed in),
/// and `body` as the main content.
pub(super) fn page(title: &str, signed_in: SignedIn<'_>, active: Nav, body: Markup) -> Markup {
    let current = |nav: Nav| (nav == active).then_some("page");
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                title { (title) " · moraine-mcp" }
                link rel="stylesheet" href="/ui/assets/style.css";
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/ui/" { "moraine-mcp" }
                    nav aria-label="Main" {
                        ul {
                            li { a href="/ui/" aria-current=[current(Nav::Search)] { "Search" } }
                            li { a href="/ui/sessions" aria-current=[current(Nav::Sessions)] { "Sessions" } }
                            li { a href="/ui/sources" aria-current=[current(Nav::Sources)] { "Sources" } }
                        }
                    }
                    @if let Some((name, csrf)) = signed_in {
                        form.signout method="post" action="/ui/signout" {
                            span.who { "Signed in as " strong { (name) } }
                            input type="hidden" name="csrf" value=(csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main #main tabindex="-1" { (body) }
            }
        }
    }
}

/// A page's markup before and after its main content, for a page sent in parts.
pub(super) fn page_parts(title: &str, signed_in: SignedIn<'_>, active: Nav) -> (String, String) {
    // A mark no escaped text can contain, where the body goes.
    const BODY: &str = "\u{0}body\u{0}";
    let whole = page(title, signed_in, active, maud::PreEscaped(BODY.to_owned())).into_string();
    // The last mark: nothing a session holds is written after the body.
    let (head, tail) = whole.rsplit_once(BODY).expect("the page holds its body");
    (head.to_owned(), tail.to_owned())
}

/// The fields of the filters the search and the sessions pages share: harness, source and
/// project, holding what was asked.
pub(super) fn scope_fields(harness: &str, source: &str, project: &str) -> Markup {
    html! {
        div.field {
            label for="harness" { "Harness" }
            select #harness name="harness" {
                option value="" { "Any" }
                @for h in Harness::all() {
                    option value=(h.as_str()) selected[harness == h.as_str()] { (h.title()) }
                }
            }
        }
        div.field {
            label for="source" { "Source (machine or person)" }
            input #source type="text" name="source" value=(source) maxlength="128";
        }
        div.field {
            label for="project" { "Project (directory name or path)" }
            input #project type="text" name="project" value=(project) maxlength="1024";
        }
    }
}

/// A page that says what went wrong, with `status`.
pub(super) fn error_page(status: StatusCode, signed_in: SignedIn<'_>, message: &str) -> Response {
    let body = html! {
        h1 { (status.canonical_reason().unwrap_or("Error")) }
        p.error role="alert" { (message) }
        p { a href="/ui/" { "Back to search" } }
    };
    (status, page("Error", signed_in, Nav::None, body)).into_response()
}

/// The page when the system has no randomness to make a token with.
pub(super) fn no_randomness() -> Response {
    error_page(
        StatusCode::INTERNAL_SERVER_ERROR,
        None,
        "no randomness available to make a sign-in token",
    )
}

/// A session's title as a page shows it.
pub(super) fn title_of(title: &str) -> &str {
    if title.is_empty() {
        "(untitled session)"
    } else {
        title
    }
}

/// The HTTP status a tool's error is served with.
pub(super) fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::InvalidRequest | ErrorCode::InvalidId | ErrorCode::UnsupportedEventType => {
            StatusCode::BAD_REQUEST
        }
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::DeadlineExceeded | ErrorCode::Busy | ErrorCode::ResourceExhausted => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        ErrorCode::BackendFailure => StatusCode::BAD_GATEWAY,
        ErrorCode::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The error page of a tool's refusal.
pub(super) fn tool_error(signed_in: SignedIn<'_>, error: &ErrorBody) -> Response {
    error_page(status_of(error.code), signed_in, &error.message)
}

/// `GET` of a path under `/ui` that is no page.
pub(super) async fn not_found() -> Response {
    error_page(StatusCode::NOT_FOUND, None, "There is no such page.")
}

/// A time as people read it (`2026-04-30 09:12 UTC`), machine-readable in `datetime`.
pub(super) fn time(rfc3339: &str) -> Markup {
    html! { time datetime=(rfc3339) { (sources::minutes(rfc3339)) } }
}

/// A path with a query string of the pairs whose value is not empty.
pub(super) fn link(path: &str, pairs: &[(&str, &str)]) -> String {
    let kept: Vec<_> = pairs.iter().filter(|(_, v)| !v.is_empty()).collect();
    if kept.is_empty() {
        return path.to_owned();
    }
    format!(
        "{path}?{}",
        serde_urlencoded::to_string(kept).unwrap_or_default()
    )
}

/// The pairs of a query string, in order (a key may repeat).
pub(super) fn pairs(raw: Option<&str>) -> Vec<(String, String)> {
    raw.and_then(|q| serde_urlencoded::from_str(q).ok())
        .unwrap_or_default()
}

/// The first value of `key` among `pairs`, trimmed, or "".
pub(super) fn value<'a>(pairs: &'a [(String, String)], key: &str) -> &'a str {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.trim())
}

/// The whole UTC days `from` to `to` of a form (`2026-04-30`; either may be empty) as RFC 3339
/// bounds: `from`'s midnight, and the midnight after `to`; or what is wrong with them.
pub(super) fn day_window(from: &str, to: &str) -> Result<(Option<String>, Option<String>), String> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let day = |name: &str, text: &str| {
        time::Date::parse(text, &format)
            .map_err(|_| format!("{name} must be a date such as 2026-04-30, not {text:?}"))
    };
    let start = if from.is_empty() {
        None
    } else {
        Some(format!("{}T00:00:00Z", day("from", from)?))
    };
    let end = if to.is_empty() {
        None
    } else {
        let after = day("to", to)?
            .next_day()
            .ok_or_else(|| "to is too far in the future".to_owned())?;
        Some(format!("{after}T00:00:00Z"))
    };
    Ok((start, end))
}

/// `text` with the words of `query` marked, as the index reads words (another form of a word
/// asked for counts, as it does in the search).
pub(super) fn highlighted(text: &str, query: &str) -> Markup {
    let mut wanted: HashSet<String> = HashSet::new();
    tokenize::for_each_token(query, |term, _, _| {
        wanted.insert(term.to_owned());
    });
    let mut spans: Vec<Range<usize>> = Vec::new();
    tokenize::for_each_token(text, |term, span, _| {
        if wanted.contains(term) {
            spans.push(span);
        }
    });
    spans.sort_by_key(|s| s.start);
    let mut merged: Vec<Range<usize>> = Vec::new();
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    // Plain text, then marked text, for each span; then what follows the last one.
    let mut parts = Vec::with_capacity(merged.len());
    let mut at = 0;
    for span in &merged {
        parts.push((&text[at..span.start], &text[span.clone()]));
        at = span.end;
    }
    html! {
        @for (plain, marked) in parts {
            (plain)
            mark { (marked) }
        }
        (text[at..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_highlights_mark_query_words_and_escape_the_rest() {
        let marked =
            highlighted("<b>Fixed</b> the login redirects", "Login redirected fixed").into_string();
        assert_eq!(
            marked,
            "&lt;b&gt;<mark>Fixed</mark>&lt;/b&gt; the <mark>login</mark> <mark>redirects</mark>"
        );
        let plain = highlighted("<script>alert(1)</script>", "nothing").into_string();
        assert_eq!(plain, "&lt;script&gt;alert(1)&lt;/script&gt;");
    }

    #[test]
    fn test_links_keep_only_given_values() {
        assert_eq!(link("/ui/", &[("q", ""), ("page", "")]), "/ui/");
        assert_eq!(
            link("/ui/", &[("q", "a b&c"), ("page", "2")]),
            "/ui/?q=a+b%26c&page=2"
        );
        let parsed = pairs(Some("q=a+b%26c&type=user_input&type=tool_call"));
        assert_eq!(value(&parsed, "q"), "a b&c");
        assert_eq!(parsed.iter().filter(|(k, _)| k == "type").count(), 2);
    }

    #[test]
    fn test_a_page_in_parts_is_the_whole_page_around_its_body() {
        let title = "a \u{0}body\u{0} title";
        let (head, tail) = page_parts(title, Some(("ann", "c")), Nav::Sessions);
        let whole = page(
            title,
            Some(("ann", "c")),
            Nav::Sessions,
            html! { p { "x" } },
        );
        assert_eq!(format!("{head}<p>x</p>{tail}"), whole.into_string());
        assert!(tail.starts_with("</main>"));
    }

    #[test]
    fn test_day_windows_run_from_midnight_to_the_next() {
        assert_eq!(
            day_window("2026-04-30", "2026-04-30"),
            Ok((
                Some("2026-04-30T00:00:00Z".to_owned()),
                Some("2026-05-01T00:00:00Z".to_owned())
            ))
        );
        assert_eq!(day_window("", ""), Ok((None, None)));
        assert!(
            day_window("30/04/2026", "")
                .unwrap_err()
                .contains("from must be a date")
        );
        assert!(
            day_window("", "2026-02-30")
                .unwrap_err()
                .contains("to must be a date")
        );
    }

    #[test]
    fn test_times_read_as_minutes_in_utc() {
        assert_eq!(
            time("2026-04-30T09:12:44.120Z").into_string(),
            r#"<time datetime="2026-04-30T09:12:44.120Z">2026-04-30 09:12 UTC</time>"#
        );
    }
}
