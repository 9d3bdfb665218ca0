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

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

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
fn task_waits(pgid: i32) -> Option<HashMap<u32, u64>> {
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
            let waited = std::fs::read_to_string(task.path().join("schedstat"))
                .ok()
                .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok());
            if let Some(ns) = waited {
                waits.insert(tid, ns);
                seen = true;
            }
        }
    }
    seen.then_some(waits)
}

/// The same figures for the threads of this process (the harness itself).
fn own_task_waits() -> Option<HashMap<u32, u64>> {
    let mut waits = HashMap::new();
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok())
        else {
            continue;
        };
        let waited = std::fs::read_to_string(task.path().join("schedstat"))
            .ok()
            .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok());
        if let Some(ns) = waited {
            waits.insert(tid, ns);
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
#[derive(Debug)]
pub struct GroupWaits {
    /// The process group, or 0 for this process's own threads.
    pgid: i32,
    /// Each thread's counter at the last reading, and the total so far.
    state: Mutex<(HashMap<u32, u64>, u64)>,
}

impl GroupWaits {
    /// A tracker of process group `pgid` (nothing is read yet).
    pub fn new(pgid: i32) -> GroupWaits {
        GroupWaits {
            pgid,
            state: Mutex::new((HashMap::new(), 0)),
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
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (last, total) = &mut *state;
        for (tid, ns) in &now {
            *total += match last.get(tid) {
                // A thread id the kernel gave again to a new thread counts from zero.
                Some(before) if ns >= before => ns - before,
                _ => *ns,
            };
        }
        *last = now;
        Some(Duration::from_nanos(*total))
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

    /// The process group these tests run in.
    pub(crate) fn own_pgid() -> i32 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|g| g.parse().ok())
            .unwrap_or(0)
    }
}
