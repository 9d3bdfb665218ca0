//! The engine's side of the standing rules for a client's requests in the stateless era and
//! the request-id rule of both eras: gathers what `rules::client_stateless` judges by (the
//! request, the earlier request with its id, whether the harness plays 2026-07-28 outside a
//! session) and applies its findings.

use super::ClientTarget;
use crate::engine::Engine;
use crate::rules::client_stateless::{self as rules, Reuse};
use crate::transport::Transport;

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// Whether the harness plays 2026-07-28 to a client that has no `initialize` session: its
    /// requests then belong to the stateless era.
    pub(crate) fn plays_stateless(&self) -> bool {
        self.side.era.plays && !self.side.sessions.ready(&self.ledger)
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
}
