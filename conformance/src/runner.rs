//! Runs many cases at once, each against its own target, on a pool of worker threads with a
//! small tokio runtime each; with `repeat`, every case several times (to find the cases whose
//! outcome differs from run to run). The cases that wait longest start first.

use crate::case::{Case, Step, StepKind};
use crate::case_report::CaseResult;
use crate::case_report::Report;
use crate::engine::server::Connect;
use crate::engine::Options;
use crate::error::StartError;
use crate::pattern::Captures;
use crate::share;
use crate::versions::Unit;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// Runs `cases` against a server target (over its transport), `repeat` times each, on `jobs` threads, each
/// at the version its unit names. With a `pool`, cases that may share a target share one of
/// its targets (see [`crate::share`]).
pub fn execute(
    cases: &[Case],
    units: &[Unit],
    connect: &Connect,
    options: &Options,
    plan: Plan,
    pool: Option<&share::Pool>,
    done: &(dyn Fn(usize, usize, &CaseResult) + Sync),
) -> Vec<Vec<CaseResult>> {
    // The cases that spend longest waiting start first, so the run does not end waiting on
    // one that started last (the results come back in the units' order all the same).
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&u| {
        let unit = &units[u];
        let waits = if unit.skip.is_some() {
            Duration::ZERO
        } else {
            scripted_wait(&cases[unit.case].steps, &Captures::new())
        };
        std::cmp::Reverse(waits)
    });
    let ordered: Vec<&Unit> = order.iter().map(|&u| &units[u]).collect();
    let results = execute_each(
        &ordered,
        plan,
        &|i, run, r| done(order[i], run, r),
        &|runtime, unit| {
            let case = &cases[unit.case];
            if let Some(reason) = &unit.skip {
                return Ok(Report::skipped(reason.clone(), connect.display()));
            }
            let options = Options {
                protocol_version: unit.version,
                ..options.clone()
            };
            runtime.block_on(share::run(case, connect, pool, &options))
        },
    );
    let mut back: Vec<Option<Vec<CaseResult>>> = (0..units.len()).map(|_| None).collect();
    for (&u, runs) in order.iter().zip(results) {
        back[u] = Some(runs);
    }
    back.into_iter().map(Option::unwrap_or_default).collect()
}

/// How long a case's own steps make it wait at least: its `! after`, `! wait` and `! silent`
/// windows and the `ms` of the calls it sends, loops counted as often as they run. Only an
/// estimate for ordering (an `! after` overlaps the call before it).
pub fn scripted_wait(steps: &[Step], captures: &Captures) -> Duration {
    let mut total = Duration::ZERO;
    for step in steps {
        total += match &step.kind {
            StepKind::After(span) | StepKind::Wait(span) => span.resolve(captures),
            StepKind::Silent { window, .. } => window.resolve(captures),
            StepKind::Send(text) => serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .and_then(|v| v.pointer("/params/arguments/ms").and_then(|ms| ms.as_u64()))
                .map_or(Duration::ZERO, Duration::from_millis),
            kind => match kind.rounds() {
                Some((inner, rounds)) => rounds
                    .iter()
                    .map(|bindings| {
                        let mut bound = captures.clone();
                        bound.extend(bindings.iter().cloned());
                        scripted_wait(inner, &bound)
                    })
                    .sum(),
                None => Duration::ZERO,
            },
        };
    }
    total
}

/// Cases at once against servers the harness starts: most of a case is waiting (for a start,
/// a window, a proof), so four per CPU keep the CPUs busy without more than a handful of
/// targets starting at once. Test binaries that play runs as tests default to it too
/// ([`crate::harness::test_arguments`]).
pub fn default_jobs() -> usize {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    (cpus * 4).max(8)
}

/// How many cases run at once, and how many times each.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Worker threads.
    pub jobs: usize,
    /// Runs of each case (at least 1).
    pub repeat: usize,
}

/// Runs each of `cases` (anything that names a run: a case, a case at a version)
/// `plan.repeat` times on `plan.jobs` worker threads, playing each run with `play`. `done` is
/// called as each run finishes, with the item's index and the run's number from 0, in
/// finishing order; the results come back per item, in the order of `cases`, runs in order.
pub fn execute_each<C: Sync>(
    cases: &[C],
    plan: Plan,
    done: &(dyn Fn(usize, usize, &CaseResult) + Sync),
    play: &(dyn Fn(&tokio::runtime::Runtime, &C) -> CaseResult + Sync),
) -> Vec<Vec<CaseResult>> {
    let repeat = plan.repeat.max(1);
    let total = cases.len() * repeat;
    // Runs interleave (case 1 run 1, case 2 run 1, …) so repeated runs of one case are spread
    // over time rather than bunched together.
    let queue = Mutex::new(0..total);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..plan.jobs.clamp(1, total.max(1)) {
            let tx = tx.clone();
            let queue = &queue;
            scope.spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let runtime = match runtime {
                    Ok(rt) => rt,
                    Err(e) => {
                        while let Some(i) = queue.lock().unwrap_or_else(|p| p.into_inner()).next() {
                            let _ = tx.send((
                                i,
                                Err(StartError::Runtime(std::io::Error::new(
                                    e.kind(),
                                    e.to_string(),
                                ))),
                            ));
                        }
                        return;
                    }
                };
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some(i) = next else { break };
                    let case = &cases[i % cases.len()];
                    let result = play(&runtime, case);
                    done(i % cases.len(), i / cases.len(), &result);
                    let _ = tx.send((i, result));
                }
            });
        }
        drop(tx);
        let mut slots: Vec<Option<CaseResult>> = (0..total).map(|_| None).collect();
        for (i, result) in rx {
            slots[i] = Some(result);
        }
        let mut results: Vec<Vec<CaseResult>> = (0..cases.len()).map(|_| vec![]).collect();
        for (i, slot) in slots.into_iter().enumerate() {
            results[i % cases.len()].push(slot.unwrap_or_else(|| Err(StartError::WorkerStopped)));
        }
        results
    })
}
