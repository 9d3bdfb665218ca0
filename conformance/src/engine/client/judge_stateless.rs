//! The client's side of the standing rules for its requests: the handshake's order, the
//! stateless era and the request-id rule of both eras, with what `rules::client_request` and
//! `rules::client_stateless` judge by (the request, the earlier request with its id, whether
//! the harness plays 2026-07-28 outside a session).

use super::crossing::Held;
use super::ClientTarget;
use crate::facts::ledger::Ledger;
use crate::outcome::Severity;
use crate::rules::client_request::{self, Handshake};
use crate::rules::client_stateless::{self as rules, Reuse};
use crate::rules::envelope::Problem;

impl ClientTarget {
    /// Whether the harness plays 2026-07-28 to a client that has no `initialize` session (as
    /// `ledger` says): its requests then belong to the stateless era.
    pub(crate) fn plays_stateless(&self, ledger: &Ledger) -> bool {
        self.era.plays && !self.sessions.ready(ledger)
    }

    /// LIF-04 and LIF-03: nothing but `ping` until `initialize` is answered (as `ledger` says),
    /// and `notifications/initialized` before any other request once it is. A request that
    /// may have crossed it (`may_cross`: over HTTP) is `held` until it comes.
    pub(crate) fn handshake_order(
        &mut self,
        ledger: &Ledger,
        method: &str,
        held: Held,
        may_cross: bool,
    ) -> Option<Problem> {
        let initialized = self.sessions.current().map(|s| s.initialized);
        let ready = self.sessions.ready(ledger);
        match client_request::handshake_order(method, ready, initialized, may_cross) {
            Handshake::InOrder => None,
            Handshake::Early(problem) => Some(problem),
            Handshake::Hold => {
                self.crossing.early.push(held);
                None
            }
        }
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
