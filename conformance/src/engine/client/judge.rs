//! The engine's side of the standing rules for a client target's cancels: gathers what
//! `rules::client_cancel` judges by (the cancel, the client's request it names, a reading of
//! the clock) and applies its verdict to the ledger and the findings.

use super::crossing::Held;
use super::{ClientTarget, T_GRACE};
use crate::engine::Engine;
use crate::pattern::id_key;
use crate::rules::client_cancel::{self, CancelFacts, Named};
use crate::rules::envelope::Problem;
use crate::transport::Transport;
use serde_json::Value;
use std::time::Duration;

/// What the standing rules make of a client's cancel: findings, the client's request it
/// cancels, and, when it names no request the client sent, whether it is held (its request's
/// POST may still be on its way) or judged now.
pub(crate) struct Cancel {
    problems: Vec<Problem>,
    own: Option<String>,
    unknown: Option<Unknown>,
}

/// A cancel naming no request the client sent (yet).
enum Unknown {
    /// Held under the key it names, until that request comes or the case ends.
    Held(String, Held),
    /// Judged now (see [`client_cancel::cancel_of_unknown`]).
    Judged(Option<Problem>),
}

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// The standing rules for a client's `notifications/cancelled` with `params`, which
    /// arrived `at` (since the client started); see [`client_cancel::client_cancel`]. A cancel
    /// naming no request the client sent is held while that request's POST may still be on
    /// its way. Nothing is changed until [`Engine::client_cancel`] applies it.
    pub(crate) fn judge_cancel(&self, params: Option<&Value>, at: Duration) -> Cancel {
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
        let unknown = match (&named, params) {
            // Its request's POST may still be on its way: judged when it comes, or at the end.
            (Named::Unknown, Some(params)) if !self.io.ordered() => {
                let held = Held {
                    at,
                    waited: self.waited(),
                    what: params.clone(),
                };
                Some(Unknown::Held(key.unwrap_or_default(), held))
            }
            (Named::Unknown, Some(params)) => Some(Unknown::Judged(
                client_cancel::cancel_of_unknown(params, &self.ledger),
            )),
            _ => None,
        };
        let own = match named {
            Named::Own(key) => Some(key),
            _ => None,
        };
        Cancel {
            problems,
            own,
            unknown,
        }
    }

    /// Applies what the rules made of a client's cancel (see [`Engine::judge_cancel`]).
    pub(crate) fn client_cancel(&mut self, cancel: Cancel) {
        if let Some(key) = &cancel.own {
            self.ledger.cancelled(key);
        }
        self.problems(cancel.problems);
        match cancel.unknown {
            Some(Unknown::Held(key, held)) => self.side.crossing.cancels.push((key, held)),
            Some(Unknown::Judged(problem)) => self.problems(problem),
            None => {}
        }
    }
}
