//! The web pages over real HTTP on the embedded engine: sign-in with a token (cookie flags,
//! CSRF, refusals, sign-out, revocation), the same rights as MCP (a source-limited person never
//! sees another source), session content shown as inert text, turn pages and anchors, the
//! security headers, and an open server's pages without sign-in.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use moraine_mcp::config::{Scope, Settings, TokenConfig};
use moraine_mcp::ingest;

use crate::common::{self, TestServer, fresh_db, write_sessions};

const ADMIN: &str = "web-admin-token-0123456789abcdef";
const ALPHA_READER: &str = "web-alpha-reader-0123456789abcdef";
const PUSHER: &str = "web-pusher-token-0123456789abcdef";
const FILED: &str = "web-filed-token-0123456789abcdef";

/// A page as the browser gets it: status, every `Set-Cookie`, the headers and the body.
struct Page {
    status: u16,
    cookies: Vec<String>,
    location: String,
    headers: axum::http::HeaderMap,
    body: String,
}

async fn fetch(method: &str, url: &str, cookie: &str, form: &[(&str, &str)]) -> Page {
    let mut request = axum::http::Request::builder().method(method).uri(url);
    if !cookie.is_empty() {
        request = request.header("cookie", cookie);
    }
    // As a browser does: a form's POST names the page's origin.
    if method == "POST" {
        let origin: String = url.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
        request = request.header("origin", origin);
    }
    let body = if form.is_empty() {
        Bytes::new()
    } else {
        request = request.header("content-type", "application/x-www-form-urlencoded");
        Bytes::from(serde_urlencoded::to_string(form).unwrap())
    };
    let response = common::http()
        .request(request.body(Full::new(body)).unwrap())
        .await
        .expect("http request");
    let headers = response.headers().clone();
    let cookies = headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    let location = headers
        .get("location")
        .map_or(String::new(), |v| v.to_str().unwrap().to_owned());
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Page {
        status,
        cookies,
        location,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// `name=value` of the cookie `name` a page sets.
fn cookie_of(page: &Page, name: &str) -> String {
    page.cookies
        .iter()
        .find(|c| c.starts_with(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} cookie in {:?}", page.cookies))
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

/// The value of hidden field `name` in a page's form.
fn hidden(body: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let at = body.find(&marker).expect("the field") + marker.len();
    body[at..].split('"').next().unwrap().to_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("web-{name}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Ingests the logs under `dir` as `source`.
async fn ingest_as(settings: &Settings, db: &moraine_mcp::db::Db, dir: &Path, source: &str) {
    let (files, problems) = ingest::files::from_paths(&[dir.to_owned()], None, Some(source));
    assert!(problems.is_empty(), "{problems:?}");
    let config = settings.clone().validate().unwrap();
    ingest::run(&config, db, files, false).await.unwrap();
}

/// A team server: source `alpha` (the hostile-content session and three of 25 turns) and
/// `beta`; an admin reader, a reader of alpha only, a pusher, and a token in a tokens file.
async fn team_server() -> (TestServer, PathBuf) {
    let (mut settings, db) = fresh_db().await;
    let alpha = scratch("alpha");
    common::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web"),
        &alpha,
        &mut |_| {},
    );
    write_sessions(&alpha, 0xa1, 3, 25, "alphaword");
    // A Claude Code session with a sub-agent's log.
    common::copy_tree(
        &common::fixtures().join("claude/-home-dev-src-tidepool"),
        &alpha.join("claude/-home-dev-src-tidepool"),
        &mut |_| {},
    );
    let beta = scratch("beta");
    write_sessions(&beta, 0xb2, 2, 3, "betaword");
    ingest_as(&settings, &db, &alpha, "alpha").await;
    ingest_as(&settings, &db, &beta, "beta").await;
    let mut alpha_reader = TokenConfig::reader("alpha-reader", ALPHA_READER);
    alpha_reader.read_sources = Some(vec!["alpha".into()]);
    let mut pusher = TokenConfig::reader("pusher", PUSHER);
    pusher.scopes = vec![Scope::Ingest];
    settings.auth.tokens = vec![TokenConfig::reader("admin", ADMIN), alpha_reader, pusher];
    let file = scratch("tokens").join("tokens.toml");
    std::fs::write(
        &file,
        format!("[[tokens]]\nname = \"filed\"\ntoken = \"{FILED}\"\nscopes = [\"read\"]\n"),
    )
    .unwrap();
    settings.auth.tokens_file = file.display().to_string();
    (TestServer::start(settings, db).await, file)
}

/// Signs in with `token`: the sign-in cookie (`name=value`).
async fn sign_in(server: &TestServer, token: &str) -> String {
    let form = fetch(
        "GET",
        &format!("{}/ui/signin?next=/ui/sessions", server.base),
        "",
        &[],
    )
    .await;
    assert_eq!(form.status, 200);
    let csrf_cookie = cookie_of(&form, "moraine_form");
    let csrf = hidden(&form.body, "csrf");
    let signed = fetch(
        "POST",
        &format!("{}/ui/signin", server.base),
        &csrf_cookie,
        &[("token", token), ("csrf", &csrf), ("next", "/ui/sessions")],
    )
    .await;
    assert_eq!(signed.status, 303, "{}", signed.body);
    assert_eq!(signed.location, "/ui/sessions");
    cookie_of(&signed, "moraine_signin")
}

#[tokio::test]
async fn signing_in_takes_a_readers_token_and_sets_a_strict_cookie() {
    let (server, _) = team_server().await;
    let ui = |path: &str| format!("{}{path}", server.base);
    // Nothing without signing in: the page sends the person to the sign-in form.
    let away = fetch("GET", &ui("/ui/sessions?source=beta"), "", &[]).await;
    assert_eq!(away.status, 303);
    assert_eq!(
        away.location,
        "/ui/signin?next=%2Fui%2Fsessions%3Fsource%3Dbeta"
    );
    let form = fetch("GET", &ui("/ui/signin"), "", &[]).await;
    let form_cookie = form
        .cookies
        .iter()
        .find(|c| c.starts_with("moraine_form="))
        .unwrap();
    assert!(form_cookie.contains("HttpOnly") && form_cookie.contains("SameSite=Strict"));
    let csrf = hidden(&form.body, "csrf");
    let csrf_cookie = cookie_of(&form, "moraine_form");
    let post = |token: &'static str, csrf: String, cookie: String| {
        let url = ui("/ui/signin");
        async move { fetch("POST", &url, &cookie, &[("token", token), ("csrf", &csrf)]).await }
    };
    // A form without its cookie's token (another site's page) is refused before the token
    // is looked at; an unknown token, and one that may not read, are refused.
    assert_eq!(post(ADMIN, csrf.clone(), String::new()).await.status, 403);
    assert_eq!(
        post(ADMIN, "0".repeat(64), csrf_cookie.clone())
            .await
            .status,
        403
    );
    let unknown = post(
        "not-a-token-of-this-server",
        csrf.clone(),
        csrf_cookie.clone(),
    )
    .await;
    assert_eq!(unknown.status, 401);
    assert!(unknown.body.contains("not accepted"), "{}", unknown.body);
    assert!(
        unknown
            .cookies
            .iter()
            .all(|c| !c.starts_with("moraine_signin="))
    );
    let pusher = post(PUSHER, csrf.clone(), csrf_cookie.clone()).await;
    assert_eq!(pusher.status, 403);
    assert!(pusher.body.contains("read scope"), "{}", pusher.body);
    let signed = post(ADMIN, csrf, csrf_cookie).await;
    assert_eq!(signed.status, 303);
    assert_eq!(signed.location, "/ui/");
    let cookie = signed
        .cookies
        .iter()
        .find(|c| c.starts_with("moraine_signin="))
        .unwrap();
    // Lax: a link from elsewhere opens a page signed in (the browser checks show it).
    for flag in ["HttpOnly", "SameSite=Lax", "Path=/ui"] {
        assert!(cookie.contains(flag), "{cookie}");
    }
    assert!(!cookie.contains(ADMIN), "the cookie never holds the token");
    let session = cookie_of(&signed, "moraine_signin");
    let page = fetch("GET", &ui("/ui/sessions"), &session, &[]).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Signed in as <strong>admin</strong>"));
    assert!(page.body.contains("betaword") || page.body.contains("source beta"));
    // Every page: a strict policy, no sniffing, no framing, no caching.
    let policy = page.headers["content-security-policy"].to_str().unwrap();
    assert!(policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"));
    assert!(
        !policy.contains("script-src"),
        "no script may run: {policy}"
    );
    assert_eq!(page.headers["x-frame-options"], "DENY");
    assert_eq!(page.headers["x-content-type-options"], "nosniff");
    assert_eq!(page.headers["cache-control"], "no-store");
    assert_eq!(page.headers["referrer-policy"], "same-origin");
    assert!(!page.body.contains("<script"));
    // Signing out needs the sign-in's own CSRF token, and ends it.
    let csrf = hidden(&page.body, "csrf");
    let forged = fetch("POST", &ui("/ui/signout"), &session, &[("csrf", "forged")]).await;
    assert_eq!(forged.status, 403);
    let out = fetch("POST", &ui("/ui/signout"), &session, &[("csrf", &csrf)]).await;
    assert_eq!(out.status, 303);
    assert!(
        out.cookies
            .iter()
            .any(|c| c.starts_with("moraine_signin=;"))
    );
    let after = fetch("GET", &ui("/ui/sessions"), &session, &[]).await;
    assert_eq!(after.status, 303);
    assert!(after.location.starts_with("/ui/signin"));
    server.stop().await;
}

#[tokio::test]
async fn a_person_sees_only_the_sources_their_token_may_read() {
    let (server, _) = team_server().await;
    let ui = |path: &str| format!("{}{path}", server.base);
    let alpha = sign_in(&server, ALPHA_READER).await;
    let admin = sign_in(&server, ADMIN).await;
    let search = fetch("GET", &ui("/ui/?q=betaword"), &admin, &[]).await;
    assert!(search.body.contains("source beta"), "{}", search.body);
    let beta_session = search
        .body
        .split("href=\"/ui/session/")
        .nth(1)
        .unwrap()
        .split(['"', '?'])
        .next()
        .unwrap()
        .to_owned();
    // Searches, lists, sources, and a session of another source opened by its URL.
    let hidden_search = fetch("GET", &ui("/ui/?q=betaword"), &alpha, &[]).await;
    assert_eq!(hidden_search.status, 200);
    assert!(
        hidden_search.body.contains("No hits"),
        "{}",
        hidden_search.body
    );
    let listed = fetch("GET", &ui("/ui/sessions"), &alpha, &[]).await;
    assert!(listed.body.contains("source alpha"));
    assert!(!listed.body.contains("source beta"));
    let forced = fetch("GET", &ui("/ui/sessions?source=beta"), &alpha, &[]).await;
    assert!(
        forced.body.contains("0 sessions on this page"),
        "{}",
        forced.body
    );
    let sources = fetch("GET", &ui("/ui/sources"), &alpha, &[]).await;
    assert!(sources.body.contains(">alpha<"));
    assert!(!sources.body.contains(">beta<"));
    let admin_sources = fetch("GET", &ui("/ui/sources"), &admin, &[]).await;
    assert!(admin_sources.body.contains(">beta<"));
    let opened = fetch(
        "GET",
        &ui(&format!("/ui/session/{beta_session}")),
        &alpha,
        &[],
    )
    .await;
    assert_eq!(opened.status, 404);
    assert!(!opened.body.contains("betaword"));
    let allowed = fetch(
        "GET",
        &ui(&format!("/ui/session/{beta_session}")),
        &admin,
        &[],
    )
    .await;
    assert_eq!(allowed.status, 200);
    server.stop().await;
}

#[tokio::test]
async fn session_content_is_shown_as_text_and_links_land_on_their_turn() {
    let (server, _) = team_server().await;
    let ui = |path: &str| format!("{}{path}", server.base);
    let admin = sign_in(&server, ADMIN).await;
    let search = fetch("GET", &ui("/ui/?q=inkwell+preview+escapes"), &admin, &[]).await;
    assert_eq!(search.status, 200);
    assert!(
        search.body.contains("<mark>inkwell</mark>"),
        "{}",
        search.body
    );
    let hit = search
        .body
        .split("class=\"hit\" href=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .replace("&amp;", "&");
    let (path, anchor) = hit.split_once('#').unwrap();
    assert!(
        path.contains("?turn=") && anchor.starts_with("event:"),
        "{hit}"
    );
    let page = fetch("GET", &ui(path), &admin, &[]).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains(&format!("id=\"{anchor}\"")),
        "the hit's event has its anchor"
    );
    assert!(page.body.contains("id=\"turn-1\""));
    // Hostile text from the log is escaped wherever it shows: prompt, arguments, output,
    // answer, and the event page.
    for needle in ["<script", "<img", "<svg", "<iframe", "href=\"javascript:"] {
        assert!(
            !page.body.contains(needle),
            "{needle} reached the page as markup"
        );
    }
    for shown in [
        "&lt;script&gt;alert('xss-prompt')&lt;/script&gt;",
        "&lt;img src=x onerror=alert('xss-answer')&gt;",
        "[a link](javascript:alert('xss-link'))",
        "&lt;/pre&gt;&lt;script&gt;alert('xss-break')&lt;/script&gt;",
    ] {
        assert!(page.body.contains(shown), "{shown} is not shown as text");
    }
    // Credentials in the log are redacted, as in MCP answers.
    assert!(!page.body.contains("AKIAFAKEFAKEFAKE5678"));
    assert!(
        page.body.contains("[REDACTED:aws_access_key]"),
        "{}",
        page.body
    );
    let event = page
        .body
        .split("href=\"/ui/event/")
        .nth(1)
        .map(|rest| rest.split('"').next().unwrap().to_owned())
        .expect("the long output's Show more");
    {
        let opened = fetch("GET", &ui(&format!("/ui/event/{event}")), &admin, &[]).await;
        assert_eq!(opened.status, 200);
        assert!(!opened.body.contains("<img") && !opened.body.contains("<script"));
        assert!(!opened.body.contains("AKIAFAKEFAKEFAKE5678"));
    }
    server.stop().await;
}

#[tokio::test]
async fn long_sessions_page_by_twenty_turns_and_a_turn_link_opens_its_page() {
    let (server, _) = team_server().await;
    let ui = |path: &str| format!("{}{path}", server.base);
    let admin = sign_in(&server, ADMIN).await;
    let listed = fetch("GET", &ui("/ui/sessions?source=alpha"), &admin, &[]).await;
    let long = listed
        .body
        .split("href=\"/ui/session/")
        .skip(1)
        .find(|rest| rest.contains("25 turns"))
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    let first = fetch("GET", &ui(&format!("/ui/session/{long}")), &admin, &[]).await;
    assert!(first.body.contains("Turns 1–20 of 25"), "{}", first.body);
    // Sent as it is made, not sized up front.
    assert!(first.headers.get("content-length").is_none());
    assert_eq!(first.headers["transfer-encoding"], "chunked");
    assert!(first.body.trim_end().ends_with("</html>"));
    assert!(first.body.contains("id=\"turn-20\"") && !first.body.contains("id=\"turn-21\""));
    assert!(first.body.contains("Later turns"));
    let later = fetch(
        "GET",
        &ui(&format!("/ui/session/{long}?turn=23")),
        &admin,
        &[],
    )
    .await;
    assert!(later.body.contains("Turns 21–25 of 25"));
    assert!(later.body.contains("id=\"turn-23\"") && !later.body.contains("id=\"turn-20\""));
    // Tool calls and outputs are collapsed; the prompt and the answer are not.
    assert!(later.body.contains("<details class=\"event collapsed\""));
    assert!(later.body.contains("Tool call · Bash"));
    assert!(later.body.contains("alphaword question 22"));
    server.stop().await;
}

#[tokio::test]
async fn a_revoked_token_ends_its_sign_in() {
    let (server, file) = team_server().await;
    let page = format!("{}/ui/sources", server.base);
    let session = sign_in(&server, FILED).await;
    assert_eq!(fetch("GET", &page, &session, &[]).await.status, 200);
    std::fs::write(&file, "tokens = []\n").unwrap();
    let mut ended = false;
    for _ in 0..100 {
        let reply = fetch("GET", &page, &session, &[]).await;
        if reply.status == 303 {
            assert!(
                reply.location.contains("notice=ended"),
                "{}",
                reply.location
            );
            ended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ended, "the sign-in outlived its token");
    server.stop().await;
}

#[tokio::test]
async fn an_open_server_shows_its_pages_without_sign_in_and_they_can_be_turned_off() {
    let (settings, db) = fresh_db().await;
    let logs = scratch("open");
    write_sessions(&logs, 0xc3, 1, 2, "openword");
    ingest_as(&settings, &db, &logs, "laptop").await;
    let server = TestServer::start(settings.clone(), db.clone()).await;
    let root = fetch("GET", &format!("{}/", server.base), "", &[]).await;
    assert_eq!(root.status, 303);
    assert_eq!(root.location, "/ui/");
    let search = fetch("GET", &format!("{}/ui/?q=openword", server.base), "", &[]).await;
    assert_eq!(search.status, 200);
    assert!(search.body.contains("<mark>openword</mark>"));
    assert!(!search.body.contains("Sign out"));
    // The search's time window: whole UTC days, as search_sessions' start and end.
    let window = |query: &str| {
        let url = format!("{}/ui/?q=openword&{query}", server.base);
        async move { fetch("GET", &url, "", &[]).await }
    };
    let within = window("from=2026-05-01&to=2026-05-01").await;
    assert!(
        within.body.contains("<mark>openword</mark>"),
        "{}",
        within.body
    );
    let later = window("from=2100-01-01").await;
    assert!(later.body.contains("No hits"), "{}", later.body);
    let before = window("to=2026-04-30").await;
    assert!(before.body.contains("No hits"), "{}", before.body);
    let bad = window("to=30.04.2026").await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("to must be a date"));
    // The pages answer only the names MCP answers (DNS rebinding).
    let rebound = common::send(
        "GET",
        &format!("{}/ui/", server.base),
        &[("host", "evil.example.com")],
        "",
    )
    .await;
    assert_eq!(rebound.status, 403);
    let style = fetch(
        "GET",
        &format!("{}/ui/assets/style.css", server.base),
        "",
        &[],
    )
    .await;
    assert_eq!(style.status, 200);
    assert!(
        style.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );
    server.stop().await;
    let mut off = settings;
    off.web.enabled = false;
    let server = TestServer::start(off, db).await;
    let gone = fetch("GET", &format!("{}/ui/", server.base), "", &[]).await;
    assert_eq!(gone.status, 404);
    server.stop().await;
}

#[tokio::test]
async fn a_session_links_its_sub_agents_and_a_sub_agent_its_parent() {
    let (server, _) = team_server().await;
    let ui = |path: &str| format!("{}{path}", server.base);
    let admin = sign_in(&server, ADMIN).await;
    let listed = fetch("GET", &ui("/ui/sessions?project=tidepool"), &admin, &[]).await;
    let sessions: Vec<String> = listed
        .body
        .split("<li class=\"session\"><a href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_owned())
        .collect();
    assert_eq!(sessions.len(), 2, "{}", listed.body);
    let mut parents = 0;
    for session in &sessions {
        let page = fetch("GET", &ui(session), &admin, &[]).await;
        if let Some(rest) = page.body.split("<dd class=\"subagents\"><a href=\"").nth(1) {
            parents += 1;
            let child = rest.split('"').next().unwrap();
            assert!(sessions.iter().any(|s| s == child), "{child}");
            let sub = fetch("GET", &ui(child), &admin, &[]).await;
            assert!(
                sub.body
                    .contains(&format!("<a href=\"{session}\">the parent session</a>")),
                "{}",
                sub.body
            );
        }
    }
    assert_eq!(parents, 1);
    server.stop().await;
}
