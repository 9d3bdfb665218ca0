//! A case's time limit as a hard bound: however the target behaves and however busy the
//! machine is, a case ends by ten times its limit. Within that bound the limit grows for a
//! busy machine, by the longest of: the time the target's own processes waited for a CPU (they
//! were runnable and another task held the CPU) and what the machine's CPU pressure stretches
//! the limit to — both at most three times the limit — and the longest time one of the
//! harness's threads (which read, judge and answer what the target writes) waited for one, so
//! that no single wait of the case, which the same pressure stretches, outlasts the case it
//! belongs to. The longest, not the sum: many cases played at once each have a thread, and
//! their waits added up would grow many times faster than the clock.
//!
//! The pressure alone would not do: a target that spins (`yes garbage`, a flood of messages)
//! raises it itself and would earn its own extension, up to ten times the limit; hence the
//! bound of three times. The harness's own waits are the harness's business, not the target's:
//! a target that writes 60,000 messages to a harness starved of CPU is not hung, so they count
//! up to ten times. Run-queue waits do not grow while there is a CPU to spin on, nor while the
//! harness sleeps waiting for a silent target.

use crate::engine::parts::clock;
use crate::load::source::{Counter, Load};
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// The most a limit grows for a busy machine or a target's waits, as a share of the limit.
pub const MOST: f64 = 3.0;
/// The most a limit grows for the harness's own waits for a CPU, as a share of the limit.
pub const MOST_HARNESS: f64 = 9.0;

/// A time limit that started now.
pub struct Limit {
    began: Instant,
    base: Duration,
    waits: Option<Box<dyn Counter>>,
    before: Option<Duration>,
    /// The harness's own threads.
    harness: Box<dyn Counter>,
    /// Their waits when the limit started.
    harness_before: Option<Duration>,
    /// Whether the machine's CPU pressure stretches the limit (see [`Limit::start_up`]).
    pressure: bool,
    /// Where the figures of load come from.
    load: Load,
}

impl Limit {
    /// A limit of `base` from now, for a target whose processes are in group `group`, with
    /// the figures of load read from `load`.
    pub fn start(base: Duration, load: &Load, group: Option<i32>) -> Limit {
        let waits = load.target(group);
        let before = waits.as_ref().and_then(|w| w.read());
        let harness = load.harness();
        let harness_before = harness.read();
        Limit {
            began: clock::now(),
            base,
            waits,
            before,
            harness,
            harness_before,
            pressure: true,
            load: load.clone(),
        }
    }

    /// A startup allowance of `base` from now, for a target starting in group `group`. A start
    /// that is slow because the machine is busy shows in the target's own waits for a CPU (a
    /// starting interpreter is runnable, not asleep), so where they can be read the machine's
    /// pressure does not stretch the allowance: a target that sits silent and idle
    /// (`sleep 1000`) gets the allowance, not three times it, however busy the machine.
    /// Without a group to read (a server given only by URL) the pressure stands in for them.
    pub fn start_up(base: Duration, load: &Load, group: Option<i32>) -> Limit {
        let mut limit = Limit::start(base, load, group);
        limit.pressure = limit.before.is_none();
        limit
    }

    /// How much later than `base` the limit ends, as far as is known now: the longest of the
    /// target's and the harness's waits for a CPU since it started and the stretch the
    /// machine's CPU pressure asks for; at most [`MOST`] times `base` for the target's waits
    /// and the pressure, [`MOST_HARNESS`] times for the harness's.
    pub fn extension(&self) -> Duration {
        let most = self.base.mul_f64(MOST);
        let since = |now: Option<Duration>, before: Option<Duration>| {
            now.zip(before)
                .map(|(now, before)| now.saturating_sub(before))
                .unwrap_or_default()
        };
        let harness = since(self.harness.read(), self.harness_before);
        let target = since(self.waits.as_ref().and_then(|w| w.read()), self.before);
        let pressure = if self.pressure {
            self.load.stretched(self.base).saturating_sub(self.base)
        } else {
            Duration::ZERO
        };
        let harness = harness.min(self.base.mul_f64(MOST_HARNESS));
        target.max(pressure).min(most).max(harness)
    }

    /// When the limit ends, as far as is known now.
    pub fn deadline(&self) -> Deadline {
        Deadline::from_std(self.began + self.base + self.extension())
    }

    /// How long it has run.
    pub fn elapsed(&self) -> Duration {
        clock::since(self.began)
    }

    /// Runs `work` until it is done or the limit has passed (`Err` with the time it ran).
    pub async fn within<F: Future>(&self, work: F) -> Result<F::Output, Duration> {
        let work = std::pin::pin!(work);
        let mut work = work;
        loop {
            let deadline = self.deadline();
            tokio::select! {
                done = &mut work => return Ok(done),
                () = tokio::time::sleep_until(deadline) => {
                    // The waits may have grown while the work ran: look again.
                    if Deadline::now() >= self.deadline() {
                        return Err(self.elapsed());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn ends_work_that_outlasts_it_within_ten_times_the_limit() {
        let limit = Limit::start(Duration::from_millis(200), &Load::machine(), None);
        let ran = limit
            .within(tokio::time::sleep(Duration::from_secs(3600)))
            .await
            .expect_err("an hour of work ends at the limit");
        // The pressure or the harness's waits for a CPU may lengthen it, never past ten times
        // the limit (and the test's own wake-up, generously bounded).
        assert!(ran >= Duration::from_millis(200), "{ran:?}");
        assert!(
            ran < Duration::from_millis(2000) + Duration::from_secs(2),
            "{ran:?}"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lets_work_that_is_done_in_time_finish() {
        let limit = Limit::start(Duration::from_secs(5), &Load::machine(), None);
        assert_eq!(limit.within(async { 7 }).await, Ok(7));
    }

    #[test]
    fn a_start_up_allowance_is_not_stretched_by_the_pressure_where_waits_are_read() {
        // This process's own group can be read (where the kernel keeps schedstats): an idle
        // start earns nothing from the machine's pressure, only from its own waits.
        let group = crate::load::tests::own_pgid();
        let limit = Limit::start_up(Duration::from_secs(1), &Load::machine(), Some(group));
        if limit.before.is_some() {
            assert!(!limit.pressure);
        }
        // Nothing to read: the pressure stands in.
        let unread = Limit::start_up(Duration::from_secs(1), &Load::machine(), Some(i32::MAX));
        assert!(unread.pressure);
        assert!(Limit::start_up(Duration::from_secs(1), &Load::machine(), None).pressure);
    }

    #[test]
    fn no_extension_passes_nine_times_the_limit() {
        // No process is in group i32::MAX: the kernel says nothing of its waits. The
        // pressure gives at most three times; the harness's own waits at most nine.
        let limit = Limit::start(Duration::from_secs(1), &Load::machine(), Some(i32::MAX));
        assert!(limit.waits.as_ref().and_then(|w| w.read()).is_none());
        assert!(limit.extension() <= Duration::from_secs(9));
    }
}
