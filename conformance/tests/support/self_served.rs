//! Plays a case against a broken server that is this test binary itself, run again with an
//! environment variable naming the mode, and checks the verdict: the one trial body of the
//! stdio broken-server tables that serve from their own binary (broken_tasks, broken_listen).

use conformance::case::Case;
use conformance::engine::server::run_server_case;
use conformance::engine::Options;
use conformance::harness::expect::{Expect, Run};
use conformance::transport::process::Launch;
use libtest_mimic::Failed;
use std::time::Duration;

/// Plays `case` at `version` against this binary serving `mode` (told through `var`), with a
/// busy loop on every core when `loaded`, and checks what `want` expects.
pub fn check(
    case: &Case,
    var: &str,
    mode: &str,
    version: &str,
    want: &Expect,
    loaded: bool,
) -> Result<(), Failed> {
    let launch = Launch {
        argv: vec![std::env::current_exe()?.display().to_string()],
        env: vec![(var.into(), mode.into())],
        cwd: None,
    };
    let options = want.options(Options {
        case_timeout: Duration::from_secs(12),
        reply_timeout: Duration::from_millis(800),
        startup_timeout: Duration::from_secs(2),
        protocol_version: version.into(),
        ..Options::default()
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(run_server_case(case, &launch, &options))?;
    let run = Run {
        case,
        report: &report,
        pids: &[],
        loaded,
    };
    Ok(want.check(&run).map_err(|e| format!("{mode} × {e}"))?)
}
