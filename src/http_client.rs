//! The outbound HTTP(S) client `push` and the OAuth key fetches share: the system's
//! certificates (else the bundled Mozilla roots), HTTP/1, a bounded connect time.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A pooled client for http:// and https:// URLs.
pub(crate) type Https = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A client whose connections give up after `connect_timeout`.
pub(crate) fn https(connect_timeout: Duration) -> Https {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(connect_timeout));
    connector.set_nodelay(true);
    connector.enforce_http(false);
    // The system's certificates (for a company CA), else the bundled Mozilla roots.
    let tls = match hyper_rustls::HttpsConnectorBuilder::new().with_native_roots() {
        Ok(builder) => builder,
        Err(_) => hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots(),
    };
    let https = tls.https_or_http().enable_http1().wrap_connector(connector);
    Client::builder(TokioExecutor::new()).build(https)
}
