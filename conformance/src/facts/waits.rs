//! What the clock says now, read once, as data: the facts a rule that weighs timing judges
//! by (how long the target waited for a CPU, how much waits are stretched, the grace).

use super::ledger::CancelMark;
use std::time::Duration;

/// What the clock says now, read once: the facts a rule that weighs timing judges by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Waits {
    /// How long the target's processes have waited for a CPU so far; `None` where the kernel
    /// does not say.
    pub now: Option<Duration>,
    /// The grace on a calm machine (see `Engine::calm_grace`).
    pub calm: Duration,
    /// How much waits are stretched for the machine's CPU pressure (1.0 when calm).
    pub stretch: f64,
}

impl Waits {
    /// A calm machine whose target has waited `now` for a CPU (tests).
    #[cfg(test)]
    pub fn calm(calm: Duration, now: Option<Duration>) -> Waits {
        Waits {
            now,
            calm,
            stretch: 1.0,
        }
    }

    /// How long the target has waited for a CPU since a reading `before`; `None` when either
    /// is unknown.
    pub fn lost_since(&self, before: Option<Duration>) -> Option<Duration> {
        Some(self.now?.saturating_sub(before?))
    }

    /// The calm grace stretched for the machine's CPU pressure.
    fn stretched_calm(&self) -> Duration {
        crate::load::stretched(self.calm, self.stretch)
    }

    /// The grace a message may still take after the proof whose wait reading is `before`: the
    /// calm grace and the time lost to load since, or, where that is unknown, the calm grace
    /// stretched by the machine's CPU pressure.
    pub fn grace_after(&self, before: Option<Duration>) -> Duration {
        match self.lost_since(before) {
            Some(lost) => self.calm + lost,
            None => self.stretched_calm(),
        }
    }

    /// By when the target had certainly read a cancel, as far as is known now. A proof by
    /// order (a later answer on an ordered transport) is what it is; a proof by time (over
    /// HTTP, the cancel's `202` and a grace, or the closed stream and a grace) moves later by
    /// the time lost to load since.
    pub fn read_by(&self, mark: &CancelMark) -> Option<Duration> {
        let read = mark.read?;
        if !proved_by_time(mark) {
            return Some(read);
        }
        Some(match self.lost_since(mark.waited) {
            Some(lost) => read + lost,
            None => read + self.stretched_calm().saturating_sub(self.calm),
        })
    }
}

/// Whether a cancel's proof is one of time (a `202` or a closed stream, and a grace), which
/// load moves later, rather than one of order.
pub fn proved_by_time(mark: &CancelMark) -> bool {
    mark.accepted.is_some() || mark.closed.is_some()
}
