//! Who is looking at a page: the caller a sign-in names, its credential checked again on every
//! page (a revoked token or an expired access token ends the sign-in at once), or anyone on a
//! server that asks for no credential.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;

use super::Web;
use super::layout;
use super::signin::{self, COOKIE};
use crate::auth::Caller;
use crate::config::Scope;

/// The person a page is for.
pub(super) struct Person {
    pub caller: Caller,
    /// The CSRF token of the sign-in's forms; `None` on an open server (nothing to sign out).
    pub csrf: Option<String>,
}

impl Person {
    /// The page's view of who is signed in (nobody on an open server).
    pub(super) fn signed_in(&self) -> layout::SignedIn<'_> {
        self.csrf
            .as_deref()
            .map(|csrf| (self.caller.name.as_str(), csrf))
    }
}

impl FromRequestParts<Web> for Person {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, web: &Web) -> Result<Self, Response> {
        if web.auth.is_open() {
            return Ok(Self {
                caller: Caller::anonymous(),
                csrf: None,
            });
        }
        let here = parts
            .uri
            .path_and_query()
            .map_or("/ui/", |p| p.as_str())
            .to_owned();
        let Some(id) = signin::cookie(&parts.headers, COOKIE) else {
            return Err(signin::redirect_to_sign_in(&here, None));
        };
        let Some(held) = web.signins.touch(id) else {
            return Err(signin::redirect_to_sign_in(&here, Some("ended")));
        };
        match web.auth.identify(&held.credential).await {
            Ok(caller) if caller.may(Scope::Read) => {
                web.auth.accepted(&caller);
                Ok(Self {
                    caller,
                    csrf: Some(held.csrf),
                })
            }
            Ok(_) => {
                web.signins.end(id);
                Err(signin::redirect_to_sign_in(&here, Some("ended")))
            }
            Err(refusal) if refusal.status() == StatusCode::SERVICE_UNAVAILABLE => {
                Err(layout::error_page(
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    "the authorization server cannot be reached to check your sign-in; try again shortly",
                ))
            }
            Err(_) => {
                web.signins.end(id);
                Err(signin::redirect_to_sign_in(&here, Some("ended")))
            }
        }
    }
}
