//! OAuth 2.1 access tokens (MCP authorization): JWTs checked against the issuer's keys, and
//! opaque tokens by RFC 7662 introspection, each bound to this server's resource URI; a valid
//! token becomes a [`Caller`] by the configured rules.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::Caller;
use super::issuer::{Issuer, Lookup, Unreachable, split_origin};
use super::rules::Rules;
use crate::config::{Config, OAuthConfig};

/// Most introspection answers kept at once; past it the cache starts again empty.
const MAX_CACHED: usize = 10_000;

/// Why a token was not accepted: the metrics' `outcome` label, and what the client is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Malformed, badly signed, or signed with an algorithm not accepted.
    Invalid,
    Expired,
    NotYetValid,
    WrongIssuer,
    /// Minted for another resource (or for none): never passed through.
    WrongAudience,
    /// Signed with a key the issuer does not publish.
    UnknownKey,
    /// Introspection says the token is not active.
    Inactive,
    /// The authorization server could not be asked.
    Unavailable,
}

impl Refusal {
    pub(crate) const ALL: [Self; 8] = [
        Self::Invalid,
        Self::Expired,
        Self::NotYetValid,
        Self::WrongIssuer,
        Self::WrongAudience,
        Self::UnknownKey,
        Self::Inactive,
        Self::Unavailable,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Invalid => "invalid",
            Self::Expired => "expired",
            Self::NotYetValid => "not_yet_valid",
            Self::WrongIssuer => "wrong_issuer",
            Self::WrongAudience => "wrong_audience",
            Self::UnknownKey => "unknown_key",
            Self::Inactive => "inactive",
            Self::Unavailable => "unavailable",
        }
    }

    /// The `error_description` of the challenge.
    pub(crate) fn description(self) -> &'static str {
        match self {
            Self::Invalid => "the access token is malformed or its signature is not valid",
            Self::Expired => "the access token has expired",
            Self::NotYetValid => "the access token is not valid yet",
            Self::WrongIssuer => "the access token was issued by another authorization server",
            Self::WrongAudience => "the access token was not issued for this resource",
            Self::UnknownKey => "the access token is signed with a key the issuer does not publish",
            Self::Inactive => "the access token is not active",
            Self::Unavailable => "the authorization server cannot be reached to check the token",
        }
    }
}

/// This server as an OAuth protected resource.
pub(crate) struct OAuth {
    /// The canonical resource URI: the audience every token must carry.
    pub(crate) resource: String,
    /// Where the protected-resource metadata is served (RFC 9728), for challenges.
    pub(crate) metadata_url: String,
    pub(super) issuer: Issuer,
    algorithms: Vec<Algorithm>,
    leeway: u64,
    introspection: Option<Introspection>,
    rules: Rules,
}

/// An active introspection answer and until when it is reused.
type Introspected = (Instant, Map<String, Value>);

struct Introspection {
    /// `client_id:client_secret`, base64, for HTTP Basic.
    basic: String,
    cache_for: Duration,
    /// Active answers by the token's SHA-256, until they are to be asked again.
    cache: Mutex<HashMap<[u8; 32], Introspected>>,
}

impl OAuth {
    /// The resource server `config` describes, when OAuth is configured.
    pub(crate) fn new(config: &Config) -> Option<Self> {
        let oauth: &OAuthConfig = &config.auth.oauth;
        if !oauth.is_enabled() {
            return None;
        }
        let public = public_base(config);
        let resource = oauth.resource_uri(&public, &config.server.mcp_path);
        let metadata_url = metadata_url(&resource);
        Some(Self {
            metadata_url,
            resource,
            issuer: Issuer::new(
                &oauth.issuer,
                Duration::from_secs(oauth.jwks_cache_secs),
                Duration::from_secs(oauth.jwks_refresh_cooldown_secs),
            ),
            algorithms: oauth
                .algorithms
                .iter()
                .filter_map(|a| a.parse().ok())
                .collect(),
            leeway: oauth.leeway_secs,
            introspection: (!oauth.introspection_client_id.is_empty()).then(|| Introspection {
                basic: base64::engine::general_purpose::STANDARD.encode(format!(
                    "{}:{}",
                    form_encode(&oauth.introspection_client_id),
                    form_encode(&oauth.introspection_client_secret)
                )),
                cache_for: Duration::from_secs(oauth.introspection_cache_secs),
                cache: Mutex::new(HashMap::new()),
            }),
            rules: Rules::new(oauth.effective_rules(), &oauth.name_claim),
        })
    }

    pub(crate) fn issuer(&self) -> &str {
        self.issuer.issuer()
    }

    /// The caller a presented access token names, or why it names no one.
    pub(crate) async fn caller(&self, token: &str) -> Result<Caller, Refusal> {
        let claims = if token.split('.').count() == 3 {
            self.check_jwt(token).await?
        } else if self.introspection.is_some() {
            self.introspect(token).await?
        } else {
            return Err(Refusal::Invalid);
        };
        Ok(self.rules.caller(&claims))
    }

    async fn check_jwt(&self, token: &str) -> Result<Map<String, Value>, Refusal> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refusal::Invalid)?;
        // The allow-list first: `none` and HMAC never reach a key.
        if !self.algorithms.contains(&header.alg) {
            return Err(Refusal::Invalid);
        }
        let key = match self.issuer.key(header.kid.as_deref()).await {
            Ok(Lookup::Found(key)) => key,
            Ok(Lookup::Unknown) => return Err(Refusal::UnknownKey),
            Err(Unreachable(error)) => {
                tracing::warn!(%error, "cannot check an access token");
                return Err(Refusal::Unavailable);
            }
        };
        if key.algorithm.is_some_and(|pinned| pinned != header.alg) {
            return Err(Refusal::Invalid);
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        validation.set_issuer(&[self.issuer()]);
        validation.set_audience(&[&self.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|e| match e.kind() {
                ErrorKind::ExpiredSignature => Refusal::Expired,
                ErrorKind::ImmatureSignature => Refusal::NotYetValid,
                ErrorKind::InvalidIssuer => Refusal::WrongIssuer,
                ErrorKind::InvalidAudience => Refusal::WrongAudience,
                ErrorKind::MissingRequiredClaim(claim) if claim == "aud" => Refusal::WrongAudience,
                ErrorKind::MissingRequiredClaim(claim) if claim == "iss" => Refusal::WrongIssuer,
                _ => Refusal::Invalid,
            })?;
        Ok(data.claims)
    }

    /// RFC 7662: asks the issuer whether an opaque token is active, and for whom; an active
    /// answer is reused for a short while (never past the token's `exp`).
    async fn introspect(&self, token: &str) -> Result<Map<String, Value>, Refusal> {
        let introspection = self.introspection.as_ref().ok_or(Refusal::Invalid)?;
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some((until, claims)) = introspection.cache.lock().expect("cache lock").get(&key)
            && Instant::now() < *until
        {
            return Ok(claims.clone());
        }
        let endpoint = self.issuer.introspection_endpoint().await.map_err(|e| {
            tracing::warn!(error = %e.0, "cannot introspect an access token");
            Refusal::Unavailable
        })?;
        let answer = self
            .issuer
            .post_form(
                &endpoint,
                &[("token", token), ("token_type_hint", "access_token")],
                Some(&introspection.basic),
            )
            .await
            .map_err(|e| {
                tracing::warn!(error = %e.0, "cannot introspect an access token");
                Refusal::Unavailable
            })?;
        let claims: Map<String, Value> =
            serde_json::from_slice(&answer).map_err(|_| Refusal::Unavailable)?;
        self.check_introspected(&claims)?;
        let now_unix = jsonwebtoken::get_current_timestamp();
        let lifetime = claims
            .get("exp")
            .and_then(Value::as_u64)
            .map_or(introspection.cache_for, |exp| {
                Duration::from_secs(exp.saturating_sub(now_unix))
            });
        let until = Instant::now() + introspection.cache_for.min(lifetime);
        let mut cache = introspection.cache.lock().expect("cache lock");
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(key, (until, claims.clone()));
        Ok(claims)
    }

    /// An introspection answer names an active token of this issuer, for this resource, in
    /// its lifetime.
    fn check_introspected(&self, claims: &Map<String, Value>) -> Result<(), Refusal> {
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(Refusal::Inactive);
        }
        if claims
            .get("iss")
            .is_some_and(|iss| iss.as_str() != Some(self.issuer()))
        {
            return Err(Refusal::WrongIssuer);
        }
        let for_us = match claims.get("aud") {
            Some(Value::String(aud)) => aud == &self.resource,
            Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(&self.resource)),
            _ => false,
        };
        if !for_us {
            return Err(Refusal::WrongAudience);
        }
        let now = jsonwebtoken::get_current_timestamp();
        if claims
            .get("exp")
            .and_then(Value::as_u64)
            .is_some_and(|exp| exp + self.leeway <= now)
        {
            return Err(Refusal::Expired);
        }
        if claims
            .get("nbf")
            .and_then(Value::as_u64)
            .is_some_and(|nbf| nbf > now + self.leeway)
        {
            return Err(Refusal::NotYetValid);
        }
        Ok(())
    }
}

/// The server's public origin, in the lower case clients derive (validation makes OAuth
/// without one, or without an explicit resource, a configuration error).
fn public_base(config: &Config) -> String {
    config
        .server
        .public_origin()
        .map(|origin| origin.origin)
        .unwrap_or_default()
}

/// RFC 9728 §3.1: the well-known name goes between the resource's host and its path.
pub(crate) fn metadata_url(resource: &str) -> String {
    let (origin, path) = split_origin(resource);
    format!("{origin}/.well-known/oauth-protected-resource{path}")
}

/// RFC 6749 §2.3.1: client credentials are form-encoded before HTTP Basic.
pub(super) fn form_encode(text: &str) -> String {
    serde_urlencoded::to_string([("", text)])
        .map(|s| s[1..].to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_the_metadata_url_puts_the_well_known_name_before_the_path() {
        assert_eq!(
            metadata_url("https://m.example.com/mcp"),
            "https://m.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
        assert_eq!(form_encode("a b:c"), "a+b%3Ac");
    }
}
