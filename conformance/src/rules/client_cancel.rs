//! The standing rules for a client's `notifications/cancelled`: a well-formed cancel
//! (CAN-01) of a request the client itself sent (CAN-02) and that is still in progress
//! (CAN-03), never of `initialize` (CAN-04), and never of a `tools/call` that created a
//! task: a task is cancelled with `tasks/cancel` (TSK-03, CAN-15).

use crate::engine::client::{ClientTarget, T_GRACE};
use crate::engine::Engine;
use crate::outcome::Severity;
use crate::pattern::id_key;
use crate::requirement::Req;
use crate::rules::envelope::short;
use crate::transport::Transport;
use serde_json::Value;
use std::time::Duration;

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// The standing rules for a client's `notifications/cancelled`, which arrived `at` (since
    /// the client started).
    ///
    /// A cancel that trails the harness's answer by less than `T_GRACE` crossed it. Nothing
    /// proves which the client wrote first, so timing decides: the gap is measured to when the
    /// cancel arrived (not to when the harness got round to judging it), and the grace grows by
    /// the time the client's processes waited for a CPU since the answer (where the kernel does
    /// not say, by the machine's CPU pressure); a cancel excused only by that gets a note
    /// saying the timing could not tell.
    pub(crate) fn client_cancel(&mut self, params: Option<&Value>, at: Duration) {
        let Some(params) = params.filter(|p| p.is_object()) else {
            self.rule(
                Severity::Fail,
                Req::Can01,
                "a `notifications/cancelled` without params; it must carry `requestId`".into(),
            );
            return;
        };
        if let Some(reason) = params.get("reason").filter(|r| !r.is_string()) {
            self.rule(
                Severity::Fail,
                Req::Can01,
                format!(
                    "a cancel's `reason` must be a string, got {}",
                    short(reason)
                ),
            );
        }
        let Some(id) = params
            .get("requestId")
            .filter(|id| id.is_string() || id.is_number())
        else {
            self.rule(
                Severity::Fail,
                Req::Can01,
                format!(
                    "a cancel needs `requestId`, a string or an integer: {}",
                    short(params)
                ),
            );
            return;
        };
        let key = id_key(id);
        if let Some(request) = self.ledger.received.get_mut(&key) {
            let method = request.method.clone();
            let answered = request.answered;
            let answered_waited = request.answered_waited;
            let again = request.cancelled;
            let task = request.task.clone();
            let stateless = request.stateless;
            let posted = request.stateless && !self.io.ordered();
            request.cancelled = true;
            if posted {
                self.rule(
                    Severity::Note,
                    Req::Can12,
                    format!("the client POSTed `notifications/cancelled` for request {key}; in 2026-07-28 over HTTP closing the request's stream is the cancel and the notification is not expected (allowed, AMB-06)"),
                );
            }
            if method == "initialize" {
                self.rule(
                    Severity::Fail,
                    Req::Can04,
                    format!("the client cancelled its `initialize` request (id {key}); initialize must never be cancelled (LIF-08)"),
                );
            }
            if let Some(answered) = answered {
                let arrived = self.io.started() + at;
                let late = arrived.saturating_duration_since(answered);
                // The grace grows by what the client waited for a CPU since the answer (a
                // client kept from running reads the answer late); where the kernel does not
                // say, by the machine's CPU pressure.
                let grace = match self.lost_since(answered_waited) {
                    Some(lost) => T_GRACE + lost,
                    None => self.clock.stretched(T_GRACE),
                };
                if let Some(task) = task {
                    let (severity, req, message) =
                        task_call_cancel(&key, &task, stateless, late, grace);
                    self.rule(severity, req, message);
                } else if late > grace {
                    let severity = self.case_severity().min(Severity::Warn);
                    self.rule(
                        severity,
                        Req::Can03,
                        format!(
                            "the client cancelled request {key} {} ms after the harness had answered it; a cancel must only reference a request still in progress",
                            late.as_millis()
                        ),
                    );
                } else if late > T_GRACE {
                    self.rule(
                        Severity::Note,
                        Req::Can08,
                        format!(
                            "the cancel of request {key} came {} ms after the harness had answered it, later than the {} ms a calm machine allows, but the client was kept waiting for a CPU meanwhile (grace grown to {} ms): it may have crossed the response, and the timing cannot tell",
                            late.as_millis(),
                            T_GRACE.as_millis(),
                            grace.as_millis()
                        ),
                    );
                } else {
                    self.rule(
                        Severity::Note,
                        Req::Can08,
                        format!("the cancel of request {key} crossed its response (allowed)"),
                    );
                }
            }
            if again {
                self.rule(
                    Severity::Note,
                    Req::Can01,
                    format!("the client cancelled request {key} more than once"),
                );
            }
            return;
        }
        if self.may_cross() {
            // Its request's POST may still be on its way: judged when it comes, or at the end.
            let held = self.held(at, params.clone());
            self.side.crossing.cancels.push((key, held));
            return;
        }
        self.cancel_of_unknown(params);
    }

    /// A cancel naming no request the client sent (yet): one of the harness's (CAN-02), one
    /// whose id differs in type from the client's request (CAN-01), or none at all.
    pub(crate) fn cancel_of_unknown(&mut self, params: &Value) {
        let Some(id) = params.get("requestId") else {
            return;
        };
        let key = id_key(id);
        if self.ledger.received.contains_key(&key) {
            return;
        }
        if self.ledger.sent.contains_key(&key) {
            self.rule(
                Severity::Fail,
                Req::Can02,
                format!("the client cancelled request {key}, which the harness (its server) issued; a party may only cancel its own requests"),
            );
            return;
        }
        let other_type = self
            .ledger
            .received
            .iter()
            .find(|(k, _)| k.trim_matches('"') == key.trim_matches('"') && **k != key);
        let message = match other_type {
            Some((original, r)) => format!(
                "the cancel's requestId {key} differs in type from the id {original} of the client's `{}` request; it must be the identical JSON value",
                r.method
            ),
            None => format!("the client cancelled request {key}, which it never sent"),
        };
        self.rule(Severity::Fail, Req::Can01, message);
    }
}

/// How a `notifications/cancelled` naming the `tools/call` (id `key`) that created `task`
/// weighs, `late` after the harness's `CreateTaskResult` with `grace` for crossing it. The
/// call was complete once it created the task, and a task is cancelled with `tasks/cancel`
/// (TSK-03; CAN-15 in the 2026-07-28 extension). Within the grace the client may have
/// decided to cancel the call before it read that the call became a task: a note.
pub(crate) fn task_call_cancel(
    key: &str,
    task: &str,
    stateless: bool,
    late: Duration,
    grace: Duration,
) -> (Severity, Req, String) {
    let req = if stateless { Req::Can15 } else { Req::Tsk03 };
    if late > grace {
        return (
            Severity::Fail,
            req,
            format!(
                "the client sent `notifications/cancelled` for request {key} {} ms after the harness had answered it with task {task}; that call was complete, and a task is cancelled with `tasks/cancel`, never `notifications/cancelled`",
                late.as_millis()
            ),
        );
    }
    (
        Severity::Note,
        req,
        format!(
            "the cancel of request {key} crossed the answer that made it task {task} ({} ms apart; allowed: the client may have decided before it read that the call became a task)",
            late.as_millis()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_millis(250);

    #[test]
    fn a_cancel_of_a_task_call_after_the_grace_fails_by_era() {
        let (severity, req, message) =
            task_call_cancel("3", "t-1", false, Duration::from_millis(900), GRACE);
        assert_eq!((severity, req), (Severity::Fail, Req::Tsk03));
        assert!(message.contains("tasks/cancel"), "{message}");
        assert!(message.contains("task t-1"), "{message}");
        let (severity, req, _) =
            task_call_cancel("3", "t-1", true, Duration::from_millis(900), GRACE);
        assert_eq!((severity, req), (Severity::Fail, Req::Can15));
    }

    #[test]
    fn a_cancel_that_crossed_the_create_task_result_is_a_note() {
        for late in [Duration::ZERO, GRACE] {
            let (severity, _, message) = task_call_cancel("3", "t-1", false, late, GRACE);
            assert_eq!(severity, Severity::Note, "{message}");
            assert!(message.contains("crossed"), "{message}");
        }
    }
}
