//! What a client must do over Streamable HTTP besides its messages (up to 2025-11-25): every
//! message a POST that accepts both JSON and SSE (HTTP-05); the session id the server gave on
//! every later request, the cancel POST included (HTTP-16, HTTP-17); the agreed
//! `MCP-Protocol-Version` on every request after `initialize`, from 2025-06-18 (HTTP-18); a
//! fresh `initialize` without the header after a 404 (HTTP-16); GET only with
//! `text/event-stream` acceptable (HTTP-12); and DELETE at the end, which `! exit` judges. A
//! stream the harness closes is no cancel; what the client makes of it is recorded (AMB-23).
//!
//! Functions over what the harness's HTTP server saw of one request (and the session's state
//! the engine keeps in `engine/client/http.rs`) returning findings; the engine gathers the
//! facts and applies them (`engine/client/judge_http.rs`).

use crate::era::ProtocolVersion;
use crate::exchange::ClientRequest;
use crate::facts::streams::NotFound;
use crate::outcome::Severity;
use crate::requirement::Req;
use crate::rules::envelope::Problem;

/// Whether an `Accept` header lists a media type.
pub fn accepts(accept: Option<&str>, kind: &str) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|part| {
            part.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case(kind)
        })
    })
}

/// HTTP-04: every request goes to the MCP endpoint the client was given.
pub fn endpoint(seen: &ClientRequest) -> Option<Problem> {
    (seen.path != "/mcp").then(|| {
        Problem::new(
            Severity::Fail,
            Req::Http04,
            format!(
                "the client made a {} request to {}, not to the MCP endpoint it was given",
                seen.verb, seen.path
            ),
        )
    })
}

/// HTTP-12: a GET accepts `text/event-stream`; `what` names the request.
pub fn get_accept(seen: &ClientRequest, what: &str) -> Option<Problem> {
    (!accepts(seen.accept.as_deref(), "text/event-stream")).then(|| {
        Problem::new(
            Severity::Fail,
            Req::Http12,
            format!(
                "{what}: a GET must accept text/event-stream, its Accept was {:?}",
                seen.accept
            ),
        )
    })
}

/// HTTP-05: a POST accepts both JSON and SSE.
pub fn post_accept(seen: &ClientRequest, what: &str) -> Option<Problem> {
    let both = accepts(seen.accept.as_deref(), "application/json")
        && accepts(seen.accept.as_deref(), "text/event-stream");
    (!both).then(|| {
        Problem::new(
            Severity::Fail,
            Req::Http05,
            format!(
                "{what} must accept both application/json and text/event-stream; its Accept was {:?}",
                seen.accept
            ),
        )
    })
}

/// HTTP-16: a fresh `initialize` (one the harness minted a session on) carries no session id.
pub fn fresh_initialize(seen: &ClientRequest, what: &str) -> Option<Problem> {
    seen.session.is_some().then(|| {
        Problem::new(
            Severity::Fail,
            Req::Http16,
            format!(
                "{what} carried Mcp-Session-Id {:?}; a fresh `initialize` carries none",
                seen.session
            ),
        )
    })
}

/// HTTP-16: after a 404 for a forgotten session (`state`), the next request is a fresh
/// `initialize`. A request that `crossed` the first 404 (it got one too, and was on its way
/// before the client could have read the first) is not judged. Returns the state after the
/// request, and the finding.
pub fn after_not_found(
    seen: &ClientRequest,
    what: &str,
    state: NotFound,
    crossed: bool,
) -> (NotFound, Option<Problem>) {
    if (seen.status == 404 && crossed) || state != NotFound::Awaiting || seen.assigned.is_some() {
        return (state, None);
    }
    let problem = Problem::new(
        Severity::Fail,
        Req::Http16,
        format!("after the harness answered 404 for a forgotten session, the client's next request was {what}; it must start a new session with a fresh `initialize` without Mcp-Session-Id"),
    );
    (NotFound::Reported, Some(problem))
}

/// HTTP-16, HTTP-18: a request in the session `session` (the id the server gave), whose
/// `initialize` agreed to `agreed`, carries the session id and, from 2025-06-18, the agreed
/// version.
pub fn session_headers(
    seen: &ClientRequest,
    what: &str,
    session: &str,
    agreed: Option<&str>,
) -> Vec<Problem> {
    let mut problems = vec![];
    if seen.session.is_none() {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Http16,
            format!("{what} carried no Mcp-Session-Id; every request after `initialize` carries the session id the server gave ({session})"),
        ));
    }
    let Some(agreed) = agreed else {
        return problems;
    };
    let needs_header = ProtocolVersion::parse(agreed).is_some_and(|v| v.has_version_header());
    if needs_header && seen.version.as_deref() != Some(agreed) {
        let got = seen
            .version
            .as_deref()
            .map_or_else(|| "none".to_string(), |v| format!("{v:?}"));
        problems.push(Problem::new(
            Severity::Fail,
            Req::Http18,
            format!("{what} carried MCP-Protocol-Version {got}; every request after `initialize` carries the agreed version {agreed:?}"),
        ));
    }
    problems
}

/// HTTP-16 at the end of a case: a 404 (`state`) that no new session followed, unless the
/// case stopped the client first (`stopped`).
pub fn never_restarted(state: NotFound, stopped: bool) -> Option<Problem> {
    (state == NotFound::Awaiting && !stopped).then(|| {
        Problem::new(
            Severity::Fail,
            Req::Http16,
            "after the harness answered 404 for a forgotten session, the client never started a new session with a fresh `initialize`".into(),
        )
    })
}

#[cfg(test)]
#[path = "client_http_tests.rs"]
mod tests;
