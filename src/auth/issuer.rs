//! The authorization server as this resource server sees it: its metadata (OpenID or RFC 8414
//! discovery) and its signing keys (JWKS), fetched lazily, cached, and fetched again when a
//! token names an unknown key, at most once per cooldown and one fetch at a time.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use axum::http::{Method, Request, header};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use jsonwebtoken::jwk::{Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;

use crate::http_client::Https;

/// Longest wait for the authorization server's answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest metadata, key set or introspection answer read.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Why the authorization server could not be asked.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Unreachable(pub(crate) String);

/// The parts of the server's metadata used here.
#[derive(Debug, Clone, Deserialize)]
struct Metadata {
    issuer: String,
    jwks_uri: Option<String>,
    introspection_endpoint: Option<String>,
    authorization_endpoint: Option<String>,
    token_endpoint: Option<String>,
}

/// A verification key and the algorithm its JWK pins, if any.
pub(crate) struct Key {
    pub(crate) key: DecodingKey,
    pub(crate) algorithm: Option<Algorithm>,
}

/// The keys and endpoints of one fetch.
#[derive(Default)]
struct Known {
    by_kid: HashMap<String, Arc<Key>>,
    /// Keys without a `kid`: used only when the token names none and one key fits.
    unnamed: Vec<Arc<Key>>,
    introspection_endpoint: Option<String>,
    /// Where people sign in, and where a code is redeemed (the web pages' sign-in).
    authorization_endpoint: Option<String>,
    token_endpoint: Option<String>,
    fetched: Option<Instant>,
}

/// Talks to the authorization server at `issuer`.
pub(crate) struct Issuer {
    issuer: String,
    http: Https,
    cache_for: Duration,
    cooldown: Duration,
    known: RwLock<Arc<Known>>,
    /// Held while fetching, so concurrent requests wait for one fetch; holds its start.
    fetching: tokio::sync::Mutex<Option<Instant>>,
}

/// What looking up a token's key found.
pub(crate) enum Lookup {
    Found(Arc<Key>),
    Unknown,
}

impl Issuer {
    pub(crate) fn new(issuer: &str, cache_for: Duration, cooldown: Duration) -> Self {
        Self {
            issuer: issuer.to_owned(),
            http: crate::http_client::https(FETCH_TIMEOUT),
            cache_for,
            cooldown,
            known: RwLock::new(Arc::new(Known::default())),
            fetching: tokio::sync::Mutex::new(None),
        }
    }

    pub(crate) fn issuer(&self) -> &str {
        &self.issuer
    }

    fn known(&self) -> Arc<Known> {
        self.known.read().expect("keys lock").clone()
    }

    /// The key a token with `kid` is verified with: the cached keys while fresh, else (or when
    /// the key is unknown) the server's keys fetched again, if the cooldown allows.
    pub(crate) async fn key(&self, kid: Option<&str>) -> Result<Lookup, Unreachable> {
        let known = self.known();
        let fresh = known
            .fetched
            .is_some_and(|at| at.elapsed() < self.cache_for);
        if fresh && let Some(key) = find(&known, kid) {
            return Ok(Lookup::Found(key));
        }
        let known = self.refresh().await?;
        Ok(find(&known, kid).map_or(Lookup::Unknown, Lookup::Found))
    }

    /// The introspection endpoint the server's metadata names.
    pub(crate) async fn introspection_endpoint(&self) -> Result<String, Unreachable> {
        self.endpoint("introspection_endpoint", |k| &k.introspection_endpoint)
            .await
    }

    /// The authorization endpoint the server's metadata names.
    pub(crate) async fn authorization_endpoint(&self) -> Result<String, Unreachable> {
        self.endpoint("authorization_endpoint", |k| &k.authorization_endpoint)
            .await
    }

    /// The token endpoint the server's metadata names.
    pub(crate) async fn token_endpoint(&self) -> Result<String, Unreachable> {
        self.endpoint("token_endpoint", |k| &k.token_endpoint).await
    }

    /// An endpoint of the server's metadata (named `name` there), fetched once if need be.
    async fn endpoint(
        &self,
        name: &str,
        pick: impl Fn(&Known) -> &Option<String>,
    ) -> Result<String, Unreachable> {
        let mut known = self.known();
        if known.fetched.is_none() {
            known = self.refresh().await?;
        }
        pick(&known).clone().ok_or_else(|| {
            Unreachable(format!(
                "the authorization server {} names no {name}",
                self.issuer
            ))
        })
    }

    /// Fetches metadata and keys again, unless another request just did or the cooldown has
    /// not passed; a failed fetch keeps the keys known before.
    async fn refresh(&self) -> Result<Arc<Known>, Unreachable> {
        let mut last = self.fetching.lock().await;
        let known = self.known();
        if last.is_some_and(|at| at.elapsed() < self.cooldown) {
            // Fetched a moment ago (perhaps by the request this one waited for).
            return if known.fetched.is_some() {
                Ok(known)
            } else {
                Err(Unreachable(format!(
                    "the authorization server {} could not be reached; trying again shortly",
                    self.issuer
                )))
            };
        }
        *last = Some(Instant::now());
        match self.fetch().await {
            Ok(fetched) => {
                let fetched = Arc::new(fetched);
                *self.known.write().expect("keys lock") = fetched.clone();
                tracing::debug!(
                    keys = fetched.by_kid.len() + fetched.unnamed.len(),
                    "fetched the authorization server's keys"
                );
                Ok(fetched)
            }
            Err(error) => {
                tracing::warn!(issuer = %self.issuer, %error, "cannot fetch the authorization server's keys");
                if known.fetched.is_some() {
                    Ok(known)
                } else {
                    Err(error)
                }
            }
        }
    }

    async fn fetch(&self) -> Result<Known, Unreachable> {
        let metadata = self.metadata().await?;
        let jwks_uri = metadata.jwks_uri.ok_or_else(|| {
            Unreachable(format!(
                "the authorization server {} names no jwks_uri",
                self.issuer
            ))
        })?;
        let set: JwkSetLoose = serde_json::from_slice(&self.get(&jwks_uri).await?)
            .map_err(|e| Unreachable(format!("{jwks_uri} is not a JWK set: {e}")))?;
        let mut known = Known {
            introspection_endpoint: metadata.introspection_endpoint,
            authorization_endpoint: metadata.authorization_endpoint,
            token_endpoint: metadata.token_endpoint,
            fetched: Some(Instant::now()),
            ..Known::default()
        };
        // A key this library cannot read (another key type, an encryption key) is skipped,
        // not fatal: the set may serve other purposes too.
        for value in set.keys {
            let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
                continue;
            };
            if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
                continue;
            }
            let Ok(key) = DecodingKey::from_jwk(&jwk) else {
                continue;
            };
            let key = Arc::new(Key {
                key,
                algorithm: jwk.common.key_algorithm.and_then(signing_algorithm),
            });
            match jwk.common.key_id {
                Some(kid) => {
                    known.by_kid.insert(kid, key);
                }
                None => known.unnamed.push(key),
            }
        }
        Ok(known)
    }

    /// The server's metadata: OpenID discovery, else RFC 8414's well-known URI (with the
    /// issuer's path after it); its `issuer` must be the configured one (RFC 8414 §3.3).
    async fn metadata(&self) -> Result<Metadata, Unreachable> {
        let base = self.issuer.trim_end_matches('/');
        let (origin, path) = split_origin(base);
        let candidates = [
            format!("{base}/.well-known/openid-configuration"),
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
        ];
        let mut failure = None;
        for url in candidates {
            match self.get(&url).await {
                Ok(body) => {
                    let metadata: Metadata = serde_json::from_slice(&body)
                        .map_err(|e| Unreachable(format!("{url} is not server metadata: {e}")))?;
                    if metadata.issuer != self.issuer {
                        return Err(Unreachable(format!(
                            "{url} names the issuer {:?}, not the configured {:?}",
                            metadata.issuer, self.issuer
                        )));
                    }
                    return Ok(metadata);
                }
                Err(error) => failure = Some(error),
            }
        }
        Err(failure.expect("two candidates"))
    }

    /// GETs `url` and returns the body of a 200.
    pub(crate) async fn get(&self, url: &str) -> Result<Bytes, Unreachable> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(url)
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|e| Unreachable(format!("{url}: {e}")))?;
        self.send(url, request).await
    }

    /// POSTs a form to `url`, with HTTP Basic client authentication when `basic` is given;
    /// returns the body of a 200.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic: Option<&str>,
    ) -> Result<Bytes, Unreachable> {
        let body = serde_urlencoded::to_string(form).map_err(|e| Unreachable(e.to_string()))?;
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(url)
            .header(header::ACCEPT, "application/json")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(basic) = basic {
            request = request.header(header::AUTHORIZATION, format!("Basic {basic}"));
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| Unreachable(format!("{url}: {e}")))?;
        self.send(url, request).await
    }

    async fn send(&self, url: &str, request: Request<Full<Bytes>>) -> Result<Bytes, Unreachable> {
        let exchange = async {
            let response = self
                .http
                .request(request)
                .await
                .map_err(|e| Unreachable(format!("{url}: {e}")))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|e| Unreachable(format!("{url}: {e}")))?
                .to_bytes();
            if !status.is_success() {
                return Err(Unreachable(format!("{url} answered {status}")));
            }
            Ok(body)
        };
        tokio::time::timeout(FETCH_TIMEOUT, exchange)
            .await
            .map_err(|_| Unreachable(format!("{url} did not answer within {FETCH_TIMEOUT:?}")))?
    }
}

/// A JWK set whose keys are read one by one.
#[derive(Deserialize)]
struct JwkSetLoose {
    keys: Vec<serde_json::Value>,
}

fn find(known: &Known, kid: Option<&str>) -> Option<Arc<Key>> {
    match kid {
        Some(kid) => known.by_kid.get(kid).cloned(),
        None if known.unnamed.len() + known.by_kid.len() == 1 => known
            .unnamed
            .first()
            .or_else(|| known.by_kid.values().next())
            .cloned(),
        None => None,
    }
}

/// The signature algorithm a JWK's `alg` names (not an encryption one).
fn signing_algorithm(alg: KeyAlgorithm) -> Option<Algorithm> {
    alg.to_string().parse().ok()
}

/// `https://host:port` and the rest of a URL (where RFC 8414 and RFC 9728 put their
/// well-known names between the two).
pub(crate) fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_rfc_8414_puts_the_well_known_part_before_the_issuers_path() {
        assert_eq!(
            split_origin("https://idp.example.com/realms/team"),
            ("https://idp.example.com", "/realms/team")
        );
        assert_eq!(
            split_origin("http://127.0.0.1:9"),
            ("http://127.0.0.1:9", "")
        );
        assert_eq!(
            signing_algorithm(KeyAlgorithm::RS256),
            Some(Algorithm::RS256)
        );
        assert_eq!(signing_algorithm(KeyAlgorithm::RSA_OAEP), None);
    }
}
