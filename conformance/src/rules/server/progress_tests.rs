//! One test per finding the progress rules make, and per fair outcome they accept.

use super::*;
use crate::facts::waits::Waits;
use crate::rules::testing::{call, calm, cancel, cancelled, ms};
use serde_json::json;

fn judge(
    params: Value,
    request: Option<&SentRequest>,
    at: u64,
    channel: Channel,
) -> ProgressVerdict {
    progress(&ProgressFacts {
        params: Some(&params),
        channel,
        at: ms(at),
        line: 7,
        request: request.map(|r| ("1", r)),
        waits: calm(),
        task: false,
    })
}

fn one(verdict: &ProgressVerdict) -> (Severity, Req, &str) {
    assert_eq!(verdict.problems.len(), 1, "{:?}", verdict.problems);
    let p = &verdict.problems[0];
    (p.severity, p.requirement, p.message.as_str())
}

#[test]
fn progress_for_a_token_no_request_carries_breaks_prg_06() {
    let v = judge(
        json!({"progressToken": "t9", "progress": 1}),
        None,
        0,
        Channel::Stdio,
    );
    assert_eq!(
        one(&v),
        (
            Severity::Fail,
            Req::Prg06,
            "progress for token \"t9\", which no request in flight carries"
        )
    );
    assert!(!v.counted && v.value.is_none());
}

#[test]
fn progress_after_the_response_breaks_prg_07() {
    let mut r = call();
    r.answers = 1;
    let v = judge(
        json!({"progressToken": "t", "progress": 1}),
        Some(&r),
        0,
        Channel::Stdio,
    );
    assert_eq!(one(&v).1, Req::Prg07);
    assert!(v.counted);
}

fn task_judge(params: Value, request: &SentRequest, channel: Channel) -> ProgressVerdict {
    progress(&ProgressFacts {
        params: Some(&params),
        channel,
        at: ms(500),
        line: 7,
        request: Some(("1", request)),
        waits: calm(),
        task: true,
    })
}

#[test]
fn a_tasks_progress_after_its_calls_answer_is_no_prg_07_but_its_values_are_judged() {
    // 2025-11-25: the `tools/call` answered with a `CreateTaskResult`; its token now belongs
    // to the task, whose own rule (PRG-10) judged when the progress came.
    let mut r = call();
    r.answers = 1;
    let v = task_judge(
        json!({"progressToken": "t", "progress": 1}),
        &r,
        Channel::Stdio,
    );
    assert!(v.problems.is_empty(), "{:?}", v.problems);
    assert!(v.counted && v.late.is_none());
    assert_eq!(v.value, Some(1.0));
    // Numeric (PRG-02) …
    let v = task_judge(
        json!({"progressToken": "t", "progress": "half"}),
        &r,
        Channel::Stdio,
    );
    assert_eq!(one(&v).1, Req::Prg02);
    // … and increasing within one stream (PRG-03).
    r.last_progress = Some((2.0, Channel::Stdio));
    let v = task_judge(
        json!({"progressToken": "t", "progress": 1}),
        &r,
        Channel::Stdio,
    );
    assert_eq!(
        one(&v),
        (
            Severity::Fail,
            Req::Prg03,
            "progress for request 1 went down from 2 to 1; it must increase"
        )
    );
    let v = task_judge(
        json!({"progressToken": "t", "progress": 2}),
        &r,
        Channel::Stdio,
    );
    assert_eq!(one(&v).0, Severity::Warn);
    // Across streams, arrival order is not send order (AMB-07).
    let v = task_judge(
        json!({"progressToken": "t", "progress": 1}),
        &r,
        Channel::Get(1),
    );
    assert!(v.problems.is_empty(), "{:?}", v.problems);
}

#[test]
fn a_cancelled_tasks_progress_is_not_judged_as_late_for_its_call() {
    // The call's cancel (if any) came after its answer: the task's rule judges its progress,
    // not CAN-05 against the call.
    let mut r = cancelled(call(), cancel(100, Some(300)));
    r.answers = 1;
    let v = task_judge(
        json!({"progressToken": "t", "progress": 3}),
        &r,
        Channel::Stdio,
    );
    assert!(v.problems.is_empty() && v.late.is_none(), "{v:?}");
}

#[test]
fn progress_without_a_number_breaks_prg_02() {
    let v = judge(
        json!({"progressToken": "t", "progress": "half"}),
        Some(&call()),
        0,
        Channel::Stdio,
    );
    assert_eq!(
        one(&v),
        (
            Severity::Fail,
            Req::Prg02,
            "progress for request 1 without a numeric `progress`"
        )
    );
    assert_eq!(v.value, None, "nothing to compare the next one with");
}

#[test]
fn progress_going_down_fails_and_repeating_warns_prg_03() {
    let mut r = call();
    r.last_progress = Some((5.0, Channel::Stdio));
    let down = judge(
        json!({"progressToken": "t", "progress": 4}),
        Some(&r),
        0,
        Channel::Stdio,
    );
    assert_eq!(
        one(&down),
        (
            Severity::Fail,
            Req::Prg03,
            "progress for request 1 went down from 5 to 4; it must increase"
        )
    );
    let same = judge(
        json!({"progressToken": "t", "progress": 5}),
        Some(&r),
        0,
        Channel::Stdio,
    );
    assert_eq!(one(&same).0, Severity::Warn);
    assert_eq!(one(&same).1, Req::Prg03);
}

#[test]
fn increasing_progress_is_fine_and_remembered() {
    let mut r = call();
    r.last_progress = Some((1.0, Channel::Stdio));
    let v = judge(
        json!({"progressToken": "t", "progress": 2}),
        Some(&r),
        0,
        Channel::Stdio,
    );
    assert!(v.problems.is_empty());
    assert_eq!((v.counted, v.value, v.late), (true, Some(2.0), None));
}

#[test]
fn progress_on_another_stream_is_not_compared() {
    let mut r = call();
    r.last_progress = Some((5.0, Channel::Post(1)));
    let v = judge(
        json!({"progressToken": "t", "progress": 1}),
        Some(&r),
        0,
        Channel::Post(2),
    );
    assert!(v.problems.is_empty(), "AMB-07: {:?}", v.problems);
}

#[test]
fn progress_before_the_proof_of_the_cancel_is_not_late() {
    let r = cancelled(call(), cancel(100, Some(300)));
    let v = judge(
        json!({"progressToken": "t", "progress": 1}),
        Some(&r),
        200,
        Channel::Stdio,
    );
    assert!(v.problems.is_empty() && v.late.is_none());
    let unproven = cancelled(call(), cancel(100, None));
    let v = judge(
        json!({"progressToken": "t", "progress": 1}),
        Some(&unproven),
        900,
        Channel::Stdio,
    );
    assert!(v.late.is_none());
}

#[test]
fn the_first_progress_after_the_proof_is_explained_within_the_grace_only() {
    let r = cancelled(call(), cancel(100, Some(300)));
    let soon = judge(
        json!({"progressToken": "t", "progress": 1}),
        Some(&r),
        400,
        Channel::Stdio,
    );
    assert_eq!(
        soon.late,
        Some(LateProgress {
            line: 7,
            after: ms(100),
            explained: true
        })
    );
    let later = judge(
        json!({"progressToken": "t", "progress": 1}),
        Some(&r),
        600,
        Channel::Stdio,
    );
    assert_eq!(later.late.map(|l| l.explained), Some(false));
}

#[test]
fn a_later_progress_is_explained_by_ticks_owed_or_by_cpu_waits() {
    let mut r = cancelled(call(), cancel(100, Some(1000)));
    r.after_proof = vec![LateProgress {
        line: 7,
        after: ms(10),
        explained: true,
    }];
    let params = json!({"progressToken": "t", "progress": 1});
    let owed_nothing = judge(params.clone(), Some(&r), 1050, Channel::Stdio);
    assert_eq!(owed_nothing.late.map(|l| l.explained), Some(false));
    // A ticker every 100 ms owed ten ticks by the proof, and has sent three.
    r.tick = Some(ms(100));
    r.progress_seen = 2;
    let owed = judge(params.clone(), Some(&r), 1050, Channel::Stdio);
    assert_eq!(owed.late.map(|l| l.explained), Some(true));
    // A target that waited 500 ms for a CPU since the cancel was sent.
    r.tick = None;
    let mut mark = cancel(100, Some(1000));
    mark.sent_waited = Some(ms(100));
    r.cancel = Some(mark);
    let v = progress(&ProgressFacts {
        params: Some(&params),
        channel: Channel::Stdio,
        at: ms(1300),
        line: 7,
        request: Some(("1", &r)),
        waits: Waits::calm(ms(250), Some(ms(600))),
        task: false,
    });
    assert_eq!(v.late.map(|l| l.explained), Some(true));
}

fn late(explained: &[bool]) -> SentRequest {
    let mut r = cancelled(call(), cancel(100, Some(300)));
    r.after_proof = explained
        .iter()
        .enumerate()
        .map(|(i, e)| LateProgress {
            line: 10 + i,
            after: ms(50 * (i as u64 + 1)),
            explained: *e,
        })
        .collect();
    r
}

fn v(text: &str) -> Option<ProtocolVersion> {
    ProtocolVersion::parse(text)
}

#[test]
fn one_explained_late_progress_is_a_note() {
    let r = late(&[true]);
    let found = late_progress(&[("1", &r)], &calm(), v("2025-11-25"));
    assert_eq!(found.len(), 1);
    let (line, p) = &found[0];
    assert_eq!(
        (*line, p.severity, p.requirement),
        (10, Severity::Note, Req::Can08)
    );
    assert_eq!(p.message, "one progress for request 1 came just after the proof that its cancel was read; it may have been produced before (the timing cannot tell), so it is not judged");
}

#[test]
fn one_explained_late_progress_past_the_calm_grace_says_the_target_waited() {
    let mut r = late(&[true]);
    r.after_proof[0].after = ms(400);
    let found = late_progress(&[("1", &r)], &Waits::calm(ms(250), None), None);
    assert!(
        found[0]
            .1
            .message
            .contains("(400 ms after it: later than the 250 ms a calm machine allows"),
        "{}",
        found[0].1.message
    );
}

#[test]
fn several_explained_late_progress_that_stopped_are_one_note() {
    let r = late(&[true, true, true]);
    let found = late_progress(&[("1", &r)], &calm(), None);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1.requirement, Req::Can08);
    assert!(
        found[0]
            .1
            .message
            .starts_with("3 progress for request 1 came within 150 ms"),
        "{}",
        found[0].1.message
    );
}

#[test]
fn unexplained_late_progress_breaks_can_05_each_at_its_line() {
    let r = late(&[false, false]);
    let found = late_progress(&[("1", &r)], &calm(), v("2025-11-25"));
    let lines: Vec<_> = found
        .iter()
        .map(|(l, p)| (*l, p.severity, p.requirement))
        .collect();
    assert_eq!(
        lines,
        vec![
            (10, Severity::Warn, Req::Can05),
            (11, Severity::Warn, Req::Can05)
        ]
    );
    assert_eq!(found[0].1.message, "progress for request 1 after the target had read its cancel (an answer to a later request proved it)");
}

#[test]
fn late_progress_in_the_stateless_era_fails() {
    let r = late(&[false]);
    let found = late_progress(&[("1", &r)], &calm(), v("2026-07-28"));
    assert_eq!(found[0].1.severity, Severity::Fail);
    assert!(found[0]
        .1
        .message
        .ends_with("MUST NOT send any further messages for a cancelled request"));
}

#[test]
fn an_explained_first_is_a_note_when_later_ones_are_judged() {
    let r = late(&[true, false]);
    let found = late_progress(&[("1", &r)], &calm(), None);
    let kinds: Vec<_> = found.iter().map(|(l, p)| (*l, p.requirement)).collect();
    assert_eq!(kinds, vec![(10, Req::Can08), (11, Req::Can05)]);
}
