//! Signing in to the pages with a token: a sign-in held by the server and named by an
//! HttpOnly, SameSite=Lax cookie, with a CSRF token of its own for every form that changes
//! state. The cookie never holds the token, and the token is checked again on every page.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::Web;
use super::layout::{self, Nav};
use crate::config::Scope;

/// The cookie that names a sign-in.
pub(super) const COOKIE: &str = "moraine_signin";
/// The cookie that carries the sign-in form's CSRF token (double submit: a page elsewhere can
/// neither read it nor send it).
const FORM_COOKIE: &str = "moraine_form";
/// The longest credential the form takes (a JWT with many claims fits).
const MAX_CREDENTIAL: usize = 16 * 1024;
/// Sign-ins one credential holds at most (browsers, devices); its least recently used ends
/// first. Without it, one reader signing in again and again would end everyone else's
/// sign-ins once the server holds its most.
const PER_CREDENTIAL: usize = 16;

/// The sign-ins in progress, by the random ID their cookie carries.
pub(super) struct SignIns {
    held: Mutex<HashMap<String, Held>>,
    idle: Duration,
    max: usize,
}

/// One sign-in: the credential it was made with and the CSRF token of its forms.
#[derive(Clone)]
pub(super) struct Held {
    pub credential: String,
    pub csrf: String,
    last_used: Instant,
}

impl SignIns {
    pub(super) fn new(idle: Duration, max: usize) -> Self {
        Self {
            held: Mutex::new(HashMap::new()),
            idle,
            max,
        }
    }

    /// A new sign-in with `credential`: its ID and CSRF token. The least recently used ones
    /// end when the credential holds [`PER_CREDENTIAL`], or the server its most.
    pub(super) fn start(&self, credential: String) -> Result<(String, String), getrandom::Error> {
        let id = random_hex()?;
        let csrf = random_hex()?;
        let now = Instant::now();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|_, h| now.duration_since(h.last_used) < self.idle);
        let oldest = |held: &HashMap<String, Held>, own: bool| {
            held.iter()
                .filter(|(_, h)| !own || h.credential == credential)
                .min_by_key(|(_, h)| h.last_used)
                .map(|(id, _)| id.clone())
        };
        while held.values().filter(|h| h.credential == credential).count() >= PER_CREDENTIAL {
            let Some(id) = oldest(&held, true) else { break };
            held.remove(&id);
        }
        while held.len() >= self.max {
            let Some(id) = oldest(&held, false) else {
                break;
            };
            held.remove(&id);
        }
        held.insert(
            id.clone(),
            Held {
                credential,
                csrf: csrf.clone(),
                last_used: now,
            },
        );
        Ok((id, csrf))
    }

    /// The sign-in named `id`, if it has not been idle too long; using it keeps it.
    pub(super) fn touch(&self, id: &str) -> Option<Held> {
        let now = Instant::now();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let entry = held.get_mut(id)?;
        if now.duration_since(entry.last_used) >= self.idle {
            held.remove(id);
            return None;
        }
        entry.last_used = now;
        Some(entry.clone())
    }

    pub(super) fn end(&self, id: &str) {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

/// 256 random bits, in hex.
pub(super) fn random_hex() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub(super) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
        .filter(|value| !value.is_empty())
}

/// The `Set-Cookie` value naming a sign-in (removing it when `id` is empty): never readable
/// by scripts, and `Lax`, so that a link from elsewhere (a chat, a mail, an issue) opens its
/// page signed in. Pages only read; every form that changes state carries the sign-in's CSRF
/// token and is refused from another origin.
pub(super) fn signin_cookie(web: &Web, id: &str) -> HeaderValue {
    cookie_header(web, COOKIE, id, "/ui", "Lax", None)
}

/// The `Set-Cookie` value of the sign-in form's CSRF token: never sent from elsewhere.
fn form_cookie(web: &Web, csrf: &str) -> HeaderValue {
    cookie_header(web, FORM_COOKIE, csrf, "/ui", "Strict", None)
}

/// A `Set-Cookie` value: HttpOnly, `Secure` behind https, removed when `value` is empty.
pub(super) fn cookie_header(
    web: &Web,
    name: &str,
    value: &str,
    path: &str,
    same_site: &str,
    max_age: Option<u64>,
) -> HeaderValue {
    let secure = if web.secure() { "; Secure" } else { "" };
    let expiry = match (value.is_empty(), max_age) {
        (true, _) => "; Max-Age=0".to_owned(),
        (false, Some(secs)) => format!("; Max-Age={secs}"),
        (false, None) => String::new(),
    };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path={path}; HttpOnly; SameSite={same_site}{secure}{expiry}"
    ))
    .expect("cookie values are URL-safe")
}

/// Where to go after signing in: a page of this UI, else the search page.
pub(super) fn safe_next(next: Option<&str>) -> &str {
    match next {
        // Printable ASCII only: it becomes a `Location` (and a `Refresh`) header.
        Some(next)
            if next.starts_with("/ui/")
                && !next.contains('\\')
                && next.len() <= 2048
                && next.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            next
        }
        _ => "/ui/",
    }
}

/// The sign-in page for a request to `next`.
pub(super) fn redirect_to_sign_in(next: &str, notice: Option<&str>) -> Response {
    let mut query = vec![("next", next)];
    if let Some(notice) = notice {
        query.push(("notice", notice));
    }
    let query = serde_urlencoded::to_string(query).unwrap_or_default();
    Redirect::to(&format!("/ui/signin?{query}")).into_response()
}

#[derive(Deserialize)]
pub(super) struct FormQuery {
    next: Option<String>,
    notice: Option<String>,
}

/// `GET /ui/signin`: the form, with a fresh CSRF token in a cookie and in the form.
pub(super) async fn form(State(web): State<Web>, Query(query): Query<FormQuery>) -> Response {
    if web.auth.is_open() {
        return Redirect::to("/ui/").into_response();
    }
    let notice = match query.notice.as_deref() {
        Some("ended") => Some("Your sign-in ended: sign in again."),
        Some("signed_out") => Some("You are signed out."),
        Some("refused") => Some("The authorization server did not sign you in."),
        Some("no_read") => Some("Your account may not read sessions on this server."),
        _ => None,
    };
    sign_in_page(
        &web,
        safe_next(query.next.as_deref()),
        notice,
        StatusCode::OK,
    )
}

pub(super) fn sign_in_page(
    web: &Web,
    next: &str,
    notice: Option<&str>,
    status: StatusCode,
) -> Response {
    let Ok(csrf) = random_hex() else {
        return layout::no_randomness();
    };
    let body = html! {
        h1 { "Sign in" }
        @if let Some(notice) = notice {
            p.notice role="status" { (notice) }
        }
        form.signin method="post" action="/ui/signin" {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="next" value=(next);
            label for="token" { "Access token" }
            input #token type="password" name="token" required autocomplete="off"
                maxlength=(MAX_CREDENTIAL) aria-describedby="token-help";
            p #token-help .help {
                "A token of this server with the read scope (from " code { "moraine-mcp tokens add" }
                "), or an OAuth access token for it."
            }
            button type="submit" { "Sign in" }
        }
        @if let Some(issuer) = web.oauth_issuer() {
            p.alternative {
                "Or "
                a href=(layout::link("/ui/signin/oauth", &[("next", next)])) {
                    "sign in with your account at " (issuer)
                }
                "."
            }
        }
    };
    let mut response = (status, layout::page("Sign in", None, Nav::None, body)).into_response();
    response
        .headers_mut()
        .append(header::SET_COOKIE, form_cookie(web, &csrf));
    response
}

#[derive(Deserialize)]
struct SignInForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    csrf: String,
    next: Option<String>,
}

#[derive(Deserialize)]
struct SignOutForm {
    #[serde(default)]
    csrf: String,
}

fn same(a: &str, b: &str) -> bool {
    !a.is_empty() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// `POST /ui/signin`: checks the form's CSRF token and the credential, then signs in.
pub(super) async fn submit(State(web): State<Web>, headers: HeaderMap, body: Bytes) -> Response {
    if web.auth.is_open() {
        return Redirect::to("/ui/").into_response();
    }
    let Ok(form) = serde_urlencoded::from_bytes::<SignInForm>(&body) else {
        return layout::error_page(StatusCode::BAD_REQUEST, None, "the form could not be read");
    };
    let next = safe_next(form.next.as_deref()).to_owned();
    if !same(&form.csrf, cookie(&headers, FORM_COOKIE).unwrap_or("")) {
        return layout::error_page(
            StatusCode::FORBIDDEN,
            None,
            "the sign-in form expired or came from another page: open the sign-in page again",
        );
    }
    let credential = form.token.trim();
    if credential.is_empty() || credential.len() > MAX_CREDENTIAL {
        return sign_in_page(
            &web,
            &next,
            Some("Enter a token."),
            StatusCode::UNPROCESSABLE_ENTITY,
        );
    }
    let caller = match web.auth.identify(credential).await {
        Ok(caller) => caller,
        Err(refusal) if refusal.status() == StatusCode::SERVICE_UNAVAILABLE => {
            return layout::error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                "the authorization server cannot be reached to check this token; try again shortly",
            );
        }
        Err(_) => {
            return sign_in_page(
                &web,
                &next,
                Some("That token is not accepted by this server."),
                StatusCode::UNAUTHORIZED,
            );
        }
    };
    if !caller.may(Scope::Read) {
        return sign_in_page(
            &web,
            &next,
            Some("That token may not read sessions (it lacks the read scope)."),
            StatusCode::FORBIDDEN,
        );
    }
    // A sign-in replaces the one this browser had.
    if let Some(old) = cookie(&headers, COOKIE) {
        web.signins.end(old);
    }
    let Ok((id, _csrf)) = web.signins.start(credential.to_owned()) else {
        return layout::no_randomness();
    };
    tracing::info!(caller = %caller.name, "signed in to the web pages");
    let mut response = Redirect::to(&next).into_response();
    let headers = response.headers_mut();
    headers.append(header::SET_COOKIE, signin_cookie(&web, &id));
    headers.append(header::SET_COOKIE, form_cookie(&web, ""));
    response
}

/// `POST /ui/signout`: ends the sign-in, when the form carries its CSRF token.
pub(super) async fn sign_out(State(web): State<Web>, headers: HeaderMap, body: Bytes) -> Response {
    let form = serde_urlencoded::from_bytes::<SignOutForm>(&body).ok();
    let id = cookie(&headers, COOKIE).unwrap_or("");
    let held = web.signins.touch(id);
    match (held, form) {
        (Some(held), Some(form)) if same(&form.csrf, &held.csrf) => {
            web.signins.end(id);
            let mut response = Redirect::to("/ui/signin?notice=signed_out").into_response();
            response
                .headers_mut()
                .append(header::SET_COOKIE, signin_cookie(&web, ""));
            response
        }
        (None, _) => Redirect::to("/ui/signin").into_response(),
        _ => layout::error_page(
            StatusCode::FORBIDDEN,
            None,
            "the sign-out form came from another page",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_sign_ins_end_when_idle_and_beyond_the_cap() {
        let signins = SignIns::new(Duration::from_secs(60), 2);
        let (a, csrf_a) = signins.start("token-a".into()).unwrap();
        let (b, _) = signins.start("token-b".into()).unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert_eq!(signins.touch(&a).unwrap().csrf, csrf_a);
        // a was used last, so b is the one that makes room.
        let (c, _) = signins.start("token-c".into()).unwrap();
        assert!(signins.touch(&b).is_none());
        assert_eq!(signins.touch(&a).unwrap().credential, "token-a");
        assert_eq!(signins.touch(&c).unwrap().credential, "token-c");
        signins.end(&a);
        assert!(signins.touch(&a).is_none());
        let idle = SignIns::new(Duration::ZERO, 10);
        let (d, _) = idle.start("token-d".into()).unwrap();
        assert!(idle.touch(&d).is_none());
    }

    #[test]
    fn test_one_credential_signing_in_again_and_again_ends_only_its_own_sign_ins() {
        let signins = SignIns::new(Duration::from_secs(60), PER_CREDENTIAL + 2);
        let (other, _) = signins.start("token-other".into()).unwrap();
        let mine: Vec<String> = (0..3 * PER_CREDENTIAL)
            .map(|_| signins.start("token-mine".into()).unwrap().0)
            .collect();
        assert_eq!(signins.touch(&other).unwrap().credential, "token-other");
        // Its newest sign-ins are kept, its oldest ended.
        let kept = mine.iter().filter(|id| signins.touch(id).is_some()).count();
        assert_eq!(kept, PER_CREDENTIAL);
        assert!(signins.touch(mine.last().unwrap()).is_some());
        assert!(signins.touch(&mine[0]).is_none());
    }

    #[test]
    fn test_cookies_are_read_by_exact_name() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("x_moraine_signin=no; moraine_signin=abc"),
        );
        headers.append(header::COOKIE, HeaderValue::from_static("moraine_form=f"));
        assert_eq!(cookie(&headers, COOKIE), Some("abc"));
        assert_eq!(cookie(&headers, FORM_COOKIE), Some("f"));
        assert_eq!(cookie(&headers, "other"), None);
    }

    #[test]
    fn test_only_pages_of_the_ui_are_next() {
        assert_eq!(safe_next(Some("/ui/sessions?x=1")), "/ui/sessions?x=1");
        for bad in [
            "https://evil.example/",
            "//evil.example/ui/",
            "/ui\\..\\x",
            "/mcp",
            "javascript:alert(1)",
            "/ui/\r\nSet-Cookie: x=1",
            "/ui/a b",
        ] {
            assert_eq!(safe_next(Some(bad)), "/ui/", "{bad}");
        }
        assert_eq!(safe_next(None), "/ui/");
        assert!(!same("", ""));
        assert!(same("ab", "ab"));
        assert!(!same("ab", "ac"));
    }
}
