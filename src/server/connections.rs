//! The connection loop: HTTP/1.1 connections accepted up to a limit, each bounded by a header
//! timeout (which is also the idle keep-alive timeout), and drained gracefully on shutdown.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

/// File descriptors kept free for everything but client connections (ClickHouse, logs, files).
const RESERVED_FDS: u64 = 128;

/// How connections are bounded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    /// Open connections at most; further clients wait in the listen backlog.
    pub(crate) max_connections: usize,
    /// Open connections of one client address at most: more are closed as they come, so one
    /// client cannot hold every slot.
    pub(crate) max_per_client: usize,
    /// Time to send a request's header, from connecting or from the previous response.
    pub(crate) header_timeout: Duration,
    /// Longest a response may wait to be sent: a client that stops reading is disconnected.
    pub(crate) write_timeout: Duration,
    /// How long in-flight requests may finish after shutdown begins.
    pub(crate) grace: Duration,
}

/// Open connections per client address.
#[derive(Debug, Default)]
struct PerClient {
    open: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>,
}

impl PerClient {
    /// Counts a connection from `ip`, or `None` when that client has `max` open already.
    fn enter(self: &Arc<Self>, ip: std::net::IpAddr, max: usize) -> Option<ClientSlot> {
        let mut open = self.open.lock().expect("per-client counts");
        let count = open.entry(ip).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(ClientSlot {
            clients: self.clone(),
            ip,
        })
    }
}

/// One counted connection; uncounted when dropped.
struct ClientSlot {
    clients: Arc<PerClient>,
    ip: std::net::IpAddr,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self.clients.open.lock().expect("per-client counts");
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Serves `app` on `listener` until `shutdown` is cancelled, then lets in-flight requests
/// finish for `limits.grace`; idle connections close at once.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: CancellationToken,
    limits: ConnectionLimits,
) -> io::Result<()> {
    let max_connections = limits.max_connections.min(open_files_budget());
    let slots = Arc::new(Semaphore::new(max_connections));
    let clients = Arc::new(PerClient::default());
    let mut refused_clients = 0u64;
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = shutdown.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    pause_after_accept_error(&error).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let Some(client) = clients.enter(peer.ip(), limits.max_per_client) else {
            // Closed at once: its slot goes to the next client in the backlog.
            refused_clients += 1;
            if refused_clients.is_power_of_two() {
                tracing::warn!(client = %peer.ip(), refused = refused_clients, "a client holds as many connections as one may; closing its others");
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let stream = super::stall::WriteDeadline::new(stream, limits.write_timeout);
        let service = TowerToHyperService::new(
            app.clone()
                .map_request(|request: Request<Incoming>| request.map(Body::new)),
        );
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            // Errors here are the client's (reset, timeout, malformed request): nothing to report.
            let _ = connection.await;
            drop((slot, client));
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            grace_secs = limits.grace.as_secs(),
            "in-flight requests did not finish in time; stopping anyway"
        );
    }
    Ok(())
}

/// Out of file descriptors (or another resource), waiting helps; other errors are one failed
/// client's and the loop goes on at once.
async fn pause_after_accept_error(error: &io::Error) {
    let exhausted = matches!(
        error.raw_os_error(),
        Some(code) if code == nix::libc::EMFILE || code == nix::libc::ENFILE || code == nix::libc::ENOBUFS || code == nix::libc::ENOMEM
    );
    if exhausted {
        tracing::warn!(%error, "cannot accept connections; retrying in 1 s");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Raises the open-files limit to its hard limit and returns how many client connections it
/// leaves room for.
fn open_files_budget() -> usize {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return usize::MAX;
    };
    let soft = if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        hard
    } else {
        soft
    };
    usize::try_from(soft.saturating_sub(RESERVED_FDS).max(16)).unwrap_or(usize::MAX)
}
