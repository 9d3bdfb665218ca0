//! Reading one HTTP response without trusting it: the head becomes an [`Event::Status`], an
//! SSE body becomes one [`Event::Message`] per event (parsed by `eventsource-stream`, which
//! follows the WHATWG rules), a JSON body becomes one message, and anything else leaves only
//! its first bytes for the transcript. Every stream ends with one [`Event::Closed`].
//!
//! Nothing a server sends can grow the harness's memory without bound: a stream is cut after
//! [`MAX_STREAM_BYTES`], one event or JSON body after [`MAX_MESSAGE_BYTES`] (the parser never
//! buffers more than that plus one chunk), and an error page keeps [`KEPT_BODY_BYTES`].

use super::http_arrival::{Arrivals, Clock};
use crate::transport::{Channel, Event, Head, StreamEnd};
use bytes::Bytes;
use eventsource_stream::{EventStream, EventStreamError};
use futures_util::StreamExt;
use http_body_util::BodyDataStream;
use hyper::body::Incoming;
use hyper::Response;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// The most one response stream may carry before the harness cuts it.
pub const MAX_STREAM_BYTES: usize = 16 << 20;
/// The longest one message (an SSE event's data, a JSON body) may be.
pub const MAX_MESSAGE_BYTES: usize = crate::transport::process::MAX_LINE;
/// How much of a body that carries no message is kept for the transcript.
pub const KEPT_BODY_BYTES: usize = 1024;

/// Where a stream task reports.
pub(super) type Sink = mpsc::Sender<(Instant, Event)>;

/// Where the reader of one response reports: the channel it reads, and the clock that stamps
/// each event with when its bytes arrived (see `http_arrival`).
struct Reporter {
    channel: Channel,
    sink: Sink,
    clock: Clock,
}

impl Reporter {
    /// Reports `event`; false once no one listens.
    async fn emit(&mut self, event: Event) -> bool {
        let at = if matches!(event, Event::Closed { .. }) {
            self.clock.now()
        } else {
            self.clock.stamp()
        };
        self.sink.send((at, event)).await.is_ok()
    }
}

/// What a response body is, by its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sse,
    Json,
    Other,
}

/// `errors_answer`: an error status may carry the JSON-RPC error that answers the request, as
/// in the stateless era (HTTP-19).
fn kind_of(head: &Head, errors_answer: bool) -> Kind {
    let success = (200..300).contains(&head.code);
    let client_error = (400..500).contains(&head.code);
    match head.content_type.as_deref() {
        Some("text/event-stream") if success => Kind::Sse,
        Some("application/json") if success || (errors_answer && client_error) => Kind::Json,
        _ => Kind::Other,
    }
}

/// The head of a response, as the harness judges it.
pub(super) fn head_of(response: &Response<Incoming>) -> Head {
    let headers = response.headers();
    let text = |name: &str| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    Head {
        code: response.status().as_u16(),
        content_type: text("content-type").map(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        }),
        session: headers.get("mcp-session-id").map(|v| v.as_bytes().to_vec()),
        location: text("location"),
    }
}

/// Why the harness stopped reading a body.
#[derive(Debug)]
enum Cut {
    /// The stream went past [`MAX_STREAM_BYTES`].
    Stream,
    /// One event went past [`MAX_MESSAGE_BYTES`].
    Message,
    /// The connection failed.
    Io(String),
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cut::Stream => f.write_str("stream too large"),
            Cut::Message => f.write_str("event too large"),
            Cut::Io(why) => f.write_str(why),
        }
    }
}

/// Reads one response to its end (or until the harness aborts the task) and reports it. With
/// `errors_answer`, the JSON body of a 4xx is a message too. `sent` is when the request left.
pub(super) async fn read(
    channel: Channel,
    response: Response<Incoming>,
    sink: Sink,
    errors_answer: bool,
    sent: Instant,
) {
    let arrivals = response.extensions().get::<Arrivals>().cloned();
    let mut out = Reporter {
        channel,
        sink,
        clock: Clock::new(arrivals, sent),
    };
    let head = head_of(&response);
    let kind = kind_of(&head, errors_answer);
    if !out.emit(Event::Status { channel, head }).await {
        return;
    }
    let body = response.into_body();
    let (end, bytes) = match kind {
        Kind::Sse => read_sse(body, &mut out).await,
        Kind::Json => read_json(body, &mut out).await,
        Kind::Other => read_other(body, &mut out).await,
    };
    let closed = Event::Closed {
        channel,
        end,
        bytes,
    };
    out.emit(closed).await;
}

/// Counts what the parser is fed: the whole stream, and the bytes since the last event.
struct Budget {
    total: AtomicUsize,
    since_event: AtomicUsize,
}

async fn read_sse(body: Incoming, out: &mut Reporter) -> (StreamEnd, u64) {
    let channel = out.channel;
    let budget = Arc::new(Budget {
        total: AtomicUsize::new(0),
        since_event: AtomicUsize::new(0),
    });
    let counted = {
        let budget = budget.clone();
        BodyDataStream::new(body).map(move |chunk| {
            let chunk: Bytes = chunk.map_err(|e| Cut::Io(describe(&e)))?;
            let total = budget.total.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len();
            let since = budget.since_event.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len();
            if total > MAX_STREAM_BYTES {
                Err(Cut::Stream)
            } else if since > MAX_MESSAGE_BYTES {
                Err(Cut::Message)
            } else {
                Ok(chunk)
            }
        })
    };
    let mut events = EventStream::new(counted);
    let end = loop {
        match events.next().await {
            None => break StreamEnd::Complete,
            Some(Ok(event)) => {
                budget.since_event.store(0, Ordering::Relaxed);
                if !out.emit(delivered(channel, event)).await {
                    break StreamEnd::Aborted;
                }
            }
            Some(Err(EventStreamError::Transport(Cut::Stream))) => {
                break StreamEnd::TooLarge(MAX_STREAM_BYTES)
            }
            Some(Err(EventStreamError::Transport(Cut::Message))) => {
                out.emit(Event::Overlong(channel)).await;
                break StreamEnd::Broken(format!(
                    "the harness stopped reading after {} MiB without a complete event",
                    MAX_MESSAGE_BYTES >> 20
                ));
            }
            Some(Err(EventStreamError::Transport(Cut::Io(why)))) => break StreamEnd::Broken(why),
            Some(Err(EventStreamError::Utf8(e))) => {
                break StreamEnd::Broken(format!("the event stream is not UTF-8: {e}"))
            }
            Some(Err(EventStreamError::Parser(e))) => {
                break StreamEnd::Broken(format!("the event stream is not SSE: {e}"))
            }
        }
    };
    (end, budget.total.load(Ordering::Relaxed) as u64)
}

/// What one SSE event delivers: a message when it is of type `message`; otherwise its text
/// for the transcript.
fn delivered(channel: Channel, event: eventsource_stream::Event) -> Event {
    if event.data.trim().is_empty() {
        // No message: a priming event (HTTP-15), whose id and retry prepare a reconnection.
        let retry = event
            .retry
            .map(|r| format!(", retry {} ms", r.as_millis()))
            .unwrap_or_default();
        Event::Body {
            channel,
            text: format!("an SSE event without data (id {:?}{retry})", event.id),
        }
    } else if event.event == "message" {
        Event::Message {
            channel,
            bytes: event.data.into_bytes(),
        }
    } else {
        let data: String = event.data.chars().take(KEPT_BODY_BYTES).collect();
        Event::Body {
            channel,
            text: format!("an SSE event of type `{}`: {data}", event.event),
        }
    }
}

async fn read_json(body: Incoming, out: &mut Reporter) -> (StreamEnd, u64) {
    let channel = out.channel;
    let mut buf: Vec<u8> = vec![];
    let (stop, total) = read_chunks(body, |chunk| {
        let fits = buf.len() + chunk.len() <= MAX_MESSAGE_BYTES;
        if fits {
            buf.extend_from_slice(chunk);
        }
        fits
    })
    .await;
    match stop {
        Stop::Full => {
            out.emit(Event::Overlong(channel)).await;
            (StreamEnd::TooLarge(MAX_MESSAGE_BYTES), total)
        }
        Stop::Broken(why) => (StreamEnd::Broken(why), total),
        Stop::End => {
            if !buf.is_empty() {
                let message = Event::Message {
                    channel,
                    bytes: buf,
                };
                out.emit(message).await;
            }
            (StreamEnd::Complete, total)
        }
    }
}

/// A body that carries no message: its first bytes go to the transcript, and the rest is not
/// read (the connection is dropped, so a 1 GiB error page costs nothing).
async fn read_other(body: Incoming, out: &mut Reporter) -> (StreamEnd, u64) {
    let channel = out.channel;
    let mut kept: Vec<u8> = vec![];
    let (stop, total) = read_chunks(body, |chunk| {
        let room = KEPT_BODY_BYTES.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..room.min(chunk.len())]);
        kept.len() < KEPT_BODY_BYTES
    })
    .await;
    let end = match stop {
        Stop::End => StreamEnd::Complete,
        Stop::Full => StreamEnd::Broken(format!(
            "the harness read only the first {KEPT_BODY_BYTES} bytes of a body that carries no message"
        )),
        Stop::Broken(why) => StreamEnd::Broken(why),
    };
    if !kept.is_empty() {
        let text = String::from_utf8_lossy(&kept).into_owned();
        out.emit(Event::Body { channel, text }).await;
    }
    (end, total)
}

/// Why [`read_chunks`] stopped.
enum Stop {
    /// The body ended.
    End,
    /// The reader wanted no more.
    Full,
    /// The connection failed; why.
    Broken(String),
}

/// Hands a body's chunks to `take` until the body ends, the connection fails, or `take`
/// returns false; returns why it stopped and how many bytes came.
async fn read_chunks(body: Incoming, mut take: impl FnMut(&[u8]) -> bool) -> (Stop, u64) {
    let mut data = BodyDataStream::new(body);
    let mut total: u64 = 0;
    while let Some(chunk) = data.next().await {
        match chunk {
            Ok(chunk) => {
                total += chunk.len() as u64;
                if !take(&chunk) {
                    return (Stop::Full, total);
                }
            }
            Err(e) => return (Stop::Broken(describe(&e)), total),
        }
    }
    (Stop::End, total)
}

/// An error with its causes, as one line.
pub(super) fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
        source = cause_of(source);
    }
    text
}

fn cause_of<'a>(
    error: Option<&'a (dyn std::error::Error + 'static)>,
) -> Option<&'a (dyn std::error::Error + 'static)> {
    error.and_then(|e| e.source())
}
