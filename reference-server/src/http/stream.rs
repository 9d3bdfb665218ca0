//! The response to one POSTed request: an SSE stream of its notifications
//! and its response (the default), or one JSON body (`--json-response`).
//!
//! The request's [`Route`] feeds an [`Outbox`] of its own; the final
//! response or the request's cancellation ends it (see `outbox.rs`). What
//! happens when the client goes away first is the caller's choice: the
//! `on_close` callback learns whether the response had been delivered.

use super::reply;
use crate::outbox::{Out, Outbox, Route};
use crate::request::{Refusal, Status};
use axum::body::Body;
use axum::http::header::{HeaderName, CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use reference_wire::{error_response, RequestId};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Output queued for one response stream before its notifications wait.
pub(crate) const STREAM_OUTPUT_LIMIT: usize = 256 * 1024;

/// How responses to requests are delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// `text/event-stream`: progress, then the response, then the end.
    Sse,
    /// `application/json`: the response alone; progress has nowhere to go.
    Json,
}

/// Called once when the response stream is dropped: `true` if it ran to
/// its end (the response was delivered, or the request was cancelled).
pub(crate) type OnClose = Box<dyn FnOnce(bool) + Send + Sync>;

/// How long a client that lost a stream waits before it reconnects (the priming event's
/// `retry`).
pub(crate) const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// A response stream that the request's route writes into.
pub(crate) struct Pending {
    outbox: Arc<Outbox>,
    rx: mpsc::UnboundedReceiver<Out>,
    on_close: Option<OnClose>,
    ended: bool,
    /// The event that opens the stream, when it has one (see [`Pending::primed`]).
    priming: Option<String>,
}

/// Event ids unique across every stream of the process, so across each session's too.
static NEXT_EVENT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Opens a response stream and the route into it.
pub(crate) fn open(delivery: Delivery, on_close: OnClose) -> (Route, Pending) {
    let (outbox, rx) = Outbox::new(STREAM_OUTPUT_LIMIT);
    let route = match delivery {
        Delivery::Sse => Route::own(Arc::clone(&outbox)),
        Delivery::Json => Route::own_without_notifications(Arc::clone(&outbox)),
    };
    let pending = Pending {
        outbox,
        rx,
        on_close: Some(on_close),
        ended: false,
        priming: None,
    };
    (route, pending)
}

impl Pending {
    /// The HTTP response: SSE at once, or JSON once the response is there.
    /// A JSON request cancelled before its response gets `204 No Content`.
    pub(crate) async fn respond(mut self, delivery: Delivery) -> Response {
        match delivery {
            Delivery::Sse => {
                let mut response = Body::from_stream(self).into_response();
                let headers = response.headers_mut();
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
                headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                headers.insert(
                    HeaderName::from_static("x-accel-buffering"),
                    HeaderValue::from_static("no"),
                );
                response
            }
            Delivery::Json => match self.next_line().await {
                Some(line) => reply::json(StatusCode::OK, line),
                None => StatusCode::NO_CONTENT.into_response(),
            },
        }
    }

    /// Opens the stream with the event 2025-11-25 recommends (HTTP transport, SEP-1699): an
    /// event id, a `retry` and empty data, which a client keeps as the `Last-Event-ID` to
    /// reconnect with and otherwise ignores. This server never closes a stream before its
    /// response, so the id is never needed to resume one.
    pub(crate) fn primed(mut self) -> Self {
        let id = NEXT_EVENT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Written out: an SSE library leaves out a `data` field that is empty.
        self.priming = Some(format!(
            "id: {id}\nretry: {}\ndata: \n\n",
            RETRY.as_millis()
        ));
        self
    }

    /// Drops the stream without telling `on_close`: it was never handed to
    /// the client (the request was refused before it ran).
    pub(crate) fn dismiss(mut self) {
        self.on_close = None;
    }

    fn poll_line(&mut self, cx: &mut Context<'_>) -> Poll<Option<String>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(Out::Line(line))) => {
                self.outbox.written(line.len() + 1);
                Poll::Ready(Some(line))
            }
            Poll::Ready(Some(Out::End) | None) => {
                self.ended = true;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    async fn next_line(&mut self) -> Option<String> {
        std::future::poll_fn(|cx| self.poll_line(cx)).await
    }
}

/// Delivers a refused request's error: in its stream or body like any
/// response, or, when its era gives the error a status of its own, as a
/// complete response with that status.
pub(crate) async fn answer_refusal(
    delivery: Delivery,
    id: &RequestId,
    refusal: Refusal,
    route: &Route,
    pending: Pending,
) -> Response {
    if refusal.status == Status::InBody {
        route.answer(error_response(Some(id), &refusal.error));
        pending.respond(delivery).await
    } else {
        pending.dismiss();
        reply::refusal(id, &refusal)
    }
}

/// The stream as SSE: each line one `message` event (`data: <line>`; a line is one JSON
/// message, which holds no newline), after the priming event where there is one.
impl Stream for Pending {
    type Item = Result<String, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(priming) = this.priming.take() {
            return Poll::Ready(Some(Ok(priming)));
        }
        this.poll_line(cx)
            .map(|line| line.map(|line| Ok(format!("data: {line}\n\n"))))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(on_close) = self.on_close.take() {
            on_close(self.ended);
        }
    }
}
