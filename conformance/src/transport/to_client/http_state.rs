//! What the harness's HTTP server and its transport share: the open response streams (JSON
//! waiters and SSE streams), the sessions it minted and what became of them, and the count of
//! open connections. See [`super::http_server`] for what is served and why.

use crate::transport::{Channel, Event, PeerSignal};
use axum::response::sse::Event as SseEvent;
use futures_util::Stream;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot, Notify};

/// One SSE event for a stream, or the end of it by an abort (the connection is cut).
pub(super) type Frame = Result<SseEvent, std::io::Error>;

/// Where the harness's answer to one open request goes.
pub(super) enum Outlet {
    /// A POST waiting for one JSON body, and its status.
    Json(oneshot::Sender<(u16, String)>),
    /// A POST's (or GET's) SSE stream.
    Sse(mpsc::Sender<Frame>),
}

/// An open SSE stream, as the state keeps it.
pub(super) struct OpenStream {
    pub(super) tx: mpsc::Sender<Frame>,
    pub(super) aborted: Arc<AtomicBool>,
}

/// What the handlers and the transport share.
pub(super) struct Shared {
    state: Mutex<State>,
    pub(super) events: mpsc::Sender<(Instant, Event)>,
    pub(super) open: AtomicUsize,
    /// Signalled when a connection closes, so a wait for the last one ends.
    pub(super) changed: Notify,
    /// The server plays 2026-07-28 (no sessions; error statuses of that version).
    pub(super) stateless: bool,
}

/// What became of a session the server minted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SessionState {
    Live,
    /// The client ended it with DELETE.
    Deleted,
    /// The server forgot it (`! expire-session`).
    Forgotten,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) posts: u32,
    pub(super) gets: u32,
    pub(super) deletes: u32,
    pub(super) json: HashMap<Channel, oneshot::Sender<(u16, String)>>,
    pub(super) streams: Vec<(Channel, OpenStream)>,
    /// Session id → what became of it.
    pub(super) sessions: HashMap<String, SessionState>,
    pub(super) stopped: bool,
    pub(super) refused: u32,
}

impl Shared {
    pub(super) fn new(events: mpsc::Sender<(Instant, Event)>, stateless: bool) -> Shared {
        Shared {
            state: Mutex::new(State::default()),
            events,
            open: AtomicUsize::new(0),
            changed: Notify::new(),
            stateless,
        }
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many connections are open.
    pub(super) fn connections(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Where a message goes: the open request it answers (`reply_to`), else, for a message
    /// that answers nothing, the newest SSE stream still open. A response takes its outlet.
    pub(super) fn outlet(
        &self,
        reply_to: Option<Channel>,
        is_response: bool,
    ) -> Option<(Channel, Outlet)> {
        let mut state = self.state();
        state.streams.retain(|(_, s)| !s.tx.is_closed());
        match reply_to {
            Some(channel) => {
                if is_response {
                    if let Some(tx) = state.json.remove(&channel) {
                        return Some((channel, Outlet::Json(tx)));
                    }
                }
                state
                    .streams
                    .iter()
                    .find(|(c, _)| *c == channel)
                    .map(|(c, s)| (*c, Outlet::Sse(s.tx.clone())))
            }
            None => state
                .streams
                .last()
                .map(|(c, s)| (*c, Outlet::Sse(s.tx.clone()))),
        }
    }

    /// Ends a stream normally (its answer was sent).
    pub(super) fn close(&self, channel: Channel) {
        let mut state = self.state();
        state.streams.retain(|(c, _)| *c != channel);
        state.json.remove(&channel);
    }

    /// Cuts a request's connection, as a network failure would.
    pub(super) fn abort(&self, channel: Channel) -> bool {
        let mut state = self.state();
        let had_json = state.json.remove(&channel).is_some();
        let position = state.streams.iter().position(|(c, _)| *c == channel);
        if let Some(i) = position {
            let (_, stream) = state.streams.remove(i);
            stream.aborted.store(true, Ordering::SeqCst);
        }
        had_json || position.is_some()
    }

    /// Forgets every session: requests that carry one get 404.
    pub(super) fn expire(&self) {
        for state in self.state().sessions.values_mut() {
            if *state == SessionState::Live {
                *state = SessionState::Forgotten;
            }
        }
    }

    /// Stops serving: every open request is cut.
    pub(super) fn stop(&self) {
        let mut state = self.state();
        state.stopped = true;
        state.json.clear();
        for (_, stream) in state.streams.drain(..) {
            stream.aborted.store(true, Ordering::SeqCst);
        }
    }

    pub(super) async fn emit(&self, event: Event) {
        let _ = self.events.send((Instant::now(), event)).await;
    }
}

/// Counts one open connection while it lives.
pub(super) struct Connection(pub(super) Arc<Shared>);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }
}

/// A session id no other session of this run has: visible ASCII only (HTTP-16).
pub(super) fn session_id(n: usize) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("conformance-{:x}-{nanos:x}-{n}", std::process::id())
}

/// The events of one SSE stream. When the client closes the stream before it ended, the
/// engine hears of it; when the harness aborts it, the connection is cut.
pub(super) struct StreamBody {
    pub(super) rx: mpsc::Receiver<Frame>,
    pub(super) aborted: Arc<AtomicBool>,
    pub(super) channel: Channel,
    pub(super) shared: Arc<Shared>,
    pub(super) ended: bool,
}

impl Stream for StreamBody {
    type Item = Frame;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Frame>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(None) => {
                self.ended = true;
                if self.aborted.load(Ordering::SeqCst) {
                    return Poll::Ready(Some(Err(std::io::Error::other("cut by the harness"))));
                }
                Poll::Ready(None)
            }
            other => other,
        }
    }
}

impl Drop for StreamBody {
    fn drop(&mut self) {
        let by_harness = self.aborted.load(Ordering::SeqCst) || self.shared.state().stopped;
        if !self.ended && !by_harness {
            let signal = Event::Signal {
                channel: self.channel,
                signal: PeerSignal::Ended,
            };
            let _ = self.shared.events.try_send((Instant::now(), signal));
        }
    }
}

/// How many connections one client may hold open at once; more are closed at once.
pub const MAX_CONNECTIONS: usize = 32;
