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
//!
//! [`Waits`] is one reading of all that, for the standing rules to judge by without asking the
//! engine (or the kernel) again.

use super::{Engine, Side};
use crate::facts::waits::Waits;
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

    /// The clock read now, for a rule to judge by (see [`Waits`]).
    pub(crate) fn waits(&self) -> Waits {
        Waits {
            now: self.waited(),
            calm: self.calm_grace(),
            stretch: self.clock.stretch(),
        }
    }

    /// The clock for a rule that needs the target's waits only when `needed`: reading them
    /// scans `/proc`, so where no proof or answer makes them matter they are left unknown
    /// (by when a cancel was read needs them only for a proof by time, see
    /// [`proved_by_time`](crate::facts::waits::proved_by_time)).
    pub(crate) fn waits_if(&self, needed: bool) -> Waits {
        Waits {
            now: if needed { self.waited() } else { None },
            calm: self.calm_grace(),
            stretch: self.clock.stretch(),
        }
    }
}
