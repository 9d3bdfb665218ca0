//! One test per finding the client's cancel rules make, and per fair outcome they accept.

use super::*;
use crate::exchange::Channel;
use crate::facts::ledger::SentRequest;
use crate::rules::testing::{call, ms};
use serde_json::json;

fn request(method: &str) -> ReceivedRequest {
    ReceivedRequest {
        method: method.into(),
        answered: None,
        answered_waited: None,
        succeeded: false,
        cancelled: false,
        token: None,
        channel: Channel::Stdio,
        stateless: false,
        task: None,
    }
}

fn judge(
    params: Value,
    request: Option<&ReceivedRequest>,
    arrived: Instant,
) -> (Vec<Problem>, Named) {
    client_cancel(&CancelFacts {
        params: Some(&params),
        request,
        arrived,
        ordered: true,
        grace: ms(250),
        waits: Waits::calm(ms(250), None),
        case_severity: Severity::Fail,
    })
}

fn reqs(problems: &[Problem]) -> Vec<(Severity, Req)> {
    problems
        .iter()
        .map(|p| (p.severity, p.requirement))
        .collect()
}

#[test]
fn a_cancel_without_params_or_request_id_breaks_can_01() {
    let (found, named) = client_cancel(&CancelFacts {
        params: None,
        request: None,
        arrived: Instant::now(),
        ordered: true,
        grace: ms(250),
        waits: Waits::calm(ms(250), None),
        case_severity: Severity::Fail,
    });
    assert_eq!(
        (reqs(&found), named),
        (vec![(Severity::Fail, Req::Can01)], Named::Nothing)
    );
    let (found, named) = judge(json!({"requestId": null}), None, Instant::now());
    assert_eq!(
        found[0].message,
        r#"a cancel needs `requestId`, a string or an integer: {"requestId":null}"#
    );
    assert_eq!(named, Named::Nothing);
}

#[test]
fn a_reason_that_is_not_text_breaks_can_01() {
    let r = request("tools/call");
    let (found, named) = judge(
        json!({"requestId": 1, "reason": 5}),
        Some(&r),
        Instant::now(),
    );
    assert_eq!(reqs(&found), vec![(Severity::Fail, Req::Can01)]);
    assert_eq!(
        found[0].message,
        "a cancel's `reason` must be a string, got 5"
    );
    assert_eq!(named, Named::Own("1".into()));
}

#[test]
fn a_cancel_of_a_live_request_is_fine() {
    let r = request("tools/call");
    let (found, named) = judge(
        json!({"requestId": "a", "reason": "bored"}),
        Some(&r),
        Instant::now(),
    );
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(named, Named::Own("\"a\"".into()));
}

#[test]
fn a_cancel_of_initialize_breaks_can_04() {
    let r = request("initialize");
    let (found, _) = judge(json!({"requestId": 0}), Some(&r), Instant::now());
    assert_eq!(reqs(&found), vec![(Severity::Fail, Req::Can04)]);
}

#[test]
fn a_posted_cancel_of_a_stateless_request_is_a_note() {
    let mut r = request("tools/call");
    r.stateless = true;
    let (found, _) = client_cancel(&CancelFacts {
        params: Some(&json!({"requestId": 1})),
        request: Some(&r),
        arrived: Instant::now(),
        ordered: false,
        grace: ms(250),
        waits: Waits::calm(ms(250), None),
        case_severity: Severity::Fail,
    });
    assert_eq!(reqs(&found), vec![(Severity::Note, Req::Can12)]);
}

#[test]
fn a_second_cancel_is_a_note() {
    let mut r = request("tools/call");
    r.cancelled = true;
    let (found, _) = judge(json!({"requestId": 1}), Some(&r), Instant::now());
    assert_eq!(
        found[0].message,
        "the client cancelled request 1 more than once"
    );
}

#[test]
fn a_cancel_well_after_the_answer_breaks_can_03_as_a_warning_at_most() {
    let answered = Instant::now();
    let mut r = request("tools/call");
    r.answered = Some(answered);
    let (found, _) = judge(json!({"requestId": 1}), Some(&r), answered + ms(900));
    assert_eq!(reqs(&found), vec![(Severity::Warn, Req::Can03)]);
    assert_eq!(found[0].message, "the client cancelled request 1 900 ms after the server had answered it; a cancel must only reference a request still in progress");
}

#[test]
fn a_cancel_that_crossed_the_answer_is_allowed() {
    let answered = Instant::now();
    let mut r = request("tools/call");
    r.answered = Some(answered);
    let (found, _) = judge(json!({"requestId": 1}), Some(&r), answered + ms(100));
    assert_eq!(reqs(&found), vec![(Severity::Note, Req::Can08)]);
    assert!(found[0].message.ends_with("crossed its response (allowed)"));
}

#[test]
fn a_client_kept_from_running_gets_a_grace_grown_by_its_waits() {
    let answered = Instant::now();
    let mut r = request("tools/call");
    r.answered = Some(answered);
    r.answered_waited = Some(ms(100));
    let (found, _) = client_cancel(&CancelFacts {
        params: Some(&json!({"requestId": 1})),
        request: Some(&r),
        arrived: answered + ms(600),
        ordered: true,
        grace: ms(250),
        waits: Waits::calm(ms(250), Some(ms(600))),
        case_severity: Severity::Fail,
    });
    assert_eq!(reqs(&found), vec![(Severity::Note, Req::Can08)]);
    assert!(
        found[0].message.contains("(grace grown to 750 ms)"),
        "{}",
        found[0].message
    );
}

#[test]
fn a_cancel_naming_no_request_of_the_client_is_left_to_cancel_of_unknown() {
    let (found, named) = judge(json!({"requestId": 7}), None, Instant::now());
    assert!(found.is_empty());
    assert_eq!(named, Named::Unknown);
}

fn ledger(received: &[(&str, &str)], sent: &[&str]) -> Ledger {
    let mut ledger = Ledger::default();
    for (key, method) in received {
        ledger.request_received(key.to_string(), request(method));
    }
    for key in sent {
        let r: SentRequest = call();
        ledger.request_sent(key.to_string(), r, None);
    }
    ledger
}

#[test]
fn a_cancel_of_the_harnesss_request_breaks_can_02() {
    let found =
        cancel_of_unknown(&json!({"requestId": 3}), &ledger(&[], &["3"])).expect("a finding");
    assert_eq!(
        (found.severity, found.requirement),
        (Severity::Fail, Req::Can02)
    );
}

#[test]
fn a_cancel_whose_id_differs_in_type_breaks_can_01() {
    let found = cancel_of_unknown(
        &json!({"requestId": "3"}),
        &ledger(&[("3", "tools/call")], &[]),
    )
    .expect("a finding");
    assert_eq!(found.message, "the cancel's requestId \"3\" differs in type from the id 3 of the client's `tools/call` request; it must be the identical JSON value");
    let never = cancel_of_unknown(&json!({"requestId": 8}), &ledger(&[], &[])).expect("a finding");
    assert_eq!(
        never.message,
        "the client cancelled request 8, which it never sent"
    );
}

#[test]
fn a_cancel_whose_request_has_come_since_is_fine() {
    assert_eq!(
        cancel_of_unknown(
            &json!({"requestId": 3}),
            &ledger(&[("3", "tools/call")], &[])
        ),
        None
    );
    assert_eq!(cancel_of_unknown(&json!({}), &ledger(&[], &[])), None);
}

#[test]
fn an_answer_after_the_cancel_was_read_is_a_can_13_warning() {
    let mut r = call();
    r.cancel = Some(crate::rules::testing::cancel(100, Some(300)));
    let found = answered_after_cancel("1", &r, ms(400)).expect("a finding");
    assert_eq!(
        (found.severity, found.requirement),
        (Severity::Warn, Req::Can13)
    );
}

#[test]
fn an_answer_that_crossed_the_cancel_or_came_before_it_is_allowed() {
    let mut r = call();
    r.cancel = Some(crate::rules::testing::cancel(100, Some(300)));
    let crossed = answered_after_cancel("1", &r, ms(200)).expect("a note");
    assert_eq!(crossed.severity, Severity::Note);
    assert_eq!(
        crossed.message,
        "the client's answer to request 1 crossed the harness's cancel (allowed, AMB-25)"
    );
    r.answered_before_cancel = true;
    assert_eq!(answered_after_cancel("1", &r, ms(400)), None);
    assert_eq!(answered_after_cancel("1", &call(), ms(400)), None);
}

// A `notifications/cancelled` for a `tools/call` that created a task (TSK-03, CAN-15).

const GRACE: Duration = Duration::from_millis(250);

#[test]
fn a_cancel_of_a_task_call_after_the_grace_fails_by_era() {
    let (severity, req, message) =
        task_call_cancel("3", "t-1", false, Duration::from_millis(900), GRACE);
    assert_eq!((severity, req), (Severity::Fail, Req::Tsk03));
    assert!(message.contains("tasks/cancel"), "{message}");
    assert!(message.contains("task t-1"), "{message}");
    let (severity, req, _) = task_call_cancel("3", "t-1", true, Duration::from_millis(900), GRACE);
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

#[test]
fn only_an_abandoning_case_judges_task_cancels() {
    let abandon = json!({"call": "work", "task": true, "abandon_after_ms": 300});
    let cancel = json!({"call": "work", "task": true, "cancel": "on-task"});
    let exit = json!({"exit": true});
    assert!(abandons_only(&[abandon.clone(), exit.clone()]));
    assert!(!abandons_only(&[cancel.clone(), exit.clone()]));
    assert!(
        !abandons_only(&[abandon, cancel]),
        "a case that also cancels may send tasks/cancel"
    );
    let problem =
        task_cancel_when_abandoning("\"c-1\"", Some(&json!({"taskId": "t-1"})), Severity::Warn);
    assert_eq!(
        (problem.severity, problem.requirement),
        (Severity::Warn, Req::Tsk06)
    );
    assert!(
        problem.message.contains("task \"t-1\""),
        "{}",
        problem.message
    );
}

#[test]
fn a_tasks_result_wait_left_open_is_found_and_a_cancelled_one_is_not() {
    let mut open = request("tasks/result");
    let mut cancelled = request("tasks/result");
    cancelled.cancelled = true;
    let mut answered = request("tasks/result");
    answered.answered = Some(Instant::now());
    let other = request("tasks/get");
    let keys = ["1", "2", "3", "4"].map(String::from);
    let requests = [&open, &cancelled, &answered, &other];
    let problems = waits_left_open(keys.iter().zip(requests), Severity::Warn);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].requirement, Req::Tsk06);
    assert!(problems[0].message.contains("request 1 "));
    open.cancelled = true;
    assert!(waits_left_open([(&keys[0], &open)], Severity::Warn).is_empty());
}
