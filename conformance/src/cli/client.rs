//! `conformance client`: running the client cases against an adapter, once per transport
//! the run asks for.

use super::Prepared;
use super::{cpus, prepare, wishes};
use crate::args::{ClientArgs, RunArgs};
use crate::finish::{finish, Finished};
use crate::live::Live;
use conformance::case::{Case, Role, TransportKind};
use conformance::case_report::CaseResult;
use conformance::case_report::Report;
use conformance::engine::client::{never_reached, run_client_case, ClientTransport};
use conformance::engine::Options;
use conformance::outcome::Outcome;
use conformance::transport::process::{display_argv, Launch};
use conformance::versions::{Choice, Spoken, Unit};
use conformance::{client_versions, harness, runner};
use std::process::ExitCode;
use std::time::Duration;

pub(super) fn client(args: ClientArgs) -> ExitCode {
    let (named, transports) = transports_of(&args);
    let args = args.run;
    let (prepared, cases, relay, choice) = match setup(&args, &transports) {
        Ok(setup) => setup,
        Err(code) => return code,
    };
    let launch = Launch {
        argv: args.argv.clone(),
        env: vec![],
        cwd: None,
    };
    // Each unit sets the version it plays.
    let options = Options {
        case_timeout: args.timeout.unwrap_or(Duration::from_secs(30)),
        reply_timeout: args.reply_timeout,
        startup_timeout: args.startup_timeout,
        fixtures: None,
        ..Options::default()
    };
    let started = std::time::Instant::now();
    let mut units = client_versions::plan(&cases, &choice);
    let target = display_argv(&launch.argv);
    let play = |runtime: &tokio::runtime::Runtime, unit: &Unit| {
        let case = &cases[unit.case];
        if let Some(reason) = &unit.skip {
            return Ok(Report::skipped(reason.clone(), target.clone()));
        }
        let transport = match case.transports.first() {
            Some(TransportKind::Http) => ClientTransport::Http,
            _ => ClientTransport::Stdio {
                relay: relay.clone(),
            },
        };
        let options = Options {
            protocol_version: unit.version,
            ..options.clone()
        };
        runtime.block_on(run_client_case(case, &launch, &transport, &options))
    };
    let tried = if named {
        None
    } else {
        try_http(&cases, &mut units, &play)
    };
    let results = execute(&args, &cases, &units, tried, &play);
    let next = "read the diff and the transcript (--dump DIR keeps it, with the adapter's outcome lines); fix the client or its adapter, or rerun one case with its id as the filter";
    let spoken = Spoken::default();
    let run = Finished {
        cases: &cases,
        units: &units,
        results: &results,
        target: &target,
        name: &super::program_name(&launch.argv),
        transport: &transport_of(&cases),
        choice: &choice,
        spoken: &spoken,
        nothing_verified: nothing_verified(&choice, &results),
        started,
    };
    finish(&run, &wishes(&args, &prepared, next))
}

/// Whether the transports were named, and which: named ones are required; by default both,
/// Streamable HTTP tried once before the run relies on it (see `try_http`).
fn transports_of(args: &ClientArgs) -> (bool, Vec<TransportKind>) {
    if args.transport.is_empty() {
        return (false, vec![TransportKind::Stdio, TransportKind::Http]);
    }
    let mut kinds: Vec<TransportKind> = args
        .transport
        .iter()
        .filter_map(|t| TransportKind::parse(t))
        .collect();
    kinds.dedup();
    (true, kinds)
}

/// Checks the options and loads the cases (one per transport each applies to), the relay's
/// command and the version choice; on an error, says it and gives the exit code.
fn setup(
    args: &RunArgs,
    transports: &[TransportKind],
) -> Result<(Prepared, Vec<Case>, Vec<String>, Choice), ExitCode> {
    if args.argv.is_empty() {
        eprintln!("error: give the client adapter's command after `--`, e.g. `conformance client -- node adapter.mjs` (README: Testing a client)");
        return Err(ExitCode::from(2));
    }
    if args.bless || harness::bless_requested().unwrap_or(true) {
        eprintln!("error: client cases cannot be blessed yet; edit their `>` lines by hand, guided by --dump DIR");
        return Err(ExitCode::from(2));
    }
    let prepared = prepare(args, Role::Client)?;
    // One run of each case per transport it applies to; HTTP runs are told apart by `@http`.
    let cases: Vec<Case> = prepared
        .cases
        .iter()
        .flat_map(|case| {
            transports
                .iter()
                .filter(|t| case.transports.contains(t))
                .map(|t| per_transport(case, *t))
        })
        .collect();
    if cases.is_empty() {
        eprintln!("error: no client case applies to the transport chosen; run `conformance list` to see them");
        return Err(ExitCode::from(2));
    }
    let relay = match std::env::current_exe() {
        Ok(exe) => vec![exe.display().to_string(), "relay".into()],
        Err(e) => {
            eprintln!("error: cannot find this executable, which the client must start as its server: {e}");
            return Err(ExitCode::from(2));
        }
    };
    // Each case runs at the versions it covers that the choice names; the harness plays a
    // server of that version (see README: Testing a client).
    let choice = match args.protocol_version.as_deref().map(Choice::parse) {
        None => Choice::Auto,
        Some(Ok(choice)) => choice,
        Some(Err(e)) => {
            eprintln!("error: --protocol-version: {e}");
            return Err(ExitCode::from(2));
        }
    };
    Ok((prepared, cases, relay, choice))
}

/// Runs every unit as the plan says, with the live count; the HTTP case already run by
/// `try_http` counts as its first run.
fn execute(
    args: &RunArgs,
    cases: &[Case],
    units: &[Unit],
    tried: Option<(usize, CaseResult)>,
    play: &(dyn Fn(&tokio::runtime::Runtime, &Unit) -> CaseResult + Sync),
) -> Vec<Vec<CaseResult>> {
    let plan = runner::Plan {
        jobs: args.jobs.map_or_else(cpus, |n| n as usize),
        repeat: args.repeat as usize,
    };
    let tried = std::sync::Mutex::new(tried);
    let live = Live::new(cases, units, args.repeat as usize, args.verbose);
    let progress = |unit: usize, run: usize, result: &_| live.done(unit, run, result);
    let results = runner::execute_each(units, plan, &progress, &|runtime, unit| {
        let mut tried = tried.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, result)) = tried.take_if(|(at, _)| std::ptr::eq(&units[*at], unit)) {
            return result;
        }
        drop(tried);
        play(runtime, unit)
    });
    live.finish();
    results
}

/// An explicit version that no case could verify: every case was skipped (the client did
/// not speak it, or no case covers it).
fn nothing_verified(choice: &Choice, results: &[Vec<CaseResult>]) -> bool {
    matches!(choice, Choice::Exact(_))
        && results.iter().all(|runs| {
            runs.iter()
                .all(|r| r.as_ref().is_ok_and(|r| r.outcome == Outcome::Skip))
        })
}

/// The transports the cases ran over: one, or both (`stdio+http`).
fn transport_of(cases: &[Case]) -> String {
    let over: Vec<&str> = [TransportKind::Stdio, TransportKind::Http]
        .into_iter()
        .filter(|t| cases.iter().any(|c| c.transports.first() == Some(t)))
        .map(TransportKind::as_str)
        .collect();
    over.join("+")
}

/// A case's run over one transport: over HTTP its id gets `@http`, so reports, baselines and
/// dumps tell the two runs apart.
fn per_transport(case: &Case, transport: TransportKind) -> Case {
    let mut case = case.clone();
    if transport == TransportKind::Http {
        case.id = format!("{}@http", case.id);
    }
    case.transports = vec![transport];
    case
}

/// Why a client's HTTP cases are skipped when it never reached the harness's server over
/// Streamable HTTP in the one case tried.
const NO_HTTP: &str = "the client never connected to CONFORMANCE_SERVER_URL: it does not seem to speak Streamable HTTP (an adapter can say so with a {\"decline\": \"…\"} line; --transport http judges it there)";

/// Tries the first HTTP case alone, for a run whose transports were not named: a client that
/// never reaches the harness's server in it (it only speaks stdio) gets every HTTP case skipped
/// with one reason, instead of the same failure once per case. Otherwise the tried case's
/// result is returned, with the index of the unit it belongs to, to count as its first run.
fn try_http(
    cases: &[Case],
    units: &mut [Unit],
    play: &(dyn Fn(&tokio::runtime::Runtime, &Unit) -> CaseResult + Sync),
) -> Option<(usize, CaseResult)> {
    let over_http = |u: &Unit| cases[u.case].transports.first() == Some(&TransportKind::Http);
    let first = units
        .iter()
        .position(|u| u.skip.is_none() && over_http(u))?;
    let once = runner::Plan { jobs: 1, repeat: 1 };
    let result = runner::execute_each(&units[first..=first], once, &|_, _, _| {}, play)
        .pop()
        .and_then(|mut runs| runs.pop())?;
    if result.as_ref().is_ok_and(never_reached) {
        for unit in units.iter_mut().filter(|u| over_http(u)) {
            unit.skip.get_or_insert_with(|| NO_HTTP.to_string());
        }
        return None;
    }
    Some((first, result))
}
