//! The Streamable HTTP transport: every message is its own POST to the MCP endpoint; a
//! request's answer comes back as one JSON object or as an SSE stream that may carry
//! progress first.
//!
//! In the handshake era the server may mint a session (`Mcp-Session-Id`), which goes on
//! every later request with `MCP-Protocol-Version` (HTTP-16, HTTP-18), a cancel is a POST
//! of `notifications/cancelled` (HTTP-17), a 404 means the session is gone, and the
//! session is deleted at the end. In the stateless era there are no sessions, every POST
//! carries `MCP-Protocol-Version`, `Mcp-Method` and, where it applies, `Mcp-Name`
//! (HTTP-19), and a cancel is closing the request's response stream (HTTP-11).
//!
//! Memory stays bounded whatever the server sends: a JSON answer, or the bytes of one SSE
//! event, may not exceed [`MAX_MESSAGE_BYTES`].

mod body;
mod headers;

use super::{BoxFuture, Disconnected, Incoming, Outgoing, OutgoingKind, Transport};
use crate::era;
use crate::log::{warn, Throttle};
pub use body::MAX_MESSAGE_BYTES;
use body::{answers, content_type, read_capped};
use futures_util::StreamExt;
use headers::insert;
use reference_wire::RequestId;
use reqwest::header::HeaderMap;
use reqwest::{Response, StatusCode, Url};
use serde_json::Value;
use std::collections::HashMap;
use std::io;
use std::process::ExitStatus;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle};

/// How long a notification POST (or the final DELETE) may take before it is given up.
const NOTIFY_PATIENCE: Duration = Duration::from_secs(10);
/// How long connecting to the server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Messages as POSTs to one MCP endpoint.
pub struct HttpTransport {
    shared: Arc<Shared>,
    outbox: Mutex<Option<mpsc::UnboundedSender<Outgoing>>>,
    incoming: tokio::sync::Mutex<mpsc::Receiver<Incoming>>,
    dispatcher: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    http: reqwest::Client,
    url: Url,
    state: Mutex<State>,
    refused: Throttle,
    unreadable: Throttle,
}

#[derive(Default)]
struct State {
    /// The session the server minted (handshake era only).
    session: Option<String>,
    /// The protocol version in force, once there is one.
    version: Option<String>,
    /// The response tasks of requests still open, by id.
    streams: HashMap<RequestId, AbortHandle>,
    /// Where answers go; taken when the transport closes.
    incoming: Option<mpsc::Sender<Incoming>>,
}

impl HttpTransport {
    /// A transport to the endpoint `url` (`http://host:port/path`). Nothing is sent yet.
    pub fn new(url: &str) -> Result<Self, String> {
        let url = Url::parse(url).map_err(|e| {
            format!(
                "{url:?} is not a URL ({e}); give the MCP endpoint, like http://127.0.0.1:8000/mcp"
            )
        })?;
        if url.scheme() != "http" {
            return Err(format!(
                "{url} is not an http:// URL; this client speaks plain HTTP only (it is built without TLS)"
            ));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot set up an HTTP client: {e}"))?;
        let (incoming_tx, incoming) = mpsc::channel(64);
        let shared = Arc::new(Shared {
            http,
            url,
            state: Mutex::new(State {
                incoming: Some(incoming_tx),
                ..State::default()
            }),
            refused: Throttle::new("refused notification POSTs"),
            unreadable: Throttle::new("unreadable SSE events"),
        });
        let (outbox, rx) = mpsc::unbounded_channel();
        let dispatcher = tokio::spawn(dispatch(Arc::clone(&shared), rx));
        Ok(Self {
            shared,
            outbox: Mutex::new(Some(outbox)),
            incoming: tokio::sync::Mutex::new(incoming),
            dispatcher: Mutex::new(Some(dispatcher)),
        })
    }
}

impl Transport for HttpTransport {
    fn send(&self, message: Outgoing) -> Result<(), Disconnected> {
        let outbox = self.outbox.lock().unwrap_or_else(|p| p.into_inner());
        let outbox = outbox.as_ref().ok_or(Disconnected)?;
        outbox.send(message).map_err(|_| Disconnected)
    }

    fn receive(&self) -> BoxFuture<'_, Option<Incoming>> {
        Box::pin(async move { self.incoming.lock().await.recv().await })
    }

    fn set_protocol_version(&self, version: Option<&str>) {
        let mut state = self.shared.lock();
        state.version = version.map(str::to_owned);
        if version.is_none() {
            // A new handshake starts a new session (HTTP-16).
            state.session = None;
        }
    }

    fn close(&self, grace: Duration) -> BoxFuture<'_, io::Result<Option<ExitStatus>>> {
        Box::pin(async move {
            // Let queued notifications (a last cancel) go out, within the grace.
            self.outbox.lock().unwrap_or_else(|p| p.into_inner()).take();
            let dispatcher = self
                .dispatcher
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            if let Some(mut dispatcher) = dispatcher {
                if tokio::time::timeout(grace, &mut dispatcher).await.is_err() {
                    dispatcher.abort();
                }
            }
            let (session, streams) = {
                let mut state = self.shared.lock();
                state.incoming = None;
                (state.session.take(), std::mem::take(&mut state.streams))
            };
            for stream in streams.into_values() {
                stream.abort();
            }
            if let Some(session) = session {
                self.shared.delete_session(&session, grace).await;
            }
            Ok(None)
        })
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        for stream in state.streams.values() {
            stream.abort();
        }
        state.incoming = None;
        if let Some(dispatcher) = self.dispatcher.get_mut().unwrap_or_else(|p| p.into_inner()) {
            dispatcher.abort();
        }
    }
}

/// Sends what the client queued, in order. A request starts its own exchange and the next
/// message goes out at once; a notification or response is sent before the next message,
/// so `notifications/initialized` precedes the requests after it.
async fn dispatch(shared: Arc<Shared>, mut outbox: mpsc::UnboundedReceiver<Outgoing>) {
    while let Some(Outgoing { message, kind }) = outbox.recv().await {
        match kind {
            OutgoingKind::Request(id) => {
                let (start, started) = oneshot::channel();
                let headers = shared.headers(&message);
                let exchange = tokio::spawn(Arc::clone(&shared).exchange(
                    id.clone(),
                    message,
                    headers,
                    started,
                ));
                shared.lock().streams.insert(id, exchange.abort_handle());
                let _ = start.send(());
            }
            OutgoingKind::Cancel(id) => {
                // Stateless era: closing the response stream is the cancel (HTTP-11). Handshake
                // era: POST the notification (HTTP-17), then stop reading the stream, which
                // the server should end without an answer anyway (AMB-04).
                if !shared.stateless() {
                    let headers = shared.headers(&message);
                    shared.notify(message, headers).await;
                }
                if let Some(stream) = shared.lock().streams.remove(&id) {
                    stream.abort();
                }
            }
            OutgoingKind::Notification | OutgoingKind::Response => {
                let headers = shared.headers(&message);
                shared.notify(message, headers).await;
            }
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stateless(&self) -> bool {
        self.lock()
            .version
            .as_deref()
            .is_some_and(era::is_stateless)
    }

    /// The headers for one POST, from the message and the session as it is now.
    fn headers(&self, message: &Value) -> HeaderMap {
        let state = self.lock();
        headers::request_headers(message, state.version.as_deref(), state.session.as_deref())
    }

    async fn deliver(&self, incoming: Incoming) -> bool {
        let sender = self.lock().incoming.clone();
        match sender {
            Some(sender) => sender.send(incoming).await.is_ok(),
            None => false,
        }
    }

    async fn fail(&self, id: &RequestId, reason: String) {
        self.deliver(Incoming::Failed {
            id: id.clone(),
            reason,
        })
        .await;
    }

    /// One request's POST and its answer, delivered message by message.
    async fn exchange(
        self: Arc<Self>,
        id: RequestId,
        message: Value,
        headers: HeaderMap,
        started: oneshot::Receiver<()>,
    ) {
        let _ = started.await;
        let initialize = message["method"] == "initialize";
        let sent_session = headers.contains_key("mcp-session-id");
        let posted = self
            .http
            .post(self.url.clone())
            .headers(headers)
            .body(message.to_string())
            .send()
            .await;
        let response = match posted {
            Ok(response) => response,
            Err(e) => {
                let reason = format!(
                    "cannot reach {}: {e}; check that the server is running there",
                    self.url
                );
                self.fail(&id, reason).await;
                self.lock().streams.remove(&id);
                return;
            }
        };
        let status = response.status();
        if initialize && status.is_success() {
            self.adopt_session(&response);
        }
        if status == StatusCode::NOT_FOUND && sent_session && !self.stateless() {
            self.lock().session = None;
            self.deliver(Incoming::SessionExpired { id: id.clone() })
                .await;
        } else if !status.is_success() {
            self.refusal(&id, response).await;
        } else if content_type(&response).starts_with("text/event-stream") {
            self.read_stream(&id, response).await;
        } else if content_type(&response).starts_with("application/json") {
            self.read_json(&id, response).await;
        } else {
            let reason = format!(
                "the server answered request {id} with {status} and content type {:?}, not JSON or SSE (HTTP-08)",
                content_type(&response)
            );
            self.fail(&id, reason).await;
        }
        self.lock().streams.remove(&id);
    }

    fn adopt_session(&self, response: &Response) {
        let Some(session) = response.headers().get("mcp-session-id") else {
            return;
        };
        match session.to_str() {
            // Visible ASCII only (HTTP-16).
            Ok(text) if !text.is_empty() && text.bytes().all(|b| (0x21..=0x7e).contains(&b)) => {
                self.lock().session = Some(text.to_owned());
            }
            _ => warn("ignored a session id that is not visible ASCII (HTTP-16)"),
        }
    }

    /// An error status: a JSON-RPC error in the body answers the request; anything else
    /// fails it with the status.
    async fn refusal(&self, id: &RequestId, response: Response) {
        let status = response.status();
        let body = read_capped(response).await.unwrap_or_default();
        if let Ok(mut error) = serde_json::from_slice::<Value>(&body) {
            if error.get("error").is_some_and(Value::is_object) {
                // An error may omit the id it answers (HTTP-07); it answers this request.
                if error.get("id").is_none_or(Value::is_null) {
                    error["id"] = id.to_value();
                }
                self.deliver(Incoming::Message(error)).await;
                return;
            }
        }
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        let reason = format!("the server answered request {id} with HTTP {status}: {text:?}");
        self.fail(id, reason).await;
    }

    async fn read_json(&self, id: &RequestId, response: Response) {
        let body = match read_capped(response).await {
            Ok(body) => body,
            Err(why) => return self.fail(id, format!("request {id}: {why}")).await,
        };
        match serde_json::from_slice::<Value>(&body) {
            Ok(answer) => {
                let answers = answers(&answer, id);
                self.deliver(Incoming::Message(answer)).await;
                if !answers {
                    let reason =
                        format!("the server's JSON answer to request {id} does not answer it");
                    self.fail(id, reason).await;
                }
            }
            Err(e) => {
                let reason = format!("the server's answer to request {id} is not JSON: {e}");
                self.fail(id, reason).await;
            }
        }
    }

    /// Reads an SSE response stream until it carries the answer to `id`.
    async fn read_stream(&self, id: &RequestId, response: Response) {
        let (mut events, pending) = body::events(response);
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(e) => {
                    let reason = format!("the response stream of request {id} broke: {e}");
                    return self.fail(id, reason).await;
                }
            };
            pending.store(0, Ordering::Relaxed);
            if event.event.as_deref().is_some_and(|kind| kind != "message") {
                continue;
            }
            // An event without data (such as the priming event, HTTP-15) carries no message.
            let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                continue;
            };
            let message = match serde_json::from_str::<Value>(&data) {
                Ok(message) => message,
                Err(e) => {
                    self.unreadable
                        .report(|| format!("ignored an SSE event that is not JSON ({e})"));
                    continue;
                }
            };
            let done = answers(&message, id);
            if !self.deliver(Incoming::Message(message)).await || done {
                return;
            }
        }
        let reason = format!(
            "the server ended the response stream of request {id} without answering it (this client does not resume streams)"
        );
        self.fail(id, reason).await;
    }

    /// POSTs a notification or a response; the server should accept it with 202 (HTTP-07).
    async fn notify(&self, message: Value, headers: HeaderMap) {
        let posted = self
            .http
            .post(self.url.clone())
            .headers(headers)
            .body(message.to_string())
            .send();
        let method = message["method"]
            .as_str()
            .unwrap_or("a response")
            .to_owned();
        match tokio::time::timeout(NOTIFY_PATIENCE, posted).await {
            Ok(Ok(response)) if response.status().is_success() => {}
            Ok(Ok(response)) => self.refused.report(|| {
                format!(
                    "the server refused {method} with HTTP {}",
                    response.status()
                )
            }),
            Ok(Err(e)) => self.refused.report(|| format!("cannot POST {method}: {e}")),
            Err(_) => self.refused.report(|| {
                format!("the server did not accept {method} within {NOTIFY_PATIENCE:?}")
            }),
        }
    }

    /// Ends the session with DELETE (HTTP-16); a 405 means the server keeps it.
    async fn delete_session(&self, session: &str, grace: Duration) {
        let mut headers = HeaderMap::new();
        insert(&mut headers, "mcp-session-id", session);
        if let Some(version) = self.lock().version.clone() {
            insert(&mut headers, "mcp-protocol-version", &version);
        }
        let deleted = self.http.delete(self.url.clone()).headers(headers).send();
        match tokio::time::timeout(grace, deleted).await {
            Ok(Ok(response))
                if response.status().is_success()
                    || response.status() == StatusCode::METHOD_NOT_ALLOWED
                    || response.status() == StatusCode::NOT_FOUND => {}
            Ok(Ok(response)) => warn(&format!(
                "the server answered the session's DELETE with HTTP {}",
                response.status()
            )),
            Ok(Err(e)) => warn(&format!("cannot DELETE the session: {e}")),
            Err(_) => warn(&format!(
                "the server did not answer the session's DELETE within {grace:?}"
            )),
        }
    }
}
