//! The response to a request the harness cancelled. A response the cancel certainly caused, or
//! one the server sent knowing of the cancel before its work could have ended, breaks CAN-05
//! (a warning up to 2025-11-25, a failure in 2026-07-28); where the timing cannot tell whether
//! the work was done before the cancel was read (CAN-09 lets a finished request ignore its
//! cancel), the server gets the benefit of the doubt, and a note says so (CAN-08). Load only
//! makes things later, so none of this flips on a busy machine.

use super::{after_cancel_rule, after_cancel_severity};
use crate::era::ProtocolVersion;
use crate::facts::ledger::SentRequest;
use crate::facts::waits::Waits;
use crate::outcome::{Doubt, Severity};
use crate::requirement::Req;
use crate::rules::envelope::Problem;
use serde_json::Value;
use std::time::Duration;

/// What the first response `value` (arrived `at`) to request `key` breaks when the request
/// had been cancelled (nothing when it had not), as the clock `waits` and the era `version`
/// weigh it: a subscription's close with a result is a note (see `listen`), any other
/// answer is judged by [`answered_after_cancel`].
pub fn after_cancel(
    key: &str,
    request: &SentRequest,
    value: &Value,
    at: Duration,
    waits: &Waits,
    version: Option<ProtocolVersion>,
) -> Vec<Problem> {
    if request.cancel.is_none() {
        return vec![];
    }
    if request.method == "subscriptions/listen" && !request.answered_before_cancel {
        if let Some(note) = super::listen::closed_with_result(key, value) {
            return vec![note];
        }
    }
    answered_after_cancel(key, request, value, at, waits, version)
        .into_iter()
        .collect()
}

/// Judges the first response (`value`, which came `at` after the target started) to request
/// `key`, whose ledger entry is `request`, when the harness had cancelled it. Nothing to say
/// when it was not cancelled, was answered before its cancel, or is an `initialize` (which a
/// client must never cancel; whatever the server does with it short of a crash is its
/// business).
pub fn answered_after_cancel(
    key: &str,
    request: &SentRequest,
    value: &Value,
    at: Duration,
    waits: &Waits,
    version: Option<ProtocolVersion>,
) -> Option<Problem> {
    let mark = request.cancel?;
    if request.answered_before_cancel || request.starts {
        return None;
    }
    let cancelled_error = value.pointer("/error/code").and_then(Value::as_i64) == Some(-32800);
    let judged = if request.endless {
        Cause::Cancel("its tool never ends on its own, so the cancel caused it".into())
    } else if request.natural_end.is_some_and(|end| at < end) {
        Cause::Cancel(
            "it came before the tool could have finished on its own, so the cancel caused it"
                .into(),
        )
    } else if cancelled_error {
        Cause::Cancel("its error -32800 says the cancel caused it".into())
    } else {
        by_timing(key, request.natural_end, &mark, at, waits)
    };
    Some(match judged {
        Cause::Cancel(why) => Problem::new(
            after_cancel_severity(version),
            Req::Can05,
            format!("request {key} was answered after it was cancelled ({why}); a cancelled request should get no response{}", after_cancel_rule(version)),
        ),
        Cause::Unclear(note, None) => Problem::new(Severity::Note, Req::Can08, note),
        Cause::Unclear(note, Some(doubt)) => {
            Problem::new(Severity::Note, Req::Can08, note).doubting(doubt)
        }
    })
}

/// What a note says when the target's waits for a CPU, not the timing of its own work, left
/// open whether its handler saw a cancel in time (such a note carries
/// [`Doubt::WaitedPastEnd`], and a shared run is rerun alone for it).
pub const WAITED_PAST_END: &str =
    "for a CPU since, so its handler may not have run before the tool's end";

/// What caused a response to a cancelled request, as far as the facts tell.
#[derive(Debug, PartialEq)]
enum Cause {
    /// The cancel did, or the server knew of it before its work could have ended: why.
    Cancel(String),
    /// The facts cannot tell, or the response crossed the cancel: the note that says so, and
    /// whether a run on a target of its own may tell.
    Unclear(String, Option<Doubt>),
}

impl Cause {
    /// A note that no run can settle.
    fn unclear(note: String) -> Cause {
        Cause::Unclear(note, None)
    }
}

/// Whether the timing shows the server knew of the cancel before its work could have ended
/// ([`Cause::Cancel`]) or cannot tell ([`Cause::Unclear`]).
fn by_timing(
    key: &str,
    natural_end: Option<Duration>,
    mark: &crate::facts::ledger::CancelMark,
    at: Duration,
    waits: &Waits,
) -> Cause {
    let ms = |d: Duration| d.as_millis();
    let lost = waits.lost_since(mark.waited);
    match (natural_end, waits.read_by(mark)) {
        (Some(end), _) if mark.sent >= end => Cause::unclear(format!(
            "the cancel of request {key} was sent at +{} ms, when the tool could already have finished (+{} ms), so its response may have been produced before the cancel was read (CAN-09); the timing cannot tell",
            ms(mark.sent),
            ms(end)
        )),
        // Read before the end, but the handler needs a CPU to act on it: a target kept waiting
        // for one from the proof past the tool's end may have had both the end and the cancel
        // ready when it ran again.
        (Some(end), Some(read)) if read < end && lost.is_some_and(|lost| read + lost >= end) => {
            Cause::Unclear(format!(
                "the target had read the cancel of request {key} {} ms before the tool could have finished, but its processes waited {} ms {WAITED_PAST_END} (CAN-09); the timing cannot tell",
                ms(end.saturating_sub(read)),
                ms(lost.unwrap_or_default())
            ), Some(Doubt::WaitedPastEnd))
        }
        (Some(end), Some(read)) if read < end => Cause::Cancel(format!(
            "the target had read the cancel before the tool could have finished on its own ({}), and answered all the same",
            mark.proof()
        )),
        (Some(end), Some(read)) => Cause::unclear(format!(
            "the proof that request {key}'s cancel was read came at +{} ms, after the tool could have finished (+{} ms), so its work may have ended before the cancel was read (CAN-09); the timing cannot tell",
            ms(read),
            ms(end)
        )),
        (None, Some(read)) if at >= read => Cause::unclear(format!(
            "request {key} was answered after the target had read its cancel, but its tool's duration is unknown: the work may have ended before the cancel was read (CAN-09); the timing cannot tell"
        )),
        _ => Cause::unclear(format!(
            "the response to request {key} crossed its cancel (allowed)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{call, calm, cancel, cancelled, ms};
    use serde_json::json;

    fn answered(request: &SentRequest, at: u64, waits: Waits, version: &str) -> Option<Problem> {
        let value = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
        let version = ProtocolVersion::parse(version);
        answered_after_cancel("1", request, &value, ms(at), &waits, version)
    }

    fn sleep(end: u64, mark: crate::facts::ledger::CancelMark) -> SentRequest {
        let mut r = cancelled(call(), mark);
        r.natural_end = Some(ms(end));
        r
    }

    fn kind(p: Option<Problem>) -> (Severity, Req, String) {
        let p = p.expect("a finding");
        (p.severity, p.requirement, p.message)
    }

    #[test]
    fn an_answer_to_an_endless_tool_after_its_cancel_breaks_can_05() {
        let mut r = cancelled(call(), cancel(100, None));
        r.endless = true;
        let (severity, req, message) = kind(answered(&r, 200, calm(), "2025-11-25"));
        assert_eq!((severity, req), (Severity::Warn, Req::Can05));
        assert_eq!(message, "request 1 was answered after it was cancelled (its tool never ends on its own, so the cancel caused it); a cancelled request should get no response");
    }

    #[test]
    fn in_the_stateless_era_an_answer_after_the_cancel_fails() {
        let mut r = cancelled(call(), cancel(100, None));
        r.endless = true;
        let (severity, _, message) = kind(answered(&r, 200, calm(), "2026-07-28"));
        assert_eq!(severity, Severity::Fail);
        assert!(message.ends_with("MUST NOT send any further messages for a cancelled request"));
    }

    #[test]
    fn an_answer_before_the_tool_could_end_was_caused_by_the_cancel() {
        let r = sleep(5000, cancel(100, None));
        let (_, req, message) = kind(answered(&r, 200, calm(), "2025-11-25"));
        assert_eq!(req, Req::Can05);
        assert!(message
            .contains("before the tool could have finished on its own, so the cancel caused it"));
    }

    #[test]
    fn an_error_minus_32800_says_the_cancel_caused_it() {
        let r = cancelled(call(), cancel(100, None));
        let value = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32800, "message": "x"}});
        let p = answered_after_cancel("1", &r, &value, ms(200), &calm(), None);
        assert_eq!(kind(p).1, Req::Can05);
    }

    #[test]
    fn an_answer_after_the_cancel_was_read_before_the_tool_could_end_breaks_can_05() {
        let r = sleep(1000, cancel(100, Some(300)));
        let (_, req, message) = kind(answered(&r, 1200, calm(), "2025-11-25"));
        assert_eq!(req, Req::Can05);
        assert!(message.contains("(the target had read the cancel before the tool could have finished on its own (an answer to a later request proved it), and answered all the same)"), "{message}");
    }

    #[test]
    fn a_cancel_sent_after_the_tool_could_end_is_a_note() {
        let r = sleep(100, cancel(150, Some(300)));
        let (severity, req, message) = kind(answered(&r, 400, calm(), "2025-11-25"));
        assert_eq!((severity, req), (Severity::Note, Req::Can08));
        assert!(message.starts_with("the cancel of request 1 was sent at +150 ms, when the tool could already have finished (+100 ms)"));
    }

    #[test]
    fn a_target_waiting_for_a_cpu_past_the_tools_end_gets_the_doubt() {
        let mut mark = cancel(100, Some(300));
        mark.waited = Some(ms(0));
        let r = sleep(1000, mark);
        let waits = Waits::calm(ms(250), Some(ms(800)));
        let (_, req, message) = kind(answered(&r, 1200, waits, "2025-11-25"));
        assert_eq!(req, Req::Can08);
        assert!(
            message.contains(
                "700 ms before the tool could have finished, but its processes waited 800 ms"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_proof_after_the_tools_end_is_a_note() {
        let r = sleep(200, cancel(100, Some(300)));
        let (_, req, message) = kind(answered(&r, 400, calm(), "2025-11-25"));
        assert_eq!(req, Req::Can08);
        assert!(message.starts_with("the proof that request 1's cancel was read came at +300 ms, after the tool could have finished (+200 ms)"));
    }

    #[test]
    fn an_answer_after_the_proof_with_no_known_duration_is_a_note() {
        let r = cancelled(call(), cancel(100, Some(300)));
        let (_, req, message) = kind(answered(&r, 400, calm(), "2025-11-25"));
        assert_eq!(req, Req::Can08);
        assert!(message.contains("its tool's duration is unknown"));
    }

    #[test]
    fn an_answer_that_crossed_its_cancel_is_allowed() {
        let r = cancelled(call(), cancel(100, None));
        let (severity, _, message) = kind(answered(&r, 150, calm(), "2025-11-25"));
        assert_eq!(severity, Severity::Note);
        assert_eq!(
            message,
            "the response to request 1 crossed its cancel (allowed)"
        );
    }

    #[test]
    fn nothing_to_judge_without_a_cancel_before_the_answer_or_for_initialize() {
        assert_eq!(answered(&call(), 100, calm(), "2025-11-25"), None);
        let mut before = cancelled(call(), cancel(100, None));
        before.answered_before_cancel = true;
        before.endless = true;
        assert_eq!(answered(&before, 200, calm(), "2025-11-25"), None);
        let mut initialize = cancelled(call(), cancel(100, None));
        initialize.starts = true;
        initialize.endless = true;
        assert_eq!(answered(&initialize, 200, calm(), "2025-11-25"), None);
    }
}
