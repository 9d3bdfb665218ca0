//! The engine's side of the standing rules for a client target's cancels: gathers what
//! `rules::client_cancel` judges by (the cancel, the client's request it names, a reading of
//! the clock) and applies its verdict to the ledger and the findings.

use super::crossing::Held;
use super::{ClientTarget, T_GRACE};
use crate::engine::Engine;
use crate::pattern::id_key;
use crate::rules::client_cancel::{self, CancelFacts, Named};
use crate::transport::Transport;
use serde_json::Value;
use std::time::Duration;

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// The standing rules for a client's `notifications/cancelled`, which arrived `at` (since
    /// the client started); see [`client_cancel::client_cancel`]. A cancel naming no request
    /// the client sent is held while that request's POST may still be on its way.
    pub(crate) fn client_cancel(&mut self, params: Option<&Value>, at: Duration) {
        let key = params.and_then(|p| p.get("requestId")).map(id_key);
        let request = key.as_deref().and_then(|k| self.ledger.received(k));
        let (problems, named) = client_cancel::client_cancel(&CancelFacts {
            params,
            request,
            arrived: self.io.started() + at,
            ordered: self.io.ordered(),
            grace: T_GRACE,
            waits: self.waits_if(request.is_some_and(|r| r.answered.is_some())),
            case_severity: self.played.severity(),
        });
        if let Named::Own(key) = &named {
            self.ledger.cancelled(key);
        }
        self.problems(problems);
        let (Named::Unknown, Some(params)) = (named, params) else {
            return;
        };
        if !self.io.ordered() {
            // Its request's POST may still be on its way: judged when it comes, or at the end.
            let held = Held {
                at,
                waited: self.waited(),
                what: params.clone(),
            };
            let key = params.get("requestId").map(id_key).unwrap_or_default();
            self.side.crossing.cancels.push((key, held));
            return;
        }
        // A cancel naming no request the client sent (yet).
        self.problems(client_cancel::cancel_of_unknown(params, &self.ledger));
    }
}
