//! Runs many cases at once, each against its own target, on a pool of worker threads with a
//! small tokio runtime each; with `repeat`, every case several times (to find the cases whose
//! outcome differs from run to run).

use crate::case::Case;
use crate::engine::server::{run_case, Connect};
use crate::engine::{Options, Report};
use crate::report::gate::CaseResult;
use crate::versions::Unit;
use std::sync::{mpsc, Mutex};

/// Runs `cases` against a server target (over its transport), `repeat` times each, on `jobs` threads, each
/// at the version its unit names.
pub fn execute(
    cases: &[Case],
    units: &[Unit],
    connect: &Connect,
    options: &Options,
    plan: Plan,
    done: &(dyn Fn(&Unit, usize, &CaseResult) + Sync),
) -> Vec<Vec<CaseResult>> {
    execute_each(units, plan, done, &|runtime, unit| {
        let case = &cases[unit.case];
        if let Some(reason) = &unit.skip {
            return Ok(Report::skipped(reason.clone(), connect.display()));
        }
        let options = Options {
            protocol_version: unit.version.clone(),
            ..options.clone()
        };
        runtime.block_on(run_case(case, connect, &options))
    })
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
/// called as each run finishes (with the run's number from 0), in finishing order; the results
/// come back per item, in the order of `cases`, runs in order.
pub fn execute_each<C: Sync>(
    cases: &[C],
    plan: Plan,
    done: &(dyn Fn(&C, usize, &CaseResult) + Sync),
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
                            let _ = tx.send((i, Err(format!("cannot start a tokio runtime: {e}"))));
                        }
                        return;
                    }
                };
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some(i) = next else { break };
                    let case = &cases[i % cases.len()];
                    let result = play(&runtime, case);
                    done(case, i / cases.len(), &result);
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
            results[i % cases.len()]
                .push(slot.unwrap_or_else(|| Err("the worker running this case stopped".into())));
        }
        results
    })
}
