//! A response body passed through as it arrives, with a copy of each chunk going to a task
//! that records it: an SSE stream one message per event, any other body one message when it
//! ends. Whoever ends the body is recorded after its messages: the server (it finished), the
//! client (it dropped the body first, and the server's body is dropped with it, closing that
//! stream too) or an error.

use crate::record::Recording;
use crate::trace::{EndBy, Event, Party};
use bytes::Bytes;
use futures_util::StreamExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use std::collections::BTreeSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// How the body ended, for the `end` event.
type Ending = Arc<Mutex<Option<(EndBy, Option<String>)>>>;

/// The server's response body on its way to the client.
pub(crate) struct Tee {
    inner: Incoming,
    copies: Option<mpsc::UnboundedSender<Bytes>>,
    ending: Ending,
}

/// Wraps `body` and starts the task that records exchange `exchange`'s response.
pub(super) fn start(
    body: Incoming,
    recording: Arc<Recording>,
    exchange: u64,
    sse: bool,
    open: Arc<Mutex<BTreeSet<u64>>>,
) -> Tee {
    let (copies, received) = mpsc::unbounded_channel();
    let ending = Ending::default();
    let finished = Arc::clone(&ending);
    tokio::spawn(async move {
        if sse {
            record_events(&recording, exchange, received).await;
        } else {
            record_whole(&recording, exchange, received).await;
        }
        let still_open = open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&exchange);
        let (by, error) = finished
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .unwrap_or((EndBy::Error, Some("the body ended unseen".into())));
        // An exchange the recorder's stop already ended is not ended twice.
        if still_open {
            recording.event(&Event::End {
                exchange,
                by,
                error,
            });
        }
    });
    Tee {
        inner: body,
        copies: Some(copies),
        ending,
    }
}

impl Tee {
    /// Records how the body ended (once) and lets the recording task finish.
    fn finish(&mut self, by: EndBy, error: Option<String>) {
        if let Some(copies) = self.copies.take() {
            *self
                .ending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((by, error));
            drop(copies);
        }
    }
}

impl Body for Tee {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(copies)) = (frame.data_ref(), &self.copies) {
                    let _ = copies.send(data.clone());
                }
            }
            Poll::Ready(Some(Err(e))) => {
                let error = format!("the server's body failed: {e}");
                self.finish(EndBy::Error, Some(error));
            }
            Poll::Ready(None) => self.finish(EndBy::Server, None),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tee {
    /// A body dropped before its end was closed by the client (the server's is dropped with
    /// it); one whose last byte was sent was finished by the server.
    fn drop(&mut self) {
        if self.inner.is_end_stream() {
            self.finish(EndBy::Server, None);
        } else {
            self.finish(EndBy::Client, None);
        }
    }
}

fn chunks(received: mpsc::UnboundedReceiver<Bytes>) -> impl futures_util::Stream<Item = Bytes> {
    futures_util::stream::unfold(
        received,
        |mut r| async move { r.recv().await.map(|b| (b, r)) },
    )
}

/// Records each SSE event's data as a message, with its id.
async fn record_events(
    recording: &Recording,
    exchange: u64,
    received: mpsc::UnboundedReceiver<Bytes>,
) {
    let mut events = std::pin::pin!(eventsource_stream::EventStream::new(
        chunks(received).map(Ok::<_, std::convert::Infallible>),
    ));
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => {
                let id = Some(event.id.as_str()).filter(|id| !id.is_empty());
                recording.message(Party::Server, event.data.as_bytes(), Some(exchange), id);
            }
            Err(e) => {
                recording.note(&format!(
                    "exchange {exchange}: the server's event stream could not be read from here on ({e}); it was passed on as sent"
                ));
                while events.next().await.is_some() {}
                return;
            }
        }
    }
}

/// Records a body that is not an event stream when it ends (a JSON body: one message, or
/// one per element of a batch).
async fn record_whole(
    recording: &Recording,
    exchange: u64,
    received: mpsc::UnboundedReceiver<Bytes>,
) {
    let mut body = Vec::new();
    let mut over = false;
    let mut stream = std::pin::pin!(chunks(received));
    while let Some(chunk) = stream.next().await {
        if body.len() + chunk.len() > crate::record::MAX_RECORDED {
            over = true;
        } else if !over {
            body.extend_from_slice(&chunk);
        }
    }
    if over {
        recording.note(&format!(
            "exchange {exchange}: the server's body was over {} bytes: passed on, not recorded",
            crate::record::MAX_RECORDED
        ));
    } else {
        recording.body(Party::Server, exchange, &body);
    }
}
