//! Time lost to load: how long the target's processes waited for a CPU, so that a wait that
//! ends on proof is not cut short by a busy machine.
//!
//! A proof says the target *read* something, not that its handler got a CPU since: a server
//! that reads on one task and works on another can be starved between the two. The machine's
//! CPU pressure says the machine is busy, not that *this* target waited (and the harness's own
//! parallel cases make it high). So the grace after a proof is the calm grace plus exactly the
//! time the target's process group spent runnable but waiting for a CPU since the proof (the
//! kernel's scheduler statistics). A calm machine, or a busy one that lets the target run,
//! adds nothing. Where the kernel does not say (no `/proc`, a target the harness did not
//! start), the calm grace is stretched by the CPU pressure instead.

use super::ledger::CancelMark;
use super::{Engine, Side};
use crate::transport::Transport;
use std::time::Duration;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// How long the target's processes have waited for a CPU so far, summed over their
    /// threads; `None` where the kernel does not say.
    ///
    /// The harness's own waits are left out on purpose: a harness that sleeps until a deadline
    /// waits for a CPU when it wakes, and counting that would move the deadline by its own
    /// wake-up, again and again. An idle target (blocked on its input) waits for nothing, so
    /// the grace stops growing as soon as the target has done what it had to.
    pub(crate) fn waited(&self) -> Option<Duration> {
        self.clock.target_waits(|| self.io.process_group())
    }

    /// How long the target has waited for a CPU since a reading `before`;
    /// `None` when either is unknown.
    pub(crate) fn lost_since(&self, before: Option<Duration>) -> Option<Duration> {
        Some(self.waited()?.saturating_sub(before?))
    }

    /// The grace a message may still take after the proof whose wait reading is `before`: the
    /// calm grace and the time lost to load since, or, where that is unknown, the calm grace
    /// stretched by the machine's CPU pressure.
    pub(crate) fn grace_after(&self, before: Option<Duration>) -> Duration {
        match self.lost_since(before) {
            Some(lost) => self.calm_grace() + lost,
            None => self.clock.stretched(self.calm_grace()),
        }
    }

    /// By when the target had certainly read a cancel, as far as is known now. A proof by
    /// order (a later answer on an ordered transport) is what it is; a proof by time (over
    /// HTTP, the cancel's `202` and a grace, or the closed stream and a grace) moves later by
    /// the time lost to load since.
    pub(crate) fn read_by(&self, mark: &CancelMark) -> Option<Duration> {
        let read = mark.read?;
        if mark.accepted.is_none() && mark.closed.is_none() {
            return Some(read);
        }
        Some(match self.lost_since(mark.waited) {
            Some(lost) => read + lost,
            None => read + self.clock.stretched(self.calm_grace()) - self.calm_grace(),
        })
    }
}
