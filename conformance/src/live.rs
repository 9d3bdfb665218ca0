//! What a person sees while a run lasts: one line per case that ran, in a stable order (case
//! id, then version, then run) whatever order the cases finish in, and on a terminal a live
//! count of the runs done once the run has lasted a second. Skipped cases get no line of their
//! own (the summary groups them by reason) unless `--verbose` asks for every one.

use crate::console::{paint, say};
use conformance::case::Case;
use conformance::case_report::CaseResult;
use conformance::versions::Unit;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a run lasts before the live count appears.
const QUIET_START: Duration = Duration::from_secs(1);

/// The lines of a run, printed in order as they become known.
pub struct Live<'a> {
    cases: &'a [Case],
    units: &'a [Unit],
    repeat: usize,
    /// Whether lines name their version (the run mixes versions).
    mixed: bool,
    /// Whether skipped cases get a line too.
    verbose: bool,
    /// Each unit's rank in the printing order.
    rank: Vec<usize>,
    state: Mutex<State>,
    bar: Arc<ProgressBar>,
}

#[derive(Default)]
struct State {
    /// The next position to print.
    next: usize,
    /// Lines known but not yet printed (`None`: nothing to print there).
    ready: BTreeMap<usize, Option<String>>,
}

impl<'a> Live<'a> {
    /// The lines of a run of `units` (of `cases`), each run `repeat` times.
    pub fn new(cases: &'a [Case], units: &'a [Unit], repeat: usize, verbose: bool) -> Live<'a> {
        let mut order: Vec<usize> = (0..units.len()).collect();
        order.sort_by(|&a, &b| {
            // Versions sort by their date, which their text is.
            let key = |u: usize| (&cases[units[u].case].id, &units[u].version);
            key(a).cmp(&key(b))
        });
        let mut rank = vec![0; units.len()];
        for (position, &unit) in order.iter().enumerate() {
            rank[unit] = position;
        }
        let mixed = units.iter().any(|u| u.version != units[0].version);
        let total = (units.len() * repeat.max(1)) as u64;
        let bar = Arc::new(ProgressBar::with_draw_target(
            Some(total),
            ProgressDrawTarget::hidden(),
        ));
        bar.set_style(
            ProgressStyle::with_template("{spinner} {pos}/{len} runs done ({elapsed}) {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        if std::io::stderr().is_terminal() && total > 1 {
            // The count appears once the run has lasted a moment: a fast run stays quiet.
            let shown = Arc::clone(&bar);
            std::thread::spawn(move || {
                std::thread::sleep(QUIET_START);
                if !shown.is_finished() {
                    shown.set_draw_target(ProgressDrawTarget::stderr());
                    shown.enable_steady_tick(Duration::from_millis(250));
                }
            });
        }
        Live {
            cases,
            units,
            repeat: repeat.max(1),
            mixed,
            verbose,
            rank,
            state: Mutex::new(State::default()),
            bar,
        }
    }

    /// Takes in run `run` of unit `unit`, and prints every line now due.
    pub fn done(&self, unit: usize, run: usize, result: &CaseResult) {
        let line = self.line(unit, run, result);
        let position = self.rank[unit] * self.repeat + run;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.ready.insert(position, line);
        while let Some(line) = {
            let next = state.next;
            state.ready.remove(&next)
        } {
            state.next += 1;
            if let Some(line) = line {
                self.bar.suspend(|| say(format_args!("{line}")));
            }
        }
        self.bar.inc(1);
    }

    /// The run is over: the live count goes.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn line(&self, unit: usize, run: usize, result: &CaseResult) -> Option<String> {
        let unit_ = &self.units[unit];
        let case = &self.cases[unit_.case];
        let (word, ms) = match result {
            Ok(r) => (r.outcome.as_str(), r.duration.as_millis()),
            Err(_) => ("error", 0),
        };
        if word == "skip" && !self.verbose {
            return None;
        }
        let mut tail = if self.repeat > 1 {
            format!(" run {}/{}", run + 1, self.repeat)
        } else {
            String::new()
        };
        if self.mixed {
            tail.push_str(&format!(" at {}", unit_.version));
        }
        if let Ok(report) = result {
            tail.push_str(&report.placement.mark());
            if let (true, Some(reason)) = (word == "skip", &report.skip_reason) {
                tail.push_str(&format!(": {reason}"));
            }
        }
        Some(format!(
            "{} [{:<6}] {} ({ms} ms){tail}",
            paint(word, 5),
            case.level.as_str(),
            case.id
        ))
    }
}
