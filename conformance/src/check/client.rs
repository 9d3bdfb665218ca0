//! The client's side of a checked trace. The client's requests go into a ledger as a live
//! client run's do, and its requests and cancels are judged by the live rules:
//! `rules::client_request` (id and progress token types and uniqueness),
//! `rules::client_stateless` (the stateless era's stamp, and an id reused while in flight or
//! after a cancel) and `rules::client_cancel` (a cancel of `initialize`, of an unknown or an
//! answered request, a cancel that crossed its answer). Over HTTP a cancel naming no request
//! yet is held to the end, as a live run holds it while the request's POST may be on its way.
//! A request left neither answered nor cancelled is a note: whether the client gave up on it
//! is not in a recording.

use super::server::add;
use super::{Msg, Session};
use crate::engine::client::T_GRACE;
use crate::engine::parts::findings::Findings;
use crate::facts::ledger::{key_in, Ledger, ReceivedRequest};
use crate::facts::waits::Waits;
use crate::outcome::{Finding, FindingKind, Severity};
use crate::requirement::Req;
use crate::rules::client_cancel::{self, CancelFacts, Named};
use crate::rules::client_request;
use crate::rules::client_stateless::{self, Reuse};
use crate::rules::envelope::Problem;
use crate::rules::response;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// What the client's side has learned.
#[derive(Debug, Default)]
pub(crate) struct ClientSide {
    /// The client's requests (its `received`, as a live client run keeps them).
    ledger: Ledger,
    findings: Findings,
    /// Over HTTP: cancels naming no request yet, with their trace lines: judged at the end.
    held: Vec<(usize, Value)>,
    /// The client's requests the server refused with `-32022` (LIF-12).
    refused: HashSet<String>,
    /// The trace line of each of the client's requests, by key.
    lines: HashMap<String, usize>,
    /// The server stopped serving while the client could still cancel: what it left open
    /// is no question of whether it gave up.
    server_gone: bool,
}

impl ClientSide {
    /// Findings at trace line `line`.
    pub fn add(&mut self, line: usize, problems: impl IntoIterator<Item = Problem>) {
        add(&mut self.findings, line, problems);
    }

    /// The client sent request `id` (`method`, the whole message `value`).
    pub fn request(&mut self, m: &Msg, method: &str, id: &Value, value: &Value, session: &Session) {
        let key = key_in(m.scope, id);
        self.add(m.line, client_request::id_type(method, id));
        let params = value.get("params");
        let stateless = client_stateless::is_stateless(method, params, session.stateless());
        if let Some(earlier) = self.ledger.received(&key) {
            let reuse = client_stateless::reuse(&Reuse {
                key: &key,
                method,
                stateless,
                earlier,
                refused: self.refused.contains(&key),
                case_severity: Severity::Fail,
            });
            add(&mut self.findings, m.line, reuse);
        }
        if stateless {
            self.add(m.line, client_stateless::stamp(method, params));
        }
        let token = params.and_then(|p| p.pointer("/_meta/progressToken"));
        if let Some(token) = token {
            let problems =
                client_request::progress_token(token, &key, self.ledger.received_requests());
            self.add(m.line, problems);
        }
        let request = ReceivedRequest {
            method: method.to_string(),
            answered: None,
            answered_waited: None,
            succeeded: false,
            cancelled: false,
            token: token.map(|t| key_in(m.scope, t)),
            channel: m.channel,
            stateless,
            task: None,
        };
        self.lines.insert(key.clone(), m.line);
        self.ledger.request_received(key, request);
    }

    /// The server answered (`value`) one of the client's requests, or an id it never used
    /// (the server's fault, judged on its side).
    pub fn answered(&mut self, m: &Msg, value: &Value, session: &Session) {
        let Some(id) = value.get("id").filter(|id| !id.is_null()) else {
            return;
        };
        let key = key_in(m.scope, id);
        if value.pointer("/error/code").and_then(Value::as_i64)
            == Some(crate::era::UNSUPPORTED_VERSION)
        {
            self.refused.insert(key.clone());
        }
        self.ledger.answered_at(&key, value, session.base + m.at);
    }

    /// The client answered one of the server's requests: its shape.
    pub fn response(&mut self, m: &Msg, value: &Value) {
        self.add(m.line, response::shape(value));
    }

    /// The client cancelled a request (`params` of its `notifications/cancelled`).
    pub fn cancel(&mut self, m: &Msg, params: Option<&Value>, session: &Session) {
        let key = params
            .and_then(|p| p.get("requestId"))
            .map(|id| key_in(m.scope, id));
        let request = key.as_deref().and_then(|k| self.ledger.received(k));
        let (problems, named) = client_cancel::client_cancel(&CancelFacts {
            params,
            request,
            arrived: session.base + m.at,
            ordered: session.ordered,
            grace: T_GRACE,
            waits: Waits {
                now: None,
                calm: T_GRACE,
                stretch: 1.0,
            },
            case_severity: Severity::Fail,
        });
        self.add(m.line, problems);
        match (named, params) {
            (Named::Own(_), _) => {
                if let Some(key) = key {
                    self.ledger.cancelled(&key);
                }
            }
            (Named::Unknown, Some(params)) if !session.ordered => {
                self.held.push((m.line, params.clone()));
            }
            (Named::Unknown, Some(params)) => {
                let problem = client_cancel::cancel_of_unknown(params, &self.ledger);
                self.add(m.line, problem);
            }
            _ => {}
        }
    }

    /// In 2026-07-28 over HTTP the client closed the stream of its request `key`: its cancel.
    pub fn closed_stream(&mut self, key: &str) {
        self.ledger.cancelled(key);
    }

    /// The server exited or closed its stdout.
    pub fn server_gone(&mut self) {
        self.server_gone = true;
    }

    /// What is judged once nothing more will come: cancels held for a request that never
    /// came, and a note for every request left neither answered nor cancelled.
    pub fn finish(mut self, _session: &Session) -> Vec<Finding> {
        for (line, params) in std::mem::take(&mut self.held) {
            let problem = client_cancel::cancel_of_unknown(&params, &self.ledger);
            self.add(line, problem);
        }
        let mut open: Vec<(&String, &ReceivedRequest)> = self
            .ledger
            .received_requests()
            .iter()
            .filter(|(_, r)| r.outstanding() && !self.server_gone)
            .collect();
        open.sort_by(|a, b| a.0.cmp(b.0));
        let notes: Vec<(usize, String)> = open
            .iter()
            .map(|(key, r)| {
                let line = self.lines.get(*key).copied().unwrap_or_default();
                (line, format!(
                    "the client's `{}` request {key} was neither answered nor cancelled when the recording ended; if the client gave up on it, it should have cancelled it (TMO-02), which a recording cannot tell",
                    r.method
                ))
            })
            .collect();
        for (line, note) in notes {
            self.findings
                .add(Severity::Note, FindingKind::Rule(Req::Tmo02), line, note);
        }
        self.findings.into_list()
    }
}
