//! One request on the wire and what happens when its caller stops waiting for it.
//!
//! Most requests are cancelled when their caller gives up: `notifications/cancelled` with
//! the exact id (or, for 2026-07-28 HTTP, closing the request's stream). Some must never
//! be: a `tasks/get` poll or a `tasks/cancel` is not the work, and cancelling it says
//! nothing useful (a client that cancels its polls is a known defect of other SDKs). So
//! a request says, when it is sent, what giving up on it means ([`OnDrop`]).

use crate::shared::{Reply, Shared};
use crate::transport::OutgoingKind;
use crate::CallError;
use reference_wire::RequestId;
use serde_json::{json, Value};
use tokio::sync::oneshot;

/// What giving up on an unanswered request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnDrop {
    /// Cancel it on the wire: the caller no longer wants the work (or the wait).
    Cancel,
    /// Stop waiting without a word: the request is a question (a poll), not work.
    Forget,
}

/// A request awaiting its answer. Dropping it unsettled (the caller gave up on the
/// future) acts as its [`OnDrop`] says.
pub(crate) struct InFlight<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) id: RequestId,
    pub(crate) settled: bool,
    pub(crate) on_drop: OnDrop,
}

impl InFlight<'_> {
    /// Cancels the request unless the answer was already read; returns whether it did.
    /// Any later answer is ignored.
    pub(crate) fn cancel(&mut self, reason: &str) -> bool {
        self.settled = true;
        if self.shared.lock().pending.remove(&self.id).is_none() {
            return false;
        }
        let message = json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": self.id.to_value(), "reason": reason},
        });
        // If the connection is gone there is nothing left to cancel.
        let _ = self
            .shared
            .send(message, OutgoingKind::Cancel(self.id.clone()));
        true
    }

    /// Stops waiting without telling the server; a later answer is ignored.
    fn forget(&mut self) {
        self.settled = true;
        self.shared.lock().pending.remove(&self.id);
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.settled {
            match self.on_drop {
                OnDrop::Cancel => {
                    self.cancel("abandoned by the caller");
                }
                OnDrop::Forget => self.forget(),
            }
        }
    }
}

/// A sent request and the way to its answer, for callers that wait on several things at
/// once (the task follower waits on a `tasks/result`, a `tasks/cancel`, progress and
/// timers together).
pub(crate) struct Pending<'a> {
    flight: InFlight<'a>,
    rx: oneshot::Receiver<Reply>,
}

impl<'a> Pending<'a> {
    pub(crate) fn new(flight: InFlight<'a>, rx: oneshot::Receiver<Reply>) -> Self {
        Self { flight, rx }
    }

    /// The answer. Cancel-safe; call it again after a cancelled wait, not after it
    /// returned.
    pub(crate) async fn reply(&mut self) -> Result<Value, CallError> {
        let reply = (&mut self.rx).await;
        self.flight.settled = true;
        finish(reply)
    }

    /// Cancels the request on the wire (the caller no longer wants it), unless its answer
    /// was already read; returns whether it did.
    pub(crate) fn cancel(&mut self, reason: &str) -> bool {
        self.flight.cancel(reason)
    }
}

/// A request's answer as a call's outcome.
pub(crate) fn finish(reply: Result<Reply, oneshot::error::RecvError>) -> Result<Value, CallError> {
    match reply {
        Ok(Reply::Result(result)) => Ok(result),
        Ok(Reply::Error(error)) => Err(CallError::Rpc(error)),
        Ok(Reply::Failed(reason)) => Err(CallError::Transport(reason)),
        Ok(Reply::SessionExpired) => Err(CallError::SessionExpired),
        Err(_) => Err(CallError::Closed),
    }
}
