//! The clock of one run: how busy the machine is, how late the harness itself woke, how long
//! it waited for the target to write, and how long the target waited for a CPU. Every grace
//! and allowance that must hold on a loaded machine is measured against these.
//!
//! The machine's CPU pressure is read at most once a second (it is an average over ten
//! seconds anyway); the target's waits for a CPU are read at most every [`FRESH`] (reading
//! them scans `/proc`). Time itself is read through [`now`]: tokio's clock, which a test can
//! pause.

use crate::load::source::{Counter, Load};
use crate::load::{self};
use std::cell::{Cell, OnceCell};
use std::time::{Duration, Instant};

pub use crate::time::{now, since};

/// How long a reading of the target's wait counters is reused.
pub const FRESH: Duration = Duration::from_millis(20);
/// How often the machine's CPU pressure is read again.
const PRESSURE_EVERY: Duration = Duration::from_secs(1);
/// A stretch at or above this is worth a note in the report.
const NOTEWORTHY: f64 = 1.5;

/// How busy things were, and when things happened, in one run.
#[derive(Debug)]
pub struct Clock {
    /// Where the figures of load come from (the kernel, or a test's script).
    load: Load,
    /// How much waits are stretched now for the machine's CPU pressure (1.0 when calm).
    stretch: f64,
    /// When the pressure was last read.
    read: Instant,
    /// The most the stretch was.
    most: f64,
    /// How late the harness itself woke up at the worst.
    lateness: Duration,
    /// How long the harness has waited in all for the target to write its events (not the
    /// time it took to read them).
    idle: Duration,
    /// When the last event from the target arrived.
    last_event: Option<Instant>,
    /// When the harness last sent a case's message.
    last_send: Instant,
    /// The target's process group's wait counters, once known.
    waits: OnceCell<Option<Box<dyn Counter>>>,
    /// The last reading of them, and when it was taken.
    cache: Cell<Option<(Instant, Option<Duration>)>>,
}

impl Default for Clock {
    /// A clock that reads the machine's load.
    fn default() -> Self {
        Clock::new(Load::machine())
    }
}

impl Clock {
    /// A clock that reads its figures of load from `load`.
    pub fn new(load: Load) -> Clock {
        let stretch = load.stretch();
        Clock {
            load,
            ..Clock::with_stretch(stretch)
        }
    }

    /// A clock that starts at this stretch (tests give it one; runs read the machine's).
    pub fn with_stretch(stretch: f64) -> Clock {
        Clock {
            load: Load::machine(),
            stretch,
            read: now(),
            most: 1.0,
            lateness: Duration::ZERO,
            idle: Duration::ZERO,
            last_event: None,
            last_send: now(),
            waits: OnceCell::new(),
            cache: Cell::new(None),
        }
    }

    /// Reads the machine's CPU pressure again, at most once a second.
    pub fn refresh(&mut self) {
        if since(self.read) >= PRESSURE_EVERY {
            self.stretch = self.load.stretch();
            self.read = now();
        }
        self.most = self.most.max(self.stretch);
    }

    /// Where the clock reads its figures of load.
    pub fn load(&self) -> &Load {
        &self.load
    }

    /// The stretch now.
    pub fn stretch(&self) -> f64 {
        self.stretch
    }

    /// `wait` stretched for the machine's CPU pressure now.
    pub fn stretched(&self, wait: Duration) -> Duration {
        load::stretched(wait, self.stretch)
    }

    /// The most waits were stretched so far (1.0 on a calm machine).
    pub fn most(&self) -> f64 {
        self.most
    }

    /// The report's note on a busy machine, when waits were stretched noticeably.
    pub fn busy_note(&self) -> Option<String> {
        (self.most >= NOTEWORTHY).then(|| {
            format!(
                "the machine was busy (CPU pressure up to {:.0} %): waits for answers were stretched up to {:.1} times",
                (1.0 - 1.0 / self.most) * 100.0,
                self.most
            )
        })
    }

    /// The harness woke `late` after a deadline.
    pub fn woke_late(&mut self, late: Duration) {
        self.lateness = self.lateness.max(late);
    }

    /// How late the harness woke at the worst.
    pub fn lateness(&self) -> Duration {
        self.lateness
    }

    /// An event came, `waited` after the harness began waiting for it.
    pub fn event(&mut self, waited: Duration) {
        self.idle += waited;
        self.last_event = Some(now());
    }

    /// How long the harness has waited for the target to write, in all.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// When the last event came.
    pub fn last_event(&self) -> Option<Instant> {
        self.last_event
    }

    /// The harness sent a case's message now.
    pub fn sent(&mut self) {
        self.last_send = now();
    }

    /// When the harness last sent a case's message.
    pub fn last_send(&self) -> Instant {
        self.last_send
    }

    /// How long the target's processes (process group `group`, asked for once) have waited
    /// for a CPU so far, summed over their threads; `None` where the kernel does not say.
    ///
    /// The harness's own waits are left out on purpose: a harness that sleeps until a
    /// deadline waits for a CPU when it wakes, and counting that would move the deadline by
    /// its own wake-up, again and again. An idle target (blocked on its input) waits for
    /// nothing, so a grace stops growing as soon as the target has done what it had to.
    pub fn target_waits(&self, group: impl FnOnce() -> Option<i32>) -> Option<Duration> {
        if let Some((at, waited)) = self.cache.get() {
            if since(at) < FRESH {
                return waited;
            }
        }
        let waited = self
            .waits
            .get_or_init(|| self.load.target(group()))
            .as_ref()
            .and_then(|waits| waits.read());
        self.cache.set(Some((now(), waited)));
        waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calm_clock_stretches_nothing_and_notes_nothing() {
        let clock = Clock::with_stretch(1.0);
        assert_eq!(
            clock.stretched(Duration::from_secs(2)),
            Duration::from_secs(2)
        );
        assert_eq!(clock.busy_note(), None);
    }

    #[test]
    fn a_busy_clock_stretches_and_says_so_once_refreshed() {
        let mut clock = Clock::with_stretch(4.0);
        assert_eq!(
            clock.stretched(Duration::from_secs(2)),
            Duration::from_secs(8)
        );
        assert_eq!(clock.busy_note(), None, "the most is taken at a refresh");
        clock.refresh();
        let note = clock.busy_note().expect("a note");
        assert!(
            note.contains("75 %") && note.contains("4.0 times"),
            "{note}"
        );
    }

    #[test]
    fn lateness_keeps_the_worst_and_idle_adds_up() {
        let mut clock = Clock::with_stretch(1.0);
        clock.woke_late(Duration::from_millis(30));
        clock.woke_late(Duration::from_millis(10));
        assert_eq!(clock.lateness(), Duration::from_millis(30));
        clock.event(Duration::from_millis(5));
        clock.event(Duration::from_millis(7));
        assert_eq!(clock.idle(), Duration::from_millis(12));
        assert!(clock.last_event().is_some());
    }

    #[test]
    fn the_target_group_is_asked_for_once_and_readings_are_reused_briefly() {
        let clock = Clock::with_stretch(1.0);
        let asked = Cell::new(0);
        let group = || {
            asked.set(asked.get() + 1);
            None
        };
        assert_eq!(clock.target_waits(group), None);
        assert_eq!(clock.target_waits(|| panic!("asked twice")), None, "cached");
        std::thread::sleep(FRESH);
        assert_eq!(
            clock.target_waits(|| panic!("asked twice")),
            None,
            "read again"
        );
        assert_eq!(asked.get(), 1);
    }
}
