//! The harness's HTTP server for client cases: the accept loop and the request handler (the
//! state they share with the transport is in `http_state`). See [`super::http_server`] for
//! what it serves and why.

use super::http_state::{
    session_id, Connection, OpenStream, SessionState, Shared, StreamBody, MAX_CONNECTIONS,
};
use crate::exchange::ClientRequest;
use crate::transport::process::MAX_LINE;
use crate::transport::{Channel, Event};
use axum::body::Body;
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::http::{header, HeaderValue, Request, StatusCode};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

/// How many events may wait for a client that does not read its stream.
const STREAM_QUEUE: usize = 64;
/// How often an idle SSE stream gets a comment line (which a client must skip, HTTP-09).
const KEEP_ALIVE: Duration = Duration::from_millis(500);

/// Accepts and serves connections until the task is aborted, which drops every connection.
pub(super) async fn serve(listener: TcpListener, shared: Arc<Shared>, patience: Duration) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                if shared.connections() >= MAX_CONNECTIONS {
                    shared.state().refused += 1;
                    continue;
                }
                let _ = stream.set_nodelay(true);
                shared.open.fetch_add(1, Ordering::SeqCst);
                let guard = Connection(shared.clone());
                let shared = shared.clone();
                connections.spawn(async move {
                    let _guard = guard;
                    let service = service_fn(move |request| handle(shared.clone(), request));
                    let _ = http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(patience)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, text).into_response()
}

/// A body that fails at once: hyper cuts the connection, as a network failure would.
fn cut() -> Response {
    let failing = futures_util::stream::once(async {
        Err::<axum::body::Bytes, _>(std::io::Error::other("cut by the harness"))
    });
    Response::new(Body::from_stream(failing))
}

/// Answers one request, after reporting what the client sent ([`ClientRequest`]).
async fn handle(shared: Arc<Shared>, request: Request<Incoming>) -> Result<Response, Infallible> {
    let mut seen = seen(&request);
    if shared.state().stopped {
        return Ok(cut());
    }
    if seen.path != "/mcp" {
        seen.status = 404;
        shared.emit(Event::HttpRequest(Box::new(seen))).await;
        return Ok(plain(
            StatusCode::NOT_FOUND,
            "the MCP endpoint is /mcp: use CONFORMANCE_SERVER_URL as it is",
        ));
    }
    let response = match seen.verb.as_str() {
        "POST" => return Ok(post(shared, request, seen).await),
        "GET" => get(&shared, &mut seen),
        "DELETE" => delete(&shared, &mut seen),
        _ => {
            seen.status = 405;
            plain(StatusCode::METHOD_NOT_ALLOWED, "POST, GET or DELETE")
        }
    };
    shared.emit(Event::HttpRequest(Box::new(seen))).await;
    Ok(response)
}

/// What the request's line and headers say (its message, for a POST, is read later).
fn seen(request: &Request<Incoming>) -> ClientRequest {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    ClientRequest {
        verb: request.method().as_str().to_string(),
        path: request.uri().path().to_string(),
        accept: header("accept"),
        session: header("mcp-session-id"),
        version: header("mcp-protocol-version"),
        last_event_id: header("last-event-id"),
        mcp_method: header("mcp-method"),
        mcp_name: header("mcp-name"),
        ..ClientRequest::default()
    }
}

/// A GET: `405`, the server offers no stream of its own (HTTP-12 allows it).
fn get(shared: &Shared, seen: &mut ClientRequest) -> Response {
    let n = {
        let mut state = shared.state();
        state.gets += 1;
        state.gets
    };
    seen.channel = Some(Channel::Get(n));
    seen.status = 405;
    let mut response = plain(
        StatusCode::METHOD_NOT_ALLOWED,
        "this server offers no stream of its own",
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
    response
}

/// A DELETE: ends a live session (HTTP-16); 2026-07-28 has none to end.
fn delete(shared: &Shared, seen: &mut ClientRequest) -> Response {
    let mut state = shared.state();
    state.deletes += 1;
    seen.channel = Some(Channel::Delete(state.deletes));
    let known = seen
        .session
        .as_ref()
        .and_then(|s| state.sessions.get_mut(s));
    let (status, text) = match known {
        _ if shared.stateless => (
            StatusCode::METHOD_NOT_ALLOWED,
            "2026-07-28 has no sessions to delete",
        ),
        Some(known) if *known == SessionState::Live => {
            *known = SessionState::Deleted;
            (StatusCode::OK, "session ended")
        }
        Some(_) => (StatusCode::NOT_FOUND, "no such session"),
        None if seen.session.is_none() => (StatusCode::BAD_REQUEST, "DELETE needs Mcp-Session-Id"),
        None => (StatusCode::NOT_FOUND, "no such session"),
    };
    seen.status = status.as_u16();
    plain(status, text)
}

/// How a POST is answered.
enum Reply {
    /// `202 Accepted`: a notification or a response.
    Accepted,
    /// `400`: a body that is no JSON-RPC message object.
    Unreadable,
    /// One JSON body, with its status.
    Json(oneshot::Receiver<(u16, String)>),
    /// An SSE stream.
    Sse(StreamBody),
    /// `404`: a session the server does not know.
    UnknownSession,
}

/// A POST: its message goes to the engine (unless it carried a session the server forgot),
/// and the engine's answer comes back as the response.
async fn post(
    shared: Arc<Shared>,
    request: Request<Incoming>,
    mut seen: ClientRequest,
) -> Response {
    let body = Limited::new(request.into_body(), MAX_LINE).collect().await;
    let channel = {
        let mut state = shared.state();
        state.posts += 1;
        Channel::Post(state.posts)
    };
    seen.channel = Some(channel);
    let bytes = match body {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(_) => {
            seen.status = 413;
            shared.emit(Event::HttpRequest(Box::new(seen))).await;
            shared.emit(Event::Overlong(channel)).await;
            return plain(StatusCode::PAYLOAD_TOO_LARGE, "a message of at most 4 MiB");
        }
    };
    let value: Option<Value> = serde_json::from_slice(&bytes).ok();
    read_message(&mut seen, value.as_ref());
    let reply = reply(&shared, &mut seen, channel, value.as_ref());
    seen.status = match &reply {
        Reply::Accepted => 202,
        Reply::Unreadable => 400,
        Reply::UnknownSession => 404,
        Reply::Json(_) | Reply::Sse(_) => 200,
    };
    let assigned = seen.assigned.clone();
    // A message the client sent after it ended the session itself is still judged (a late
    // cancel, say); one that carried a session the server forgot reaches no one.
    let deliver = !matches!(reply, Reply::UnknownSession) || seen.deleted;
    shared.emit(Event::HttpRequest(Box::new(seen))).await;
    if deliver {
        shared.emit(Event::Message { channel, bytes }).await;
    }
    respond(reply, assigned).await
}

/// What the POSTed message is, as the standing rules judge it: its method, whether it is a
/// request, its `_meta` version, and what `Mcp-Name` must mirror.
fn read_message(seen: &mut ClientRequest, value: Option<&Value>) {
    let method = value.and_then(|v| v.get("method")).and_then(Value::as_str);
    seen.method = method.map(str::to_string);
    seen.is_request = method.is_some() && value.is_some_and(|v| v.get("id").is_some());
    let params = value.and_then(|v| v.get("params"));
    seen.stamped = params
        .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"))
        .cloned();
    let named = match method {
        Some("tools/call" | "prompts/get") => Some("name"),
        Some("resources/read") => Some("uri"),
        _ => None,
    };
    seen.named = named
        .and_then(|key| params.and_then(|p| p.get(key)))
        .and_then(Value::as_str)
        .map(str::to_string);
}

/// How the POST on `channel` will be answered: a session minted for an `initialize`, a
/// session the server does not know refused, `202` for what is no request, an SSE stream for
/// `tools/call` (progress comes first), one JSON body for any other request.
fn reply(
    shared: &Arc<Shared>,
    seen: &mut ClientRequest,
    channel: Channel,
    value: Option<&Value>,
) -> Reply {
    let mut state = shared.state();
    let method = seen.method.as_deref();
    if method == Some("initialize") && seen.is_request && !shared.stateless {
        let id = session_id(state.sessions.len());
        state.sessions.insert(id.clone(), SessionState::Live);
        seen.assigned = Some(id);
    }
    let known = seen
        .session
        .as_ref()
        .filter(|_| seen.assigned.is_none())
        .map(|s| state.sessions.get(s).copied());
    seen.deleted = known == Some(Some(SessionState::Deleted));
    let stale = known.is_some_and(|k| k != Some(SessionState::Live));
    if stale {
        Reply::UnknownSession
    } else if !seen.is_request {
        if value.is_some_and(Value::is_object) {
            Reply::Accepted
        } else {
            Reply::Unreadable
        }
    } else if seen.method.as_deref() == Some("tools/call") {
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let aborted = Arc::new(AtomicBool::new(false));
        let stream = OpenStream {
            tx,
            aborted: aborted.clone(),
        };
        state.streams.push((channel, stream));
        Reply::Sse(StreamBody {
            rx,
            aborted,
            channel,
            shared: shared.clone(),
            ended: false,
        })
    } else {
        let (tx, rx) = oneshot::channel();
        state.json.insert(channel, tx);
        Reply::Json(rx)
    }
}

/// The response `reply` makes, carrying the session id `assigned` to an `initialize`.
async fn respond(reply: Reply, assigned: Option<String>) -> Response {
    let mut response =
        match reply {
            Reply::Accepted => StatusCode::ACCEPTED.into_response(),
            Reply::Unreadable => plain(
                StatusCode::BAD_REQUEST,
                "the body must be one JSON-RPC message object",
            ),
            Reply::UnknownSession => return plain(
                StatusCode::NOT_FOUND,
                "this session has ended; start a new one with initialize (without Mcp-Session-Id)",
            ),
            Reply::Json(rx) => match rx.await {
                Ok((status, text)) => (
                    StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
                    [(header::CONTENT_TYPE, "application/json")],
                    text,
                )
                    .into_response(),
                Err(_) => return cut(),
            },
            Reply::Sse(stream) => Sse::new(stream)
                .keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
                .into_response(),
        };
    if let Some(id) = assigned.and_then(|id| HeaderValue::from_str(&id).ok()) {
        response.headers_mut().insert("mcp-session-id", id);
    }
    response
}
