//! One test per finding the stateless-era request rules make, and per fair outcome they
//! accept.

use super::*;
use crate::exchange::Channel;
use serde_json::json;

fn earlier(method: &str, answered: bool, cancelled: bool) -> ReceivedRequest {
    ReceivedRequest {
        method: method.into(),
        answered: answered.then(std::time::Instant::now),
        answered_waited: None,
        succeeded: answered,
        cancelled,
        token: None,
        channel: Channel::Stdio,
        stateless: false,
        task: None,
    }
}

fn reused(earlier: &ReceivedRequest, stateless: bool, refused: bool) -> Option<Problem> {
    reuse(&Reuse {
        key: "7",
        method: "tools/call",
        stateless,
        earlier,
        refused,
        case_severity: Severity::Fail,
    })
}

fn stamped() -> Value {
    json!({"_meta": {
        META_VERSION: "2026-07-28",
        META_CAPABILITIES: {},
        META_CLIENT_INFO: {"name": "c", "version": "1"}
    }})
}

fn post(method: &str) -> ClientRequest {
    ClientRequest {
        verb: "POST".into(),
        method: Some(method.into()),
        is_request: true,
        stamped: Some(json!("2026-07-28")),
        version: Some("2026-07-28".into()),
        mcp_method: Some(method.into()),
        ..ClientRequest::default()
    }
}

fn only(problems: Vec<Problem>) -> Problem {
    assert_eq!(problems.len(), 1, "{problems:?}");
    problems.into_iter().next().unwrap()
}

#[test]
fn header_values_are_plain_or_base64() {
    assert_eq!(header_text("echo").unwrap(), "echo");
    assert_eq!(
        header_text("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
        "Hello, 世界"
    );
    assert!(matches!(
        header_text("=?base64?***?="),
        Err(BadHeader::Base64(_))
    ));
    let not_text = header_text("=?base64?/w==?=").unwrap_err();
    assert_eq!(not_text, BadHeader::NotUtf8("=?base64?/w==?=".into()));
    assert_eq!(
        not_text.to_string(),
        "encodes no UTF-8 text: \"=?base64?/w==?=\""
    );
}

#[test]
fn a_request_is_of_the_stateless_era_by_its_method_its_stamp_or_the_server_played() {
    assert!(is_stateless("server/discover", None, false));
    assert!(is_stateless("tools/list", Some(&stamped()), false));
    assert!(is_stateless("tools/list", None, true));
    assert!(!is_stateless("initialize", None, true));
    assert!(!is_stateless("tools/list", Some(&json!({})), false));
    let mut handshake = post("tools/list");
    handshake.stamped = None;
    assert!(is_stateless_post(&post("tools/list"), false));
    assert!(!is_stateless_post(&handshake, false));
    assert!(is_stateless_post(&handshake, true));
    handshake.is_request = false;
    assert!(
        !is_stateless_post(&handshake, true),
        "a response is no request"
    );
}

#[test]
fn a_fully_stamped_request_passes() {
    assert!(stamp("tools/list", Some(&stamped())).is_empty());
}

#[test]
fn a_request_without_version_or_capabilities_fails_lif10() {
    let p = only(stamp(
        "tools/list",
        Some(&json!({"_meta": {META_VERSION: 2026, META_CLIENT_INFO: {}}})),
    ));
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Lif10));
    assert!(p.message.contains(META_VERSION) && p.message.contains(META_CAPABILITIES));
}

#[test]
fn a_request_without_client_info_warns_lif10() {
    let mut params = stamped();
    params["_meta"]
        .as_object_mut()
        .unwrap()
        .remove(META_CLIENT_INFO);
    let p = only(stamp("tools/list", Some(&params)));
    assert_eq!((p.severity, p.requirement), (Severity::Warn, Req::Lif10));
}

#[test]
fn an_id_used_twice_in_a_session_fails_rpc03() {
    let p = reused(&earlier("ping", true, false), false, false).expect("a finding");
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Rpc03));
    assert!(p.message.contains("already answered"), "{}", p.message);
}

#[test]
fn a_stateless_id_matching_an_outstanding_request_fails_rpc03() {
    let p = reused(&earlier("ping", false, false), true, false).expect("a finding");
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Rpc03));
    assert!(p.message.contains("still outstanding"), "{}", p.message);
}

#[test]
fn a_stateless_id_of_a_cancelled_unanswered_request_warns_amb20() {
    let p = reused(&earlier("ping", false, true), true, false).expect("a finding");
    assert_eq!((p.severity, p.requirement), (Severity::Warn, Req::Rpc03));
    assert!(p.message.contains("AMB-20"), "{}", p.message);
}

#[test]
fn a_retry_of_a_refused_request_under_its_id_warns_lif12_at_most() {
    let p = reused(&earlier("tools/call", true, false), true, true).expect("a finding");
    assert_eq!((p.severity, p.requirement), (Severity::Warn, Req::Lif12));
    let refused = earlier("tools/call", true, false);
    let info = reuse(&Reuse {
        key: "7",
        method: "tools/call",
        stateless: true,
        earlier: &refused,
        refused: true,
        case_severity: Severity::Info,
    })
    .expect("a finding");
    assert_eq!(info.severity, Severity::Info, "the case's level bounds it");
}

#[test]
fn a_stateless_id_of_an_answered_request_may_be_used_again() {
    assert!(reused(&earlier("ping", true, false), true, false).is_none());
}

#[test]
fn a_response_from_a_stateless_client_fails_rpc15() {
    let p = response(&json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Rpc15));
}

#[test]
fn a_post_with_the_eras_headers_passes() {
    assert!(headers(&post("tools/list"), "its POST").is_none());
    let mut named = post("tools/call");
    named.named = Some("Hello, 世界".into());
    named.mcp_name = Some("=?base64?SGVsbG8sIOS4lueVjA==?=".into());
    assert!(headers(&named, "its POST").is_none(), "base64 form");
    named.mcp_name = Some("Hello, 世界".into());
    assert!(headers(&named, "its POST").is_none(), "plain form");
}

#[test]
fn a_post_with_missing_or_wrong_headers_fails_http19() {
    let mut seen = post("tools/call");
    seen.version = Some("2025-11-25".into());
    seen.mcp_method = Some("tools/list".into());
    seen.named = Some("echo".into());
    let p = headers(&seen, "its POST").expect("a finding");
    assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Http19));
    for said in ["MCP-Protocol-Version", "Mcp-Method", "no Mcp-Name"] {
        assert!(p.message.contains(said), "{said}: {}", p.message);
    }
    seen = post("tools/call");
    seen.version = None;
    seen.mcp_method = None;
    seen.named = Some("echo".into());
    seen.mcp_name = Some("=?base64?***?=".into());
    let p = headers(&seen, "its POST").expect("a finding");
    for said in [
        "no MCP-Protocol-Version",
        "no Mcp-Method",
        "not valid base64",
    ] {
        assert!(p.message.contains(said), "{said}: {}", p.message);
    }
}
