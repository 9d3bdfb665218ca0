//! One test per finding the HTTP rules make, and per fair outcome they accept.

use super::*;
use crate::exchange::Head;
use crate::facts::streams::Opened;
use crate::rules::testing::{call, cancel, cancelled, head, ms, stream, with_head};
use serde_json::json;

const POST: Channel = Channel::Post(2);

fn request() -> Opened {
    Opened::Request("1".into())
}

fn notification(cancels: Option<&str>) -> Opened {
    Opened::Notification {
        method: "notifications/cancelled".into(),
        cancels: cancels.map(str::to_string),
    }
}

fn judge(
    opened: Opened,
    head: &Head,
    request: Option<&SentRequest>,
    stateless: bool,
) -> Vec<Problem> {
    let stream = stream(opened);
    status(&StatusFacts {
        channel: POST,
        head,
        stream: Some(&stream),
        request,
        stateless,
    })
}

fn reqs(problems: &[Problem]) -> Vec<(Severity, Req)> {
    problems
        .iter()
        .map(|p| (p.severity, p.requirement))
        .collect()
}

#[test]
fn a_session_id_that_is_not_visible_ascii_breaks_http_16() {
    let mut h = head(200, Some("application/json"));
    h.session = Some(b"a b".to_vec());
    let found = status(&StatusFacts {
        channel: POST,
        head: &h,
        stream: None,
        request: None,
        stateless: false,
    });
    assert_eq!(reqs(&found), vec![(Severity::Fail, Req::Http16)]);
    assert_eq!(
        found[0].message,
        "POST 2 assigned the session id \"a b\", which is not visible ASCII (0x21 to 0x7E)"
    );
}

#[test]
fn a_session_minted_in_the_stateless_era_is_a_warning_except_for_initialize() {
    let mut h = head(200, Some("application/json"));
    h.session = Some(b"abc".to_vec());
    assert_eq!(
        reqs(&judge(request(), &h, Some(&call()), true)),
        vec![(Severity::Warn, Req::Http20)]
    );
    let mut initialize = call();
    initialize.starts = true;
    assert!(judge(request(), &h, Some(&initialize), true).is_empty());
    assert!(judge(request(), &h, Some(&call()), false).is_empty());
}

#[test]
fn a_status_the_case_expects_is_left_to_the_case() {
    let mut s = stream(request());
    s.expected = Some(vec!["400".into()]);
    let h = head(400, None);
    let facts = StatusFacts {
        channel: POST,
        head: &h,
        stream: Some(&s),
        request: Some(&call()),
        stateless: false,
    };
    assert!(status(&facts).is_empty());
}

#[test]
fn a_notification_gets_202_and_not_another_success() {
    assert!(judge(notification(None), &head(202, None), None, false).is_empty());
    let found = judge(
        notification(None),
        &head(200, Some("application/json")),
        None,
        false,
    );
    assert_eq!(reqs(&found), vec![(Severity::Fail, Req::Http07)]);
    let redirect = judge(notification(None), &head(307, None), None, false);
    assert!(redirect[0]
        .message
        .ends_with("the harness does not follow redirects: give the endpoint's final URL"));
}

#[test]
fn a_notification_refused_with_an_error_status_is_a_note() {
    let found = judge(notification(None), &head(400, None), None, false);
    assert_eq!(reqs(&found), vec![(Severity::Note, Req::Http07)]);
}

#[test]
fn a_refused_cancel_of_a_live_request_is_a_warning() {
    let found = judge(
        notification(Some("1")),
        &head(404, None),
        Some(&call()),
        false,
    );
    assert_eq!(reqs(&found), vec![(Severity::Warn, Req::Http17)]);
    assert!(found[0]
        .message
        .starts_with("the cancel of request 1 (POST 2) got HTTP 404;"));
}

#[test]
fn an_answer_to_the_servers_request_gets_202() {
    assert!(judge(Opened::Response, &head(202, None), None, false).is_empty());
    let found = judge(Opened::Response, &head(200, None), None, false);
    assert_eq!(reqs(&found), vec![(Severity::Fail, Req::Http07)]);
}

#[test]
fn a_request_gets_json_or_sse() {
    assert!(judge(
        request(),
        &head(200, Some("application/json")),
        Some(&call()),
        false
    )
    .is_empty());
    assert!(judge(
        request(),
        &head(200, Some("text/event-stream")),
        Some(&call()),
        false
    )
    .is_empty());
    let untyped = judge(
        request(),
        &head(200, Some("text/plain")),
        Some(&call()),
        false,
    );
    assert_eq!(reqs(&untyped), vec![(Severity::Fail, Req::Http08)]);
    assert_eq!(untyped[0].message, "POST 2 (request 1) got HTTP 200 text/plain; a request is answered with application/json or text/event-stream");
    let refused = judge(request(), &head(500, None), Some(&call()), false);
    assert!(refused[0]
        .message
        .ends_with("the server refused a request the case expects it to serve"));
}

#[test]
fn in_the_stateless_era_an_error_status_with_a_body_may_answer() {
    let h = head(400, Some("application/json"));
    assert!(judge(request(), &h, Some(&call()), true).is_empty());
    assert_eq!(
        reqs(&judge(request(), &h, Some(&call()), false)),
        vec![(Severity::Fail, Req::Http08)]
    );
}

#[test]
fn a_cancelled_requests_error_status_is_a_note() {
    let r = cancelled(call(), cancel(100, None));
    let found = judge(request(), &head(500, None), Some(&r), false);
    assert_eq!(reqs(&found), vec![(Severity::Note, Req::Http08)]);
}

#[test]
fn a_get_gets_sse_or_405() {
    assert!(judge(Opened::Listen, &head(405, None), None, false).is_empty());
    assert!(judge(
        Opened::Listen,
        &head(200, Some("text/event-stream")),
        None,
        false
    )
    .is_empty());
    let found = judge(
        Opened::Listen,
        &head(200, Some("application/json")),
        None,
        false,
    );
    assert_eq!(reqs(&found), vec![(Severity::Fail, Req::Http12)]);
}

#[test]
fn a_202_comes_with_an_empty_body() {
    let s = with_head(stream(notification(None)), head(202, None));
    assert_eq!(accepted_body(POST, &s, 0), None);
    let found = accepted_body(POST, &s, 12).expect("a finding");
    assert_eq!(
        found.message,
        "POST 2 got 202 with a body of 12 bytes; 202 comes with an empty body"
    );
    let answered = with_head(stream(request()), head(202, None));
    assert_eq!(
        accepted_body(POST, &answered, 12),
        None,
        "judged as a request"
    );
}

#[path = "stream_tests.rs"]
mod streams;
