//! The client's side of the standing rules for its requests in the stateless era and the
//! request-id rule of both eras: what `rules::client_stateless` judges by (the request, the
//! earlier request with its id, whether the harness plays 2026-07-28 outside a session).

use super::ClientTarget;
use crate::facts::ledger::Ledger;
use crate::outcome::Severity;
use crate::rules::client_stateless::{self as rules, Reuse};
use crate::rules::envelope::Problem;

impl ClientTarget {
    /// Whether the harness plays 2026-07-28 to a client that has no `initialize` session (as
    /// `ledger` says): its requests then belong to the stateless era.
    pub(crate) fn plays_stateless(&self, ledger: &Ledger) -> bool {
        self.era.plays && !self.sessions.ready(ledger)
    }

    /// RPC-03 (and AMB-20, LIF-12 in the stateless era): request `key` of `method` reuses an
    /// id the client used before (as `ledger` says), weighed at the case's `severity`.
    pub(crate) fn reuse(
        &self,
        ledger: &Ledger,
        key: &str,
        method: &str,
        stateless: bool,
        severity: Severity,
    ) -> Option<Problem> {
        let earlier = ledger.received(key)?;
        rules::reuse(&Reuse {
            key,
            method,
            stateless,
            earlier,
            refused: self.era.refused.contains(key),
            case_severity: severity,
        })
    }
}
