//! The standing rules for a client's `notifications/cancelled`: a well-formed cancel
//! (CAN-01) of a request the client itself sent (CAN-02) and that is still in progress
//! (CAN-03), never of `initialize` (CAN-04), and never of a `tools/call` that created a
//! task: a task is cancelled with `tasks/cancel` (TSK-03, CAN-15); a client told only to stop
//! waiting for a task ends its `tasks/result` wait and never cancels the task (TSK-06); and
//! for its answer to a request the harness cancelled (CAN-13).
//!
//! Functions over the cancel, the ledger and a reading of the clock returning findings; the
//! engine applies them (`engine/client/judge.rs`).

use crate::facts::ledger::{Ledger, ReceivedRequest, SentRequest};
use crate::facts::waits::Waits;
use crate::outcome::Severity;
use crate::pattern::id_key;
use crate::requirement::Req;
use crate::rules::envelope::{short, Problem};
use serde_json::Value;
use std::time::{Duration, Instant};

/// What is known when a client's cancel arrives.
#[derive(Debug, Clone, Copy)]
pub struct CancelFacts<'a> {
    /// Its `params`.
    pub params: Option<&'a Value>,
    /// The client's request its `requestId` names, if the client sent one with that id.
    pub request: Option<&'a ReceivedRequest>,
    /// When it arrived.
    pub arrived: Instant,
    /// The transport keeps order (stdio), so a stateless request is not cancelled by a POST.
    pub ordered: bool,
    /// The grace within which a cancel crossed the harness's answer on a calm machine.
    pub grace: Duration,
    /// The clock, read when it arrived.
    pub waits: Waits,
    /// How much a broken expectation of the case weighs.
    pub case_severity: Severity,
}

/// What a client's cancel names.
#[derive(Debug, Clone, PartialEq)]
pub enum Named {
    /// Nothing that can be read (judged already).
    Nothing,
    /// The client's own request with this key: now cancelled.
    Own(String),
    /// No request the client sent (yet): judged by [`cancel_of_unknown`], once its request can
    /// no longer be on its way.
    Unknown,
}

/// Judges a client's cancel. A cancel that trails the harness's answer by less than the grace
/// crossed it. Nothing proves which the client wrote first, so timing decides: the gap is
/// measured to when the cancel arrived (not to when the harness got round to judging it), and
/// the grace grows by the time the client's processes waited for a CPU since the answer (where
/// the kernel does not say, by the machine's CPU pressure); a cancel excused only by that gets
/// a note saying the timing could not tell.
pub fn client_cancel(facts: &CancelFacts) -> (Vec<Problem>, Named) {
    let mut problems = vec![];
    let Some(params) = facts.params.filter(|p| p.is_object()) else {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Can01,
            "a `notifications/cancelled` without params; it must carry `requestId`".into(),
        ));
        return (problems, Named::Nothing);
    };
    if let Some(reason) = params.get("reason").filter(|r| !r.is_string()) {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Can01,
            format!(
                "a cancel's `reason` must be a string, got {}",
                short(reason)
            ),
        ));
    }
    let Some(id) = params
        .get("requestId")
        .filter(|id| id.is_string() || id.is_number())
    else {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Can01,
            format!(
                "a cancel needs `requestId`, a string or an integer: {}",
                short(params)
            ),
        ));
        return (problems, Named::Nothing);
    };
    let key = id_key(id);
    let Some(request) = facts.request else {
        return (problems, Named::Unknown);
    };
    if request.stateless && !facts.ordered {
        problems.push(Problem::new(
            Severity::Note,
            Req::Can12,
            format!("the client POSTed `notifications/cancelled` for request {key}; in 2026-07-28 over HTTP closing the request's stream is the cancel and the notification is not expected (allowed, AMB-06)"),
        ));
    }
    if request.method == "initialize" {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Can04,
            format!("the client cancelled its `initialize` request (id {key}); initialize must never be cancelled (LIF-08)"),
        ));
    }
    if let Some(answered) = request.answered {
        problems.push(after_answer(facts, request, &key, answered));
    }
    if request.cancelled {
        problems.push(Problem::new(
            Severity::Note,
            Req::Can01,
            format!("the client cancelled request {key} more than once"),
        ));
    }
    (problems, Named::Own(key))
}

/// A cancel of request `key`, which the server had answered at `answered`.
fn after_answer(
    facts: &CancelFacts,
    request: &ReceivedRequest,
    key: &str,
    answered: Instant,
) -> Problem {
    let late = facts.arrived.saturating_duration_since(answered);
    // The grace grows by what the client waited for a CPU since the answer (a client kept from
    // running reads the answer late); where the kernel does not say, by the machine's CPU
    // pressure.
    let grace = match facts.waits.lost_since(request.answered_waited) {
        Some(lost) => facts.grace + lost,
        None => crate::load::stretched(facts.grace, facts.waits.stretch),
    };
    if let Some(task) = &request.task {
        let (severity, req, message) = task_call_cancel(key, task, request.stateless, late, grace);
        Problem::new(severity, req, message)
    } else if late > grace {
        Problem::new(
            facts.case_severity.min(Severity::Warn),
            Req::Can03,
            format!(
                "the client cancelled request {key} {} ms after the server had answered it; a cancel must only reference a request still in progress",
                late.as_millis()
            ),
        )
    } else if late > facts.grace {
        Problem::new(
            Severity::Note,
            Req::Can08,
            format!(
                "the cancel of request {key} came {} ms after the server had answered it, later than the {} ms a calm machine allows, but the client was kept waiting for a CPU meanwhile (grace grown to {} ms): it may have crossed the response, and the timing cannot tell",
                late.as_millis(),
                facts.grace.as_millis(),
                grace.as_millis()
            ),
        )
    } else {
        Problem::new(
            Severity::Note,
            Req::Can08,
            format!("the cancel of request {key} crossed its response (allowed)"),
        )
    }
}

/// A cancel naming no request the client sent (yet): one of the harness's (CAN-02), one whose
/// id differs in type from the client's request (CAN-01), or none at all.
pub fn cancel_of_unknown(params: &Value, ledger: &Ledger) -> Option<Problem> {
    let id = params.get("requestId")?;
    let key = id_key(id);
    if ledger.received(&key).is_some() {
        return None;
    }
    if ledger.request(&key).is_some() {
        return Some(Problem::new(
            Severity::Fail,
            Req::Can02,
            format!("the client cancelled request {key}, which the harness (its server) issued; a party may only cancel its own requests"),
        ));
    }
    let other_type = ledger
        .received_requests()
        .iter()
        .find(|(k, _)| k.trim_matches('"') == key.trim_matches('"') && **k != key);
    let message = match other_type {
        Some((original, r)) => format!(
            "the cancel's requestId {key} differs in type from the id {original} of the client's `{}` request; it must be the identical JSON value",
            r.method
        ),
        None => format!("the client cancelled request {key}, which it never sent"),
    };
    Some(Problem::new(Severity::Fail, Req::Can01, message))
}

/// The client's first answer to the harness's request `key`, which arrived `at` (since the
/// client started): after the harness's cancel of it was certainly read (a later request was
/// answered first), a warning; one that crossed the cancel is allowed (AMB-25).
pub fn answered_after_cancel(key: &str, request: &SentRequest, at: Duration) -> Option<Problem> {
    let mark = request.cancel?;
    if request.answered_before_cancel {
        return None;
    }
    Some(if mark.is_read(at) {
        Problem::new(
            Severity::Warn,
            Req::Can13,
            format!("the client answered the harness's request {key} after it had certainly read the harness's cancel of it (it answered a later request first); a cancelled request should get no response"),
        )
    } else {
        Problem::new(
            Severity::Note,
            Req::Can13,
            format!("the client's answer to request {key} crossed the harness's cancel (allowed, AMB-25)"),
        )
    })
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
                "the client sent `notifications/cancelled` for request {key} {} ms after the server had answered it with task {task}; that call was complete, and a task is cancelled with `tasks/cancel`, never `notifications/cancelled`",
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

/// Whether a client case's actions tell the adapter to stop waiting for a task's result and
/// leave the task working (`abandon`, `abandon_after_ms`), and none tells it to cancel or to
/// give up on a deadline: the case where a `tasks/cancel` is no part of what was asked.
pub fn abandons_only(actions: &[Value]) -> bool {
    let any = |keys: &[&str]| {
        actions
            .iter()
            .any(|a| keys.iter().any(|k| a.get(*k).is_some()))
    };
    any(&["abandon", "abandon_after_ms"]) && !any(&["cancel", "cancel_after_ms", "timeout_ms"])
}

/// A `tasks/cancel` (request `key`, `params`) from a client that was only told to stop
/// waiting: ending a wait leaves the task working (TSK-06), so cancelling the task is doing
/// what the caller did not ask, weighed at the case's level.
pub fn task_cancel_when_abandoning(key: &str, params: Option<&Value>, level: Severity) -> Problem {
    let task = params
        .and_then(|p| p.get("taskId"))
        .map_or_else(|| "its task".to_string(), |t| format!("task {t}"));
    Problem::new(
        level,
        Req::Tsk06,
        format!("the client sent `tasks/cancel` (request {key}) for {task}, but it was told only to stop waiting for the result and leave the task working; ending a wait is `notifications/cancelled` for the `tasks/result` (or no more polls), never `tasks/cancel`"),
    )
}

/// The client's `tasks/result` requests that it neither got an answer to nor cancelled while
/// its session lasted, in a case whose adapter was told to stop waiting: the wait was left
/// open at the server instead of being cancelled (TSK-06: a `tasks/result` is cancelled like
/// any request, which ends the wait and not the task). A cancel at any time counts, also one
/// sent as the client closed.
pub fn waits_left_open<'a>(
    received: impl IntoIterator<Item = (&'a String, &'a ReceivedRequest)>,
    level: Severity,
) -> Vec<Problem> {
    received
        .into_iter()
        .filter(|(_, r)| r.method == "tasks/result" && r.answered.is_none() && !r.cancelled)
        .map(|(key, _)| {
            Problem::new(
                level,
                Req::Tsk06,
                format!("the client stopped waiting for its task's result, but its `tasks/result` request {key} was never cancelled: the server still holds that wait; `notifications/cancelled` naming it ends the wait and leaves the task working"),
            )
        })
        .collect()
}

#[cfg(test)]
#[path = "client_cancel_tests.rs"]
mod tests;
