//! Messages of a client that cross over Streamable HTTP: every message is its own POST, and
//! two POSTs a client wrote in one order may reach the harness in the other (separate
//! connections, separate tasks on both sides). A rule that depends on the order of two of the
//! client's messages therefore holds the later-looking one for a short grace, judges it
//! against what arrives meanwhile, and only then against what never came:
//!
//! - a cancel naming a request the harness has not received yet (CAN-01, CAN-02),
//! - a request before the `notifications/initialized` that should precede it (LIF-03),
//! - progress that arrives below the value before it (PRG-03, the client's own progress),
//! - a request on a session the harness had just answered 404 for, sent before the client
//!   could have read that 404 (HTTP-16).
//!
//! The grace is `T_GRACE`, longer by the time the client waited for a CPU since the message
//! arrived (where the kernel does not say, stretched by the machine's CPU pressure). Over an
//! ordered transport (stdio) nothing is held: the order of arrival is the order of writing.
//!
//! This is the engine's side: what is held (the state, [`Crossing`]) and when it is judged;
//! the findings are `rules::client_crossing`'s.

use super::{ClientTarget, T_GRACE};
use crate::engine::Engine;
use crate::facts::ledger::Ledger;
use crate::facts::waits::Waits;
use crate::rules::client_cancel;
use crate::rules::client_crossing as rules;
use crate::rules::envelope::Problem;
use crate::transport::Transport;
use serde_json::Value;
use std::time::Duration;

/// A message held until the grace after its arrival shows what it crossed.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// When it arrived (since the client started).
    pub at: Duration,
    /// How long the client had waited for a CPU when it arrived.
    pub waited: Option<Duration>,
    /// What it says: a cancel's params, or a request's method.
    pub what: Value,
}

impl Held {
    /// Whether `later` (since the client started) is within the grace of this message, as
    /// the clock `waits` reads (see [`rules::crossed`] and [`crossing`]).
    pub(crate) fn crossed(&self, later: Duration, waits: &Waits) -> bool {
        rules::crossed(self.at, self.waited, later, waits)
    }
}

/// The clock read as `waits`, with the crossing grace `T_GRACE` as the calm one.
pub(crate) fn crossing(waits: Waits) -> Waits {
    Waits {
        calm: T_GRACE,
        ..waits
    }
}

/// What the harness holds of a client's messages until their order can be judged.
#[derive(Debug, Default)]
pub(crate) struct Crossing {
    /// Cancels naming a request not received yet, by the request's key.
    pub cancels: Vec<(String, Held)>,
    /// Requests that arrived before `notifications/initialized`.
    pub early: Vec<Held>,
    /// When the client's last progress for each of the harness's requests arrived.
    pub progress: std::collections::HashMap<String, Duration>,
}

impl Crossing {
    /// `notifications/initialized` arrived at `at` (as the clock `waits` reads): requests held
    /// before it crossed it, or came too early (LIF-03).
    pub(crate) fn initialized(&mut self, at: Duration, waits: &Waits) -> Vec<Problem> {
        std::mem::take(&mut self.early)
            .into_iter()
            .map(|held| {
                if held.crossed(at, waits) {
                    rules::crossed_initialized(&held.what, at.saturating_sub(held.at))
                } else {
                    rules::too_early(&held.what)
                }
            })
            .collect()
    }

    /// At the end of the case: what was held and never crossed by what it waited for (the
    /// cancels judged against `ledger`).
    pub(crate) fn finish(&mut self, ledger: &Ledger) -> Vec<Problem> {
        let cancels = std::mem::take(&mut self.cancels)
            .into_iter()
            .filter_map(|(_, held)| client_cancel::cancel_of_unknown(&held.what, ledger));
        let early = std::mem::take(&mut self.early)
            .into_iter()
            .map(|held| rules::too_early(&held.what));
        cancels.chain(early).collect()
    }
}

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// The request `key` has arrived: a cancel held for it is judged now, as if it had come
    /// after it, with a note that the two POSTs crossed.
    pub(crate) fn request_arrived(&mut self, key: &str, at: Duration) {
        let (now, still): (Vec<_>, Vec<_>) = std::mem::take(&mut self.side.crossing.cancels)
            .into_iter()
            .partition(|(k, _)| k == key);
        self.side.crossing.cancels = still;
        for (key, held) in now {
            let crossed = held.crossed(at, &crossing(self.waits()));
            let early_by = at.saturating_sub(held.at);
            self.problems([rules::overtaken(&key, early_by, crossed)]);
            if crossed {
                let cancel = self.judge_cancel(Some(&held.what), held.at);
                self.client_cancel(cancel);
            } else {
                let problem = client_cancel::cancel_of_unknown(&held.what, &self.ledger);
                self.problems(problem);
            }
        }
    }
}
