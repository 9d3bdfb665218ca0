//! How a subscription ends (2026-07-28, CAN-14): a `subscriptions/listen` request is a stream
//! of notifications, each tied to it by `_meta["io.modelcontextprotocol/subscriptionId"]`
//! (the listen request's id), until the client cancels it (`notifications/cancelled` on
//! stdio, closing its stream over HTTP). Once that cancel was certainly read, nothing more may
//! come for the subscription.
//!
//! Two pages of the specification disagree on how a server ends a subscription (AMB-19): the
//! cancellation page has it send `notifications/cancelled` naming the listen request (and
//! forbids server cancels for any other purpose), the subscriptions page a completion result
//! for it. After the client's own cancel, either is accepted and noted (the server confirms
//! the end as one page or the other says); a server cancel naming anything but a listen
//! request the harness sent fails.

use crate::facts::ledger::SentRequest;
use crate::outcome::Severity;
use crate::pattern::canonical;
use crate::requirement::Req;
use crate::rules::envelope::Problem;
use serde_json::Value;
use std::time::Duration;

/// `_meta` key tying a notification to its subscription.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The listen request a server notification's `_meta` names, if it names one.
pub fn subscription_of(params: Option<&Value>) -> Option<&Value> {
    params?.get("_meta")?.get(SUBSCRIPTION_ID)
}

/// A `notifications/cancelled` the server sent in 2026-07-28, naming `named` (the harness's
/// request with that id, if it sent one): only a `subscriptions/listen` may be named (a note
/// says which reading of AMB-19 the server follows); anything else fails.
pub fn server_cancel(params: Option<&Value>, named: Option<&SentRequest>) -> Problem {
    let id = params
        .and_then(|p| p.get("requestId"))
        .map_or_else(|| "nothing".to_string(), canonical);
    match named {
        Some(request) if request.method == "subscriptions/listen" => Problem::new(
            Severity::Note,
            Req::Amb19,
            format!("the server sent `notifications/cancelled` for subscription {id} (the cancellation page's way to end a subscription; the subscriptions page's is a completion result: both are accepted)"),
        ),
        Some(request) => Problem::new(
            Severity::Fail,
            Req::Can14,
            format!("the server sent `notifications/cancelled` for request {id}, a `{}`; in 2026-07-28 a server cancels only a `subscriptions/listen`, to end that subscription", request.method),
        ),
        None => Problem::new(
            Severity::Fail,
            Req::Can14,
            format!("the server sent `notifications/cancelled` naming {id}, no request of the harness's; in 2026-07-28 a server cancels only a `subscriptions/listen`, to end that subscription"),
        ),
    }
}

/// A notification `method` for the subscription `key` (whose listen request is `listen`) that
/// came `at`: after the proof that the client's cancel was read, a failure; before it, it
/// crossed the cancel (a note).
pub fn after_cancel(
    method: &str,
    key: &str,
    listen: &SentRequest,
    at: Duration,
) -> Option<Problem> {
    let mark = listen.cancel?;
    if mark.is_read(at) {
        return Some(Problem::new(
            Severity::Fail,
            Req::Can14,
            format!("the server sent `{method}` for subscription {key} after the client's cancel of it was read ({}); a cancelled subscription gets no more messages", mark.proof()),
        ));
    }
    Some(Problem::new(
        Severity::Note,
        Req::Can14,
        format!("`{method}` for subscription {key} crossed the client's cancel of it (allowed)"),
    ))
}

/// The answer to a cancelled `subscriptions/listen`: a result is the subscriptions page's
/// graceful end (AMB-19, noted); `None` leaves an error to the cancel rules.
pub fn closed_with_result(key: &str, value: &Value) -> Option<Problem> {
    value.get("result")?;
    Some(Problem::new(
        Severity::Note,
        Req::Amb19,
        format!("the server answered the cancelled subscription {key} with a result (the subscriptions page's graceful closure; the cancellation page's way is `notifications/cancelled`: both are accepted)"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{call, cancel, ms};
    use serde_json::json;

    fn listen(read: Option<u64>) -> SentRequest {
        let mut request = call();
        request.method = "subscriptions/listen".into();
        request.cancel = Some(cancel(10, read));
        request
    }

    #[test]
    fn only_a_listen_may_be_cancelled_by_the_server() {
        let params = json!({"requestId": 1});
        let note = server_cancel(Some(&params), Some(&listen(None)));
        assert_eq!(
            (note.severity, note.requirement),
            (Severity::Note, Req::Amb19)
        );
        let mut other = call();
        other.method = "tools/call".into();
        let fail = server_cancel(Some(&params), Some(&other));
        assert_eq!(
            (fail.severity, fail.requirement),
            (Severity::Fail, Req::Can14)
        );
        assert!(fail.message.contains("`tools/call`"), "{}", fail.message);
        assert_eq!(server_cancel(Some(&params), None).severity, Severity::Fail);
    }

    #[test]
    fn a_notification_after_the_cancel_was_read_fails_and_one_before_crossed_it() {
        let read = listen(Some(100));
        let late = after_cancel("notifications/tools/list_changed", "1", &read, ms(150));
        assert_eq!(late.map(|p| p.severity), Some(Severity::Fail));
        let crossed = after_cancel("notifications/tools/list_changed", "1", &read, ms(50));
        assert_eq!(crossed.map(|p| p.severity), Some(Severity::Note));
        let mut live = call();
        live.method = "subscriptions/listen".into();
        assert!(after_cancel("notifications/tools/list_changed", "1", &live, ms(50)).is_none());
    }

    #[test]
    fn a_result_for_a_cancelled_listen_is_a_graceful_end() {
        let result = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}});
        assert_eq!(
            closed_with_result("1", &result).map(|p| p.requirement),
            Some(Req::Amb19)
        );
        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32800, "message": "x"}});
        assert!(closed_with_result("1", &error).is_none());
    }

    #[test]
    fn the_subscription_is_read_from_meta() {
        let params = json!({"_meta": {SUBSCRIPTION_ID: "l-1"}});
        assert_eq!(subscription_of(Some(&params)), Some(&json!("l-1")));
        assert_eq!(subscription_of(Some(&json!({}))), None);
    }
}
