//! The `[auth.oauth]` settings: the team's authorization server, how its access tokens are
//! checked, and the rules that turn a person's claims into rights.

use serde::{Deserialize, Serialize};

use super::{ConfigError, Scope, is_source_name, positive};

/// Signature algorithms accepted by default: asymmetric only, so no shared secret can sign.
const DEFAULT_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// OAuth 2.1 resource-server settings; on when `issuer` is set.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OAuthConfig {
    /// The authorization server's issuer URL, exactly as its tokens carry it in `iss`.
    pub issuer: String,
    /// This server's canonical resource URI, the audience its tokens must carry (default:
    /// `server.public_url` followed by `server.mcp_path`).
    pub resource: String,
    /// Signature algorithms accepted (asymmetric ones only).
    pub algorithms: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway_secs: u64,
    /// How long the issuer's keys are used before they are fetched again.
    pub jwks_cache_secs: u64,
    /// Least time between two fetches of the keys, however many unknown key IDs arrive.
    pub jwks_refresh_cooldown_secs: u64,
    /// Client ID this server introspects opaque tokens with (RFC 7662); empty: JWTs only.
    pub introspection_client_id: String,
    pub introspection_client_secret: String,
    /// How long an active introspection answer is reused (never past the token's `exp`).
    pub introspection_cache_secs: u64,
    /// The claim that names the person in logs and the query log (`sub` when absent).
    pub name_claim: String,
    /// Claims to rights; none configured means the token's `read` and `ingest` scopes.
    pub rules: Vec<OAuthRule>,
}

/// One rule: when `claim` holds `value` ("*": any value), grant `scopes`, and limit reading
/// to `read_sources` ("*": every source).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthRule {
    /// A claim name, or a dotted path into nested claims (`realm_access.roles`).
    pub claim: String,
    pub value: String,
    #[serde(default)]
    pub scopes: Vec<Scope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_sources: Option<Vec<String>>,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        Self {
            issuer: String::new(),
            resource: String::new(),
            algorithms: DEFAULT_ALGORITHMS.iter().map(|a| (*a).to_owned()).collect(),
            leeway_secs: 30,
            jwks_cache_secs: 300,
            jwks_refresh_cooldown_secs: 10,
            introspection_client_id: String::new(),
            introspection_client_secret: String::new(),
            introspection_cache_secs: 30,
            name_claim: "sub".into(),
            rules: Vec::new(),
        }
    }
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("algorithms", &self.algorithms)
            .field("introspection_client_id", &self.introspection_client_id)
            .field("introspection_client_secret", &"<redacted>")
            .field("name_claim", &self.name_claim)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl OAuthRule {
    /// A rule granting `scope` to tokens whose `scope` claim holds its name.
    fn scope(scope: Scope) -> Self {
        Self {
            claim: "scope".into(),
            value: scope.as_str().into(),
            scopes: vec![scope],
            read_sources: None,
        }
    }
}

impl OAuthConfig {
    pub fn is_enabled(&self) -> bool {
        !self.issuer.is_empty()
    }

    /// The rules in force: the configured ones, else the token's scopes one to one.
    pub fn effective_rules(&self) -> Vec<OAuthRule> {
        if self.rules.is_empty() {
            vec![
                OAuthRule::scope(Scope::Read),
                OAuthRule::scope(Scope::Ingest),
            ]
        } else {
            self.rules.clone()
        }
    }

    /// The resource URI tokens must be minted for, given the server's public URL and MCP path.
    pub fn resource_uri(&self, public_url: &str, mcp_path: &str) -> String {
        if self.resource.is_empty() {
            format!("{}{mcp_path}", public_url.trim_end_matches('/'))
        } else {
            self.resource.clone()
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !self.is_enabled() {
            return Ok(());
        }
        let invalid = |key: &str, message: String| {
            Err(ConfigError::invalid(&format!("auth.oauth.{key}"), message))
        };
        if !secure_url(&self.issuer) {
            return invalid(
                "issuer",
                format!(
                    "{:?} must be an https:// URL (http:// only on a loopback address)",
                    self.issuer
                ),
            );
        }
        if !self.resource.is_empty() && !canonical_uri(&self.resource) {
            return invalid(
                "resource",
                format!(
                    "{:?} must be an absolute http(s) URI in lower case, without a fragment \
                     or a trailing slash",
                    self.resource
                ),
            );
        }
        if self.algorithms.is_empty() {
            return invalid("algorithms", "must name at least one algorithm".into());
        }
        if let Some(bad) = self
            .algorithms
            .iter()
            .find(|a| !DEFAULT_ALGORITHMS.contains(&a.as_str()))
        {
            return invalid(
                "algorithms",
                format!(
                    "{bad:?} is not accepted: choose among {}",
                    DEFAULT_ALGORITHMS.join(", ")
                ),
            );
        }
        if self.leeway_secs > 300 {
            return invalid("leeway_secs", "must be at most 300".into());
        }
        positive("auth.oauth.jwks_cache_secs", self.jwks_cache_secs)?;
        positive(
            "auth.oauth.jwks_refresh_cooldown_secs",
            self.jwks_refresh_cooldown_secs,
        )?;
        if self.introspection_client_id.is_empty() != self.introspection_client_secret.is_empty() {
            return invalid(
                "introspection_client_secret",
                "introspection needs both a client ID and its secret".into(),
            );
        }
        positive(
            "auth.oauth.introspection_cache_secs",
            self.introspection_cache_secs,
        )?;
        if self.name_claim.trim().is_empty() {
            return invalid("name_claim", "must name a claim".into());
        }
        for rule in &self.rules {
            if rule.claim.trim().is_empty() || rule.value.is_empty() {
                return invalid("rules", "every rule needs a claim and a value".into());
            }
            if rule.scopes.is_empty() && rule.read_sources.is_none() {
                return invalid(
                    "rules",
                    format!(
                        "the rule for {} = {:?} grants nothing (scopes or read_sources)",
                        rule.claim, rule.value
                    ),
                );
            }
            if let Some(bad) = rule
                .read_sources
                .iter()
                .flatten()
                .find(|s| !is_source_name(s))
            {
                return invalid(
                    "rules",
                    format!("{bad:?} is not a source name (1-128 characters, not blank)"),
                );
            }
        }
        Ok(())
    }
}

/// An https URL, or an http one on loopback (a provider on the same machine).
fn secure_url(url: &str) -> bool {
    let Ok(uri) = url.parse::<axum::http::Uri>() else {
        return false;
    };
    let Some(host) = uri.host() else {
        return false;
    };
    match uri.scheme_str() {
        Some("https") => true,
        Some("http") => {
            host == "localhost"
                || host
                    .trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

/// RFC 8707 §2: an absolute URI without a fragment; MCP asks for the lower-case form clients
/// derive from the URL they are given, without a trailing slash.
fn canonical_uri(uri: &str) -> bool {
    let parsed = uri.parse::<axum::http::Uri>();
    parsed.is_ok_and(|u| {
        matches!(u.scheme_str(), Some("http" | "https"))
            && u.host().is_some_and(|h| h == h.to_ascii_lowercase())
    }) && !uri.contains('#')
        && !uri.ends_with('/')
        && uri.starts_with(&uri[..uri.find("://").unwrap_or(0)].to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled() -> OAuthConfig {
        OAuthConfig {
            issuer: "https://idp.example.com/realms/team".into(),
            ..OAuthConfig::default()
        }
    }

    #[test]
    fn test_issuers_are_https_or_loopback_and_resources_canonical() {
        assert!(enabled().validate().is_ok());
        for issuer in ["http://idp.example.com", "ftp://x", "idp.example.com"] {
            let config = OAuthConfig {
                issuer: issuer.into(),
                ..enabled()
            };
            assert!(config.validate().is_err(), "{issuer}");
        }
        for issuer in [
            "http://127.0.0.1:9000",
            "http://localhost:9000/x",
            "http://[::1]:1",
        ] {
            let config = OAuthConfig {
                issuer: issuer.into(),
                ..enabled()
            };
            assert!(config.validate().is_ok(), "{issuer}");
        }
        for resource in [
            "https://Mcp.example.com/mcp",
            "https://m.example.com/mcp/",
            "https://m.example.com/mcp#x",
        ] {
            let config = OAuthConfig {
                resource: resource.into(),
                ..enabled()
            };
            assert!(config.validate().is_err(), "{resource}");
        }
        assert_eq!(
            enabled().resource_uri("https://m.example.com/", "/mcp"),
            "https://m.example.com/mcp"
        );
    }

    #[test]
    fn test_symmetric_algorithms_and_empty_rules_are_refused() {
        let hs = OAuthConfig {
            algorithms: vec!["HS256".into()],
            ..enabled()
        };
        assert!(hs.validate().unwrap_err().to_string().contains("HS256"));
        let idle = OAuthConfig {
            rules: vec![OAuthRule {
                claim: "groups".into(),
                value: "x".into(),
                scopes: vec![],
                read_sources: None,
            }],
            ..enabled()
        };
        assert!(idle.validate().is_err());
        assert_eq!(enabled().effective_rules().len(), 2);
        assert!(
            !format!(
                "{:?}",
                OAuthConfig {
                    introspection_client_secret: "s3cret".into(),
                    ..enabled()
                }
            )
            .contains("s3cret")
        );
    }
}
