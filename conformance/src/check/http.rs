//! What a recording over Streamable HTTP shows of cancels beyond the messages, read as a live
//! run reads its own: up to 2025-11-25 a cancel's POST answered `202` counts as read a grace
//! later (`Ledger::cancel_accepted`); in 2026-07-28 the client closing a request's stream
//! before its answer is the cancel, read a grace later (`Ledger::cancel_closed`), and a
//! `notifications/cancelled` POSTed instead, with the stream left open, is the client's
//! fault the live client rule names (CAN-12, `rules::client_stateless::stream_not_closed`).

use crate::facts::ledger::key_in;
use crate::rules::envelope::Problem;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The client's requests and cancels by the HTTP exchange that carried them.
#[derive(Debug, Default)]
pub(crate) struct Http {
    /// The transcript index of the cancel each exchange's POST carried.
    cancels: HashMap<u64, usize>,
    /// The request each exchange's POST carried: its id and ledger key.
    requests: HashMap<u64, (Value, String)>,
    /// The keys of requests the server answered.
    answered: HashSet<String>,
    /// The keys of requests whose stream the client closed before their answer.
    closed: HashSet<String>,
    /// In 2026-07-28: cancels the client POSTed, by the key they name, with their trace lines.
    posted: Vec<(String, usize)>,
}

/// A request's stream the client closed before its answer: the cancel of 2026-07-28.
#[derive(Debug, Clone)]
pub(crate) struct Closing {
    /// The request's id.
    pub id: Value,
    /// Its ledger key.
    pub key: String,
}

impl Http {
    /// The client's request `id` (scoped as `scope`) travelled in `exchange`.
    pub fn request(&mut self, exchange: Option<u64>, id: &Value, scope: Option<&str>) {
        if let Some(n) = exchange {
            self.requests.insert(n, (id.clone(), key_in(scope, id)));
        }
    }

    /// The client's cancel (transcript index `index`, naming `params.requestId`, at trace
    /// line `line`) travelled in `exchange`; `stateless`: in 2026-07-28.
    pub fn cancel(
        &mut self,
        exchange: Option<u64>,
        index: usize,
        named: Option<String>,
        (line, stateless): (usize, bool),
    ) {
        let Some(n) = exchange else { return };
        self.cancels.insert(n, index);
        if let Some(key) = named.filter(|_| stateless) {
            self.posted.push((key, line));
        }
    }

    /// Over HTTP, for a cancel `m` outside a session naming `id`: the exchange of the last
    /// request with that id sent outside a session before it.
    pub fn sessionless(&self, m: &super::Msg, id: &Value, wire: &super::Wire) -> Option<u64> {
        let sessionless = |n: u64| wire.exchange(n).is_some_and(|e| !e.sid);
        if !m.exchange.is_some_and(sessionless) {
            return None;
        }
        self.requests
            .iter()
            .filter(|(n, (asked, _))| asked == id && sessionless(**n))
            .map(|(n, _)| *n)
            .max()
    }

    /// The server answered the request keyed `key`.
    pub fn answered(&mut self, key: String) {
        self.answered.insert(key);
    }

    /// The transcript index of the cancel `exchange` carried, if it carried one.
    pub fn cancel_of(&self, exchange: u64) -> Option<usize> {
        self.cancels.get(&exchange).copied()
    }

    /// The client closed the stream of `exchange`: the request it carried, when that was
    /// not answered yet (in 2026-07-28, its cancel).
    pub fn closed(&mut self, exchange: u64) -> Option<Closing> {
        let (id, key) = self.requests.get(&exchange)?;
        if self.answered.contains(key) {
            return None;
        }
        self.closed.insert(key.clone());
        Some(Closing {
            id: id.clone(),
            key: key.clone(),
        })
    }

    /// Once nothing more will come: every cancel the client POSTed in 2026-07-28 for a request
    /// whose stream it never closed, with its trace line.
    pub fn finish(&self) -> Vec<(usize, Problem)> {
        self.posted
            .iter()
            // Answered, the request needed no cancel any more: only one left open is judged.
            .filter(|(key, _)| !self.closed.contains(key) && !self.answered.contains(key))
            .filter(|(key, _)| self.requests.values().any(|(_, k)| k == key))
            .map(|(key, line)| {
                let problem = crate::rules::client_stateless::stream_not_closed(
                    key,
                    true,
                    "before the recording ended",
                    crate::outcome::Severity::Warn,
                );
                (*line, problem)
            })
            .collect()
    }
}

impl super::Walk {
    /// An HTTP event: a transport entry, and what it shows of a cancel (a `202`, a closed
    /// stream).
    pub(super) fn exchange(&mut self, stamped: &crate::trace::Stamped) {
        use crate::trace::{EndBy, Event};
        let (at, line) = (stamped.at, stamped.line);
        let text = self.wire.event(&stamped.event);
        let channel = self.wire.channel_of(&stamped.event);
        match &stamped.event {
            Event::Response {
                exchange,
                status: 202,
                ..
            } => {
                if let Some(cancel) = self.http.cancel_of(*exchange) {
                    self.server.cancel_accepted(cancel, at, &self.session);
                }
            }
            Event::End {
                exchange,
                by: EndBy::Client,
                ..
            } if self.session.stateless() => {
                if let Some(closing) = self.http.closed(*exchange) {
                    let marker = format!(
                        "[cancel {}: closed the stream of {channel}]",
                        crate::pattern::canonical(&closing.id)
                    );
                    let mut entry = crate::transcript::Entry::sent(at, marker, None, false);
                    entry.channel = channel;
                    entry.consumed_by = Some(line);
                    entry.session = self.wire.session(Some(*exchange));
                    self.transcript.push(entry);
                    let index = self.transcript.len() - 1;
                    let arrived = self
                        .wire
                        .exchange(*exchange)
                        .is_some_and(|e| e.status.is_some());
                    let scope = self.wire.scope(Some(*exchange));
                    let cancel = (index, at, arrived);
                    self.server
                        .cancel_closed(&closing.id, scope, cancel, &self.session);
                    self.client.closed_stream(&closing.key);
                    return;
                }
            }
            _ => {}
        }
        self.note(at, line, channel, &text);
    }
}
