//! What every response obeys, whoever wrote it: exactly one of `result` and `error`
//! (RPC-05), a proper error object (RPC-06), an id the harness used for a request (RPC-04),
//! answered once (RPC-04), and in 2026-07-28 a `resultType` on every result but the one that
//! opens a handshake-era session (RPC-14).
//!
//! Functions over the response and the ledger's entry for its request returning findings;
//! the engine settles the response against the ledger (`engine/response.rs`).

use crate::outcome::Severity;
use crate::requirement::Req;
use crate::rules::envelope::{short, Problem};
use serde_json::Value;

/// RPC-05 and RPC-06: the response's shape; RPC-04: a result with no request id. (An error
/// with id null answers a line that could not be read: the case judges it.)
pub fn shape(value: &Value) -> Vec<Problem> {
    let mut problems = vec![];
    let has_result = value.get("result").is_some();
    let error = value.get("error");
    if has_result == error.is_some() {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Rpc05,
            format!(
                "a response must carry exactly one of `result` and `error`: {}",
                short(value)
            ),
        ));
    }
    if let Some(error) = error {
        let code_ok = error.get("code").is_some_and(|c| c.is_i64());
        let message_ok = error.get("message").is_some_and(Value::is_string);
        if !code_ok || !message_ok {
            problems.push(Problem::new(
                Severity::Fail,
                Req::Rpc06,
                format!(
                    "an error needs an integer `code` and a string `message`: {}",
                    short(value)
                ),
            ));
        }
    }
    let id_null = value.get("id").is_none_or(Value::is_null);
    if id_null && has_result {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Rpc04,
            format!("a result with no request id: {}", short(value)),
        ));
    }
    problems
}

/// RPC-04: `who` answered id `key`, which the harness never used.
pub fn unknown_id(who: &str, key: &str) -> Problem {
    Problem::new(
        Severity::Fail,
        Req::Rpc04,
        format!("{who} sent a response for id {key}, which the harness never used as a request id (ids must be echoed exactly, type included)"),
    )
}

/// RPC-14: in 2026-07-28 (`stateless`, for a writer whose results are stamped) a result
/// carries `resultType`, except the answer to `initialize` (`method`), which opens a
/// handshake-era session.
pub fn result_type(value: &Value, stateless: bool, method: &str) -> Option<Problem> {
    let result = value.get("result")?;
    (stateless && method != "initialize" && result.get("resultType").is_none()).then(|| {
        Problem::new(
            Severity::Fail,
            Req::Rpc14,
            format!(
                "a 2026-07-28 result must carry `resultType` (\"complete\" or \"input_required\"): {}",
                short(value)
            ),
        )
    })
}

/// RPC-04: `who` answered request `key` (sent at case line `line`) a second time.
pub fn second_answer(who: &str, key: &str, line: usize) -> Problem {
    Problem::new(
        Severity::Fail,
        Req::Rpc04,
        format!(
            "{who} sent a second response for request {key} (sent at line {line}); every request gets exactly one"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reqs(problems: &[Problem]) -> Vec<Req> {
        problems.iter().map(|p| p.requirement).collect::<Vec<_>>()
    }

    #[test]
    fn a_result_or_a_proper_error_passes() {
        assert!(shape(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})).is_empty());
        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}});
        assert!(shape(&error).is_empty());
        let unreadable =
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse"}});
        assert!(
            shape(&unreadable).is_empty(),
            "an error for an unreadable line"
        );
    }

    #[test]
    fn both_or_neither_of_result_and_error_fail_rpc05() {
        let both = json!({"id": 1, "result": {}, "error": {"code": 1, "message": "m"}});
        assert_eq!(reqs(&shape(&both)), [Req::Rpc05]);
        assert_eq!(reqs(&shape(&json!({"id": 1}))), [Req::Rpc05]);
    }

    #[test]
    fn an_error_without_integer_code_or_string_message_fails_rpc06() {
        let p = shape(&json!({"id": 1, "error": {"code": "x", "message": "m"}}));
        assert_eq!(reqs(&p), [Req::Rpc06]);
        let p = shape(&json!({"id": 1, "error": {"code": 1}}));
        assert_eq!(
            (p[0].severity, p[0].requirement),
            (Severity::Fail, Req::Rpc06)
        );
    }

    #[test]
    fn a_result_without_id_fails_rpc04() {
        assert_eq!(reqs(&shape(&json!({"result": {}}))), [Req::Rpc04]);
        assert_eq!(
            reqs(&shape(&json!({"id": null, "result": {}}))),
            [Req::Rpc04]
        );
    }

    #[test]
    fn an_answer_to_an_unused_id_fails_rpc04() {
        let p = unknown_id("the server", "7");
        assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Rpc04));
        assert!(p.message.contains("id 7"));
    }

    #[test]
    fn a_second_answer_fails_rpc04() {
        let p = second_answer("the server", "1", 9);
        assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Rpc04));
        assert!(p.message.contains("line 9"));
    }

    #[test]
    fn a_stateless_result_without_result_type_fails_rpc14() {
        let bare = json!({"id": 1, "result": {}});
        let p = result_type(&bare, true, "tools/call").expect("a finding");
        assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Rpc14));
    }

    #[test]
    fn result_type_is_not_asked_of_initialize_handshake_results_or_errors() {
        let bare = json!({"id": 1, "result": {}});
        assert!(result_type(&bare, true, "initialize").is_none());
        assert!(result_type(&bare, false, "tools/call").is_none());
        let typed = json!({"id": 1, "result": {"resultType": "complete"}});
        assert!(result_type(&typed, true, "tools/call").is_none());
        let error = json!({"id": 1, "error": {"code": 1, "message": "m"}});
        assert!(result_type(&error, true, "tools/call").is_none());
    }
}
