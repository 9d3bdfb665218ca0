//! Bounded output queues and the routes that lead to them.
//!
//! Every message the server writes goes through an [`Outbox`]: one for the
//! whole stdio session, one per response stream on HTTP. Pushing never
//! blocks, because it happens under the registry lock (see `registry.rs`)
//! and a blocked writer must never be able to hold that lock. The bound is
//! enforced *before* pushing instead: whoever produces messages without
//! limit waits for [`Outbox::room`] first, outside the lock. That is the
//! reader (it stops taking requests while the queue is full) and every
//! progress producer. Responses are pushed without waiting; there is at most
//! one per in-flight request, and in-flight requests are bounded too. So the
//! bytes queued stay below the limit plus one message per producer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, Notify};

/// An item for a writer: a line to write, or the end of this output.
pub(crate) use reference_wire::Outgoing as Out;

/// A byte-counted queue of lines for one writer.
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Out>,
    /// Bytes pushed and not yet reported written by the writer.
    queued: AtomicUsize,
    /// Signalled whenever the writer takes bytes off the queue.
    drained: Notify,
    limit: usize,
}

impl Outbox {
    /// A queue that counts as full from `limit` queued bytes on, and the
    /// receiving end for its writer.
    pub(crate) fn new(limit: usize) -> (Arc<Self>, mpsc::UnboundedReceiver<Out>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let outbox = Self {
            tx,
            queued: AtomicUsize::new(0),
            drained: Notify::new(),
            limit,
        };
        (Arc::new(outbox), rx)
    }

    /// Queues a line. Never blocks; a line for a writer that is gone is dropped.
    pub(crate) fn push(&self, line: String) {
        let bytes = line.len() + 1;
        if self.tx.send(Out::Line(line)).is_ok() {
            self.queued.fetch_add(bytes, Ordering::AcqRel);
        }
    }

    /// Marks the end of this output; what was queued before is still written.
    pub(crate) fn end(&self) {
        let _ = self.tx.send(Out::End);
    }

    /// Called by the writer once `bytes` (line lengths plus newlines) are written.
    pub(crate) fn written(&self, bytes: usize) {
        self.queued.fetch_sub(bytes, Ordering::AcqRel);
        self.drained.notify_waiters();
    }

    /// Bytes queued and not yet written.
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// Waits until the queue is below its limit, or its writer is gone.
    pub(crate) async fn room(&self) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.queued() < self.limit || self.tx.is_closed() {
                return;
            }
            tokio::select! {
                () = drained => {}
                () = self.tx.closed() => return,
            }
        }
    }
}

/// Where the output for one request goes.
#[derive(Clone)]
pub(crate) struct Route {
    outbox: Arc<Outbox>,
    /// Whether the outbox belongs to this request alone (an HTTP response
    /// stream), so that its final response or its cancellation ends it.
    own_stream: bool,
    /// Whether notifications can be delivered (not in a JSON HTTP body).
    notifications: bool,
}

impl Route {
    /// A route into a queue every request shares (stdio).
    pub(crate) fn shared(outbox: Arc<Outbox>) -> Self {
        Self {
            outbox,
            own_stream: false,
            notifications: true,
        }
    }

    /// A route into a queue of this request's own (an HTTP SSE stream).
    pub(crate) fn own(outbox: Arc<Outbox>) -> Self {
        Self {
            outbox,
            own_stream: true,
            notifications: true,
        }
    }

    /// A route into a queue of this request's own that carries only the
    /// response (an HTTP JSON body): notifications are dropped at once.
    pub(crate) fn own_without_notifications(outbox: Arc<Outbox>) -> Self {
        Self {
            outbox,
            own_stream: true,
            notifications: false,
        }
    }

    /// Whether the queue outlives the request (stdio's shared stdout), so
    /// notifications about its work may still go there after its response.
    pub(crate) fn is_shared(&self) -> bool {
        !self.own_stream
    }

    /// Queues a notification about the request (or, on stdio, an error
    /// for a line that was not a request at all).
    pub(crate) fn notify(&self, line: String) {
        if self.notifications {
            self.outbox.push(line);
        }
    }

    /// Queues the request's response; its own stream ends after it.
    pub(crate) fn answer(&self, line: String) {
        self.outbox.push(line);
        self.close();
    }

    /// Ends the request's own stream without a response (it was cancelled);
    /// a shared queue is left alone.
    pub(crate) fn close(&self) {
        if self.own_stream {
            self.outbox.end();
        }
    }

    /// Waits until the queue has room for more notifications.
    pub(crate) async fn room(&self) {
        self.outbox.room().await;
    }
}
