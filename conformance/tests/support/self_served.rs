//! The one trial body of the broken-server tables (broken, broken_http, broken_tasks,
//! broken_listen). Each table's binary is also its broken server, run again with an
//! environment variable naming the mode; a row plays one case against it, calm and again with
//! a busy loop on every core (the verdict must not depend on how busy the machine is), and
//! the row's [`Expect`] judges the run.

// Each table's binary declares this module `pub mod self_served` and uses the part its
// server needs; the rest is then no dead code.

use conformance::case::{Case, Role};
use conformance::case_report::Report;
use conformance::engine::server::{run_http_server_case, run_server_case};
use conformance::engine::Options;
use conformance::era::ProtocolVersion;
use conformance::harness;
use conformance::harness::expect::{Expect, Run};
use conformance::transport::http::HttpTarget;
use conformance::transport::process::Launch;
use libtest_mimic::{Failed, Trial};
use std::path::Path;
use std::time::Duration;

/// How one row's case reaches the broken server.
pub enum Target<'a> {
    /// Started for the case, speaking stdio.
    Stdio(&'a Launch),
    /// Over Streamable HTTP, started for the case or already running.
    Http(&'a HttpTarget),
}

/// This test binary serving `mode`, told through `var`, with `args` and `env` besides.
pub fn this_binary(
    var: &str,
    mode: &str,
    args: &[&str],
    env: &[(String, String)],
) -> Result<Launch, Failed> {
    let mut argv = vec![std::env::current_exe()?.display().to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let mut vars = vec![(var.to_string(), mode.to_string())];
    vars.extend_from_slice(env);
    Ok(Launch {
        argv,
        env: vars,
        cwd: None,
    })
}

/// This test binary serving `mode` over stdio, told through `var`: how the rows played on
/// shared targets reach it.
pub fn stdio(var: &str, mode: &str) -> Result<conformance::engine::server::Connect, Failed> {
    Ok(conformance::engine::server::Connect::Stdio(this_binary(
        var,
        mode,
        &[],
        &[],
    )?))
}

/// The options the stdio tables share, at `version`; a row may ask for another version or
/// timeout ([`Expect::options`]).
pub fn options(version: &str, reply_timeout: Duration, want: &Expect) -> Options {
    want.options(Options {
        case_timeout: Duration::from_secs(12),
        reply_timeout,
        startup_timeout: Duration::from_secs(2),
        protocol_version: ProtocolVersion::parse(version).expect("a version the harness knows"),
        ..Options::default()
    })
}

/// Plays `case` against `target` with `options`, on a runtime of its own.
pub fn play(case: &Case, target: Target<'_>, options: &Options) -> Result<Report, Failed> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = match target {
        Target::Stdio(launch) => runtime.block_on(run_server_case(case, launch, options))?,
        Target::Http(target) => runtime.block_on(run_http_server_case(case, target, options))?,
    };
    Ok(report)
}

/// Judges one run of `case` by `want`, given the processes the target said it started (for
/// [`Expect::reaped`]); what did not hold names the mode.
pub fn judge(
    case: &Case,
    mode: &str,
    want: &Expect,
    report: &Report,
    pids: &[u32],
    loaded: bool,
) -> Result<(), String> {
    let run = Run {
        case,
        report,
        pids,
        loaded,
    };
    want.check(&run).map_err(|e| format!("{mode} × {e}"))
}

/// Plays `case` at `version` against this binary serving `mode` over stdio (told through
/// `var`), and judges it by `want`: the whole row of a table whose server reports no pids.
pub fn check(
    case: &Case,
    var: &str,
    mode: &str,
    version: &str,
    want: &Expect,
    loaded: bool,
) -> Result<(), Failed> {
    let launch = this_binary(var, mode, &[], &[])?;
    let options = options(version, Duration::from_millis(800), want);
    let report = play(case, Target::Stdio(&launch), &options)?;
    Ok(judge(case, mode, want, &report, &[], loaded)?)
}

/// The server cases in the repository's `cases/`; a broken case file ends the test binary.
pub fn server_cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    harness::cases(&dir, Role::Server).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    })
}

/// The server case `server/{name}`; a table naming a case that is not there is a mistake.
pub fn case(cases: &[Case], name: &str) -> Case {
    let id = format!("server/{name}");
    cases
        .iter()
        .find(|c| c.id == id)
        .cloned()
        .unwrap_or_else(|| panic!("no case {id} in the cases folder"))
}

/// A row's check: the case, the mode, what the run must show, whether every core is busy.
pub type Check = fn(&Case, &'static str, &Expect, bool) -> Result<(), Failed>;

/// Two trials a row of `table` (mode, case, what the run must show), each judged by `check`:
/// `{mode}/{case}` on a calm machine and `loaded/{mode}/{case}` with a busy loop on every
/// core, played when ignored tests are asked for ([`harness::loaded_replay`]); a row at a
/// version of its own says it (`… [2026-07-28]`).
pub fn trials(
    cases: &[Case],
    table: Vec<(&'static str, &str, Expect)>,
    check: Check,
) -> Vec<Trial> {
    let mut trials = vec![];
    for (mode, name, want) in table {
        let case = case(cases, name);
        let at = want
            .version()
            .map(|v| format!(" [{v}]"))
            .unwrap_or_default();
        let (loaded_case, loaded_want) = (case.clone(), want.clone());
        let calm = format!("{mode}/{name}{at}");
        trials.push(Trial::test(calm.clone(), move || {
            own_process_if(want.watches_memory(), &calm, || {
                check(&case, mode, &want, false)
            })
        }));
        let loaded = format!("loaded/{mode}/{name}{at}");
        let replay = Trial::test(loaded.clone(), move || {
            own_process_if(loaded_want.watches_memory(), &loaded, || {
                let _load = harness::saturate_cpus();
                check(&loaded_case, mode, &loaded_want, true)
            })
        });
        trials.push(harness::loaded_replay(replay));
    }
    trials
}

/// Set in a test process started to play one trial alone ([`own_process_if`]).
const ALONE: &str = "SELF_SERVED_ALONE";

/// Plays the trial `name` with `body`: here, or, if `alone` and this process plays other
/// trials too, in a test process of its own that plays only it. A row that bounds the peak
/// memory of the test process ([`Expect::small`]) is played so: the bound is then on its own
/// run, whatever else the table plays at once (and each thread's allocator keeps its own
/// high-water mark, so a process playing many rows at once grows with their number).
pub fn own_process_if(
    alone: bool,
    name: &str,
    body: impl FnOnce() -> Result<(), Failed>,
) -> Result<(), Failed> {
    if !alone || std::env::var_os(ALONE).is_some() {
        return body();
    }
    // `--include-ignored`: the loaded replays are ignored trials, played alone all the same.
    let output = std::process::Command::new(std::env::current_exe()?)
        .args(["--exact", name, "--include-ignored", "--test-threads", "1"])
        .args(["--color", "never"])
        .env(ALONE, "1")
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.success() && stdout.contains("test result: ok. 1 passed") {
        return Ok(());
    }
    // The trial's own failure text, without the test process's frame around it.
    let heading = format!("---- {name} ----\n");
    let said = stdout.split_once(&heading).map_or(&*stdout, |(_, rest)| {
        rest.split("\n\nfailures:").next().unwrap_or(rest)
    });
    Err(format!(
        "played in a test process of its own ({}):\n{said}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    )
    .into())
}
