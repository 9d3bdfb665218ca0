//! `! cancel ID [reason]`: the cancel as the era and the transport carry it out, a
//! `notifications/cancelled` or the close of the request's own stream, and what the ledger
//! then counts as proof that it was read.

use super::{Engine, Side, Stop};
use crate::facts::ledger::Closed;
use crate::outcome::{FindingKind, Severity};
use crate::pattern::canonical;
use crate::transport::Transport;
use serde_json::{json, Value};
use tokio::time::Instant as Deadline;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// `! cancel ID [reason]`: cancels the harness's request ID as the protocol version and the
    /// transport call for: by closing the request's own channel where that is the cancel
    /// (2026-07-28 over Streamable HTTP), else with `notifications/cancelled` carrying the
    /// request's exact id.
    pub(crate) async fn cancel(&mut self, id: &str, reason: Option<&str>) -> Result<(), Stop> {
        let id = self.fill_id(id)?;
        let closes = self
            .protocol()
            .is_some_and(|v| v.cancel_closes_channel(self.io.channel_per_request()));
        if closes {
            return self.close_cancel(&id).await;
        }
        if self.io.channel_per_request() {
            // A cancel POSTed before the request it names has arrived would be read first.
            self.await_arrival(&id).await;
        }
        let mut params = json!({"requestId": id});
        if let Some(reason) = reason {
            params["reason"] = json!(reason);
        }
        let cancel =
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params});
        self.write(cancel.to_string(), false).await
    }

    /// The cancel of 2026-07-28 over HTTP: closing request `id`'s response stream (CAN-12,
    /// HTTP-11), once the request has shown it arrived (or its arrival window passed), so the
    /// server has it to cancel. A stream that has already ended has nothing left to close;
    /// the transcript and the diff say which it was. No notification is sent.
    async fn close_cancel(&mut self, id: &Value) -> Result<(), Stop> {
        let Some(channel) = self.ledger.sent(id).map(|r| r.channel) else {
            self.finding(
                Severity::Fail,
                FindingKind::CaseBug,
                format!(
                    "bug in case: `! cancel {}` names no request the case sent; in 2026-07-28 over Streamable HTTP a cancel closes that request's stream",
                    canonical(id)
                ),
            );
            return Err(Stop::Hung);
        };
        self.await_arrival(id).await;
        let arrived = self
            .streams
            .stream(channel)
            .is_some_and(crate::facts::streams::Stream::arrived);
        let closed = self.io.abort(channel);
        if !closed {
            // The stream ended on its own: what it carried (its response, most likely) is
            // taken in first, as it came before the cancel.
            let until = Deadline::now() + self.grace();
            while self
                .streams
                .stream(channel)
                .is_some_and(|s| s.end.is_none())
                && self.next(until).await
            {}
        }
        let text = if closed {
            format!("[cancel {}: closed the stream of {channel}]", canonical(id))
        } else {
            format!(
                "[cancel {}: the stream of {channel} had already ended]",
                canonical(id)
            )
        };
        let index = self.mark(text, channel);
        let now = self.now();
        let waited = self.waited();
        self.ledger.cancel_sent(id, index, now, waited);
        if closed {
            // A proof by time: the calm grace, later by what the target waits for a CPU
            // from now on (`Waits::read_by`).
            let how = Closed {
                grace: self.calm_grace(),
                arrived,
            };
            self.ledger.cancel_closed(index, now, how, waited);
        }
        Ok(())
    }
}
