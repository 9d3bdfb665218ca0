//! What every message a server target writes must respect: one response per request with its
//! id echoed exactly, a proper error object, progress only for live tokens and increasing, and
//! nothing deliberate after a cancel the server has certainly read. The server's own requests
//! are answered so it is not left waiting.
//!
//! Each rule is a function over what the engine knows (the message, the ledger entry it is
//! about, the era, a reading of the clock) returning findings, and, where the harness must
//! answer, the answer; the engine gathers the facts and applies the verdict
//! (`engine/server/judge.rs`).
//!
//! - [`request`]: a request the server sent (answered, or refused in the stateless era).
//! - [`progress`]: a progress notification (live token, increasing, not after the answer or a
//!   cancel read), and [`late_progress`] once the case has ended.
//! - [`cancel::answered_after_cancel`]: the response to a cancelled request.
//! - [`stray_responses`]: responses no step expected and no cancel explains.
//! - [`listen`]: how a subscription ends (2026-07-28): nothing after the client's cancel, and a
//!   server cancel only for a subscription.

pub mod cancel;
pub mod listen;
pub mod progress;

pub use cancel::after_cancel;
pub use progress::{late_progress_in, progress_in, Arrived};

use crate::era::{Era, ProtocolVersion};
use crate::outcome::Severity;
use crate::pattern::canonical;
use crate::requirement::Req;
use crate::rules::envelope::{short, Problem};
use crate::transcript::{Direction, Entry};
use serde_json::{json, Value};

/// What becomes of a request the server sent.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerRequest {
    /// The harness answers it with this message, so the server is not left waiting.
    Answer(Value),
    /// The era forbids servers to send requests: a finding, and no answer.
    Refused(Problem),
}

/// A request `method` (id `id`) the server sent, in the run's `version` (as agreed, `agreed`).
pub fn request(
    method: &str,
    id: &Value,
    version: Option<ProtocolVersion>,
    agreed: Option<&str>,
) -> ServerRequest {
    if !version.is_none_or(|v| v.servers_may_request()) {
        // 2026-07-28: servers never send requests; a client sends no responses.
        return ServerRequest::Refused(Problem::new(
            Severity::Fail,
            Req::Rpc15,
            format!(
                "the server sent a `{method}` request (id {}) in {}, where servers must not send requests (input they need goes through an input_required result); the harness does not answer it",
                canonical(id),
                agreed.unwrap_or("the stateless era")
            ),
        ));
    }
    ServerRequest::Answer(if method == "ping" {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "the conformance harness does not offer this method"}})
    })
}

/// How a message for a request the server certainly knew was cancelled weighs: a broken
/// SHOULD up to 2025-11-25, a broken MUST NOT in 2026-07-28 ("MUST NOT send any further
/// messages for it", AMB-02, AMB-08).
fn after_cancel_severity(version: Option<ProtocolVersion>) -> Severity {
    if stateless(version) {
        Severity::Fail
    } else {
        Severity::Warn
    }
}

/// What a finding about a message after a cancel adds in 2026-07-28.
fn after_cancel_rule(version: Option<ProtocolVersion>) -> &'static str {
    if stateless(version) {
        "; in 2026-07-28 a server MUST NOT send any further messages for a cancelled request"
    } else {
        ""
    }
}

fn stateless(version: Option<ProtocolVersion>) -> bool {
    version.is_some_and(|v| v.era() == Era::Stateless)
}

/// The target stopped serving (`status`: how it ended, or which channel closed) while `still`
/// (the case needed it, requests were in flight): a failure of `rule` (STD-01 over stdio,
/// HTTP-04 over HTTP).
pub fn stopped_serving(rule: Req, status: &str, still: &str) -> Problem {
    Problem::new(
        Severity::Fail,
        rule,
        format!("the target stopped serving ({status}) while {still}; see its stderr"),
    )
}

/// Responses the target sent that no step consumed and no cancel explains (a cancelled request
/// may get one response or none; the standing rules judged it). `cancelled` says whether a
/// message, in the session it came in, answers a request the harness cancelled. Returns the
/// findings' messages.
pub fn stray_responses(
    entries: &[Entry],
    cancelled: impl Fn(usize, &Value) -> bool,
) -> Vec<String> {
    entries
        .iter()
        .filter(|e| e.direction == Direction::Received && !e.internal && e.consumed_by.is_none())
        .filter_map(|e| e.value.as_ref().map(|v| (e.session, v)))
        .filter(|(session, v)| {
            v.get("method").is_none() && v.get("id").is_some() && !cancelled(*session, v)
        })
        .map(|(_, v)| format!("a response the case does not expect: {}", short(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::Channel;
    use std::time::Duration;

    fn v(text: &str) -> Option<ProtocolVersion> {
        ProtocolVersion::parse(text)
    }

    #[test]
    fn a_ping_from_the_server_gets_a_pong() {
        let answer = request("ping", &json!(3), v("2025-11-25"), Some("2025-11-25"));
        assert_eq!(
            answer,
            ServerRequest::Answer(json!({"jsonrpc": "2.0", "id": 3, "result": {}}))
        );
    }

    #[test]
    fn another_request_from_the_server_gets_method_not_found() {
        let ServerRequest::Answer(answer) =
            request("sampling/createMessage", &json!("s1"), None, None)
        else {
            panic!("answered");
        };
        assert_eq!(answer["id"], json!("s1"));
        assert_eq!(answer["error"]["code"], json!(-32601));
    }

    #[test]
    fn a_request_from_the_server_in_the_stateless_era_is_refused_unanswered() {
        let ServerRequest::Refused(p) = request("ping", &json!(1), v("2026-07-28"), None) else {
            panic!("refused");
        };
        assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Rpc15));
        assert!(
            p.message
                .contains("`ping` request (id 1) in the stateless era"),
            "{}",
            p.message
        );
    }

    fn received(value: Value, session: usize) -> Entry {
        let mut e = Entry::received(
            Duration::ZERO,
            Channel::Stdio,
            value.to_string(),
            Some(value),
        );
        e.session = session;
        e
    }

    #[test]
    fn a_response_nobody_expected_is_stray() {
        let entries = [received(
            json!({"jsonrpc": "2.0", "id": 9, "result": {}}),
            0,
        )];
        assert_eq!(
            stray_responses(&entries, |_, _| false),
            vec![r#"a response the case does not expect: {"id":9,"jsonrpc":"2.0","result":{}}"#]
        );
    }

    #[test]
    fn consumed_internal_cancelled_and_notifications_are_not_stray() {
        let mut consumed = received(json!({"jsonrpc": "2.0", "id": 1, "result": {}}), 0);
        consumed.consumed_by = Some(4);
        let mut internal = received(json!({"jsonrpc": "2.0", "id": 2, "result": {}}), 0);
        internal.internal = true;
        let cancelled = received(json!({"jsonrpc": "2.0", "id": 3, "result": {}}), 1);
        let note = received(
            json!({"jsonrpc": "2.0", "method": "notifications/message"}),
            0,
        );
        let entries = [consumed, internal, cancelled, note];
        let stray = stray_responses(&entries, |session, v| session == 1 && v["id"] == json!(3));
        assert!(stray.is_empty(), "{stray:?}");
    }
}
