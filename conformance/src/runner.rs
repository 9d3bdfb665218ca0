//! Runs many cases at once, each against its own target, on a pool of worker threads with a
//! small tokio runtime each.

use crate::case::Case;
use crate::engine::server::{run_case, Connect};
use crate::engine::Options;
use crate::report::gate::CaseResult;
use std::sync::{mpsc, Mutex};

/// Runs `cases` on `jobs` worker threads, each with its own small tokio runtime. `version_of`
/// picks the protocol version to request per case. `done` is called as each case finishes, in
/// finishing order; the results come back in the order of `cases`.
pub fn execute(
    cases: &[Case],
    connect: &Connect,
    options: &Options,
    version_of: &(dyn Fn(&Case) -> String + Sync),
    jobs: usize,
    done: &(dyn Fn(&Case, &CaseResult) + Sync),
) -> Vec<CaseResult> {
    execute_each(cases, jobs, done, &|runtime, case| {
        let options = Options {
            protocol_version: version_of(case),
            ..options.clone()
        };
        runtime.block_on(run_case(case, connect, &options))
    })
}

/// Runs `cases` on `jobs` worker threads, each with its own small tokio runtime, playing each
/// case with `play` (the server engine in [`execute`], the client engine in client mode).
pub fn execute_each(
    cases: &[Case],
    jobs: usize,
    done: &(dyn Fn(&Case, &CaseResult) + Sync),
    play: &(dyn Fn(&tokio::runtime::Runtime, &Case) -> CaseResult + Sync),
) -> Vec<CaseResult> {
    let queue = Mutex::new(0..cases.len());
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, cases.len().max(1)) {
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
                    let case = &cases[i];
                    let result = play(&runtime, case);
                    done(case, &result);
                    let _ = tx.send((i, result));
                }
            });
        }
        drop(tx);
        let mut results: Vec<Option<CaseResult>> = (0..cases.len()).map(|_| None).collect();
        for (i, result) in rx {
            results[i] = Some(result);
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err("the worker running this case stopped".into())))
            .collect()
    })
}
