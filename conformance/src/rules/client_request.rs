//! The standing rules for a request a client sends, beyond its era's stamp and its id's reuse
//! (`client_stateless`): an id that is a string or an integer (RPC-02), a progress token that
//! is one too and unique among the client's active requests (PRG-01), and the handshake in
//! order (`initialize` answered before anything but `ping`, LIF-04; then
//! `notifications/initialized`, LIF-03).
//!
//! Functions over the request, the ledger and the session's state returning findings; the
//! engine applies them (`engine/client/message.rs`).

use crate::facts::ledger::ReceivedRequest;
use crate::outcome::Severity;
use crate::pattern::{canonical, id_key};
use crate::requirement::Req;
use crate::rules::envelope::Problem;
use serde_json::Value;
use std::collections::HashMap;

/// Requests a client may send before its `initialize` is answered: `ping` (LIF-04), and
/// `server/discover`, with which a client that speaks both eras probes first (LIF-14).
const BEFORE_INITIALIZE: [&str; 3] = ["initialize", "ping", "server/discover"];

/// A request id that is neither a string nor an integer (RPC-02).
pub fn id_type(method: &str, id: &Value) -> Option<Problem> {
    (!(id.is_string() || id.is_i64() || id.is_u64())).then(|| {
        Problem::new(
            Severity::Fail,
            Req::Rpc02,
            format!(
                "the client's `{method}` request has id {}; an id is a string or an integer",
                canonical(id)
            ),
        )
    })
}

/// The progress token `token` of the client's request `key`: a string or an integer, not
/// already used by one of its active requests (`received`) (PRG-01).
pub fn progress_token(
    token: &Value,
    key: &str,
    received: &HashMap<String, ReceivedRequest>,
) -> Vec<Problem> {
    let mut problems = vec![];
    if !(token.is_string() || token.is_i64() || token.is_u64()) {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Prg01,
            format!(
                "progress token {} is neither a string nor an integer",
                canonical(token)
            ),
        ));
    }
    let token_key = Some(id_key(token));
    let clash = received
        .iter()
        .find(|(_, r)| r.outstanding() && r.token == token_key);
    if let Some((other, _)) = clash {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Prg01,
            format!(
                "progress token {} of request {key} is already used by active request {other}; tokens must be unique among active requests",
                canonical(token)
            ),
        ));
    }
    problems
}

/// Where a handshake-era request stands in the handshake.
#[derive(Debug, Clone, PartialEq)]
pub enum Handshake {
    /// In order (or nothing to judge).
    InOrder,
    /// Out of order.
    Early(Problem),
    /// Before `notifications/initialized`, whose POST it may have crossed: held (see
    /// `client_crossing`).
    Hold,
}

/// LIF-04 and LIF-03 for request `method`: `ready` says whether the session's `initialize`
/// was answered, `initialized` whether `notifications/initialized` came (`None`: no session
/// yet), `may_cross` whether two of the client's messages may arrive out of order.
pub fn handshake_order(
    method: &str,
    ready: bool,
    initialized: Option<bool>,
    may_cross: bool,
) -> Handshake {
    if BEFORE_INITIALIZE.contains(&method) {
        return Handshake::InOrder;
    }
    let Some(initialized) = initialized else {
        return Handshake::InOrder;
    };
    if !ready {
        Handshake::Early(Problem::new(
            Severity::Warn,
            Req::Lif04,
            format!("the client sent `{method}` before its `initialize` was answered; until then it should send nothing but `ping`"),
        ))
    } else if !initialized && may_cross {
        // Over HTTP the two POSTs may cross: judged once `initialized` comes, or at the end.
        Handshake::Hold
    } else if !initialized {
        Handshake::Early(Problem::new(
            Severity::Warn,
            Req::Lif03,
            format!("the client sent `{method}` before `notifications/initialized`; it sends that first, once `initialize` is answered"),
        ))
    } else {
        Handshake::InOrder
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::Channel;
    use serde_json::json;

    #[test]
    fn an_id_that_is_neither_string_nor_integer_breaks_rpc_02() {
        let found = id_type("tools/call", &json!(1.5)).expect("a finding");
        assert_eq!(
            found.message,
            "the client's `tools/call` request has id 1.5; an id is a string or an integer"
        );
        assert_eq!(
            id_type("tools/call", &json!(null)).map(|p| p.requirement),
            Some(Req::Rpc02)
        );
    }

    #[test]
    fn string_and_integer_ids_are_fine() {
        assert_eq!(id_type("ping", &json!("a")), None);
        assert_eq!(id_type("ping", &json!(7)), None);
    }

    fn active(token: Option<&str>) -> ReceivedRequest {
        ReceivedRequest {
            method: "tools/call".into(),
            answered: None,
            answered_waited: None,
            succeeded: false,
            cancelled: false,
            token: token.map(str::to_string),
            channel: Channel::Stdio,
            stateless: false,
            task: None,
        }
    }

    #[test]
    fn a_token_that_is_neither_string_nor_integer_breaks_prg_01() {
        let found = progress_token(&json!([1]), "2", &HashMap::new());
        assert_eq!(
            found[0].message,
            "progress token [1] is neither a string nor an integer"
        );
    }

    #[test]
    fn a_token_of_an_active_request_breaks_prg_01() {
        let received = HashMap::from([("1".to_string(), active(Some("\"t\"")))]);
        let found = progress_token(&json!("t"), "2", &received);
        assert_eq!(found[0].message, "progress token \"t\" of request 2 is already used by active request 1; tokens must be unique among active requests");
    }

    #[test]
    fn a_token_of_a_finished_request_may_be_used_again() {
        let mut done = active(Some("\"t\""));
        done.cancelled = true;
        let received = HashMap::from([("1".to_string(), done), ("3".to_string(), active(None))]);
        assert!(progress_token(&json!("t"), "2", &received).is_empty());
    }

    #[test]
    fn a_request_before_initialize_is_answered_breaks_lif_04() {
        let Handshake::Early(p) = handshake_order("tools/list", false, Some(false), false) else {
            panic!("early");
        };
        assert_eq!((p.severity, p.requirement), (Severity::Warn, Req::Lif04));
    }

    #[test]
    fn a_request_before_initialized_breaks_lif_03_unless_it_may_have_crossed() {
        let Handshake::Early(p) = handshake_order("tools/list", true, Some(false), false) else {
            panic!("early");
        };
        assert_eq!(p.requirement, Req::Lif03);
        assert_eq!(
            handshake_order("tools/list", true, Some(false), true),
            Handshake::Hold
        );
    }

    #[test]
    fn ping_discover_and_requests_after_the_handshake_are_in_order() {
        assert_eq!(
            handshake_order("ping", false, Some(false), false),
            Handshake::InOrder
        );
        assert_eq!(
            handshake_order("server/discover", false, Some(false), false),
            Handshake::InOrder
        );
        assert_eq!(
            handshake_order("tools/list", true, Some(true), false),
            Handshake::InOrder
        );
        assert_eq!(
            handshake_order("tools/list", false, None, false),
            Handshake::InOrder
        );
    }
}
