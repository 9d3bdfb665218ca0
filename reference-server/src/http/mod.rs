//! The Streamable HTTP transport: `POST /mcp` per client message.
//!
//! hyper serves each connection (HTTP/1.1), which is where the limits on
//! header size, header count and header read time live; an axum router
//! takes it from there. Every request first passes the `Origin` check
//! (`origin.rs`). A POST is routed by era: handshake-era messages to their
//! session (`post.rs`, `sessions.rs`), stateless-era requests to the one
//! stateless session of the process (`stateless.rs`). Either way a request
//! is answered on a response stream of its own (`stream.rs`). The handlers
//! share `shared.rs` and, across both eras, `headers.rs`. The sessions
//! run the same [`Session`] as stdio: one session model, two transports.
//!
//! [`Session`]: crate::session::Session

mod headers;
mod origin;
mod post;
mod reply;
mod sessions;
mod shared;
mod stateless;
mod stream;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post as on_post;
use axum::Router;
use headers::SESSION_ID;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use origin::Origins;
use reference_wire::INVALID_REQUEST;
use sessions::Sessions;
use shared::Shared;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use stream::Delivery;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// How the HTTP server runs (`--http` and the options after it).
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Where to listen; port 0 picks a free port. Loopback unless told otherwise.
    pub addr: SocketAddr,
    /// Answer each request with one `application/json` body instead of SSE.
    pub json_response: bool,
    /// Origins allowed besides the loopback ones (`--allow-origin`).
    pub allowed_origins: Vec<String>,
    /// At most this many handshake-era sessions at once.
    pub max_sessions: usize,
    /// A session unused this long, with no open stream, is ended.
    pub session_idle: Duration,
    /// A connection that has not sent a complete request head within this
    /// time is closed (slow or half-open clients).
    pub header_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            json_response: false,
            allowed_origins: Vec::new(),
            max_sessions: 64,
            session_idle: Duration::from_secs(600),
            header_timeout: Duration::from_secs(5),
        }
    }
}

/// At most this many connections are served at once; more wait to be accepted.
pub(crate) const MAX_CONNECTIONS: usize = 256;
/// The request head (request line and headers) may be at most this large.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// A request may carry at most this many headers.
const MAX_HEADERS: usize = 64;

/// Listens on `options.addr` and serves until `shutdown`. Prints exactly
/// one line, `reference-server: listening on http://IP:PORT/mcp`, on stderr
/// once the socket is bound.
pub(crate) async fn serve(
    options: HttpOptions,
    verbose: bool,
    shutdown: &CancellationToken,
) -> io::Result<()> {
    let listener = TcpListener::bind(options.addr).await.map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot listen on {} ({e}); pick another address or port",
                options.addr
            ),
        )
    })?;
    let local = listener.local_addr()?;
    eprintln!("reference-server: listening on http://{local}/mcp");
    let delivery = if options.json_response {
        Delivery::Json
    } else {
        Delivery::Sse
    };
    let sessions = Sessions::new(options.max_sessions, options.session_idle, verbose);
    let shared = Arc::new(Shared::new(delivery, sessions, verbose));
    let origins = Arc::new(Origins::new(&options.allowed_origins));
    let app = router(Arc::clone(&shared), origins);
    let reaper = tokio::spawn(reap_idle_sessions(Arc::clone(&shared)));
    let mut connection = http1::Builder::new();
    connection
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_timeout)
        .max_buf_size(MAX_HEAD_BYTES.max(8192))
        .max_headers(MAX_HEADERS)
        .keep_alive(true);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let slot = tokio::select! {
            () = shutdown.cancelled() => break,
            slot = Arc::clone(&slots).acquire_owned() => slot,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let socket = match accepted {
            Ok((socket, _peer)) => socket,
            Err(e) => {
                // Out of descriptors, or a connection reset before accept:
                // wait a moment rather than spin, then go on.
                if verbose {
                    eprintln!("reference-server: accept failed ({e})");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = TowerToHyperService::new(app.clone());
        let connection = connection.serve_connection(TokioIo::new(socket), service);
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _slot = slot;
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = shutdown.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(1), connection).await;
                }
            }
        });
    }
    reaper.abort();
    shared.sessions.end_all("server shutting down");
    shared.stateless_registry.cancel_all("server shutting down");
    Ok(())
}

fn router(shared: Arc<Shared>, origins: Arc<Origins>) -> Router {
    Router::new()
        .route("/mcp", on_post(post::post).get(get).delete(delete))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(origins, origin::check))
        .with_state(shared)
}

/// Ends idle sessions now and then, so abandoned ones free their slots.
async fn reap_idle_sessions(shared: Arc<Shared>) {
    let every =
        (shared.sessions.idle() / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        shared.sessions.reap_idle();
    }
}

/// GET /mcp: this server offers no standalone SSE stream (HTTP-12 allows
/// 405; 2026-07-28 has none at all, HTTP-20).
async fn get() -> Response {
    reply::method_not_allowed(
        "POST, DELETE",
        "this server offers no GET stream; POST each message to /mcp",
    )
}

/// DELETE /mcp: ends the session named in `Mcp-Session-Id` (HTTP-16);
/// `405` in the stateless era, which has no sessions (HTTP-20).
async fn delete(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if stateless::header_is_stateless(&headers) {
        return stateless::delete();
    }
    let Some(id) = headers.get(SESSION_ID) else {
        return reply::error(
            StatusCode::BAD_REQUEST,
            None,
            INVALID_REQUEST,
            "missing Mcp-Session-Id: DELETE ends the session it names",
        );
    };
    let ended = id
        .to_str()
        .is_ok_and(|id| shared.sessions.end(id, "deleted by the client"));
    if ended {
        StatusCode::NO_CONTENT.into_response()
    } else {
        reply::error(
            StatusCode::NOT_FOUND,
            None,
            INVALID_REQUEST,
            "unknown or ended session",
        )
    }
}

async fn not_found() -> Response {
    reply::error(
        StatusCode::NOT_FOUND,
        None,
        INVALID_REQUEST,
        "not found: the MCP endpoint is /mcp",
    )
}

use axum::response::IntoResponse;
