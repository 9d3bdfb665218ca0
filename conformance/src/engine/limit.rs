//! A case's time limit as a hard bound that a busy machine may lengthen, but the target may
//! not: the deadline moves later only by the time the case waited for a CPU (it was runnable
//! and another task held the CPU) — the target's own processes, or the harness thread playing
//! the case, whichever waited longer — and at most by the limit itself.
//!
//! The machine's CPU pressure is no measure here: a target that spins (`yes garbage`, a flood
//! of messages) raises the pressure itself and would earn its own extension, up to ten times
//! the limit. Run-queue waits do not grow while there is a CPU to spin on, and when many
//! targets fight over the CPUs each case gets at most four times its limit. Where the kernel
//! says nothing of the target (a server the harness did not start), the pressure stretches the
//! limit at most twofold, since the target may be what makes the machine busy.

use crate::load::{self, GroupWaits};
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// The most a limit grows for the time the case waited for a CPU, as a share of the limit.
pub const MOST: f64 = 3.0;

/// The most the machine's pressure stretches a limit, where that is all there is to go by.
pub const MOST_STRETCH: f64 = 2.0;

/// A time limit that started now.
pub struct Limit {
    began: Instant,
    base: Duration,
    waits: Option<GroupWaits>,
    before: Option<Duration>,
    /// The harness's own threads.
    harness: GroupWaits,
    /// Their waits when the limit started.
    harness_before: Option<Duration>,
}

impl Limit {
    /// A limit of `base` from now, for a target whose processes are in group `group`.
    pub fn start(base: Duration, group: Option<i32>) -> Limit {
        let waits = group.map(GroupWaits::new);
        let before = waits.as_ref().and_then(GroupWaits::read);
        let harness = GroupWaits::own();
        let harness_before = harness.read();
        Limit {
            began: Instant::now(),
            base,
            waits,
            before,
            harness,
            harness_before,
        }
    }

    /// How much later than `base` the limit ends, as far as is known now: the longer of the
    /// target's and the harness's waits for a CPU since it started, or, for a target
    /// whose processes the kernel says nothing about, the machine's pressure (at most
    /// [`MOST_STRETCH`]); at most [`MOST`] times `base`.
    pub fn extension(&self) -> Duration {
        let most = self.base.mul_f64(MOST);
        let since = |now: Option<Duration>, before: Option<Duration>| {
            now.zip(before)
                .map(|(now, before)| now.saturating_sub(before))
        };
        let harness = since(self.harness.read(), self.harness_before).unwrap_or_default();
        let target = since(self.waits.as_ref().and_then(GroupWaits::read), self.before);
        let waited = target.unwrap_or_else(|| {
            load::stretched(self.base, load::stretch().min(MOST_STRETCH)) - self.base
        });
        waited.max(harness).min(most)
    }

    /// When the limit ends, as far as is known now.
    pub fn deadline(&self) -> Deadline {
        Deadline::from_std(self.began + self.base + self.extension())
    }

    /// How long it has run.
    pub fn elapsed(&self) -> Duration {
        self.began.elapsed()
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
    async fn ends_work_that_outlasts_it_within_four_times_the_limit() {
        let limit = Limit::start(Duration::from_millis(200), None);
        let ran = limit
            .within(tokio::time::sleep(Duration::from_secs(3600)))
            .await
            .expect_err("an hour of work ends at the limit");
        // The pressure or this thread's waits for a CPU may lengthen it, never past four
        // times the limit (and the test's own wake-up, generously bounded).
        assert!(ran >= Duration::from_millis(200), "{ran:?}");
        assert!(
            ran < Duration::from_millis(800) + Duration::from_secs(2),
            "{ran:?}"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lets_work_that_is_done_in_time_finish() {
        let limit = Limit::start(Duration::from_secs(5), None);
        assert_eq!(limit.within(async { 7 }).await, Ok(7));
    }

    #[test]
    fn a_group_of_no_process_extends_by_the_pressure_alone() {
        // No process is in group i32::MAX: the kernel says nothing of its waits.
        let limit = Limit::start(Duration::from_secs(1), Some(i32::MAX));
        assert!(limit.waits.as_ref().and_then(GroupWaits::read).is_none());
        assert!(limit.extension() <= Duration::from_secs(1));
    }
}
