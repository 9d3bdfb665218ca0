//! The engine's side of the standing rules for a client's requests in the stateless era and
//! the request-id rule of both eras: gathers what `rules::client_stateless` judges by (the
//! request, the earlier request with its id, whether the harness plays 2026-07-28 outside a
//! session) and applies its findings.

use super::ClientTarget;
use crate::engine::Engine;
use crate::rules::client_stateless::{self as rules, Reuse};
use crate::transport::http_server::ClientRequest;
use crate::transport::Transport;
use serde_json::Value;

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// Whether the harness plays 2026-07-28 to a client that has no `initialize` session: its
    /// requests then belong to the stateless era.
    fn plays_stateless(&self) -> bool {
        self.side.era.plays && !self.session_ready()
    }

    /// Whether a client's request belongs to the stateless era (see
    /// [`rules::is_stateless`]).
    pub(crate) fn stateless_request(&self, method: &str, params: Option<&Value>) -> bool {
        rules::is_stateless(method, params, self.plays_stateless())
    }

    /// LIF-10: the `_meta` fields every request of the stateless era carries.
    pub(crate) fn judge_stamp(&mut self, method: &str, params: Option<&Value>) {
        self.problems(rules::stamp(method, params));
    }

    /// RPC-03 (and AMB-20, LIF-12 in the stateless era): a request id the client used before.
    pub(crate) fn judge_reuse(&mut self, key: &str, method: &str, stateless: bool) {
        let Some(earlier) = self.ledger.received(key) else {
            return;
        };
        let problem = rules::reuse(&Reuse {
            key,
            method,
            stateless,
            earlier,
            refused: self.side.era.refused.contains(key),
            case_severity: self.played.severity(),
        });
        self.problems(problem);
    }

    /// RPC-15: a client of 2026-07-28 sends no responses (its server sends no requests).
    pub(crate) fn stateless_response(&mut self, index: usize) {
        let value = self.value(index);
        self.transcript[index].consumed_by = Some(0);
        self.problems([rules::response(&value)]);
    }

    /// HTTP-19: the headers a stateless-era request's POST carries.
    pub(crate) fn stateless_headers(&mut self, seen: &ClientRequest, what: &str) {
        self.problems(rules::headers(seen, what));
    }

    /// Whether a POST the harness's HTTP server saw carries a stateless-era request.
    pub(crate) fn stateless_post(&self, seen: &ClientRequest) -> bool {
        rules::is_stateless_post(seen, self.plays_stateless())
    }
}
