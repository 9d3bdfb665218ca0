//! What every message a server target writes must respect: one response per request with its
//! id echoed exactly, a proper error object, progress only for live tokens and increasing, and
//! nothing deliberate after a cancel the server has certainly read. The server's own requests
//! are answered so it is not left waiting.

use crate::engine::ledger::LateProgress;
use crate::engine::server::ServerTarget;
use crate::engine::Engine;
use crate::era::Era;
use crate::outcome::{FindingKind, Severity};
use crate::pattern::canonical;
use crate::requirement::Req;
use crate::rules::envelope::short;
use crate::transcript::Direction;
use crate::transport::{Channel, Transport};
use serde_json::{json, Value};
use std::time::Duration;

impl<T: Transport> Engine<'_, T, ServerTarget> {
    /// Applies the standing rules to one message object the server wrote.
    pub(crate) async fn judge_server_message(&mut self, index: usize) {
        self.judge_channel(index);
        let value = self.value(index);
        let method = value.get("method").and_then(Value::as_str);
        match (method, value.get("id")) {
            (Some(method), Some(id)) if !self.servers_may_request() => {
                // 2026-07-28: servers never send requests; a client sends no responses.
                self.transcript[index].internal = true;
                self.rule(
                    Severity::Fail,
                    Req::Rpc15,
                    format!(
                        "the server sent a `{method}` request (id {}) in {}, where servers must not send requests (input they need goes through an input_required result); the harness does not answer it",
                        canonical(id),
                        self.version.as_deref().unwrap_or("the stateless era")
                    ),
                );
            }
            (Some(method), Some(id)) => {
                // The server's own request: answer it so it is not left waiting.
                self.transcript[index].internal = true;
                let answer = if method == "ping" {
                    Self::pong(id)
                } else {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "the conformance harness does not offer this method"}})
                };
                self.reply(answer).await;
            }
            (Some("notifications/progress"), None) => {
                let (channel, at) = (self.transcript[index].channel, self.transcript[index].at);
                self.progress(value.get("params"), channel, at)
            }
            (Some(_), None) => {}
            (None, _) => self.response(index, &value),
        }
    }

    fn progress(&mut self, params: Option<&Value>, channel: Channel, at: Duration) {
        let token = params.and_then(|p| p.get("progressToken"));
        let Some(request_key) = token
            .and_then(|t| self.ledger.tokens.get(&self.ledger.key(t)))
            .cloned()
        else {
            let shown = token.map(canonical).unwrap_or_else(|| "none".into());
            self.rule(
                Severity::Fail,
                Req::Prg06,
                format!("progress for token {shown}, which no request in flight carries"),
            );
            return;
        };
        if let Some(r) = self.ledger.sent.get_mut(&request_key) {
            r.progress_seen += 1;
        }
        let answered = self
            .ledger
            .sent
            .get(&request_key)
            .is_some_and(|r| r.answers > 0);
        if answered && self.task_progress(&request_key, at) {
            // The task's own rule judged it (PRG-10); its values still must increase.
            self.progress_values(&request_key, params, channel);
            return;
        }
        let ended = self
            .ledger
            .sent
            .get(&request_key)
            .map(|r| (r.answers > 0, r.cancel));
        match ended {
            Some((true, _)) => self.rule(
                Severity::Fail,
                Req::Prg07,
                format!("progress for request {request_key} after its response; progress must stop when the operation completes"),
            ),
            Some((false, Some(mark))) if self.read_by(&mark).is_some_and(|read| read <= at) => {
                // Judged once the case has ended (`judge_late_progress`): whether load or
                // flight explains it depends on whether more came after.
                let after = self
                    .read_by(&mark)
                    .map_or(Duration::ZERO, |proof| at.saturating_sub(proof));
                let first = self
                    .ledger
                    .sent
                    .get(&request_key)
                    .is_some_and(|r| r.after_proof.is_empty());
                // A later one is explained by a handler that was kept from running while the
                // cancel travelled (ticks it owed piled up): the target's CPU waits since the
                // cancel was sent.
                // A ticker behind its own schedule (ticks due before the proof, not yet sent)
                // may send what it owed before it looks at its cancel again: at once, as a
                // burst within a grace of the proof (longer by its CPU waits). Progress that
                // goes on coming after that is not a backlog, however many ticks the schedule
                // says were due (a tool that ignores the ticker's interval owes nothing).
                let within_grace = after < self.grace_after(mark.waited);
                let owed = within_grace
                    && self.ledger.sent.get(&request_key).is_some_and(|r| {
                        r.tick.zip(self.read_by(&mark)).is_some_and(|(tick, read)| {
                            let due =
                                read.saturating_sub(r.sent).as_micros() / tick.as_micros().max(1);
                            u128::from(r.progress_seen) <= due + 1
                        })
                    });
                let explained = if first {
                    within_grace
                } else {
                    owed
                        || self
                            .lost_since(mark.sent_waited)
                            .is_some_and(|lost| after < lost)
                };
                let line = self.line;
                if let Some(r) = self.ledger.sent.get_mut(&request_key) {
                    r.after_proof.push(LateProgress {
                        line,
                        after,
                        explained,
                    });
                }
            }
            _ => {}
        }
        self.progress_values(&request_key, params, channel);
    }

    /// Progress values: numeric (PRG-02) and increasing within one stream (PRG-03).
    fn progress_values(&mut self, request_key: &str, params: Option<&Value>, channel: Channel) {
        let value = params
            .and_then(|p| p.get("progress"))
            .and_then(Value::as_f64);
        let Some(value) = value else {
            self.rule(
                Severity::Fail,
                Req::Prg02,
                format!("progress for request {request_key} without a numeric `progress`"),
            );
            return;
        };
        let request = self
            .ledger
            .sent
            .get_mut(request_key)
            .expect("token maps to a request");
        // Progress is compared within one stream only: across HTTP streams, arrival order is
        // not send order (AMB-07).
        let last = request
            .last_progress
            .replace((value, channel))
            .filter(|(_, on)| *on == channel)
            .map(|(prev, _)| prev);
        match last {
            Some(prev) if value < prev => self.rule(
                Severity::Fail,
                Req::Prg03,
                format!("progress for request {request_key} went down from {prev} to {value}; it must increase"),
            ),
            Some(prev) if value == prev => self.rule(
                Severity::Warn,
                Req::Prg03,
                format!("progress for request {request_key} repeated {value}; it must increase with every notification"),
            ),
            _ => {}
        }
    }

    fn response(&mut self, index: usize, value: &Value) {
        let Some(request) = self.settle_response(index) else {
            return;
        };
        // A server that speaks both eras takes a legacy `initialize` as the opening of a
        // handshake-era session, whatever the run began as (LIF-14).
        if request.method == "initialize" {
            if let Some(agreed) = value
                .pointer("/result/protocolVersion")
                .and_then(Value::as_str)
                .filter(|v| crate::era::HANDSHAKE_VERSIONS.contains(v))
            {
                self.version = Some(agreed.to_string());
            }
        }
        if request.starts {
            self.agreed_version(value);
        }
        let at = self.transcript[index].at;
        self.track_task(&request, value, at);
        let key = self.ledger.key(&value["id"]);
        let Some(mark) = request.cancel else {
            return;
        };
        // A cancel after the answer, or one for `initialize` (which a client must never send;
        // whatever the server does with it short of a crash is its business).
        if request.answered_before_cancel || request.starts {
            return;
        }
        // A response the cancel certainly caused, or one the server sent knowing of the cancel
        // before its work could have ended, is a warning; where the timing cannot tell whether
        // the work was done before the cancel was read (CAN-09 lets a finished request ignore
        // its cancel), the server gets the benefit of the doubt, and the note says so. Load
        // only makes things later, so none of this flips on a busy machine.
        let cancelled_error = value.pointer("/error/code").and_then(Value::as_i64) == Some(-32800);
        let ms = |d: std::time::Duration| d.as_millis();
        let judged: Result<String, String> = if request.endless {
            Ok("its tool never ends on its own, so the cancel caused it".into())
        } else if request.natural_end.is_some_and(|end| at < end) {
            Ok(
                "it came before the tool could have finished on its own, so the cancel caused it"
                    .into(),
            )
        } else if cancelled_error {
            Ok("its error -32800 says the cancel caused it".into())
        } else {
            match (request.natural_end, self.read_by(&mark)) {
                (Some(end), _) if mark.sent >= end => Err(format!(
                    "the cancel of request {key} was sent at +{} ms, when the tool could already have finished (+{} ms), so its response may have been produced before the cancel was read (CAN-09); the timing cannot tell",
                    ms(mark.sent),
                    ms(end)
                )),
                // Read before the end, but the handler needs a CPU to act on it: a target kept
                // waiting for one from the proof past the tool's end may have had both the end
                // and the cancel ready when it ran again.
                (Some(end), Some(read))
                    if read < end
                        && self
                            .lost_since(mark.waited)
                            .is_some_and(|lost| read + lost >= end) =>
                {
                    Err(format!(
                        "the target had read the cancel of request {key} {} ms before the tool could have finished, but its processes waited {} ms for a CPU since, so its handler may not have run before the tool's end (CAN-09); the timing cannot tell",
                        ms(end - read),
                        ms(self.lost_since(mark.waited).unwrap_or_default())
                    ))
                }
                (Some(end), Some(read)) if read < end => Ok(format!(
                    "the target had read the cancel before the tool could have finished on its own ({}), and answered all the same",
                    mark.proof()
                )),
                (Some(end), Some(read)) => Err(format!(
                    "the proof that request {key}'s cancel was read came at +{} ms, after the tool could have finished (+{} ms), so its work may have ended before the cancel was read (CAN-09); the timing cannot tell",
                    ms(read),
                    ms(end)
                )),
                (None, Some(read)) if at >= read => Err(format!(
                    "request {key} was answered after the target had read its cancel, but its tool's duration is unknown: the work may have ended before the cancel was read (CAN-09); the timing cannot tell"
                )),
                _ => Err(format!(
                    "the response to request {key} crossed its cancel (allowed)"
                )),
            }
        };
        match judged {
            Ok(why) => self.rule(
                self.after_cancel_severity(),
                Req::Can05,
                format!("request {key} was answered after it was cancelled ({why}); a cancelled request should get no response{}", self.after_cancel_rule()),
            ),
            Err(note) => self.rule(Severity::Note, Req::Can08, note),
        }
    }

    /// Progress that came after the proof that its request's cancel was read, once nothing
    /// more will come. A server that writes from several tasks does not keep order: the first
    /// message right after the proof may have been produced before the cancel was read. A
    /// handler kept from running by a busy machine may also not have seen the cancel yet when
    /// it runs again, and send a few more before it does: those that came (after the proof)
    /// within the time the target waited for a CPU since the cancel was sent, or (a `ticker`
    /// behind its schedule) that it owed by the proof. When every such message is explained so, and
    /// they stopped, the target gets the benefit of the doubt (a note); when any is not, every
    /// one but an explained first is judged.
    pub(crate) fn judge_late_progress(&mut self) {
        let mut late: Vec<(String, Vec<LateProgress>, Option<Duration>)> = self
            .ledger
            .sent
            .iter()
            .filter(|(_, r)| !r.after_proof.is_empty())
            .map(|(key, r)| {
                (
                    key.clone(),
                    r.after_proof.clone(),
                    r.cancel.and_then(|m| m.sent_waited),
                )
            })
            .collect();
        late.sort_by(|a, b| a.0.cmp(&b.0));
        let calm = self.calm_grace();
        for (key, messages, waited) in late {
            let Some(mark) = self.ledger.sent.get(&key).and_then(|r| r.cancel) else {
                continue;
            };
            let first = messages[0];
            if messages.iter().all(|m| m.explained) {
                self.line = first.line;
                let lost = self.lost_since(waited).unwrap_or_default();
                let since_proof = self.lost_since(mark.waited).unwrap_or_default();
                let message = if messages.len() == 1 {
                    let busy = if first.after >= calm {
                        format!(
                            " ({} ms after it: later than the {} ms a calm machine allows, but the target waited {} ms for a CPU since)",
                            first.after.as_millis(),
                            calm.as_millis(),
                            since_proof.as_millis()
                        )
                    } else {
                        String::new()
                    };
                    format!("one progress for request {key} came just after the proof that its cancel was read{busy}; it may have been produced before (the timing cannot tell), so it is not judged")
                } else {
                    format!(
                        "{} progress for request {key} came within {} ms of the proof that its cancel was read, and then stopped; the tool was behind its own schedule or the target had waited {} ms for a CPU since the cancel was sent: a handler kept from running may not have seen the cancel yet (the timing cannot tell), so they are not judged",
                        messages.len(),
                        messages[messages.len() - 1].after.as_millis(),
                        lost.as_millis()
                    )
                };
                self.rule(Severity::Note, Req::Can08, message);
                continue;
            }
            let judged = if first.explained {
                self.line = first.line;
                self.rule(
                    Severity::Note,
                    Req::Can08,
                    format!("one progress for request {key} came just after the proof that its cancel was read; it may have been produced before (the timing cannot tell), so it is not judged"),
                );
                &messages[1..]
            } else {
                &messages[..]
            };
            for m in judged {
                self.line = m.line;
                self.rule(
                    self.after_cancel_severity(),
                    Req::Can05,
                    format!(
                        "progress for request {key} after the target had read its cancel ({}){}",
                        mark.proof(),
                        self.after_cancel_rule()
                    ),
                );
            }
        }
    }

    /// Whether the server may send requests in the run's protocol version.
    fn servers_may_request(&self) -> bool {
        self.protocol().is_none_or(|v| v.servers_may_request())
    }

    /// How a message for a request the server certainly knew was cancelled weighs: a broken
    /// SHOULD up to 2025-11-25, a broken MUST NOT in 2026-07-28 ("MUST NOT send any further
    /// messages for it", AMB-02, AMB-08).
    fn after_cancel_severity(&self) -> Severity {
        if self.protocol().is_some_and(|v| v.era() == Era::Stateless) {
            Severity::Fail
        } else {
            Severity::Warn
        }
    }

    /// What the finding adds in 2026-07-28.
    fn after_cancel_rule(&self) -> &'static str {
        if self.protocol().is_some_and(|v| v.era() == Era::Stateless) {
            "; in 2026-07-28 a server MUST NOT send any further messages for a cancelled request"
        } else {
            ""
        }
    }

    /// Responses no step expected and no cancel explains.
    pub(crate) fn unexpected_responses(&mut self) {
        // A cancelled request may get one response or none; the standing rules judged it.
        // Ids belong to the session the response came in.
        let cancelled = |session: usize, v: &Value| {
            v.get("id")
                .map(|id| self.ledger.key_in(self.scope_of(session).as_deref(), id))
                .and_then(|key| self.ledger.sent.get(&key))
                .is_some_and(|r| r.cancel.is_some())
        };
        let stray: Vec<String> = self
            .transcript
            .iter()
            .filter(|e| {
                e.direction == Direction::Received && !e.internal && e.consumed_by.is_none()
            })
            .filter_map(|e| e.value.as_ref().map(|v| (e.session, v)))
            .filter(|(session, v)| {
                v.get("method").is_none() && v.get("id").is_some() && !cancelled(*session, v)
            })
            .map(|(_, v)| short(v))
            .collect();
        for message in stray {
            self.finding(
                self.case_severity(),
                FindingKind::Unmet,
                format!("a response the case does not expect: {message}"),
            );
        }
    }
}
