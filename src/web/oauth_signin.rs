//! Signing in to the pages at the authorization server, when OAuth is configured and the pages
//! have a client there: the authorization-code flow with PKCE, its `state` bound to the browser
//! by a cookie, and the access token it yields (for this server's resource, checked as any
//! other) held as the sign-in's credential.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::Web;
use super::layout::{self, Nav};
use super::signin::{self, COOKIE};
use crate::config::Scope;

/// The cookie that carries a sign-in's `state` to the callback. `Lax`: the authorization
/// server sends the person back with a top-level navigation from its own site.
const STATE_COOKIE: &str = "moraine_oauth";
/// How long a person may take at the authorization server.
const PENDING_FOR: Duration = Duration::from_secs(600);
/// Sign-ins under way at most (the oldest is dropped beyond).
const MAX_PENDING: usize = 10_000;

/// Sign-ins under way: the PKCE verifier and the page to return to, by `state`.
#[derive(Default)]
pub(super) struct Pending {
    held: Mutex<HashMap<String, Begun>>,
}

struct Begun {
    verifier: String,
    next: String,
    at: Instant,
}

impl Pending {
    fn put(&self, state: String, begun: Begun) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|_, b| b.at.elapsed() < PENDING_FOR);
        if held.len() >= MAX_PENDING
            && let Some(oldest) = held
                .iter()
                .min_by_key(|(_, b)| b.at)
                .map(|(s, _)| s.clone())
        {
            held.remove(&oldest);
        }
        held.insert(state, begun);
    }

    /// The sign-in `state` began, once: a `state` is never redeemed twice.
    fn take(&self, state: &str) -> Option<Begun> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.remove(state).filter(|b| b.at.elapsed() < PENDING_FOR)
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
    let (Some(oauth), Some(client)) = (web.auth.oauth.clone(), web.oauth_client.clone()) else {
        return layout::error_page(
            StatusCode::NOT_FOUND,
            None,
            "this server signs people in with a token only",
        );
    };
    let (Ok(state), Ok(verifier)) = (signin::random_hex(), signin::random_hex()) else {
        return layout::error_page(
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            "no randomness available",
        );
    };
    let back = redirect_uri(&web, &headers);
    let url = match oauth
        .authorization_url(&client, &back, &state, &verifier)
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
    let next = signin::safe_next(query.next.as_deref()).to_owned();
    web.pending.put(
        state.clone(),
        Begun {
            verifier,
            next,
            at: Instant::now(),
        },
    );
    let mut response = Redirect::to(&url).into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        signin::cookie_header(
            &web,
            STATE_COOKIE,
            &state,
            "/ui/signin",
            "Lax",
            Some(PENDING_FOR.as_secs()),
        ),
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
    let (Some(oauth), Some(client)) = (web.auth.oauth.clone(), web.oauth_client.clone()) else {
        return layout::error_page(
            StatusCode::NOT_FOUND,
            None,
            "this server signs people in with a token only",
        );
    };
    let state = query.state.unwrap_or_default();
    let ours = signin::cookie(&headers, STATE_COOKIE).unwrap_or("");
    // The state must be the one this browser was sent away with, and still pending.
    let begun = (!state.is_empty() && bool::from(state.as_bytes().ct_eq(ours.as_bytes())))
        .then(|| web.pending.take(&state))
        .flatten();
    let Some(begun) = begun else {
        return layout::error_page(
            StatusCode::BAD_REQUEST,
            None,
            "this sign-in was not started in this browser, or took too long: sign in again",
        );
    };
    if let Some(error) = query.error {
        tracing::info!(%error, "the authorization server refused a sign-in");
        return signin::redirect_to_sign_in(&begun.next, Some("refused"));
    }
    let Some(code) = query.code else {
        return signin::redirect_to_sign_in(&begun.next, Some("refused"));
    };
    let back = redirect_uri(&web, &headers);
    let token = match oauth.redeem(&client, &code, &begun.verifier, &back).await {
        Ok(token) => token,
        Err(error) => {
            tracing::warn!(error = %error.0, "cannot redeem a sign-in's code");
            return layout::error_page(
                StatusCode::BAD_GATEWAY,
                None,
                "the authorization server did not give an access token for this server",
            );
        }
    };
    let Ok(caller) = web.auth.identify(&token).await else {
        return signin::redirect_to_sign_in(&begun.next, Some("refused"));
    };
    if !caller.may(Scope::Read) {
        return signin::redirect_to_sign_in(&begun.next, Some("no_read"));
    }
    let Ok((id, _)) = web.signins.start(token) else {
        return layout::error_page(
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            "no randomness available",
        );
    };
    tracing::info!(caller = %caller.name, "signed in to the web pages through the authorization server");
    // A page rather than a redirect: the browser arrived from the authorization server's site,
    // and a SameSite=Strict cookie is sent only once it navigates from this one.
    let next = begun.next;
    let body = html! {
        h1 { "Signed in" }
        p { "Signed in as " strong { (caller.name) } ". " a #continue href=(next) { "Continue" } }
    };
    let mut response = layout::page("Signed in", None, Nav::None, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::REFRESH,
        axum::http::HeaderValue::from_str(&format!("0; url={next}"))
            .unwrap_or(axum::http::HeaderValue::from_static("0; url=/ui/")),
    );
    headers.append(header::SET_COOKIE, signin::set_cookie(&web, COOKIE, &id));
    headers.append(
        header::SET_COOKIE,
        signin::cookie_header(&web, STATE_COOKIE, "", "/ui/signin", "Lax", None),
    );
    response
}
