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

use crate::engine::client::ClientTarget;
use crate::engine::Engine;
use crate::era::{META_CAPABILITIES, META_CLIENT_INFO, META_VERSION};
use crate::outcome::Severity;
use crate::pattern::canonical;
use crate::requirement::Req;
use crate::rules::envelope::short;
use crate::transport::http_server::ClientRequest;
use crate::transport::Transport;
use base64::Engine as _;
use serde_json::Value;

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// Whether a client's request belongs to the stateless era.
    pub(crate) fn stateless_request(&self, method: &str, params: Option<&Value>) -> bool {
        let meta = params.and_then(|p| p.get("_meta"));
        let stamped = meta
            .is_some_and(|m| m.get(META_VERSION).is_some() || m.get(META_CAPABILITIES).is_some());
        method == "server/discover"
            || stamped
            || (self.side.era.plays && method != "initialize" && !self.session_ready())
    }

    /// LIF-10: the `_meta` fields every request of the stateless era carries.
    pub(crate) fn judge_stamp(&mut self, method: &str, params: Option<&Value>) {
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
        if !missing.is_empty() {
            self.rule(
                Severity::Fail,
                Req::Lif10,
                format!(
                    "the client's `{method}` request lacks {} in `params._meta`; every request of 2026-07-28 carries its version and the client's capabilities",
                    missing.join(" and ")
                ),
            );
        }
        if field(META_CLIENT_INFO).is_none() {
            self.rule(
                Severity::Warn,
                Req::Lif10,
                format!("the client's `{method}` request carries no `{META_CLIENT_INFO}` in `params._meta`; a client should name itself on every request of 2026-07-28"),
            );
        }
    }

    /// RPC-03 (and AMB-20, LIF-12 in the stateless era): a request id the client used before.
    pub(crate) fn judge_reuse(&mut self, key: &str, method: &str, stateless: bool) {
        let Some(earlier) = self.ledger.received.get(key) else {
            return;
        };
        let earlier_method = earlier.method.clone();
        let answered = earlier.answered.is_some();
        if !stateless {
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
            return self.rule(Severity::Fail, Req::Rpc03, message);
        }
        if earlier.outstanding() {
            self.rule(
                Severity::Fail,
                Req::Rpc03,
                format!("the client reused id {key} for `{method}` while its `{earlier_method}` request with that id was still outstanding; an id must not match a request still waiting for its response"),
            );
        } else if !answered {
            self.rule(
                Severity::Warn,
                Req::Rpc03,
                format!("the client reused id {key} for `{method}`; its `{earlier_method}` request with that id was cancelled and never answered, so it never received its response (AMB-20)"),
            );
        } else if self.side.era.refused.contains(key) {
            self.rule(
                self.case_severity().min(Severity::Warn),
                Req::Lif12,
                format!("the client retried its `{earlier_method}` request, which the harness refused with -32022, under the same id {key}; a retry is a new request with a new id"),
            );
        }
    }

    /// RPC-15: a client of 2026-07-28 sends no responses (its server sends no requests).
    pub(crate) fn stateless_response(&mut self, index: usize) {
        let value = self.value(index);
        self.transcript[index].consumed_by = Some(0);
        self.rule(
            Severity::Fail,
            Req::Rpc15,
            format!(
                "the client sent a response ({}); in 2026-07-28 a client never sends responses (the harness sent it no request)",
                short(&value)
            ),
        );
    }

    /// HTTP-19: the headers a stateless-era request's POST carries.
    pub(crate) fn stateless_headers(&mut self, seen: &ClientRequest, what: &str) {
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
        if !wrong.is_empty() {
            self.rule(
                Severity::Fail,
                Req::Http19,
                format!(
                    "{what} carried {}; every request of 2026-07-28 carries MCP-Protocol-Version equal to its `_meta` version, Mcp-Method, and for tools/call, prompts/get and resources/read Mcp-Name",
                    wrong.join(", ")
                ),
            );
        }
    }

    /// Whether a POST the harness's HTTP server saw carries a stateless-era request.
    pub(crate) fn stateless_post(&self, seen: &ClientRequest) -> bool {
        let method = seen.method.as_deref().unwrap_or_default();
        seen.is_request
            && (method == "server/discover"
                || seen.stamped.is_some()
                || (self.side.era.plays && method != "initialize" && !self.session_ready()))
    }
}

/// The text a header value stands for: itself, or what its `=?base64?…?=` form encodes.
fn header_text(value: &str) -> Result<String, String> {
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Ok(value.to_string());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("is not valid base64 ({e})"))?;
    String::from_utf8(bytes).map_err(|_| {
        format!(
            "encodes no UTF-8 text: {}",
            canonical(&Value::String(value.into()))
        )
    })
}

#[cfg(test)]
mod tests {
    use super::header_text;

    #[test]
    fn header_values_are_plain_or_base64() {
        assert_eq!(header_text("echo").unwrap(), "echo");
        assert_eq!(
            header_text("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
            "Hello, 世界"
        );
        assert!(header_text("=?base64?***?=").is_err());
    }
}
