//! How busy the machine is, so that waits are judged fairly on a loaded CI runner.
//!
//! A target that answers in 50 ms on a calm machine may need seconds when every core is busy:
//! its answer is slow, not missing. The harness reads the kernel's CPU pressure (the share of
//! time runnable tasks waited for a CPU, `/proc/pressure/cpu`, "some", averaged over 10 s) and
//! stretches its waits for answers in proportion: with 80 % pressure a task gets about a fifth
//! of the CPU it wants, so waits are five times as long (at most ten). A run on a calm machine
//! waits exactly as long as its options say. Where the pressure cannot be read, nothing is
//! stretched.
//!
//! Where one process's lateness is judged (a server that exits after its window), the machine's
//! pressure is too blunt: a server whose own timer makes it late would be excused on a busy
//! machine and blamed on a calm one. There the kernel's scheduler statistics say how long the
//! target's own threads waited for a CPU ([`GroupWaits`]); only that much lateness is
//! excused.
//!
//! The engine reads all of this through a [`source::Load`], which its transport gives it: the
//! kernel's figures for a real target, a test's script for a scripted one.

pub mod source;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most a wait is stretched.
pub const MAX_STRETCH: f64 = 10.0;

/// The CPU pressure now, in percent (some avg10), where the kernel reports it.
pub fn cpu_pressure() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    let some = text.lines().find(|l| l.starts_with("some"))?;
    some.split_whitespace()
        .find_map(|field| field.strip_prefix("avg10="))?
        .parse()
        .ok()
}

/// How much longer than on a calm machine things take now: 1.0 when calm.
pub fn stretch() -> f64 {
    match cpu_pressure() {
        Some(pressure) => stretch_for(pressure),
        None => 1.0,
    }
}

/// The stretch for a pressure in percent.
pub fn stretch_for(pressure: f64) -> f64 {
    let waiting = (pressure / 100.0).clamp(0.0, 0.99);
    (1.0 / (1.0 - waiting)).clamp(1.0, MAX_STRETCH)
}

/// A wait stretched by `factor`.
pub fn stretched(wait: Duration, factor: f64) -> Duration {
    wait.mul_f64(factor.max(1.0))
}

/// How long each thread of each process in process group `pgid` has waited on a run queue for
/// a CPU since it started (the second field of `/proc/PID/task/TID/schedstat`), by thread id;
/// `None` where the kernel does not say.
fn task_waits(pgid: i32) -> Option<HashMap<u32, ThreadReading>> {
    if pgid <= 0 {
        return None;
    }
    let mut waits = HashMap::new();
    let mut seen = false;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The fields after the command (which may hold spaces): state, ppid, pgrp, …
        let group = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|g| g.parse::<i32>().ok());
        if group != Some(pgid) {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Some(tid) = task
                .file_name()
                .to_str()
                .and_then(|t| t.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(reading) = ThreadReading::read(&task.path()) {
                waits.insert(tid, reading);
                seen = true;
            }
        }
    }
    seen.then_some(waits)
}

/// The same figures for the threads of this process (the harness itself).
fn own_task_waits() -> Option<HashMap<u32, ThreadReading>> {
    let mut waits = HashMap::new();
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(reading) = ThreadReading::read(&task.path()) {
            waits.insert(tid, reading);
        }
    }
    (!waits.is_empty()).then_some(waits)
}

/// How long the threads of process group `pgid` have waited for a CPU, read again and again:
/// every reading adds what each thread waited since the one before, so the figure only grows.
/// A plain sum over the threads that exist would drop whenever a thread exits (its counters
/// leave `/proc` with it): a server with a thread per request would lose the waits of every
/// request it has answered, and a grace measured as a difference of two sums would come out
/// short exactly when the machine is busiest. A thread first seen adds all it has waited
/// (that errs on the side of the target); the waits of a thread between its last reading and
/// its exit are not seen.
///
/// The kernel adds a wait to a thread's counter only when the thread gets its CPU, so a thread
/// that is waiting right now shows none of that wait yet: a server thread starved for 300 ms
/// would look as if it had not waited at all until it ran. A thread seen runnable at two
/// readings that has not run between them (its CPU time unchanged) waited all that time; that
/// is counted at once, and taken off what its counter adds when it runs.
///
/// For this process's own threads the figure is the longest any one thread waited since the
/// first reading, not the sum: a case makes progress on one thread at a time, so that is
/// the most its work was held up, and a sum would grow with the number of threads (a test
/// process plays many cases at once, each on a thread of its own) far faster than time.
#[derive(Debug)]
pub struct GroupWaits {
    /// The process group, or 0 for this process's own threads.
    pgid: i32,
    state: Mutex<Tally>,
}

/// What a [`GroupWaits`] has read so far.
#[derive(Debug, Default)]
struct Tally {
    /// Each thread's last reading.
    last: HashMap<u32, Seen>,
    /// What each thread waited since the first reading (own threads only).
    each: HashMap<u32, u64>,
    /// The total so far.
    total: u64,
    /// Whether anything was read yet.
    started: bool,
}

/// What `/proc` says of one thread at one moment.
#[derive(Debug, Clone, Copy)]
struct ThreadReading {
    /// The CPU time it has run, in ns.
    ran: u64,
    /// The time it has waited for a CPU, in ns (as far as the kernel has added it).
    waited: u64,
    /// Whether it is runnable (state `R`: running or waiting for a CPU).
    runnable: bool,
    /// When it was read.
    at: Instant,
}

impl ThreadReading {
    /// Reads the thread whose `/proc/…/task/TID` folder is `dir`.
    fn read(dir: &std::path::Path) -> Option<ThreadReading> {
        let schedstat = std::fs::read_to_string(dir.join("schedstat")).ok()?;
        let mut fields = schedstat.split_whitespace();
        let ran = fields.next()?.parse().ok()?;
        let waited = fields.next()?.parse().ok()?;
        let runnable = std::fs::read_to_string(dir.join("stat"))
            .ok()
            .and_then(|stat| {
                let state = stat
                    .rsplit_once(')')?
                    .1
                    .split_whitespace()
                    .next()?
                    .to_string();
                Some(state == "R")
            })
            .unwrap_or(false);
        Some(ThreadReading {
            ran,
            waited,
            runnable,
            at: Instant::now(),
        })
    }
}

/// A thread's last reading and the wait already counted for it that its counter does not
/// show yet.
#[derive(Debug, Clone, Copy)]
struct Seen {
    reading: ThreadReading,
    ahead: u64,
}

/// Two readings closer than this say nothing of a wait in progress: a running thread's CPU
/// time is brought up to date at the scheduler's tick, so between close readings it may look
/// as if it had not run.
const WAIT_IN_PROGRESS_MIN: Duration = Duration::from_millis(20);

/// What a thread waited between its reading `before` and `now`, and what to keep of it for
/// the next reading.
fn waited_between(before: Option<Seen>, now: ThreadReading) -> (u64, Seen) {
    let fresh = |counted| {
        (
            counted,
            Seen {
                reading: now,
                ahead: 0,
            },
        )
    };
    let Some(Seen { reading, ahead }) = before else {
        // A thread first seen adds all it has waited.
        return fresh(now.waited);
    };
    if now.waited < reading.waited {
        // A thread id the kernel gave again to a new thread counts from zero.
        return fresh(now.waited);
    }
    let added = now.waited - reading.waited;
    let counted = added.saturating_sub(ahead);
    let ahead = ahead.saturating_sub(added);
    let waiting = reading.runnable && now.runnable && now.ran == reading.ran && added == 0;
    if !waiting {
        return (
            counted,
            Seen {
                reading: now,
                ahead,
            },
        );
    }
    let apart = now.at.saturating_duration_since(reading.at);
    if apart < WAIT_IN_PROGRESS_MIN {
        // Too close to tell: the earlier reading stays the mark to measure from.
        return (counted, Seen { reading, ahead });
    }
    let waiting = u64::try_from(apart.as_nanos()).unwrap_or(u64::MAX);
    (
        counted + waiting,
        Seen {
            reading: now,
            ahead: ahead + waiting,
        },
    )
}

impl GroupWaits {
    /// A tracker of process group `pgid` (nothing is read yet).
    pub fn new(pgid: i32) -> GroupWaits {
        GroupWaits {
            pgid,
            state: Mutex::new(Tally::default()),
        }
    }

    /// A tracker of this process's own threads: how long the harness itself waited.
    pub fn own() -> GroupWaits {
        GroupWaits::new(0)
    }

    /// The waits so far; `None` where the kernel does not say.
    pub fn read(&self) -> Option<Duration> {
        let now = if self.pgid == 0 {
            own_task_waits()?
        } else {
            task_waits(self.pgid)?
        };
        let own = self.pgid == 0;
        let mut tally = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let first = !std::mem::replace(&mut tally.started, true);
        let mut seen = HashMap::with_capacity(now.len());
        for (tid, reading) in now {
            let (counted, kept) = waited_between(tally.last.get(&tid).copied(), reading);
            seen.insert(tid, kept);
            if own {
                // Own threads count from the first reading: what each waited before is not
                // this tracker's.
                *tally.each.entry(tid).or_default() += if first { 0 } else { counted };
            } else {
                tally.total += counted;
            }
        }
        tally.last = seen;
        let figure = if own {
            tally.each.values().copied().max().unwrap_or(0)
        } else {
            tally.total
        };
        Some(Duration::from_nanos(figure))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn calm_is_one_and_busy_is_bounded() {
        assert_eq!(stretch_for(0.0), 1.0);
        assert!((stretch_for(50.0) - 2.0).abs() < 1e-9);
        assert!((stretch_for(80.0) - 5.0).abs() < 1e-9);
        assert_eq!(stretch_for(100.0), MAX_STRETCH);
        assert_eq!(
            stretched(Duration::from_secs(2), 2.5),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn a_busy_group_has_waited_for_a_cpu() {
        // This test's own process group: its threads exist, so the kernel reports a figure.
        let pgid = own_pgid();
        if std::path::Path::new("/proc/self/schedstat").exists() {
            assert!(GroupWaits::new(pgid).read().is_some());
        }
        assert_eq!(GroupWaits::new(-1).read(), None);
        if std::path::Path::new("/proc/self/task").exists() {
            assert!(GroupWaits::own().read().is_some());
        }
    }

    #[test]
    fn threads_that_exit_keep_their_waits() {
        let pgid = own_pgid();
        let waits = GroupWaits::new(pgid);
        let Some(before) = waits.read() else { return };
        // Twice as many spinning threads as CPUs must wait for one, and then they exit.
        let spinners = 2 * std::thread::available_parallelism().map_or(2, |n| n.get());
        let handles: Vec<_> = (0..spinners)
            .map(|_| {
                std::thread::spawn(|| {
                    let until = std::time::Instant::now() + Duration::from_millis(60);
                    // Read the counters while they exist, as the engine does during a wait.
                    while std::time::Instant::now() < until {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(40));
        let during = waits.read().expect("the kernel said before");
        for handle in handles {
            handle.join().unwrap();
        }
        let after = waits.read().expect("the kernel said before");
        assert!(
            during > before,
            "{spinners} spinning threads waited for a CPU"
        );
        assert!(
            after >= during,
            "exited threads took their waits with them: {during:?} then {after:?}"
        );
    }

    fn reading(ran: u64, waited: u64, runnable: bool, at: Instant) -> ThreadReading {
        ThreadReading {
            ran,
            waited,
            runnable,
            at,
        }
    }

    #[test]
    fn a_wait_in_progress_counts_at_once_and_not_twice_when_the_kernel_adds_it() {
        let t0 = Instant::now();
        let ms = |n| Duration::from_millis(n);
        let first = waited_between(None, reading(10, 5, true, t0));
        assert_eq!(first.0, 5, "a new thread adds all it waited");
        // Runnable at both readings, 300 ms apart, and it did not run: it waited all along.
        let (counted, kept) = waited_between(Some(first.1), reading(10, 5, true, t0 + ms(300)));
        assert_eq!(counted, 300_000_000);
        assert_eq!(kept.ahead, 300_000_000);
        // It ran at last: the kernel adds its 320 ms wait, 300 of which were counted already.
        let (counted, kept) = waited_between(
            Some(kept),
            reading(50, 5 + 320_000_000, false, t0 + ms(330)),
        );
        assert_eq!(counted, 20_000_000);
        assert_eq!(kept.ahead, 0);
    }

    #[test]
    fn no_wait_in_progress_for_a_thread_that_ran_slept_or_was_read_too_soon() {
        let t0 = Instant::now();
        let ms = |n| Duration::from_millis(n);
        let seen = |r| Seen {
            reading: r,
            ahead: 0,
        };
        // It ran between the readings.
        let ran = waited_between(
            Some(seen(reading(10, 5, true, t0))),
            reading(11, 5, true, t0 + ms(300)),
        );
        assert_eq!(ran.0, 0);
        // It was asleep at one of them.
        let slept = waited_between(
            Some(seen(reading(10, 5, false, t0))),
            reading(10, 5, true, t0 + ms(300)),
        );
        assert_eq!(slept.0, 0);
        // Too close: nothing yet, and the earlier reading stays the mark.
        let close = waited_between(
            Some(seen(reading(10, 5, true, t0))),
            reading(10, 5, true, t0 + ms(5)),
        );
        assert_eq!(close.0, 0);
        assert_eq!(close.1.reading.at, t0);
        let later = waited_between(Some(close.1), reading(10, 5, true, t0 + ms(40)));
        assert_eq!(
            later.0, 40_000_000,
            "measured from the first of the close readings"
        );
    }

    /// The process group these tests run in.
    pub(crate) fn own_pgid() -> i32 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|g| g.parse().ok())
            .unwrap_or(0)
    }
}
