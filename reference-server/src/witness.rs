//! The cancellation witness: which handlers (and task bodies) observed their
//! cancellation, as the `cancellations` fixture reports it.
//!
//! It lives under the registry's lock (`registry.rs`), and the task table
//! (`tasks/table.rs`) records into it too; a module of its own lets both use
//! it without the table importing the registry that holds the table.

use serde_json::Value;
use std::collections::VecDeque;

/// The witness keeps the ids of this many most recent observed cancellations.
pub(crate) const WITNESS_CAPACITY: usize = 1_000;

/// What the `cancellations` fixture reports: which handlers (and task
/// bodies) observed their cancellation.
#[derive(Default)]
pub(crate) struct Witness {
    /// Cancelled handlers that have not yet observed their cancellation.
    unobserved: usize,
    /// Ids whose handlers observed their cancellation, oldest first; only
    /// the last [`WITNESS_CAPACITY`] are kept.
    ids: VecDeque<Value>,
    /// How many observations were ever recorded (so the lock's holder knows
    /// to wake whoever waits for the list).
    recorded: u64,
}

impl Witness {
    /// A cancel fired a token whose handler has yet to observe it.
    pub(crate) fn expect(&mut self) {
        self.unobserved += 1;
    }

    /// A handler observed its cancellation; `id` names it in the list.
    pub(crate) fn record(&mut self, id: Value) {
        self.ids.push_back(id);
        if self.ids.len() > WITNESS_CAPACITY {
            self.ids.pop_front();
        }
        self.unobserved = self.unobserved.saturating_sub(1);
        self.recorded += 1;
    }

    /// How many observations were ever recorded: a change means one was.
    pub(crate) fn recorded(&self) -> u64 {
        self.recorded
    }

    /// The ids, oldest first, once every cancelled handler has observed its
    /// cancel; `None` while some have not.
    pub(crate) fn list(&self) -> Option<Vec<Value>> {
        (self.unobserved == 0).then(|| self.ids.iter().cloned().collect())
    }
}
