//! One test per finding the client's HTTP rules make, and per fair outcome they accept.

use super::*;

fn post(accept: &str) -> ClientRequest {
    ClientRequest {
        verb: "POST".into(),
        path: "/mcp".into(),
        accept: Some(accept.into()),
        session: Some("s-1".into()),
        version: Some("2025-11-25".into()),
        method: Some("tools/call".into()),
        is_request: true,
        status: 200,
        ..ClientRequest::default()
    }
}

const BOTH: &str = "application/json, text/event-stream";

fn one(problems: impl IntoIterator<Item = Problem>) -> Problem {
    let problems: Vec<Problem> = problems.into_iter().collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    problems.into_iter().next().unwrap()
}

#[test]
fn accept_lists_media_types_with_parameters_in_any_case() {
    assert!(accepts(
        Some("Text/Event-Stream;q=0.9, application/json"),
        "text/event-stream"
    ));
    assert!(!accepts(Some("application/json"), "text/event-stream"));
    assert!(!accepts(None, "application/json"));
}

#[test]
fn a_request_to_another_path_fails_http04() {
    let mut seen = post(BOTH);
    assert!(endpoint(&seen).is_none());
    seen.path = "/other".into();
    let p = endpoint(&seen).expect("a finding");
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Http04));
}

#[test]
fn a_get_that_does_not_accept_sse_fails_http12() {
    let mut seen = post("text/event-stream");
    seen.verb = "GET".into();
    assert!(get_accept(&seen, "GET").is_none());
    seen.accept = Some("application/json".into());
    let p = get_accept(&seen, "GET").expect("a finding");
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Http12));
}

#[test]
fn a_post_must_accept_json_and_sse_http05() {
    assert!(post_accept(&post(BOTH), "the POST").is_none());
    let p = post_accept(&post("application/json"), "the POST").expect("a finding");
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Http05));
}

#[test]
fn a_fresh_initialize_with_a_session_id_fails_http16() {
    let mut seen = post(BOTH);
    let p = fresh_initialize(&seen, "the POST of `initialize`").expect("a finding");
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Http16));
    seen.session = None;
    assert!(fresh_initialize(&seen, "the POST of `initialize`").is_none());
}

#[test]
fn a_request_after_a_404_that_is_no_fresh_initialize_fails_http16_once() {
    let seen = post(BOTH);
    let (state, p) = after_not_found(&seen, "the POST", NotFound::Awaiting, false);
    let p = p.expect("a finding");
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Http16));
    assert_eq!(state, NotFound::Reported);
    let (state, p) = after_not_found(&seen, "the POST", state, false);
    assert_eq!((state, p.is_none()), (NotFound::Reported, true), "once");
}

#[test]
fn a_fresh_initialize_after_a_404_or_a_request_that_crossed_it_passes() {
    let mut fresh = post(BOTH);
    fresh.assigned = Some("s-2".into());
    let (state, p) = after_not_found(&fresh, "the POST", NotFound::Awaiting, false);
    assert_eq!((state, p.is_none()), (NotFound::Awaiting, true));
    let mut crossed = post(BOTH);
    crossed.status = 404;
    let (state, p) = after_not_found(&crossed, "the POST", NotFound::Awaiting, true);
    assert_eq!((state, p.is_none()), (NotFound::Awaiting, true));
    let (state, p) = after_not_found(&post(BOTH), "the POST", NotFound::Clear, false);
    assert_eq!(
        (state, p.is_none()),
        (NotFound::Clear, true),
        "no 404 pending"
    );
}

#[test]
fn a_request_without_the_session_id_fails_http16() {
    let mut seen = post(BOTH);
    seen.session = None;
    let p = one(session_headers(&seen, "the POST", "s-1", None));
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Http16));
}

#[test]
fn a_request_without_the_agreed_version_header_fails_http18() {
    let mut seen = post(BOTH);
    seen.version = None;
    let p = one(session_headers(
        &seen,
        "the POST",
        "s-1",
        Some("2025-06-18"),
    ));
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Http18));
    seen.version = Some("2025-03-26".into());
    let p = one(session_headers(
        &seen,
        "the POST",
        "s-1",
        Some("2025-11-25"),
    ));
    assert_eq!(p.requirement, Req::Http18);
}

#[test]
fn a_request_with_its_session_and_version_passes_and_2025_03_26_needs_no_header() {
    let seen = post(BOTH);
    assert!(session_headers(&seen, "the POST", "s-1", Some("2025-11-25")).is_empty());
    let mut old = post(BOTH);
    old.version = None;
    assert!(session_headers(&old, "the POST", "s-1", Some("2025-03-26")).is_empty());
    assert!(session_headers(&old, "the POST", "s-1", None).is_empty());
}

#[test]
fn a_404_no_new_session_followed_fails_http16_unless_the_case_stopped_the_client() {
    let p = never_restarted(NotFound::Awaiting, false).expect("a finding");
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Http16));
    assert!(never_restarted(NotFound::Awaiting, true).is_none());
    assert!(never_restarted(NotFound::Reported, false).is_none());
    assert!(never_restarted(NotFound::Clear, false).is_none());
}
