//! This server as a client of its own authorization server, for people signing in to the web
//! pages: the authorization-code flow with PKCE (S256) and the resource indicator, so that the
//! access token it yields is one for this server, checked like any other.

use base64::Engine as _;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::OAuth;
use super::issuer::Unreachable;
use super::oauth::form_encode;

/// The web pages' registration at the authorization server.
pub(crate) struct WebClient {
    pub(crate) id: String,
    /// Empty for a public client (PKCE alone); else sent with HTTP Basic.
    pub(crate) secret: String,
    pub(crate) scope: String,
}

/// The token endpoint's answer (RFC 6749 §5.1), the parts used.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    token_type: String,
}

/// The S256 code challenge of a PKCE verifier (RFC 7636 §4.2).
pub(crate) fn code_challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

impl OAuth {
    /// Where to send a person to sign in as `client`, coming back to `redirect_uri` with
    /// `state`; `verifier` is the PKCE secret the code will be redeemed with.
    pub(crate) async fn authorization_url(
        &self,
        client: &WebClient,
        redirect_uri: &str,
        state: &str,
        verifier: &str,
    ) -> Result<String, Unreachable> {
        let endpoint = self.issuer.authorization_endpoint().await?;
        let challenge = code_challenge(verifier);
        let query = serde_urlencoded::to_string([
            ("response_type", "code"),
            ("client_id", client.id.as_str()),
            ("redirect_uri", redirect_uri),
            ("scope", client.scope.as_str()),
            ("state", state),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", self.resource.as_str()),
        ])
        .map_err(|e| Unreachable(e.to_string()))?;
        let joiner = if endpoint.contains('?') { '&' } else { '?' };
        Ok(format!("{endpoint}{joiner}{query}"))
    }

    /// Redeems an authorization code for an access token to this server's resource.
    pub(crate) async fn redeem(
        &self,
        client: &WebClient,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<String, Unreachable> {
        let endpoint = self.issuer.token_endpoint().await?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
            ("resource", self.resource.as_str()),
        ];
        let basic = (!client.secret.is_empty()).then(|| {
            base64::engine::general_purpose::STANDARD.encode(format!(
                "{}:{}",
                form_encode(&client.id),
                form_encode(&client.secret)
            ))
        });
        if basic.is_none() {
            form.push(("client_id", client.id.as_str()));
        }
        let body = self
            .issuer
            .post_form(&endpoint, &form, basic.as_deref())
            .await?;
        let answer: TokenAnswer = serde_json::from_slice(&body)
            .map_err(|e| Unreachable(format!("{endpoint} did not answer with a token: {e}")))?;
        if !answer.token_type.eq_ignore_ascii_case("bearer") {
            return Err(Unreachable(format!(
                "{endpoint} issued a {:?} token, not a bearer token",
                answer.token_type
            )));
        }
        Ok(answer.access_token)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn test_the_code_challenge_is_rfc_7636s() {
        // RFC 7636 appendix B.
        assert_eq!(
            super::code_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
