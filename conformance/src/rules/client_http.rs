//! What a client must do over Streamable HTTP besides its messages (up to 2025-11-25): every
//! message a POST that accepts both JSON and SSE (HTTP-05); the session id the server gave on
//! every later request, the cancel POST included (HTTP-16, HTTP-17); the agreed
//! `MCP-Protocol-Version` on every request after `initialize`, from 2025-06-18 (HTTP-18); a
//! fresh `initialize` without the header after a 404 (HTTP-16); GET only with
//! `text/event-stream` acceptable (HTTP-12); and DELETE at the end, which `! exit` judges. A
//! stream the harness closes is no cancel; what the client makes of it is recorded (AMB-23).

use crate::engine::client::http::NotFound;
use crate::engine::client::ClientTarget;
use crate::engine::Engine;
use crate::era::ProtocolVersion;
use crate::outcome::{FindingKind, Severity};
use crate::pattern::json_equal;
use crate::requirement::Req;
use crate::transcript::Direction;
use crate::transport::http_server::ClientRequest;
use crate::transport::{Channel, Transport};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Whether an `Accept` header lists a media type.
fn accepts(accept: Option<&str>, kind: &str) -> bool {
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

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// The standing rules for one HTTP request the client made.
    pub(crate) fn http_request(&mut self, at: Duration, seen: ClientRequest) {
        self.side.connected = true;
        self.liveness.heard(at);
        let channel = seen.channel.unwrap_or(Channel::Post(0));
        let what = match &seen.method {
            Some(method) if method == "notifications/cancelled" => "the cancel POST".to_string(),
            Some(method) => format!("the POST of `{method}`"),
            None => format!("{} {channel}", seen.verb),
        };
        let what = if seen.verb == "POST" {
            what
        } else {
            format!("{} ({channel})", seen.verb)
        };
        self.io.note(format!(
            "[http] {channel}{} → {}{}",
            seen.method
                .as_deref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default(),
            seen.status,
            seen.session
                .as_deref()
                .map(|s| format!(" (Mcp-Session-Id {s})"))
                .unwrap_or_default()
        ));
        if seen.path != "/mcp" {
            self.rule(
                Severity::Fail,
                Req::Http04,
                format!(
                    "the client made a {} request to {}, not to the MCP endpoint it was given",
                    seen.verb, seen.path
                ),
            );
            return;
        }
        match seen.verb.as_str() {
            "POST" => self.http_post(&seen, &what, at),
            "GET" => {
                self.side.http.gets.push((at, seen.last_event_id.clone()));
                if !accepts(seen.accept.as_deref(), "text/event-stream") {
                    self.rule(
                        Severity::Fail,
                        Req::Http12,
                        format!(
                            "{what}: a GET must accept text/event-stream, its Accept was {:?}",
                            seen.accept
                        ),
                    );
                }
                self.session_headers(&seen, &what);
            }
            "DELETE" => {
                self.after_not_found(&seen, &what, at);
                let current = self.side.sessions.current().and_then(|s| s.http_id.clone());
                if seen.status == 200 && seen.session.is_some() && seen.session == current {
                    if let Some(session) = self.side.sessions.current_mut() {
                        session.deleted.get_or_insert_with(Instant::now);
                    }
                }
                self.session_headers(&seen, &what);
            }
            _ => {}
        }
    }

    fn http_post(&mut self, seen: &ClientRequest, what: &str, at: Duration) {
        let both = accepts(seen.accept.as_deref(), "application/json")
            && accepts(seen.accept.as_deref(), "text/event-stream");
        if !both {
            self.rule(
                Severity::Fail,
                Req::Http05,
                format!(
                    "{what} must accept both application/json and text/event-stream; its Accept was {:?}",
                    seen.accept
                ),
            );
        }
        if let Some(id) = &seen.assigned {
            if seen.session.is_some() {
                self.rule(
                    Severity::Fail,
                    Req::Http16,
                    format!(
                        "{what} carried Mcp-Session-Id {:?}; a fresh `initialize` carries none",
                        seen.session
                    ),
                );
            }
            self.side.http.not_found = NotFound::Clear;
            let asked_for = std::mem::take(&mut self.side.http.expired);
            self.open_session(
                seen.channel.unwrap_or(Channel::Post(0)),
                Some(id.clone()),
                asked_for,
            );
            return;
        }
        if seen.status == 404 && seen.deleted {
            self.io.note(format!(
                "[http] {what} came after the client had ended its session with DELETE (answered 404)"
            ));
            return;
        }
        self.after_not_found(seen, what, at);
        if seen.status == 404 {
            if self.side.http.not_found == NotFound::Clear {
                self.side.http.not_found = NotFound::Awaiting;
                self.side.http.first_not_found = Some(self.held(at, Value::Null));
            }
            return;
        }
        if self.stateless_post(seen) {
            return self.stateless_headers(seen, what);
        }
        self.session_headers(seen, what);
    }

    /// After a 404, the next request must be a fresh `initialize` (HTTP-16). A request of the
    /// forgotten session that arrives within the crossing grace of the first 404 was on its way
    /// before the client could have read it (over HTTP two POSTs may cross).
    fn after_not_found(&mut self, seen: &ClientRequest, what: &str, at: Duration) {
        let crossed = seen.status == 404
            && self
                .side
                .http
                .first_not_found
                .as_ref()
                .is_some_and(|first| self.crossed(first, at));
        if crossed {
            return;
        }
        if self.side.http.not_found == NotFound::Awaiting && seen.assigned.is_none() {
            self.side.http.not_found = NotFound::Reported;
            self.rule(
                Severity::Fail,
                Req::Http16,
                format!("after the harness answered 404 for a forgotten session, the client's next request was {what}; it must start a new session with a fresh `initialize` without Mcp-Session-Id"),
            );
        }
    }

    /// The session id and the version header a request after `initialize` carries.
    fn session_headers(&mut self, seen: &ClientRequest, what: &str) {
        let Some(session) = self.side.sessions.current().and_then(|s| s.http_id.clone()) else {
            return;
        };
        if seen.session.is_none() {
            self.rule(
                Severity::Fail,
                Req::Http16,
                format!("{what} carried no Mcp-Session-Id; every request after `initialize` carries the session id the server gave ({session})"),
            );
        }
        // The version the answer to this session's `initialize` agreed to, whoever gave it (the
        // harness's handshake or the case's own line).
        let Some(agreed) = self.side.sessions.current().and_then(|s| s.agreed.clone()) else {
            return;
        };
        let needs_header = ProtocolVersion::parse(&agreed).is_some_and(|v| v.has_version_header());
        if needs_header && seen.version.as_deref() != Some(agreed.as_str()) {
            let got = seen
                .version
                .as_deref()
                .map_or_else(|| "none".to_string(), |v| format!("{v:?}"));
            self.rule(
                Severity::Fail,
                Req::Http18,
                format!("{what} carried MCP-Protocol-Version {got}; every request after `initialize` carries the agreed version {agreed:?}"),
            );
        }
    }

    /// `! disconnect ID`: the harness closes the response stream of the client's request ID
    /// without cancelling it, as a dropped connection would; what the client does then is
    /// recorded at the end (AMB-23).
    pub(crate) fn disconnect(&mut self, id: &Value) {
        let channel = self
            .ledger
            .received
            .get(&crate::pattern::id_key(id))
            .map(|r| r.channel);
        let closed = channel.is_some_and(|c| self.io.abort(c));
        let shown = crate::pattern::canonical(id);
        let text = match channel {
            Some(c) if closed => {
                format!("[closed the stream of {c}, request {shown}, without a cancel]")
            }
            _ => format!("[no open stream of request {shown} to close]"),
        };
        self.expected.push(format!("< {text}"));
        let now = self.now();
        self.transcript
            .push(crate::transcript::Entry::sent(now, text, None, false));
        if closed {
            self.side.http.disconnected.push((id.clone(), now));
        }
    }

    /// At the end of an HTTP case: a 404 that no new session followed (HTTP-16), and what
    /// the client made of each stream the harness closed (AMB-23).
    pub(crate) fn http_finish(&mut self) {
        let pending = std::mem::take(&mut self.side.http.not_found) == NotFound::Awaiting;
        if pending && self.side.stopped.is_none() {
            self.rule(
                Severity::Fail,
                Req::Http16,
                "after the harness answered 404 for a forgotten session, the client never started a new session with a fresh `initialize`".into(),
            );
        }
        for (id, when) in std::mem::take(&mut self.side.http.disconnected) {
            let observed = self.after_disconnect(&id, when);
            self.finding(Severity::Note, FindingKind::Observed, observed);
        }
    }

    /// What the client did after the harness closed the stream of its request `id`.
    fn after_disconnect(&self, id: &Value, when: Duration) -> String {
        let key = crate::pattern::canonical(id);
        let cancel = self.transcript.iter().find(|e| {
            e.direction == Direction::Received
                && e.at >= when
                && e.value.as_ref().is_some_and(|v| {
                    v.get("method") == Some(&json!("notifications/cancelled"))
                        && v.pointer("/params/requestId")
                            .is_some_and(|r| json_equal(r, id))
                })
        });
        let get = self.side.http.gets.iter().find(|(at, _)| *at >= when);
        let mut seen = vec![];
        if let Some(cancel) = cancel {
            seen.push(format!(
                "cancelled it {} ms later (allowed, AMB-23)",
                cancel.at.saturating_sub(when).as_millis()
            ));
        }
        if let Some((at, last)) = get {
            seen.push(format!(
                "reconnected with GET {} ms later{}",
                at.saturating_sub(when).as_millis(),
                last.as_deref()
                    .map(|l| format!(" (Last-Event-ID {l})"))
                    .unwrap_or_default()
            ));
        }
        if seen.is_empty() {
            seen.push("neither cancelled it nor reconnected".into());
        }
        let reported: Vec<String> = self
            .case
            .actions
            .iter()
            .enumerate()
            .filter(|(_, a)| a.get("call").is_some())
            .filter_map(|(i, _)| {
                let outcome = self.side.outcomes.get(&i)?;
                let word = outcome.get("outcome").and_then(Value::as_str)?;
                let text = outcome
                    .get("text")
                    .and_then(Value::as_str)
                    .map(|t| format!(" ({})", t.chars().take(120).collect::<String>()))
                    .unwrap_or_default();
                Some(format!("action {i} ended as `{word}`{text}"))
            })
            .collect();
        let reported = if reported.is_empty() {
            String::new()
        } else {
            format!("; {}", reported.join("; "))
        };
        format!(
            "after the harness closed the stream of request {key} without a cancel, the client {}{reported}",
            seen.join(" and ")
        )
    }
}
