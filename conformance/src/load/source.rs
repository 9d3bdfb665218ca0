//! Where the engine reads how busy things are: the machine's CPU pressure, how long the
//! target's processes have waited for a CPU, and how long the harness's own threads have. A
//! run reads the kernel ([`Load::machine`]); a test says what they are ([`LoadScript`]), so
//! that every rule that weighs a busy machine can be tested on a calm one, exactly, and a
//! loaded machine's figures can be played on a machine that is not loaded.
//!
//! The engine asks its transport for the load ([`crate::transport::Transport::load`]): a
//! transport to a real process answers with the kernel's figures, a scripted one with its
//! script's. Nothing behind the engine reads `/proc` on its own.

use super::{stretch_for, stretched, GroupWaits};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A source of load figures (see the module doc).
pub trait Source: Send + Sync {
    /// How much longer than on a calm machine things take now (1.0 when calm).
    fn stretch(&self) -> f64;

    /// A counter of how long the target's processes (process group `group`, where the harness
    /// started it) have waited for a CPU; `None` where that cannot be known.
    fn target(&self, group: Option<i32>) -> Option<Box<dyn Counter>>;

    /// A counter of how long the harness's own threads have waited for a CPU.
    fn harness(&self) -> Box<dyn Counter>;
}

/// A running figure of time spent waiting for a CPU: it only grows.
pub trait Counter: Send + Sync + std::fmt::Debug {
    /// The waits so far; `None` where they cannot be read.
    fn read(&self) -> Option<Duration>;
}

impl Counter for GroupWaits {
    fn read(&self) -> Option<Duration> {
        GroupWaits::read(self)
    }
}

/// The load figures one run reads, from one [`Source`]. Cheap to clone.
#[derive(Clone)]
pub struct Load(Arc<dyn Source>);

impl std::fmt::Debug for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Load(stretch {:.2})", self.stretch())
    }
}

impl Default for Load {
    fn default() -> Self {
        Load::machine()
    }
}

impl Load {
    /// The kernel's figures: `/proc/pressure/cpu` and the scheduler statistics in `/proc`.
    pub fn machine() -> Load {
        Load(Arc::new(Machine))
    }

    /// Figures from `source`.
    pub fn new(source: impl Source + 'static) -> Load {
        Load(Arc::new(source))
    }

    /// How much longer than on a calm machine things take now (1.0 when calm).
    pub fn stretch(&self) -> f64 {
        self.0.stretch()
    }

    /// `wait` stretched for the machine's CPU pressure now.
    pub fn stretched(&self, wait: Duration) -> Duration {
        stretched(wait, self.stretch())
    }

    /// A counter of the target's waits for a CPU (see [`Source::target`]).
    pub fn target(&self, group: Option<i32>) -> Option<Box<dyn Counter>> {
        self.0.target(group)
    }

    /// A counter of the harness's own waits for a CPU.
    pub fn harness(&self) -> Box<dyn Counter> {
        self.0.harness()
    }
}

/// The kernel's figures.
struct Machine;

impl Source for Machine {
    fn stretch(&self) -> f64 {
        super::stretch()
    }

    fn target(&self, group: Option<i32>) -> Option<Box<dyn Counter>> {
        group.map(|g| Box::new(GroupWaits::new(g)) as Box<dyn Counter>)
    }

    fn harness(&self) -> Box<dyn Counter> {
        Box::new(GroupWaits::own())
    }
}

/// A load a test writes: the machine's CPU pressure from given moments on, and the spans of
/// time during which the target's processes (or the harness's threads) were runnable but
/// waited for a CPU. Moments count from [`LoadScript::start`] on the engine's clock
/// (`crate::time::now`), which a test pauses and advances; a scripted transport
/// starts it when the target starts, so "+120 ms" means the same in the target's script and
/// in its load.
///
/// ```
/// # use conformance::load::source::LoadScript;
/// # use std::time::Duration;
/// let ms = Duration::from_millis;
/// // From +100 ms the CPU pressure is 50 % (waits stretched twice); the target waited for a
/// // CPU all through +200..+500 ms.
/// let script = LoadScript::calm().pressure(ms(100), 50.0).target_starved(ms(200), ms(500));
/// # let _ = script;
/// ```
#[derive(Debug, Clone, Default)]
pub struct LoadScript {
    timeline: Arc<Mutex<Timeline>>,
}

/// What a [`LoadScript`] says, and when it started.
#[derive(Debug, Default)]
struct Timeline {
    start: Option<Instant>,
    /// (from, stretch): the pressure's stretch from that moment on.
    pressure: Vec<(Duration, f64)>,
    /// (from, until): the target waited for a CPU all through.
    target: Vec<(Duration, Duration)>,
    /// (from, until): the harness's threads did.
    harness: Vec<(Duration, Duration)>,
    /// The kernel does not say how long the target waited (a target the harness did not start).
    target_unknown: bool,
}

impl LoadScript {
    /// A calm machine whose target never waits for a CPU (and whose waits can be read).
    pub fn calm() -> LoadScript {
        LoadScript::default()
    }

    /// From `from` on, the machine's CPU pressure is `percent` (as `/proc/pressure/cpu` says).
    pub fn pressure(self, from: Duration, percent: f64) -> LoadScript {
        self.edit(|t| {
            t.pressure.push((from, stretch_for(percent)));
            t.pressure.sort_by_key(|(at, _)| *at);
        })
    }

    /// The target's processes waited for a CPU all through `from..until`.
    pub fn target_starved(self, from: Duration, until: Duration) -> LoadScript {
        self.edit(|t| t.target.push((from, until)))
    }

    /// The harness's own threads waited for a CPU all through `from..until`.
    pub fn harness_starved(self, from: Duration, until: Duration) -> LoadScript {
        self.edit(|t| t.harness.push((from, until)))
    }

    /// The kernel does not say how long the target waited for a CPU (as for a server the
    /// harness only connects to): the rules fall back on the machine's pressure.
    pub fn target_unknown(self) -> LoadScript {
        self.edit(|t| t.target_unknown = true)
    }

    /// The moment the script's times count from (the target's start); the first call fixes it.
    pub fn start(&self, at: Instant) {
        self.edit_ref(|t| {
            t.start.get_or_insert(at);
        });
    }

    /// The figures this script gives, as the engine reads them.
    pub fn load(&self) -> Load {
        Load::new(self.clone())
    }

    fn edit(self, change: impl FnOnce(&mut Timeline)) -> LoadScript {
        self.edit_ref(change);
        self
    }

    fn edit_ref(&self, change: impl FnOnce(&mut Timeline)) {
        change(&mut self.timeline.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Time since the script started (zero before it did).
    fn elapsed(timeline: &Timeline) -> Duration {
        let now = crate::time::now();
        timeline
            .start
            .map_or(Duration::ZERO, |start| now.saturating_duration_since(start))
    }

    fn waits(&self, whose: fn(&Timeline) -> &[(Duration, Duration)]) -> Box<dyn Counter> {
        Box::new(Scripted {
            timeline: self.timeline.clone(),
            whose,
        })
    }
}

impl Source for LoadScript {
    fn stretch(&self) -> f64 {
        let timeline = self.timeline.lock().unwrap_or_else(|e| e.into_inner());
        let now = LoadScript::elapsed(&timeline);
        timeline
            .pressure
            .iter()
            .rev()
            .find(|(from, _)| *from <= now)
            .map_or(1.0, |(_, stretch)| *stretch)
    }

    fn target(&self, _group: Option<i32>) -> Option<Box<dyn Counter>> {
        let unknown = self
            .timeline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .target_unknown;
        (!unknown).then(|| self.waits(|t| &t.target))
    }

    fn harness(&self) -> Box<dyn Counter> {
        self.waits(|t| &t.harness)
    }
}

/// One of a [`LoadScript`]'s wait counters.
#[derive(Debug)]
struct Scripted {
    timeline: Arc<Mutex<Timeline>>,
    whose: fn(&Timeline) -> &[(Duration, Duration)],
}

impl Counter for Scripted {
    fn read(&self) -> Option<Duration> {
        let timeline = self.timeline.lock().unwrap_or_else(|e| e.into_inner());
        let now = LoadScript::elapsed(&timeline);
        let waited = (self.whose)(&timeline)
            .iter()
            .map(|(from, until)| now.clamp(*from, (*until).max(*from)).saturating_sub(*from))
            .sum();
        Some(waited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_script_says_the_pressure_and_the_waits_as_time_goes_on() {
        let ms = Duration::from_millis;
        let script = LoadScript::calm()
            .pressure(ms(100), 50.0)
            .target_starved(ms(200), ms(500))
            .harness_starved(ms(0), ms(50));
        script.start(crate::time::now());
        let load = script.load();
        let target = load.target(None).expect("known");
        let harness = load.harness();
        assert_eq!(load.stretch(), 1.0);
        assert_eq!(target.read(), Some(ms(0)));
        tokio::time::advance(ms(300)).await;
        assert!((load.stretch() - 2.0).abs() < 1e-9);
        assert_eq!(target.read(), Some(ms(100)));
        assert_eq!(harness.read(), Some(ms(50)));
        tokio::time::advance(ms(1000)).await;
        assert_eq!(target.read(), Some(ms(300)), "the span is over");
        assert!(LoadScript::calm()
            .target_unknown()
            .target(Some(7))
            .is_none());
    }
}
