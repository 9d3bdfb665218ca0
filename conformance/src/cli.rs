//! What the command line offers and how results become output and an exit code.

use crate::args::{Args, ClientArgs, Command, RunArgs, ServerArgs};
use crate::console::say;
use crate::finish::{finish, Finished, Wishes};
use conformance::baseline::Baseline;
use conformance::case::{Case, CaseError, Role, TransportKind};
use conformance::engine::client::{run_client_case, ClientTransport};
use conformance::engine::server::Connect;
use conformance::engine::{Options, Report};
use conformance::era::HANDSHAKE_VERSIONS;
use conformance::fixtures::Fixtures;
use conformance::outcome::Outcome;
use conformance::report::gate::CaseResult;
use conformance::transport::http::{Http, HttpTarget, PORT};
use conformance::transport::process::{display_argv, Launch};
use conformance::transport::reap;
use conformance::transport::stdio::Stdio;
use conformance::versions::{self, Choice, Spoken, Unit};
use conformance::{client_versions, harness, runner, suite, target_file};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Runs the command.
pub fn main(args: Args) -> ExitCode {
    match args.command {
        #[cfg(feature = "bundled-reference")]
        Command::ReferenceServer { .. } => reference_server::main_entry(),
        Command::List { cases, filter } => {
            match load(cases.as_ref(), filter.as_deref().unwrap_or("")) {
                Ok(cases) => {
                    for case in cases {
                        say(format_args!(
                            "{:<44} {:<6} {:<28} {}",
                            case.id,
                            case.level.as_str(),
                            case.requirements.join(" "),
                            case.intent
                        ));
                    }
                    ExitCode::SUCCESS
                }
                Err(code) => code,
            }
        }
        Command::Server(args) => {
            crate::interrupt::guard();
            let code = server(args);
            reap::kill_everything();
            crate::interrupt::hold_if_interrupted();
            code
        }
        Command::Client(args) => {
            crate::interrupt::guard();
            let code = client(args);
            reap::kill_everything();
            crate::interrupt::hold_if_interrupted();
            code
        }
        Command::Relay { addr } => {
            ExitCode::from(u8::try_from(conformance::transport::relay::run(&addr)).unwrap_or(1))
        }
    }
}

fn load(dir: Option<&PathBuf>, filter: &str) -> Result<Vec<Case>, ExitCode> {
    let loaded = match dir {
        Some(dir) => suite::from_dir(dir),
        None => suite::embedded(),
    };
    match loaded {
        Ok(cases) => {
            let cases = suite::select(cases, filter);
            if cases.is_empty() {
                eprintln!(
                    "error: no case id contains `{filter}`; run `conformance list` to see them"
                );
                return Err(ExitCode::from(2));
            }
            Ok(cases)
        }
        Err(errors) => {
            report_case_errors(&errors);
            Err(ExitCode::from(2))
        }
    }
}

fn report_case_errors(errors: &[CaseError]) {
    for e in errors {
        eprintln!("error: bug in case: {e}");
    }
    eprintln!(
        "{} case file(s) could not be read; fix them and run again",
        errors.len()
    );
}

/// Everything a run needs before it starts, whichever side the harness plays.
struct Prepared {
    cases: Vec<Case>,
    baseline: Option<Baseline>,
    bless: bool,
}

/// Checks the options, loads the role's cases and the baseline.
fn prepare(args: &RunArgs, role: Role) -> Result<Prepared, ExitCode> {
    let bless = match harness::bless_requested() {
        Ok(from_env) => args.bless || from_env,
        Err(e) => {
            eprintln!("error: {e}");
            return Err(ExitCode::from(2));
        }
    };
    if bless && std::env::var_os("CI").is_some() {
        eprintln!("error: blessing is refused when CI is set: it would accept whatever the target did; bless locally and commit the diff");
        return Err(ExitCode::from(2));
    }
    if bless && args.cases.is_none() {
        eprintln!("error: --bless rewrites case files, so it needs --cases DIR (the embedded cases cannot be rewritten)");
        return Err(ExitCode::from(2));
    }
    let cases: Vec<Case> = load(args.cases.as_ref(), args.filter.as_deref().unwrap_or(""))?
        .into_iter()
        .filter(|c| c.role == role)
        .collect();
    if cases.is_empty() {
        let side = if role == Role::Server {
            "server"
        } else {
            "client"
        };
        eprintln!("error: no {side} case matches; run `conformance list` to see them");
        return Err(ExitCode::from(2));
    }
    let baseline = match &args.baseline {
        Some(path) => Some(Baseline::load(path).map_err(|e| {
            eprintln!("error: {e}; create it with --write-baseline");
            ExitCode::from(2)
        })?),
        None => None,
    };
    Ok(Prepared {
        cases,
        baseline,
        bless,
    })
}

fn wishes<'a>(args: &'a RunArgs, prepared: &'a Prepared, next: &'a str) -> Wishes<'a> {
    Wishes {
        strict: args.strict,
        bless: prepared.bless,
        dump: args.dump.as_ref(),
        baseline: prepared.baseline.as_ref(),
        write_baseline: args.write_baseline.as_ref(),
        json: args.json.as_ref(),
        junit: args.junit.as_ref(),
        next,
    }
}

/// Prints each run's outcome as it finishes (with its version when a run mixes versions).
fn progress_line(
    cases: &[Case],
    repeat: u32,
    mixed: bool,
) -> impl Fn(&Unit, usize, &CaseResult) + Sync + '_ {
    move |unit, run, result| {
        let case = &cases[unit.case];
        let (word, ms) = match result {
            Ok(r) => (r.outcome.as_str(), r.duration.as_millis()),
            Err(_) => ("error", 0),
        };
        let mut run = if repeat > 1 {
            format!(" run {}/{repeat}", run + 1)
        } else {
            String::new()
        };
        if mixed {
            run.push_str(&format!(" at {}", unit.version));
        }
        say(format_args!(
            "{word:<5} [{:<6}] {} ({ms} ms){run}",
            case.level.as_str(),
            case.id
        ));
    }
}

/// Cases at once against servers the harness starts: most of a case is waiting (for a start,
/// a window, a proof), so four per CPU keep the CPUs busy without more than a handful of
/// targets starting at once.
fn default_jobs() -> usize {
    (cpus() * 4).max(8)
}

fn cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

fn server(args: ServerArgs) -> ExitCode {
    let prepared = match prepare(&args.run, Role::Server) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (connect, fixtures, file_version) = match target(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let asked = args
        .run
        .protocol_version
        .clone()
        .or(file_version)
        .unwrap_or_else(|| "auto".into());
    let choice = match Choice::parse(&asked) {
        Ok(choice) => choice,
        Err(e) => {
            eprintln!("error: --protocol-version: {e}");
            return ExitCode::from(2);
        }
    };
    let options = Options {
        protocol_version: String::new(),
        case_timeout: args.run.timeout.unwrap_or(Duration::from_secs(10)),
        reply_timeout: args.run.reply_timeout,
        startup_timeout: args.run.startup_timeout,
        fixtures,
    };
    // Cases that share one running server could see each other's requests: one at a time,
    // unless the user says otherwise.
    let shared = matches!(&connect, Connect::Http(t) if !t.isolated());
    let started = std::time::Instant::now();
    let spoken = match spoken_by(&connect, &choice, &options) {
        Ok(spoken) => spoken,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let units = versions::plan(&prepared.cases, &choice, &spoken);
    let plan = runner::Plan {
        jobs: args
            .run
            .jobs
            .unwrap_or_else(|| if shared { 1 } else { default_jobs() }),
        repeat: args.run.repeat as usize,
    };
    let mixed = units.iter().any(|u| u.version != units[0].version);
    let results = runner::execute(
        &prepared.cases,
        &units,
        &connect,
        &options,
        plan,
        &progress_line(&prepared.cases, args.run.repeat, mixed),
    );
    let next = if args.run.baseline.is_some() || args.run.write_baseline.is_some() {
        "read the diff and the transcript (--dump DIR keeps it); fix the target, or list the case in the baseline if the failure is known"
    } else {
        "read the diff and the transcript (--dump DIR keeps it); fix the target, rerun this case alone by giving its id as the filter, or record known failures with --write-baseline FILE"
    };
    let target = connect.display();
    // An explicit version the target does not speak: a stateless one the probe did not find,
    // or a handshake one the target agreed to in no case.
    let unspoken = match &choice {
        Choice::Exact(v) if HANDSHAKE_VERSIONS.contains(&v.as_str()) => {
            results.iter().all(|runs| {
                runs.iter()
                    .all(|r| r.as_ref().is_ok_and(|r| r.outcome == Outcome::Skip))
            })
        }
        Choice::Exact(v) => !spoken.versions.contains(v),
        _ => false,
    };
    let run = Finished {
        cases: &prepared.cases,
        units: &units,
        results: &results,
        target: &target,
        transport: connect.transport().as_str(),
        choice: &choice,
        spoken: &spoken,
        nothing_verified: unspoken,
        started,
    };
    finish(&run, &wishes(&args.run, &prepared, next))
}

/// Asks the target which protocol versions it speaks, each probe on a fresh start of it (over
/// HTTP, a fresh connection, and a fresh server where the harness starts it).
fn spoken_by(connect: &Connect, choice: &Choice, options: &Options) -> Result<Spoken, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let mut probes = tokio::task::JoinSet::new();
        let versions = versions::to_probe(choice);
        for (order, version) in versions.into_iter().enumerate() {
            let wait = options.startup_timeout;
            match connect {
                Connect::Stdio(launch) => {
                    let io = Stdio::spawn(launch, options.reply_timeout).map_err(|e| {
                        format!(
                            "cannot start target `{}`: {e}; check the command after `--` (it is run without a shell)",
                            display_argv(&launch.argv)
                        )
                    })?;
                    probes.spawn_local(
                        async move { (order, versions::probe(io, version, wait).await) },
                    );
                }
                Connect::Http(target) => {
                    let io = Http::start(target, options.reply_timeout, wait).await?;
                    probes.spawn_local(
                        async move { (order, versions::probe(io, version, wait).await) },
                    );
                }
            }
        }
        let mut found = vec![];
        while let Some(done) = probes.join_next().await {
            found.push(done.map_err(|e| format!("a version probe failed: {e}"))?);
        }
        found.sort_by_key(|(order, _)| *order);
        Ok(versions::gather(found.into_iter().map(|(_, f)| f).collect()))
    })
}

fn client(args: ClientArgs) -> ExitCode {
    let transports: Vec<TransportKind> = if args.transport.is_empty() {
        vec![TransportKind::Stdio, TransportKind::Http]
    } else {
        let mut kinds: Vec<TransportKind> = args
            .transport
            .iter()
            .filter_map(|t| TransportKind::parse(t))
            .collect();
        kinds.dedup();
        kinds
    };
    let args = args.run;
    if args.argv.is_empty() {
        eprintln!("error: give the client adapter's command after `--`, e.g. `conformance client -- node adapter.mjs` (README: Testing a client)");
        return ExitCode::from(2);
    }
    if args.bless || harness::bless_requested().unwrap_or(true) {
        eprintln!("error: client cases cannot be blessed yet; edit their `>` lines by hand, guided by --dump DIR");
        return ExitCode::from(2);
    }
    let prepared = match prepare(&args, Role::Client) {
        Ok(p) => p,
        Err(code) => return code,
    };
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
        return ExitCode::from(2);
    }
    let relay = match std::env::current_exe() {
        Ok(exe) => vec![exe.display().to_string(), "relay".into()],
        Err(e) => {
            eprintln!("error: cannot find this executable, which the client must start as its server: {e}");
            return ExitCode::from(2);
        }
    };
    let launch = Launch {
        argv: args.argv.clone(),
        env: vec![],
        cwd: None,
    };
    // Each case runs at the versions it covers that the choice names; the harness plays a
    // server of that version (see README: Testing a client).
    let choice = match args.protocol_version.as_deref().map(Choice::parse) {
        None => Choice::Auto,
        Some(Ok(choice)) => choice,
        Some(Err(e)) => {
            eprintln!("error: --protocol-version: {e}");
            return ExitCode::from(2);
        }
    };
    let options = Options {
        protocol_version: String::new(),
        case_timeout: args.timeout.unwrap_or(Duration::from_secs(30)),
        reply_timeout: args.reply_timeout,
        startup_timeout: args.startup_timeout,
        fixtures: None,
    };
    let plan = runner::Plan {
        jobs: args.jobs.unwrap_or_else(cpus),
        repeat: args.repeat as usize,
    };
    let started = std::time::Instant::now();
    let units = client_versions::plan(&cases, &choice);
    let mixed = units.iter().any(|u| u.version != units[0].version);
    let target = display_argv(&launch.argv);
    let progress = progress_line(&cases, args.repeat, mixed);
    let results = runner::execute_each(&units, plan, &progress, &|runtime, unit| {
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
            protocol_version: unit.version.clone(),
            ..options.clone()
        };
        runtime.block_on(run_client_case(case, &launch, &transport, &options))
    });
    let next = "read the diff and the transcript (--dump DIR keeps it, with the adapter's outcome lines); fix the client or its adapter, or rerun one case with its id as the filter";
    let spoken = Spoken::default();
    // An explicit version that no case could verify: every case was skipped (the client did
    // not speak it, or no case covers it).
    let nothing_verified = matches!(choice, Choice::Exact(_))
        && results.iter().all(|runs| {
            runs.iter()
                .all(|r| r.as_ref().is_ok_and(|r| r.outcome == Outcome::Skip))
        });
    // The transports the cases ran over: one, or both (`stdio+http`).
    let over: Vec<&str> = [TransportKind::Stdio, TransportKind::Http]
        .into_iter()
        .filter(|t| cases.iter().any(|c| c.transports.first() == Some(t)))
        .map(TransportKind::as_str)
        .collect();
    let transport = over.join("+");
    let run = Finished {
        cases: &cases,
        units: &units,
        results: &results,
        target: &target,
        transport: &transport,
        choice: &choice,
        spoken: &spoken,
        nothing_verified,
        started,
    };
    finish(&run, &wishes(&args, &prepared, next))
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

/// How to reach the target: a target file, a URL (with an argv to start it), an argv, or
/// the bundled reference server.
fn target(args: &ServerArgs) -> Result<(Connect, Option<Fixtures>, Option<String>), String> {
    if let Some(path) = &args.target {
        if !args.run.argv.is_empty() || args.url.is_some() {
            return Err(
                "give the server either with --target FILE or with --url and `--`, not both".into(),
            );
        }
        let file = target_file::load(path)?;
        let connect = match (file.url, file.launch) {
            (Some(url), launch) => Connect::Http(HttpTarget { url, launch }),
            (None, Some(launch)) => Connect::Stdio(launch),
            (None, None) => unreachable!("a target file has a command or a url"),
        };
        return Ok((connect, file.fixtures, file.protocol_version));
    }
    let launch = (!args.run.argv.is_empty()).then(|| Launch::argv(args.run.argv.clone()));
    match (&args.url, launch) {
        (Some(url), launch) => {
            if url.contains(PORT) && launch.is_none() {
                return Err(format!(
                    "`{url}` has `{PORT}`, which only a server the harness starts can listen on; give its command after `--`, or the port it listens on"
                ));
            }
            Ok((
                Connect::Http(HttpTarget {
                    url: url.clone(),
                    launch,
                }),
                None,
                None,
            ))
        }
        (None, Some(launch)) => Ok((Connect::Stdio(launch), None, None)),
        (None, None) => bundled_reference(),
    }
}

/// The bundled reference server: this executable's hidden `reference-server` subcommand.
#[cfg(feature = "bundled-reference")]
fn bundled_reference() -> Result<(Connect, Option<Fixtures>, Option<String>), String> {
    let exe = std::env::current_exe().map_err(|e| {
        format!("cannot find this executable to run the bundled reference server: {e}; give a server after `--`")
    })?;
    let argv = vec![exe.display().to_string(), "reference-server".into()];
    Ok((Connect::Stdio(Launch::argv(argv)), None, None))
}

#[cfg(not(feature = "bundled-reference"))]
fn bundled_reference() -> Result<(Connect, Option<Fixtures>, Option<String>), String> {
    Err("no server given, and this build has no bundled reference server (feature `bundled-reference`); give the server's command after `--` or a target file with --target".into())
}
