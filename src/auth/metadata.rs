//! RFC 9728 protected-resource metadata, served when OAuth is configured, and the
//! authentication metrics a server exports from its start.

use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;

use super::oauth::{OAuth, Refusal, metadata_url};
use super::{Method, Scope};
use crate::metrics::Metrics;

/// The scopes a client may ask for; `offline_access` is the authorization server's business.
const SCOPES_SUPPORTED: [Scope; 2] = [Scope::Read, Scope::Ingest];

/// The metadata routes: at the path form for the MCP endpoint (and for the resource's own
/// path, behind a proxy that moves it), and at the root, where some clients look first.
pub(crate) fn metadata_routes<S: Clone + Send + Sync + 'static>(
    oauth: &Arc<OAuth>,
    mcp_path: &str,
) -> Router<S> {
    let document = Arc::new(json!({
        "resource": oauth.resource,
        "authorization_servers": [oauth.issuer()],
        "scopes_supported": SCOPES_SUPPORTED.map(Scope::as_str),
        "bearer_methods_supported": ["header"],
        "resource_name": "moraine-mcp",
    }));
    let handler = move || {
        let document = document.clone();
        async move {
            (
                [(header::CACHE_CONTROL, "public, max-age=300")],
                axum::Json((*document).clone()),
            )
                .into_response()
        }
    };
    let root = "/.well-known/oauth-protected-resource";
    let mut paths = vec![root.to_owned(), format!("{root}{mcp_path}")];
    let own = metadata_url(&oauth.resource);
    if let Some(path) = own.find(root).map(|i| own[i..].to_owned())
        && !paths.contains(&path)
    {
        paths.push(path);
    }
    paths.into_iter().fold(Router::new(), |router, path| {
        router.route(&path, get(handler.clone()))
    })
}

/// Exports at 0 every authentication outcome a server can count, so a rate shows from the
/// first scrape.
pub(crate) fn zero_metrics(metrics: &Metrics, static_tokens: bool, oauth: bool) {
    metrics.zero_auth(Method::None.as_str(), &["missing"]);
    if static_tokens {
        metrics.zero_auth(
            Method::Static.as_str(),
            &["accepted", "forbidden", "rejected"],
        );
    }
    if oauth {
        metrics.zero_auth(Method::OAuth.as_str(), &["accepted", "forbidden"]);
        metrics.zero_auth(Method::OAuth.as_str(), &Refusal::ALL.map(Refusal::as_str));
    }
}
