//! Which `Host` and `Origin` values the MCP endpoint accepts (protection against DNS
//! rebinding and cross-site requests), answered before the endpoint with a 403 that names the
//! setting to change: behind a proxy, agents reach the server by a name it must be told.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::config::Config;
use crate::http_error::{ErrorCode, HttpError};

/// The accepted host names (with or without a port) and origins.
#[derive(Debug, Clone)]
pub(crate) struct Allowed {
    hosts: Arc<[String]>,
    origins: Arc<[String]>,
}

impl Allowed {
    /// Loopback, the bound address, the public URL's host, and what the config adds.
    pub(crate) fn of(config: &Config, addr: SocketAddr) -> Self {
        let port = addr.port();
        let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        let mut origins: Vec<String> = vec![
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
            format!("http://[::1]:{port}"),
        ];
        if !addr.ip().is_unspecified() && !addr.ip().is_loopback() {
            origins.push(format!("http://{}", SocketAddr::new(addr.ip(), port)));
            hosts.push(addr.ip().to_string());
        }
        if let Some(public) = config.server.public_origin() {
            hosts.push(public.authority.clone());
            origins.push(public.origin);
        }
        hosts.extend(config.server.allowed_hosts.iter().cloned());
        origins.extend(config.server.allowed_origins.iter().cloned());
        Self {
            hosts: hosts.into_iter().map(|h| h.to_ascii_lowercase()).collect(),
            origins: origins
                .into_iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        }
    }

    /// The host names, as rmcp's own check takes them.
    pub(crate) fn hosts(&self) -> Vec<String> {
        self.hosts.to_vec()
    }

    /// The origins, as rmcp's own check takes them.
    pub(crate) fn origins(&self) -> Vec<String> {
        self.origins.to_vec()
    }

    /// Whether `host` (a `Host` value: name, optional port) is accepted: an entry without a
    /// port accepts the name on any port.
    fn host(&self, host: &str) -> bool {
        let Ok(uri) = format!("http://{host}").parse::<Uri>() else {
            return false;
        };
        let (Some(name), port) = (uri.host(), uri.port_u16()) else {
            return false;
        };
        let name = name.trim_matches(['[', ']']).to_ascii_lowercase();
        self.hosts.iter().any(|allowed| {
            let Ok(entry) = format!("http://{allowed}").parse::<Uri>() else {
                return false;
            };
            entry.host().map(|h| h.trim_matches(['[', ']'])) == Some(name.as_str())
                && entry.port_u16().is_none_or(|p| Some(p) == port)
        })
    }

    fn origin(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        self.origins.contains(&origin)
    }
}

/// Refuses a request to the MCP endpoint whose `Host` or `Origin` is not accepted, saying
/// which setting accepts it.
pub(crate) async fn check(
    State(allowed): State<Allowed>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(ToString::to_string));
    if let Some(host) = host
        && !allowed.host(&host)
    {
        return HttpError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::HostNotAllowed,
            format!(
                "the Host {host:?} is not one this server answers MCP on; if agents reach it \
                 by this name (a proxy in front), set server.public_url to the URL they use \
                 (or add the name to server.allowed_hosts)"
            ),
        )
        .into_response();
    }
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok())
        && !allowed.origin(origin)
    {
        return HttpError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::OriginNotAllowed,
            format!(
                "the Origin {origin:?} may not call this server; set server.public_url (or add \
                 it to server.allowed_origins) to let pages there call it"
            ),
        )
        .into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_hosts_match_by_name_and_port() {
        let allowed = Allowed {
            hosts: vec![
                "localhost".into(),
                "moraine.example.com".into(),
                "proxy:8443".into(),
            ]
            .into(),
            origins: vec!["https://moraine.example.com".into()].into(),
        };
        assert!(allowed.host("localhost:8080"));
        assert!(allowed.host("MORAINE.example.com"));
        assert!(allowed.host("proxy:8443"));
        assert!(!allowed.host("proxy:9000"));
        assert!(!allowed.host("evil.example.com"));
        assert!(!allowed.host("moraine.example.com.evil.net"));
        assert!(allowed.origin("https://moraine.example.com/"));
        assert!(!allowed.origin("https://evil.example.com"));
    }
}
