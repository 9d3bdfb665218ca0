//! One test per finding the HTTP rules make, and per fair outcome they accept.

use super::*;
use crate::engine::http::Opened;
use crate::rules::testing::{call, cancel, cancelled, head, ms, stream, with_head};
use crate::transport::Head;
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

fn ended(
    s: &Stream,
    end: StreamEnd,
    r: &SentRequest,
    answer: Option<Value>,
    stateless: bool,
) -> Option<Problem> {
    request_end(POST, &end, s, ("1", r), answer.as_ref(), stateless)
}

#[test]
fn a_stateless_error_status_must_carry_the_error_that_answers() {
    let s = with_head(stream(request()), head(400, Some("application/json")));
    let none = ended(&s, StreamEnd::Complete, &call(), None, true).expect("a finding");
    assert_eq!(
        (none.severity, none.requirement),
        (Severity::Fail, Req::Http08)
    );
    assert!(none.message.ends_with("got HTTP 400 application/json without the JSON-RPC error that answers the request in its body"));
    let result = ended(
        &s,
        StreamEnd::Complete,
        &call(),
        Some(json!({"result": {}})),
        true,
    );
    assert!(result
        .expect("a finding")
        .message
        .ends_with("a result comes with 200"));
    let error = ended(
        &s,
        StreamEnd::Complete,
        &call(),
        Some(json!({"error": {}})),
        true,
    );
    assert_eq!(error, None);
}

#[test]
fn a_request_stream_that_ends_without_its_response_breaks_http_09() {
    let s = with_head(stream(request()), head(200, Some("text/event-stream")));
    let found = ended(&s, StreamEnd::Complete, &call(), None, false).expect("a finding");
    assert_eq!(
        (found.severity, found.requirement),
        (Severity::Warn, Req::Http09)
    );
    assert_eq!(found.message, "POST 2 (request 1) ended without its response (ended); a stream opened by a request carries its response");
    let headless = ended(
        &stream(request()),
        StreamEnd::Broken("reset".into()),
        &call(),
        None,
        false,
    );
    assert_eq!(headless.map(|p| p.severity), Some(Severity::Fail));
}

#[test]
fn an_answered_cancelled_refused_or_aborted_stream_may_end() {
    let s = with_head(stream(request()), head(200, Some("text/event-stream")));
    let mut answered = call();
    answered.answers = 1;
    assert_eq!(ended(&s, StreamEnd::Complete, &answered, None, false), None);
    let r = cancelled(call(), cancel(1, None));
    assert_eq!(ended(&s, StreamEnd::Complete, &r, None, false), None);
    assert_eq!(ended(&s, StreamEnd::Aborted, &call(), None, false), None);
    let refused = with_head(stream(request()), head(503, None));
    assert_eq!(
        ended(&refused, StreamEnd::Complete, &call(), None, false),
        None
    );
}

#[test]
fn the_same_message_on_two_streams_breaks_http_13() {
    let v = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
    let found = channel(
        Channel::Post(3),
        &v,
        Once::Response,
        Some(POST),
        None,
        false,
    );
    assert_eq!(reqs(&found), vec![(Severity::Fail, Req::Http13)]);
    assert!(
        channel(POST, &v, Once::Response, Some(POST), None, false).is_empty(),
        "the same stream"
    );
}

#[test]
fn a_response_on_a_get_stream_breaks_http_12_but_progress_may_come_there() {
    let v = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
    let found = channel(
        Channel::Get(1),
        &v,
        Once::Response,
        None,
        Some(("1", POST)),
        false,
    );
    assert_eq!(reqs(&found), vec![(Severity::Fail, Req::Http12)]);
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress"});
    assert!(channel(
        Channel::Get(1),
        &progress,
        Once::Progress,
        None,
        Some(("1", POST)),
        false
    )
    .is_empty());
}

#[test]
fn a_message_on_another_requests_stream_is_a_warning() {
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress"});
    let found = channel(
        Channel::Post(3),
        &progress,
        Once::Progress,
        None,
        Some(("1", POST)),
        false,
    );
    assert_eq!(reqs(&found), vec![(Severity::Warn, Req::Http09)]);
    assert_eq!(found[0].message, "a progress notification for request 1 came on POST 3, which another message opened; it belongs on POST 2");
    assert!(channel(
        POST,
        &progress,
        Once::Progress,
        None,
        Some(("1", POST)),
        false
    )
    .is_empty());
}

#[test]
fn a_tasks_progress_may_come_on_any_stream_but_its_response_may_not() {
    // 2025-11-25: the `tools/call` that created the task ended with its answer; the task's
    // progress comes on whatever stream of the session is open.
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress"});
    for on in [Channel::Post(3), Channel::Get(1)] {
        assert!(
            channel(on, &progress, Once::Progress, None, Some(("1", POST)), true).is_empty(),
            "{on}"
        );
    }
    // Not the same progress twice, though (HTTP-13).
    let twice = channel(
        Channel::Post(3),
        &progress,
        Once::Progress,
        Some(Channel::Get(1)),
        Some(("1", POST)),
        true,
    );
    assert_eq!(reqs(&twice), vec![(Severity::Fail, Req::Http13)]);
    // The task says nothing of where a response belongs.
    let v = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
    let found = channel(
        Channel::Post(3),
        &v,
        Once::Response,
        None,
        Some(("1", POST)),
        true,
    );
    assert_eq!(reqs(&found), vec![(Severity::Warn, Req::Http09)]);
    let found = channel(
        Channel::Get(1),
        &v,
        Once::Response,
        None,
        Some(("1", POST)),
        true,
    );
    assert_eq!(reqs(&found), vec![(Severity::Fail, Req::Http12)]);
}

#[test]
fn only_responses_and_progress_come_once() {
    assert_eq!(
        Once::of(&json!({"id": 1, "result": {}})),
        Some(Once::Response)
    );
    assert_eq!(
        Once::of(&json!({"method": "notifications/progress"})),
        Some(Once::Progress)
    );
    assert_eq!(Once::of(&json!({"method": "notifications/message"})), None);
}

fn entry(at: u64, channel: Channel) -> Entry {
    Entry::received(ms(at), channel, String::new(), None)
}

#[test]
fn an_sse_stream_still_open_after_its_response_is_listed_and_judged() {
    let mut r = call();
    r.channel = POST;
    r.answers = 1;
    r.answer = Some(0);
    let sent = HashMap::from([("1".to_string(), r)]);
    let open = with_head(stream(request()), head(200, Some("text/event-stream")));
    let by = HashMap::from([(POST, open.clone())]);
    let transcript = [entry(40, POST)];
    assert_eq!(
        left_open(&sent, &by, &transcript),
        vec![("1".to_string(), POST, ms(40))]
    );
    let mut closed = open;
    closed.end = Some(StreamEnd::Complete);
    assert!(left_open(&sent, &HashMap::from([(POST, closed)]), &transcript).is_empty());
    let p = left_open_problem("1", POST, ms(300));
    assert_eq!((p.severity, p.requirement), (Severity::Warn, Req::Http09));
    assert!(p
        .message
        .starts_with("POST 2 (request 1) stayed open for more than 300 ms after"));
}

#[test]
fn the_streams_of_cancelled_requests_are_noted_unless_the_harness_closed_them() {
    let mut r = cancelled(call(), cancel(1, None));
    r.channel = POST;
    let sent = HashMap::from([("1".to_string(), r)]);
    let open = stream(request());
    let found = cancelled_streams(&sent, &HashMap::from([(POST, open.clone())]));
    assert_eq!(reqs(&found), vec![(Severity::Note, Req::Http17)]);
    assert_eq!(found[0].message, "the stream of request 1 (POST 2) stayed open without a response until the end of the case (allowed, AMB-04)");
    let mut ended = open.clone();
    ended.end = Some(StreamEnd::Complete);
    let found = cancelled_streams(&sent, &HashMap::from([(POST, ended)]));
    assert!(found[0]
        .message
        .contains("ended without a response after the cancel"));
    let mut aborted = open;
    aborted.end = Some(StreamEnd::Aborted);
    assert!(cancelled_streams(&sent, &HashMap::from([(POST, aborted)])).is_empty());
}
