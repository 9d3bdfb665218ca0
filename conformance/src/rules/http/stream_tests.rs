//! One test per finding the HTTP rules make about how streams end and what comes on which
//! stream, and per fair outcome they accept (statuses and bodies are in `tests`).

use super::*;

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
