//! Whether a run's cases share targets, decided from what a start of the target costs. Sharing
//! pays for a start once for many cases, but over stdio the cases take turns on a process's
//! one session, and a case that does not pass there is run again alone. Against a target that
//! starts in milliseconds that buys nothing: every case runs at once on a process of its own.
//! Against an interpreter whose start costs a second of CPU, the starts are most of the run,
//! and the cases share. The version probe measures the cost ([`crate::versions::Spoken`]).

use std::time::Duration;

/// A start of the target at or under this (from spawn to the answer of the probe's opening)
/// is cheap: the cases do not share. Measured on the 2-core development machine
/// (`docs/speed.md`): the reference server (a debug build) starts in 4 to 50 ms, up to 75 ms
/// with the machine loaded by other work, rmcp in 12 to 84 ms, the TypeScript SDK in 1.1 s or
/// more and the Python SDK in 1.5 s or more. Against the reference made dearer to start by a
/// CPU loop, isolation beat sharing at a start of 48 ms of CPU (probe: 35 to 49 ms; the
/// suite's wall time 0.87 times the shared run's) and lost a little at 76 ms (probe: 66 to
/// 152 ms; 1.07 times): the line between them is about here.
pub const CHEAP_START: Duration = Duration::from_millis(100);

/// What the command line says of sharing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// Nothing: the cost of a start decides.
    Measure,
    /// `--isolate`: every case on a target of its own.
    Isolate,
    /// `--share`: the cases that may share do.
    Share,
}

/// How a run places its cases, and why, for the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placing {
    /// Whether the cases that may share a target do.
    pub share: bool,
    /// Whether a start was measured cheap: then a case is mostly waiting, whether it shares
    /// or not, and many more run at once ([`Placing::jobs`]).
    pub cheap: bool,
    /// Why, in a few words.
    pub why: String,
}

/// How a run places its cases: as asked, else by what a start of the target cost the probe
/// (`None`: no probe's opening was answered, so sharing stays on, as it costs a case nothing
/// it would not cost alone).
pub fn decide(asked: Asked, start: Option<Duration>) -> Placing {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let cheap = start.is_some_and(|s| s <= CHEAP_START);
    let (share, why) = match (asked, start) {
        (Asked::Isolate, _) => (false, "--isolate".to_string()),
        (Asked::Share, _) => (true, "--share".to_string()),
        (Asked::Measure, None) => (true, "no start was measured".to_string()),
        (Asked::Measure, Some(start)) if start <= CHEAP_START => (
            false,
            format!(
                "a start takes {:.0} ms, at most {:.0} ms",
                ms(start),
                ms(CHEAP_START)
            ),
        ),
        (Asked::Measure, Some(start)) => (
            true,
            format!(
                "a start takes {:.0} ms, over {:.0} ms",
                ms(start),
                ms(CHEAP_START)
            ),
        ),
    };
    Placing { share, cheap, why }
}

/// Cases at once per CPU against a target cheap to start: a case then costs the CPUs little
/// more than the harness's own work, and the run's bound is its longest case, not the sum of
/// its cases over the workers.
const CHEAP_JOBS_PER_CPU: usize = 16;

impl Placing {
    /// How many cases run at once unless `--jobs` says: `default` ([`crate::runner::default_jobs`]),
    /// or against a target cheap to start, [`CHEAP_JOBS_PER_CPU`] per CPU.
    pub fn jobs(&self, default: usize) -> usize {
        if !self.cheap {
            return default;
        }
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        default.max(cpus * CHEAP_JOBS_PER_CPU)
    }

    /// One line for the console: what was decided and why.
    pub fn line(&self) -> String {
        let what = if self.share {
            "cases share targets"
        } else {
            "every case on a target of its own"
        };
        format!("placement: {what} ({})", self.why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cheap_start_isolates_and_a_dear_one_shares() {
        let ms = Duration::from_millis;
        let measured = |start| decide(Asked::Measure, Some(start));
        assert!(!measured(ms(2)).share);
        assert!(!measured(CHEAP_START).share);
        assert!(measured(CHEAP_START + ms(1)).share);
        assert!(measured(ms(1300)).share);
        assert_eq!(
            measured(ms(2)).line(),
            "placement: every case on a target of its own (a start takes 2 ms, at most 100 ms)"
        );
        assert_eq!(
            measured(ms(1300)).line(),
            "placement: cases share targets (a start takes 1300 ms, over 100 ms)"
        );
    }

    #[test]
    fn the_command_line_overrides_the_measure_and_no_measure_shares() {
        let cheap = Some(Duration::from_millis(1));
        let dear = Some(Duration::from_secs(2));
        assert!(!decide(Asked::Isolate, dear).share);
        assert!(decide(Asked::Share, cheap).share);
        assert_eq!(decide(Asked::Isolate, cheap).why, "--isolate");
        assert!(decide(Asked::Measure, None).share);
    }
}
