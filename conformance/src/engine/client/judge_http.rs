//! The engine's side of the standing rules for a client over Streamable HTTP: gathers what
//! `rules::client_http` judges by (what the harness's HTTP server saw of each request, the
//! session's state in [`super::http::HttpSide`]), applies its findings and keeps that state,
//! and carries out `! disconnect`, whose outcome it records at the end (AMB-23).

use super::crossing::{crossing, Held};
use super::session::Sessions;
use super::ClientTarget;
use crate::case::Case;
use crate::engine::parts::clock;
use crate::engine::parts::transcript::Transcript;
use crate::engine::Engine;
use crate::facts::streams::NotFound;
use crate::outcome::{FindingKind, Severity};
use crate::pattern::json_equal;
use crate::rules::client_http as rules;
use crate::rules::client_stateless;
use crate::rules::envelope::Problem;
use crate::transcript::Direction;
use crate::transport::http_server::ClientRequest;
use crate::transport::{Channel, Transport};
use serde_json::{json, Value};
use std::time::Duration;

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
        if let Some(problem) = rules::endpoint(&seen) {
            return self.problems([problem]);
        }
        // A request of a forgotten session that arrives within the crossing grace of the first
        // 404 was on its way before the client could have read it (two POSTs may cross).
        let crossed = self
            .side
            .http
            .first_not_found
            .as_ref()
            .is_some_and(|first| first.crossed(at, &crossing(self.waits())));
        match seen.verb.as_str() {
            "POST" => self.http_post(&seen, &what, at, crossed),
            "GET" => {
                self.side.http.gets.push((at, seen.last_event_id.clone()));
                self.problems(rules::get_accept(&seen, &what));
                self.problems(session_headers(&self.side.sessions, &seen, &what));
            }
            "DELETE" => {
                let problem = self.side.http.after_not_found(&seen, &what, crossed);
                self.problems(problem);
                let current = self.side.sessions.current().and_then(|s| s.http_id.clone());
                if seen.status == 200 && seen.session.is_some() && seen.session == current {
                    if let Some(session) = self.side.sessions.current_mut() {
                        session.deleted.get_or_insert_with(clock::now);
                    }
                }
                self.problems(session_headers(&self.side.sessions, &seen, &what));
            }
            _ => {}
        }
    }

    /// A POST: a new session, or a request of the current one (`crossed`: within the crossing
    /// grace of the first 404 for a forgotten session).
    fn http_post(&mut self, seen: &ClientRequest, what: &str, at: Duration, crossed: bool) {
        self.problems(rules::post_accept(seen, what));
        if let Some(id) = &seen.assigned {
            self.problems(rules::fresh_initialize(seen, what));
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
        let problem = self.side.http.after_not_found(seen, what, crossed);
        self.problems(problem);
        if seen.status == 404 {
            if self.side.http.not_found == NotFound::Clear {
                self.side.http.not_found = NotFound::Awaiting;
                self.side.http.first_not_found = Some(Held {
                    at,
                    waited: self.waited(),
                    what: Value::Null,
                });
            }
            return;
        }
        if client_stateless::is_stateless_post(seen, self.side.plays_stateless(&self.ledger)) {
            // HTTP-19: the headers a stateless-era request's POST carries.
            return self.problems(client_stateless::headers(seen, what));
        }
        self.problems(session_headers(&self.side.sessions, seen, what));
    }

    /// `! disconnect ID`: the harness closes the response stream of the client's request ID
    /// without cancelling it, as a dropped connection would; what the client does then is
    /// recorded at the end (AMB-23).
    pub(crate) fn disconnect(&mut self, id: &Value) {
        let channel = self
            .ledger
            .received(&crate::pattern::id_key(id))
            .map(|r| r.channel);
        let closed = channel.is_some_and(|c| self.io.abort(c));
        let shown = crate::pattern::canonical(id);
        let text = match channel {
            Some(c) if closed => {
                format!("[closed the stream of {c}, request {shown}, without a cancel]")
            }
            _ => format!("[no open stream of request {shown} to close]"),
        };
        self.diff.push(format!("< {text}"));
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
        let state = std::mem::take(&mut self.side.http.not_found);
        let problem = rules::never_restarted(state, self.side.stopped.is_some());
        self.problems(problem);
        for (id, when) in std::mem::take(&mut self.side.http.disconnected) {
            let observed =
                after_disconnect(&self.transcript, &self.side, self.played.case(), &id, when);
            self.finding(Severity::Note, FindingKind::Observed, observed);
        }
    }
}

/// What the client did after the harness closed the stream of its request `id` at `when`
/// (what `transcript` shows, and what the adapter reported to `side` of the `case`).
fn after_disconnect(
    transcript: &Transcript,
    side: &ClientTarget,
    case: &Case,
    id: &Value,
    when: Duration,
) -> String {
    let key = crate::pattern::canonical(id);
    let cancel = transcript.iter().find(|e| {
        e.direction == Direction::Received
            && e.at >= when
            && e.value.as_ref().is_some_and(|v| {
                v.get("method") == Some(&json!("notifications/cancelled"))
                    && v.pointer("/params/requestId")
                        .is_some_and(|r| json_equal(r, id))
            })
    });
    let get = side.http.gets.iter().find(|(at, _)| *at >= when);
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
    let reported: Vec<String> = case
        .actions
        .iter()
        .enumerate()
        .filter(|(_, a)| a.get("call").is_some())
        .filter_map(|(i, _)| {
            let outcome = side.outcomes.get(&i)?;
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

/// The session id and the version header a request after `initialize` carries (see
/// [`rules::session_headers`]): the version the answer to the current session's
/// `initialize` agreed to, whoever gave it (the harness's handshake or the case's own line).
fn session_headers(sessions: &Sessions, seen: &ClientRequest, what: &str) -> Vec<Problem> {
    let Some(session) = sessions.current() else {
        return vec![];
    };
    let Some(id) = &session.http_id else {
        return vec![];
    };
    rules::session_headers(seen, what, id, session.agreed.as_deref())
}
