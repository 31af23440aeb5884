//! Signing in to the pages at the authorization server, when OAuth is configured and the pages
//! have a client there: the authorization-code flow with PKCE. What the return needs (the
//! `state`, the PKCE verifier, the page to go back to) travels in an HttpOnly cookie of this
//! browser, so nothing is held on the server for a sign-in that never comes back; the access
//! token it yields (for this server's resource, checked as any other) is the sign-in's
//! credential.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine as _;
use maud::html;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::Web;
use super::layout::{self, Nav};
use super::signin::{self, COOKIE};
use crate::auth::OAuth;
use crate::config::Scope;

/// The cookie that carries a sign-in under way to the callback. `Lax`: the authorization
/// server sends the person back with a top-level navigation from its own site.
const STATE_COOKIE: &str = "moraine_oauth";
/// How long a person may take at the authorization server.
const PENDING_SECS: u64 = 600;

/// A sign-in under way, as its cookie holds it: `state.verifier.next` (hex, hex, base64url).
struct Begun {
    state: String,
    verifier: String,
    next: String,
}

impl Begun {
    fn cookie_value(&self) -> String {
        let next = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&self.next);
        format!("{}.{}.{next}", self.state, self.verifier)
    }

    fn from_cookie(value: &str) -> Option<Self> {
        let mut parts = value.splitn(3, '.');
        let (state, verifier, next) = (parts.next()?, parts.next()?, parts.next()?);
        let next = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(next)
            .ok()?;
        let next = String::from_utf8(next).ok()?;
        Some(Self {
            state: state.to_owned(),
            verifier: verifier.to_owned(),
            next: signin::safe_next(Some(&next)).to_owned(),
        })
    }
}

/// Where the authorization server sends people back: under the public URL, else under the
/// host this request named (which the Host check has accepted).
fn redirect_uri(web: &Web, headers: &HeaderMap) -> String {
    let origin = web.public_origin.clone().unwrap_or_else(|| {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        format!("http://{host}")
    });
    format!("{origin}/ui/signin/callback")
}

/// The authorization server and the pages' client there, when the pages sign people in there.
fn configured(web: &Web) -> Option<(&OAuth, &crate::auth::WebClient)> {
    Some((web.auth.oauth.as_deref()?, web.oauth_client.as_deref()?))
}

/// The answer where the pages do not sign people in at an authorization server.
fn tokens_only() -> Response {
    layout::error_page(
        StatusCode::NOT_FOUND,
        None,
        "this server signs people in with a token only",
    )
}

fn state_cookie(web: &Web, value: &str) -> HeaderValue {
    signin::cookie_header(
        web,
        STATE_COOKIE,
        value,
        "/ui/signin",
        "Lax",
        Some(PENDING_SECS),
    )
}

/// A response that also forgets the sign-in under way.
fn ending(web: &Web, mut response: Response) -> Response {
    response
        .headers_mut()
        .append(header::SET_COOKIE, state_cookie(web, ""));
    response
}

#[derive(Deserialize)]
pub(super) struct StartQuery {
    next: Option<String>,
}

/// `GET /ui/signin/oauth`: sends the person to the authorization server.
pub(super) async fn start(
    State(web): State<Web>,
    headers: HeaderMap,
    Query(query): Query<StartQuery>,
) -> Response {
    let Some((oauth, client)) = configured(&web) else {
        return tokens_only();
    };
    let (Ok(state), Ok(verifier)) = (signin::random_hex(), signin::random_hex()) else {
        return layout::no_randomness();
    };
    let back = redirect_uri(&web, &headers);
    let url = match oauth
        .authorization_url(client, &back, &state, &verifier)
        .await
    {
        Ok(url) => url,
        Err(error) => {
            tracing::warn!(error = %error.0, "cannot start a sign-in at the authorization server");
            return layout::error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                "the authorization server cannot be reached; try again shortly",
            );
        }
    };
    let begun = Begun {
        state,
        verifier,
        next: signin::safe_next(query.next.as_deref()).to_owned(),
    };
    let mut response = Redirect::to(&url).into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        state_cookie(&web, &begun.cookie_value()),
    );
    response
}

#[derive(Deserialize)]
pub(super) struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /ui/signin/callback`: redeems the code of the sign-in this browser began, and signs
/// the person in with the access token.
pub(super) async fn callback(
    State(web): State<Web>,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let Some((oauth, client)) = configured(&web) else {
        return tokens_only();
    };
    // The state must be the one this browser was sent away with (its cookie expires with the
    // time allowed, and is forgotten whatever the outcome: a state is used once).
    let state = query.state.unwrap_or_default();
    let begun = signin::cookie(&headers, STATE_COOKIE)
        .and_then(Begun::from_cookie)
        .filter(|b| !state.is_empty() && bool::from(b.state.as_bytes().ct_eq(state.as_bytes())));
    let Some(begun) = begun else {
        return ending(
            &web,
            layout::error_page(
                StatusCode::BAD_REQUEST,
                None,
                "this sign-in was not started in this browser, or took too long: sign in again",
            ),
        );
    };
    let refused = |notice| ending(&web, signin::redirect_to_sign_in(&begun.next, Some(notice)));
    if let Some(error) = query.error {
        // The parameter is the client's to write: logged cut short, quoted and escaped.
        let error: String = error.chars().take(100).collect();
        tracing::info!(error = ?error, "the authorization server refused a sign-in");
        return refused("refused");
    }
    let Some(code) = query.code else {
        return refused("refused");
    };
    let back = redirect_uri(&web, &headers);
    let token = match oauth.redeem(client, &code, &begun.verifier, &back).await {
        Ok(token) => token,
        Err(error) => {
            tracing::warn!(error = %error.0, "cannot redeem a sign-in's code");
            return ending(
                &web,
                layout::error_page(
                    StatusCode::BAD_GATEWAY,
                    None,
                    "the authorization server did not give an access token for this server",
                ),
            );
        }
    };
    let caller = match web.auth.identify(&token).await {
        Ok(caller) => caller,
        Err(refusal) if refusal.status() == StatusCode::SERVICE_UNAVAILABLE => {
            return ending(
                &web,
                layout::error_page(
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    "the authorization server cannot be reached to check the sign-in; try again shortly",
                ),
            );
        }
        Err(_) => return refused("refused"),
    };
    if !caller.may(Scope::Read) {
        return refused("no_read");
    }
    // A sign-in replaces the one this browser had.
    if let Some(old) = signin::cookie(&headers, COOKIE) {
        web.signins.end(old);
    }
    let Ok((id, _)) = web.signins.start(token) else {
        return layout::no_randomness();
    };
    tracing::info!(caller = %caller.name, "signed in to the web pages through the authorization server");
    // A page that moves on by itself rather than a bare redirect: it says who signed in.
    let next = begun.next;
    let body = html! {
        h1 { "Signed in" }
        p { "Signed in as " strong { (caller.name) } ". " a #continue href=(next) { "Continue" } }
    };
    let mut response = layout::page("Signed in", None, Nav::None, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::REFRESH,
        HeaderValue::from_str(&format!("0; url={next}"))
            .unwrap_or(HeaderValue::from_static("0; url=/ui/")),
    );
    headers.append(header::SET_COOKIE, signin::signin_cookie(&web, &id));
    ending(&web, response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_a_sign_in_under_way_survives_its_cookie_and_only_to_pages_of_the_ui() {
        let begun = Begun {
            state: "ab12".into(),
            verifier: "cd34".into(),
            next: "/ui/sessions?source=a&x=1".into(),
        };
        let value = begun.cookie_value();
        assert!(
            value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        );
        let back = Begun::from_cookie(&value).unwrap();
        assert_eq!(
            (
                back.state.as_str(),
                back.verifier.as_str(),
                back.next.as_str()
            ),
            ("ab12", "cd34", "/ui/sessions?source=a&x=1")
        );
        let elsewhere =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("https://evil.example/");
        assert_eq!(
            Begun::from_cookie(&format!("a.b.{elsewhere}"))
                .unwrap()
                .next,
            "/ui/"
        );
        assert!(Begun::from_cookie("no-dots").is_none());
        assert!(Begun::from_cookie("a.b.!!").is_none());
    }
}
