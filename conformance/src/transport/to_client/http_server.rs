//! A client target over Streamable HTTP: the harness is the client's MCP server at a loopback
//! URL.
//!
//! The adapter is started with `CONFORMANCE_SERVER_URL` naming the harness's endpoint. Each
//! POST the client makes is a channel of its own ([`Channel::Post`]): its message is handed to
//! the engine, and the harness's answer to a request goes back on that POST's response, as
//! one JSON body (`initialize` and other quick requests) or an SSE stream (`tools/call`, where
//! progress comes first; keep-alive comments included, which a client must skip). Messages
//! that answer nothing (the harness's own requests, a cancel of one) ride on the newest
//! stream still open. A notification or a response POSTed by the client gets `202`; GET gets
//! `405` (a server may offer no stream of its own); DELETE ends the session.
//!
//! The server mints an `Mcp-Session-Id` for every `initialize`; a request that carries a
//! session the server forgot (`! expire-session`) or never issued gets `404` and reaches no
//! one. Playing 2026-07-28 it mints none and gives errors their statuses of that version. What the client sent besides its message (method, `Accept`, session and version
//! headers) and what the server answered is reported as a [`ClientRequest`] before the
//! message itself, for the standing rules to judge.
//!
//! Nothing a client does can exhaust the harness: bodies are cut at [`MAX_LINE`], at most
//! [`MAX_CONNECTIONS`](super::http_state::MAX_CONNECTIONS) connections are served at once, request heads must arrive within the
//! write patience, every handler waits on bounded queues, and when the case ends (or
//! `! server-exit`) the listener and every connection are dropped.

use super::http_serve::serve;
use super::http_state::{Outlet, Shared};
use crate::era::ProtocolVersion;
pub use crate::exchange::ClientRequest;
use crate::transport::process::{Launch, Process, TargetLog};
use crate::transport::{Channel, Event, SendError, Transport};
use axum::response::sse::Event as SseEvent;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant as Deadline;

/// The environment variable that names the harness's MCP endpoint to a client adapter.
pub const ENV_SERVER_URL: &str = "CONFORMANCE_SERVER_URL";

/// The harness's end of a client target over HTTP: the adapter process and the server it
/// talks to.
pub struct HttpServer {
    process: Process,
    shared: Arc<Shared>,
    events: mpsc::Receiver<(Instant, Event)>,
    server: Option<JoinHandle<()>>,
    patience: Duration,
    /// How many messages could not be delivered (only the first is noted in full).
    undelivered: usize,
}

impl HttpServer {
    /// Listens on a loopback port, starts the adapter `launch` with `CONFORMANCE_SERVER_URL`
    /// naming it, and serves. A write the client does not read for `patience` fails, and a
    /// request head must arrive within it. A `stateless` server plays 2026-07-28: it mints no
    /// session, answers DELETE with `405`, and gives errors the HTTP status that version
    /// gives them (`400` for `-32022`, `404` for an unknown method).
    pub async fn start(
        launch: &Launch,
        patience: Duration,
        stateless: bool,
    ) -> Result<HttpServer, String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("cannot listen on a loopback port for the HTTP server: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot read the HTTP server's port: {e}"))?;
        let (tx, events) = mpsc::channel(256);
        let shared = Arc::new(Shared::new(tx, stateless));
        let server = tokio::spawn(serve(listener, shared.clone(), patience));
        let mut launch = launch.clone();
        launch
            .env
            .push((ENV_SERVER_URL.to_string(), format!("http://{addr}/mcp")));
        let process = Process::spawn(&launch).map_err(|e| {
            format!(
                "cannot start client `{}`: {e}; check the command after `--` (it is run without a shell)",
                crate::transport::process::display_argv(&launch.argv)
            )
        })?;
        Ok(HttpServer {
            process,
            shared,
            events,
            server: Some(server),
            patience,
            undelivered: 0,
        })
    }

    /// Stops serving: the listener and every connection are dropped.
    fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
        self.shared.stop();
    }
}

impl Transport for HttpServer {
    async fn send(
        &mut self,
        bytes: &[u8],
        reply_to: Option<Channel>,
    ) -> Result<Channel, SendError> {
        let value: Option<Value> = serde_json::from_slice(bytes).ok();
        let is_response = value
            .as_ref()
            .is_some_and(|v| v.get("method").is_none() && v.get("id").is_some());
        let text = String::from_utf8_lossy(bytes).into_owned();
        let Some((channel, outlet)) = self.shared.outlet(reply_to, is_response) else {
            self.undelivered += 1;
            if self.undelivered == 1 {
                let which = reply_to.map_or_else(|| "no stream".to_string(), |c| c.to_string());
                self.note(format!(
                    "[http] not delivered ({which} is closed, and no other stream is open): {}; later messages that cannot be delivered are counted at the end",
                    text.chars().take(200).collect::<String>()
                ));
            }
            return Ok(reply_to.unwrap_or(Channel::Post(0)));
        };
        match outlet {
            Outlet::Json(tx) => {
                let code = value
                    .as_ref()
                    .and_then(|v| v.pointer("/error/code"))
                    .and_then(Value::as_i64);
                let status = match code {
                    Some(code) if self.shared.stateless => {
                        ProtocolVersion::V2026_07_28.error_status(code)
                    }
                    _ => 200,
                };
                if status != 200 {
                    self.note(format!("[http] {channel} answered with status {status}"));
                }
                let _ = tx.send((status, text));
                Ok(channel)
            }
            Outlet::Sse(tx) => {
                let event = SseEvent::default().event("message").data(text);
                match tokio::time::timeout(self.patience, tx.send(Ok(event))).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => self.note(format!(
                        "[http] not delivered: the client had closed the stream of {channel}"
                    )),
                    Err(_) => return Err(SendError::Stalled(self.patience)),
                }
                if is_response {
                    // The answer ends its request's stream.
                    self.shared.close(channel);
                }
                Ok(channel)
            }
        }
    }

    async fn next(&mut self, deadline: Deadline) -> Option<(Instant, Event)> {
        loop {
            if self.finished() {
                return None;
            }
            let process_done = self.process.finished();
            let changed = self.shared.changed.notified();
            tokio::select! {
                event = self.process.recv_adapter(), if !process_done => match event {
                    Some(event) => return Some(event),
                    None => continue,
                },
                Some(event) = self.events.recv() => return Some(event),
                () = changed => continue,
                () = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }

    fn finished(&self) -> bool {
        self.process.finished() && self.shared.connections() == 0 && self.events.is_empty()
    }

    fn ordered(&self) -> bool {
        false
    }

    fn abort(&mut self, channel: Channel) -> bool {
        self.shared.abort(channel)
    }

    /// The server exits: nothing more is accepted and every connection is dropped.
    fn close_input(&mut self) {
        self.stop();
    }

    fn input_open(&self) -> bool {
        self.server.is_some()
    }

    fn expire_session(&mut self) -> bool {
        self.shared.expire();
        true
    }

    fn process(&self) -> Option<&Process> {
        Some(&self.process)
    }

    async fn shutdown(&mut self, grace: Duration) -> TargetLog {
        self.stop();
        if self.undelivered > 1 {
            self.note(format!(
                "[http] {} messages in all could not be delivered: the client had closed their streams",
                self.undelivered
            ));
        }
        self.process.end(grace).await
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop();
    }
}
