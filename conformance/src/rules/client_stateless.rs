//! The standing rules for a client's requests in the stateless era (2026-07-28), and the
//! request-id rule of both eras.
//!
//! A request belongs to the stateless era when it is `server/discover`, carries the era's
//! `_meta` fields, or goes to the harness playing a 2026-07-28 server. Such a request carries
//! `_meta` `protocolVersion` (a string) and `clientCapabilities` (an object), which a server
//! cannot do without (LIF-10, a failure), and `clientInfo` (a SHOULD); over Streamable HTTP
//! its POST carries `MCP-Protocol-Version` equal to that version, `Mcp-Method` equal to its
//! method, and for `tools/call`, `prompts/get` and `resources/read` an `Mcp-Name` equal to
//! the name or URI, plain or in the `=?base64?…?=` form (HTTP-19). A client of the era never
//! sends a response: its server sends no requests (RPC-15).
//!
//! Ids: up to 2025-11-25 an id is never used twice in a session (RPC-03). In 2026-07-28 it
//! only must not match a request still waiting for its answer; reusing the id of a request
//! that was cancelled and never answered warns, since that request never got its response
//! (AMB-20), and so does retrying a request the server refused with `-32022` under the same
//! id (LIF-12: the retry is a new request).
//!
//! Functions over the request (its method and params, or what the harness's HTTP server saw
//! of its POST) and the ledger's entry for an earlier request with its id, returning
//! findings; the engine gathers the facts and applies them (`engine/client/judge_stateless.rs`).

use crate::era::{META_CAPABILITIES, META_CLIENT_INFO, META_VERSION};
use crate::exchange::ClientRequest;
use crate::facts::ledger::ReceivedRequest;
use crate::outcome::Severity;
use crate::pattern::canonical;
use crate::requirement::Req;
use crate::rules::envelope::{short, Problem};
use base64::Engine as _;
use serde_json::Value;

/// Whether a client's request belongs to the stateless era: `server/discover`, stamped with
/// the era's `_meta`, or sent to a harness that plays 2026-07-28 (`plays_stateless`) outside
/// an `initialize` session.
pub fn is_stateless(method: &str, params: Option<&Value>, plays_stateless: bool) -> bool {
    let meta = params.and_then(|p| p.get("_meta"));
    let stamped =
        meta.is_some_and(|m| m.get(META_VERSION).is_some() || m.get(META_CAPABILITIES).is_some());
    method == "server/discover" || stamped || (plays_stateless && method != "initialize")
}

/// Whether a POST the harness's HTTP server saw carries a stateless-era request (see
/// [`is_stateless`]).
pub fn is_stateless_post(seen: &ClientRequest, plays_stateless: bool) -> bool {
    let method = seen.method.as_deref().unwrap_or_default();
    seen.is_request
        && (method == "server/discover"
            || seen.stamped.is_some()
            || (plays_stateless && method != "initialize"))
}

/// LIF-10: the `_meta` fields every request of the stateless era carries.
pub fn stamp(method: &str, params: Option<&Value>) -> Vec<Problem> {
    let meta = params.and_then(|p| p.get("_meta"));
    let field = |key: &str| meta.and_then(|m| m.get(key));
    let version = field(META_VERSION);
    let capabilities = field(META_CAPABILITIES);
    let mut missing = vec![];
    if !version.is_some_and(Value::is_string) {
        missing.push(format!(
            "`{META_VERSION}` (a string; it had {})",
            version.map_or_else(|| "none".into(), short)
        ));
    }
    if !capabilities.is_some_and(Value::is_object) {
        missing.push(format!(
            "`{META_CAPABILITIES}` (an object; it had {})",
            capabilities.map_or_else(|| "none".into(), short)
        ));
    }
    let mut problems = vec![];
    if !missing.is_empty() {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Lif10,
            format!(
                "the client's `{method}` request lacks {} in `params._meta`; every request of 2026-07-28 carries its version and the client's capabilities",
                missing.join(" and ")
            ),
        ));
    }
    if field(META_CLIENT_INFO).is_none() {
        problems.push(Problem::new(
            Severity::Warn,
            Req::Lif10,
            format!("the client's `{method}` request carries no `{META_CLIENT_INFO}` in `params._meta`; a client should name itself on every request of 2026-07-28"),
        ));
    }
    problems
}

/// What [`reuse`] judges by: a request whose id `key` the client used before.
pub struct Reuse<'a> {
    /// The id, as a key.
    pub key: &'a str,
    /// The new request's method.
    pub method: &'a str,
    /// Whether the new request belongs to the stateless era.
    pub stateless: bool,
    /// The earlier request with that id.
    pub earlier: &'a ReceivedRequest,
    /// Whether the harness refused the earlier one with `-32022` (LIF-12).
    pub refused: bool,
    /// The case's level, which bounds LIF-12's weight.
    pub case_severity: Severity,
}

/// RPC-03 (and AMB-20, LIF-12 in the stateless era): a request id the client used before.
pub fn reuse(facts: &Reuse<'_>) -> Option<Problem> {
    let Reuse { key, method, .. } = *facts;
    let earlier = facts.earlier;
    let earlier_method = &earlier.method;
    let answered = earlier.answered.is_some();
    if !facts.stateless {
        let state = if earlier.outstanding() {
            "still outstanding"
        } else if answered {
            "already answered"
        } else {
            "cancelled"
        };
        let message = format!(
            "the client reused id {key} for `{method}`; its `{earlier_method}` request with that id is {state}, and an id must not be used twice in a session"
        );
        return Some(Problem::new(Severity::Fail, Req::Rpc03, message));
    }
    if earlier.outstanding() {
        Some(Problem::new(
            Severity::Fail,
            Req::Rpc03,
            format!("the client reused id {key} for `{method}` while its `{earlier_method}` request with that id was still outstanding; an id must not match a request still waiting for its response"),
        ))
    } else if !answered {
        Some(Problem::new(
            Severity::Warn,
            Req::Rpc03,
            format!("the client reused id {key} for `{method}`; its `{earlier_method}` request with that id was cancelled and never answered, so it never received its response (AMB-20)"),
        ))
    } else if facts.refused {
        Some(Problem::new(
            facts.case_severity.min(Severity::Warn),
            Req::Lif12,
            format!("the client retried its `{earlier_method}` request, which the harness refused with -32022, under the same id {key}; a retry is a new request with a new id"),
        ))
    } else {
        None
    }
}

/// CAN-12: in 2026-07-28 over HTTP the client did not close the stream of its request `key`
/// `waited` (`within 2s`, `before the recording ended`), having POSTed `notifications/cancelled`
/// for it instead (`posted`) or not; closing the stream is the cancel. The MUST is the
/// server's, the client's part a SHOULD: at most a warning, at the case's `severity`.
pub fn stream_not_closed(key: &str, posted: bool, waited: &str, severity: Severity) -> Problem {
    let message = if posted {
        format!("the client POSTed `notifications/cancelled` for its request {key} but did not close the request's stream {waited}; in 2026-07-28 over HTTP closing the stream is the cancel, and the notification is not expected (AMB-06)")
    } else {
        format!("the client did not close the stream of its request {key} {waited}; in 2026-07-28 over HTTP closing the request's stream is its cancel")
    };
    Problem::new(severity.min(Severity::Warn), Req::Can12, message)
}

/// RPC-15: a client of 2026-07-28 sends no responses (its server sends no requests).
pub fn response(value: &Value) -> Problem {
    Problem::new(
        Severity::Fail,
        Req::Rpc15,
        format!(
            "the client sent a response ({}); in 2026-07-28 a client never sends responses (the harness sent it no request)",
            short(value)
        ),
    )
}

/// HTTP-19: the headers a stateless-era request's POST carries; `what` names the POST.
pub fn headers(seen: &ClientRequest, what: &str) -> Option<Problem> {
    let method = seen.method.as_deref().unwrap_or_default();
    let mut wrong = vec![];
    let version = seen.stamped.as_ref().and_then(Value::as_str);
    match (&seen.version, version) {
        (None, _) => wrong.push("no MCP-Protocol-Version".to_string()),
        (Some(header), Some(stamped)) if header != stamped => wrong.push(format!(
            "MCP-Protocol-Version {header:?} while its `_meta` says {stamped:?}"
        )),
        _ => {}
    }
    match &seen.mcp_method {
        None => wrong.push("no Mcp-Method".to_string()),
        Some(header) if header != method => {
            wrong.push(format!("Mcp-Method {header:?} for `{method}`"))
        }
        _ => {}
    }
    if let Some(named) = &seen.named {
        match seen.mcp_name.as_deref().map(header_text) {
            None => wrong.push(format!("no Mcp-Name (it must carry {named:?})")),
            Some(Err(why)) => wrong.push(format!("an Mcp-Name that {why}")),
            Some(Ok(name)) if name != *named => wrong.push(format!(
                "Mcp-Name {:?} for {named:?}",
                seen.mcp_name.as_deref().unwrap_or_default()
            )),
            _ => {}
        }
    }
    (!wrong.is_empty()).then(|| {
        Problem::new(
            Severity::Fail,
            Req::Http19,
            format!(
                "{what} carried {}; every request of 2026-07-28 carries MCP-Protocol-Version equal to its `_meta` version, Mcp-Method, and for tools/call, prompts/get and resources/read Mcp-Name",
                wrong.join(", ")
            ),
        )
    })
}

/// Why a header value stands for no text.
#[derive(Debug, PartialEq)]
enum BadHeader {
    /// Its `=?base64?…?=` form holds no base64: what the decoder said.
    Base64(String),
    /// What it encodes is not UTF-8: the value as written.
    NotUtf8(String),
}

impl std::fmt::Display for BadHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadHeader::Base64(why) => write!(f, "is not valid base64 ({why})"),
            BadHeader::NotUtf8(value) => write!(
                f,
                "encodes no UTF-8 text: {}",
                canonical(&Value::String(value.clone()))
            ),
        }
    }
}

/// The text a header value stands for: itself, or what its `=?base64?…?=` form encodes.
fn header_text(value: &str) -> Result<String, BadHeader> {
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Ok(value.to_string());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| BadHeader::Base64(e.to_string()))?;
    String::from_utf8(bytes).map_err(|_| BadHeader::NotUtf8(value.to_string()))
}

#[cfg(test)]
#[path = "client_stateless_tests.rs"]
mod tests;
