//! Glue for test binaries that run cases as tests (with libtest-mimic or anything else):
//! loading the cases once, the bless switch, the verdict a reference implementation must
//! earn, and ([`expect`]) what a run against a target broken on purpose must show. Every test
//! binary uses these, so they cannot drift apart or from the command line.

pub mod expect;

use crate::case::{Case, Role};
use crate::case_report::Report;
use crate::error::{BlessRefused, BrokenCases};
use crate::outcome::Outcome;
use crate::report::{self, gate};
use crate::{runner, suite};
use libtest_mimic::{Arguments, Trial};
use std::path::Path;

/// The environment variable that asks for blessing (`CONFORMANCE_BLESS=1`).
pub const BLESS_ENV: &str = "CONFORMANCE_BLESS";

/// Whether blessing was asked for in the environment; an error when it is refused (CI is
/// set: blessing there would accept whatever the target did).
pub fn bless_requested() -> Result<bool, BlessRefused> {
    let asked = std::env::var_os(BLESS_ENV).is_some_and(|v| v == "1");
    if asked && std::env::var_os("CI").is_some() {
        return Err(BlessRefused);
    }
    Ok(asked)
}

/// The cases of `role` in `dir`. A broken case is a bug: a test binary prints the error and
/// exits with status 2, as the command line does.
pub fn cases(dir: &Path, role: Role) -> Result<Vec<Case>, BrokenCases> {
    let cases = suite::from_dir(dir).map_err(BrokenCases)?;
    Ok(cases.into_iter().filter(|c| c.role == role).collect())
}

/// Judges a report of a reference implementation, which must be clean at every level: `Ok`
/// when it is (or when `bless` was asked and only expected lines differed, which are then
/// rewritten), otherwise the explanation. `next` is the advice that ends it.
pub fn expect_clean(case: &Case, report: &Report, bless: bool, next: &str) -> Result<(), NotClean> {
    if gate::clean(report) {
        return Ok(());
    }
    if bless && gate::blessable(report) {
        suite::bless(case, &report.bless).map_err(|source| NotClean::Bless {
            path: case.path.clone(),
            source,
        })?;
        eprintln!("blessed {} ({} lines)", case.path, report.bless.len());
        return Ok(());
    }
    Err(NotClean::Run {
        outcome: report.outcome,
        explanation: report::explain(case, report, next),
    })
}

/// Why a reference implementation's run is not clean (a test failure, printed as it reads).
#[derive(Debug, thiserror::Error)]
pub enum NotClean {
    /// The run was not clean: its outcome, then the report explained.
    #[error("{outcome}\n{explanation}")]
    Run {
        /// The outcome.
        outcome: Outcome,
        /// The findings, the diff and the transcript, ending with the advice.
        explanation: String,
    },
    /// Blessing was asked for, but the case file could not be rewritten.
    #[error("cannot rewrite {path}: {source}")]
    Bless {
        /// The case file.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
}

/// libtest's arguments from the command line, with [`tests_at_once`] tests at once unless
/// `--test-threads` or `RUST_TEST_THREADS` says otherwise.
pub fn test_arguments() -> Arguments {
    with_test_threads(Arguments::from_args(), tests_at_once())
}

/// How many tests a test binary that plays cases against the harness's own targets (the
/// reference pair and the broken servers, which start in milliseconds) plays at once: twice
/// what a run plays against a target dear to start ([`runner::default_jobs`]), eight per CPU
/// and at least 16. Such a test mostly waits, for a window, a limit or a start, as a case
/// does against a target cheap to start (a run then plays more still, see
/// `share::decide`). On two CPUs, 16 at once played `broken_http.rs` in 21 s where 8 took
/// 32 s, and 32 at once played `reference.rs` no faster than 16 (docs/speed.md).
pub fn tests_at_once() -> usize {
    runner::default_jobs() * 2
}

/// `args`, with `default` tests at once unless they or `RUST_TEST_THREADS` set how many.
pub fn with_test_threads(mut args: Arguments, default: usize) -> Arguments {
    if args.test_threads.is_none() {
        args.test_threads = std::env::var("RUST_TEST_THREADS")
            .ok()
            .and_then(|n| n.parse().ok())
            .or(Some(default));
    }
    args
}

/// `trial`, a replay of a row with every core kept busy ([`saturate_cpus`]), marked ignored:
/// `cargo test --workspace` plays the rows calm, and `cargo test --workspace -- --ignored`
/// plays the loaded replays (`.ci/run` plays both). The rules a busy machine tests (grace
/// grown by CPU waits, stretched limits, late arrivals) have deterministic twins that every
/// run plays (`conformance/tests/scripted/`); the replays are the end-to-end check that the
/// real processes agree, and they burn both cores for their whole length.
pub fn loaded_replay(trial: Trial) -> Trial {
    trial.with_ignored_flag(true)
}

/// Keeps every CPU busy while it lives (and other saturations live): the verdicts a test
/// checks under it must be the verdicts of a calm machine. Busy loops start with the first
/// saturation and stop when the last one is dropped.
pub struct Saturation(());

static SATURATIONS: std::sync::Mutex<usize> = std::sync::Mutex::new(0);
static SPINNING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Starts busy loops on every core (one per CPU), unless they are running already.
pub fn saturate_cpus() -> Saturation {
    use std::sync::atomic::Ordering;
    let mut count = SATURATIONS.lock().unwrap_or_else(|e| e.into_inner());
    *count += 1;
    if *count == 1 {
        SPINNING.store(true, Ordering::SeqCst);
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        for _ in 0..cpus {
            std::thread::spawn(|| {
                let mut x: u64 = 0;
                while SPINNING.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            });
        }
    }
    Saturation(())
}

impl Drop for Saturation {
    fn drop(&mut self) {
        let mut count = SATURATIONS.lock().unwrap_or_else(|e| e.into_inner());
        *count -= 1;
        if *count == 0 {
            SPINNING.store(false, std::sync::atomic::Ordering::SeqCst);
        }
    }
}
