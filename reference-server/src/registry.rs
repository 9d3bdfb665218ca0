//! In-flight requests, their cancellation tokens, and the output queue.
//!
//! This is where the ordering guarantee lives. Every decision that could
//! write a message for a request (its progress, its response) is taken under
//! the same lock that `notifications/cancelled` takes to fire the token, and
//! the message is queued to the single writer while the lock is held. So once
//! the reader has processed a cancel, nothing for that request is queued any
//! more; whatever was queued before sits ahead of any later reply the reader
//! queues (such as a `ping` answer).

use reference_wire::{response, RequestId};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

/// An item for the writer: a line to write, or the end of output.
pub(crate) use reference_wire::Outgoing as Out;

pub(crate) struct Registry {
    inner: Mutex<Inner>,
    /// Signalled whenever a cancelled handler has finished observing.
    observed: Notify,
    out: mpsc::UnboundedSender<Out>,
    verbose: bool,
}

#[derive(Default)]
struct Inner {
    in_flight: HashMap<RequestId, CancellationToken>,
    /// Cancelled handlers that have not yet observed their cancellation.
    unobserved: usize,
    /// Ids whose handlers observed their cancellation, in order.
    witness: Vec<Value>,
}

impl Registry {
    pub(crate) fn new(out: mpsc::UnboundedSender<Out>, verbose: bool) -> Self {
        Self {
            inner: Mutex::default(),
            observed: Notify::new(),
            out,
            verbose,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere must not turn every later request into a panic.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues a line with no cancellation check (replies made by the reader).
    pub(crate) fn send(&self, line: String) {
        // A closed queue means output is gone; there is nobody left to tell.
        let _ = self.out.send(Out::Line(line));
    }

    /// Marks the end of output; everything queued before it is still written.
    pub(crate) fn stop(&self) {
        let _ = self.out.send(Out::End);
    }

    pub(crate) fn is_in_flight(&self, id: &RequestId) -> bool {
        self.lock().in_flight.contains_key(id)
    }

    /// Registers a new in-flight request; `None` if the id is already running.
    pub(crate) fn register(&self, id: RequestId) -> Option<CancellationToken> {
        let mut inner = self.lock();
        if inner.in_flight.contains_key(&id) {
            return None;
        }
        let token = CancellationToken::new();
        inner.in_flight.insert(id, token.clone());
        Some(token)
    }

    /// Fires the token of an in-flight request. Unknown or finished ids are
    /// ignored; the entry is released at once so the id may be reused.
    pub(crate) fn cancel(&self, id: &RequestId, reason: Option<&str>) {
        let mut inner = self.lock();
        match inner.in_flight.remove(id) {
            Some(token) => {
                token.cancel();
                inner.unobserved += 1;
                if self.verbose {
                    eprintln!(
                        "reference-server: cancelled request {id} (reason: {})",
                        reason.unwrap_or("none given")
                    );
                }
            }
            None if self.verbose => eprintln!(
                "reference-server: ignored cancellation of request {id}: not in flight (unknown or already answered)"
            ),
            None => {}
        }
    }

    /// Fires every in-flight token (shutdown).
    pub(crate) fn cancel_all(&self, reason: &str) {
        let mut inner = self.lock();
        let drained: Vec<_> = inner.in_flight.drain().collect();
        inner.unobserved += drained.len();
        for (id, token) in drained {
            token.cancel();
            if self.verbose {
                eprintln!("reference-server: cancelled request {id} (reason: {reason})");
            }
        }
    }

    /// Queues a progress notification only while the request is not cancelled.
    pub(crate) fn progress(&self, token: &CancellationToken, line: String) {
        let _inner = self.lock();
        if !token.is_cancelled() {
            self.send(line);
        }
    }

    /// Ends a handler: if it was cancelled, records that it observed the
    /// cancellation and writes nothing; otherwise releases the id and queues
    /// the response.
    pub(crate) fn finish(&self, id: RequestId, token: &CancellationToken, result: Value) {
        let mut inner = self.lock();
        if token.is_cancelled() {
            inner.witness.push(id.to_value());
            inner.unobserved = inner.unobserved.saturating_sub(1);
            drop(inner);
            self.observed.notify_waiters();
        } else {
            inner.in_flight.remove(&id);
            self.send(response(&id, result));
        }
    }

    /// The witness list, once every cancelled handler has observed its cancel.
    pub(crate) async fn witness(&self) -> Vec<Value> {
        loop {
            let notified = self.observed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let inner = self.lock();
                if inner.unobserved == 0 {
                    return inner.witness.clone();
                }
            }
            notified.await;
        }
    }
}
