//! The harness's own requests, and the proofs they give: the barrier (an answered probe proves
//! everything sent before it was read) and `! cancel`, carried out as the era and the
//! transport call for.

use super::ledger::ReadProof;
use super::{Engine, Side, Stop};
use crate::era::ProtocolVersion;
use crate::outcome::Severity;
use crate::pattern::canonical;
use crate::rules::envelope::short;
use crate::transcript::Entry;
use crate::transport::Transport;
use serde_json::{json, Value};
use std::time::Instant;
use tokio::time::Instant as Deadline;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// Sends a request of the harness's own and waits for its answer: an `initialize` as long
    /// as a start may take, anything else `--reply-timeout`. `requirement` is what a missing
    /// answer breaks.
    pub(crate) async fn request_internal(
        &mut self,
        message: Value,
        requirement: &'static str,
    ) -> Result<Value, Stop> {
        let id = message["id"].clone();
        let method = message["method"].as_str().unwrap_or("").to_string();
        self.write(message.to_string(), true).await?;
        let wait = if method == "initialize" {
            self.options.startup_timeout
        } else {
            self.options.reply_timeout
        };
        let deadline = Deadline::now() + wait;
        loop {
            if let Some(index) = self.ledger.answer_of(&id) {
                return Ok(self.transcript[index].value.clone().unwrap_or(Value::Null));
            }
            // Over HTTP, an answer whose stream was refused or ended will never come.
            if let Some(why) = self.unanswerable(&id) {
                if self.exited || self.output_closed {
                    S::gone(self);
                    return Err(Stop::Gone);
                }
                self.rule(
                    Severity::Fail,
                    requirement,
                    format!(
                        "no answer to the harness's `{method}` (id {}): {why}",
                        canonical(&id)
                    ),
                );
                return Err(Stop::Hung);
            }
            if !self.next(deadline).await {
                if self.exited || self.output_closed {
                    S::gone(self);
                    return Err(Stop::Gone);
                }
                let message = if method == "initialize" {
                    format!(
                        "no answer to `initialize` within {wait:?}; the target never started serving (check the command, or raise --startup-timeout for a slow start)"
                    )
                } else {
                    format!(
                        "no answer to the harness's `{method}` (id {}) within {wait:?}; {} stopped serving",
                        canonical(&id),
                        S::WRITER.who
                    )
                };
                self.rule(Severity::Fail, requirement, message);
                return Err(Stop::Hung);
            }
        }
    }

    /// `! barrier`: a request whose answer proves the target has read everything sent before
    /// it (stdin is a FIFO and stdout one ordered stream), so every cancel sent before it is
    /// known to have been read.
    pub(crate) async fn barrier(&mut self) -> Result<(), Stop> {
        // Over HTTP the probe's answer proves nothing about other POSTs: the proof is each
        // cancel's 202 and a grace window.
        let settled = if self.streams.over_http {
            Some(self.settle().await)
        } else {
            None
        };
        self.counter += 1;
        let id = format!("barrier-{}", self.counter);
        let sent_at = self.transcript.len();
        let probe = self
            .protocol()
            .unwrap_or(ProtocolVersion::V2025_11_25)
            .probe(&id);
        let asked = Instant::now();
        let answer = self.request_internal(probe, "PING-01").await?;
        if self.streams.over_http {
            self.streams.sample(asked.elapsed());
        }
        if answer.get("result").is_none_or(|r| !r.is_object()) {
            self.rule(
                Severity::Fail,
                "PING-01",
                format!(
                    "{} must answer ping with an empty result, got {}",
                    S::WRITER.who,
                    short(&answer)
                ),
            );
        }
        if self.io.ordered() {
            self.ledger.prove_read(sent_at, ReadProof::Barrier);
        } else if let Some((accepted, grace)) = settled {
            self.prove_accepted(&accepted, grace);
        }
        Ok(())
    }

    /// `! cancel ID [reason]`: cancels the harness's request ID as the protocol version and the
    /// transport call for: by closing the request's own channel where that is the cancel
    /// (2026-07-28 over Streamable HTTP), else with `notifications/cancelled` carrying the
    /// request's exact id.
    pub(crate) async fn cancel(&mut self, id: &str, reason: Option<&str>) -> Result<(), Stop> {
        let id = self.fill_id(id)?;
        let channel = self.ledger.sent(&id).map(|r| r.channel);
        let closes = self
            .protocol()
            .is_some_and(|v| v.cancel_closes_channel(!self.io.ordered()));
        if let (true, Some(channel)) = (closes, channel) {
            if self.io.abort(channel) {
                let index = self.transcript.len();
                let text = format!(
                    "[cancel {}: closed the stream of {channel}]",
                    canonical(&id)
                );
                self.expected.push(format!("{} {text}", S::SENDS));
                self.transcript
                    .push(Entry::sent(self.now(), text, None, false));
                self.transcript[index].channel = channel;
                self.ledger.cancel_sent(&id, index);
                self.last_send = Instant::now();
                return Ok(());
            }
        }
        if self.streams.over_http {
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
}
