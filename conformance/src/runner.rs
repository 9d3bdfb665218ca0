//! Runs many cases at once, each against its own target process, and writes what the CLI and
//! CI need from the results (dumps, the summary line, the exit code).

use crate::case::Case;
use crate::outcome::Outcome;
use crate::run::{run_case, Options, Report};
use crate::target::Launch;
use crate::transcript;
use std::path::Path;
use std::sync::{mpsc, Mutex};

/// The result of one case: a report, or why the target could not even be started.
pub type CaseResult = Result<Report, String>;

/// Runs `cases` on `jobs` worker threads, each with its own small tokio runtime. `version_of`
/// picks the protocol version to request per case. `done` is called as each case finishes, in
/// finishing order; the results come back in the order of `cases`.
pub fn execute(
    cases: &[Case],
    launch: &Launch,
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
        runtime.block_on(run_case(case, launch, &options))
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

/// The text a dump file holds: the case's header as comments, then the transcript.
pub fn dump_text(case: &Case, report: &Report) -> String {
    let mut out = format!(
        "# transcript of {} against {}\n# protocol version: {}\n# outcome: {}\n",
        case.id,
        report.target,
        report.version.as_deref().unwrap_or("none agreed"),
        report.outcome
    );
    for f in &report.findings {
        out.push_str(&format!(
            "# line {}: [{}] {}\n",
            f.line, f.requirement, f.message
        ));
    }
    out.push_str(&transcript::render(
        &report.transcript,
        &report.stderr,
        case.role == crate::case::Role::Server,
    ));
    out
}

/// Writes `DIR/<case id>.mcpt` with the actual transcript.
pub fn dump(dir: &Path, case: &Case, report: &Report) -> std::io::Result<()> {
    let path = dir.join(format!("{}.mcpt", case.id));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, dump_text(case, report))
}

/// Counts of each outcome.
#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    /// Cases that passed.
    pub pass: usize,
    /// Cases that failed (or could not run).
    pub fail: usize,
    /// Cases with a broken SHOULD.
    pub warn: usize,
    /// Info cases, recorded.
    pub info: usize,
    /// Cases that did not apply.
    pub skip: usize,
}

impl Summary {
    /// Adds up a set of results.
    pub fn of(results: &[CaseResult]) -> Summary {
        let mut s = Summary::default();
        for r in results {
            match r.as_ref().map(|r| r.outcome) {
                Ok(Outcome::Pass) => s.pass += 1,
                Ok(Outcome::Warn) => s.warn += 1,
                Ok(Outcome::Info) => s.info += 1,
                Ok(Outcome::Skip) => s.skip += 1,
                Ok(Outcome::Fail) | Err(_) => s.fail += 1,
            }
        }
        s
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} passed, {} failed, {} warned, {} info, {} skipped",
            self.pass, self.fail, self.warn, self.info, self.skip
        )
    }
}

/// One case's result as the machine-readable reports give it.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// The case id.
    pub id: String,
    /// `pass`, `fail`, `warn`, `info` or `skip`.
    pub outcome: Outcome,
    /// The case's level.
    pub level: &'static str,
    /// Requirement ids.
    pub requirements: Vec<String>,
    /// One line: the main finding, the skip reason, or the start error.
    pub message: String,
    /// The full explanation (diff, stderr), empty for a pass.
    pub details: String,
    /// Wall time.
    pub duration_ms: u64,
    /// `expected-failure` when a baseline excused it, `stale` when a baseline lists a case
    /// that passes.
    pub baseline: Option<&'static str>,
}
