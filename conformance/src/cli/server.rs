//! `conformance server`: finding the target (a target file, a URL, an argv or the bundled
//! reference server), asking which versions it speaks, and running the cases against it.

use super::{prepare, wishes};
use crate::args::ServerArgs;
use crate::finish::{finish, untestable, Finished};
use crate::live::Live;
use conformance::case::Role;
use conformance::case_report::CaseResult;
use conformance::engine::server::Connect;
use conformance::engine::Options;
use conformance::fixtures::Fixtures;
use conformance::outcome::Outcome;
use conformance::share::{self, decide::decide, decide::Asked, decide::Placing};
use conformance::transport::http::{HttpTarget, PORT};
use conformance::transport::process::Launch;
use conformance::versions::{self, Choice, Spoken};
use conformance::{runner, spoken, target_file};
use std::process::ExitCode;
use std::time::Duration;

pub(super) fn server(args: ServerArgs) -> ExitCode {
    let prepared = match prepare(&args.run, Role::Server) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (connect, choice, options) = match setup(&args) {
        Ok(setup) => setup,
        Err(code) => return code,
    };
    // Cases that share one running server could see each other's requests: one at a time,
    // unless the user says otherwise.
    let shared = matches!(&connect, Connect::Http(t) if !t.isolated());
    let started = std::time::Instant::now();
    let asked = asked(&args);
    // The pool is there before the probes, so that a probe's process can serve the cases.
    let pool = (asked != Asked::Isolate)
        .then(|| share::Pool::for_target(&connect, &options))
        .flatten();
    let spoken = spoken_or_untestable(&connect, &choice, &options, pool.as_ref());
    let name = stable_name(&args, &connect, &spoken);
    if spoken.untestable.is_some() {
        let run = Finished {
            cases: &[],
            units: &[],
            results: &[],
            target: &connect.display(),
            name: &name,
            transport: connect.transport().as_str(),
            choice: &choice,
            spoken: &spoken,
            nothing_verified: true,
            started,
        };
        return untestable(&run, &wishes(&args.run, &prepared, ""));
    }
    if let Err(code) = fits(&args, &options, &spoken) {
        return code;
    }
    let options = with_discovered(options, &spoken);
    let units = versions::plan(&prepared.cases, &choice, &spoken);
    let placing = decide(asked, spoken.start);
    let pool = pool.filter(|_| placing.share);
    if !shared {
        println!("{}", placing.line());
    }
    let plan = plan(&args, shared, &placing);
    let live = Live::new(
        &prepared.cases,
        &units,
        args.run.repeat as usize,
        args.run.verbose,
    );
    let results = runner::execute(
        &prepared.cases,
        &units,
        &connect,
        &options,
        plan,
        pool.as_ref(),
        &|unit, run, result| live.done(unit, run, result),
    );
    live.finish();
    let next = if args.run.baseline.is_some() || args.run.write_baseline.is_some() {
        "read the diff and the transcript (--dump DIR keeps it); fix the target, or list the case in the baseline if the failure is known"
    } else {
        "read the diff and the transcript (--dump DIR keeps it); fix the target, rerun this case alone by giving its id as the filter, or record known failures with --write-baseline FILE"
    };
    let run = Finished {
        cases: &prepared.cases,
        units: &units,
        results: &results,
        target: &connect.display(),
        name: &name,
        transport: connect.transport().as_str(),
        choice: &choice,
        spoken: &spoken,
        nothing_verified: unspoken(&choice, &spoken, &results),
        started,
    };
    finish(&run, &wishes(&args.run, &prepared, next))
}

/// What the command line asks of placement: isolation, sharing, or a measured decision.
fn asked(args: &ServerArgs) -> Asked {
    match (args.isolate, args.share) {
        (true, _) => Asked::Isolate,
        (_, true) => Asked::Share,
        _ => Asked::Measure,
    }
}

/// A target file whose fixture mapping names tools the server does not list runs nothing:
/// each misfit is an error naming the file.
fn fits(args: &ServerArgs, options: &Options, spoken: &Spoken) -> Result<(), ExitCode> {
    let Some(path) = &args.target else {
        return Ok(());
    };
    let misfits = conformance::discovery::misfits(
        options.fixtures.as_ref().unwrap_or(&Fixtures::default()),
        &spoken.listings,
    );
    if misfits.is_empty() {
        return Ok(());
    }
    for misfit in misfits {
        eprintln!("error: {}: {misfit}", path.display());
    }
    eprintln!("nothing was run: fix the mapping in the target file (its tools as the server lists them: `conformance init` drafts a new one)");
    Err(ExitCode::from(2))
}

/// How many cases run at once: `--jobs`, else one at a time on a shared HTTP server (cases
/// that share one running server could see each other's requests), else as placement says.
fn plan(args: &ServerArgs, shared: bool, placing: &Placing) -> runner::Plan {
    let jobs = match args.run.jobs {
        Some(n) => n as usize,
        None if shared => 1,
        None => placing.jobs(runner::default_jobs()),
    };
    runner::Plan {
        jobs,
        repeat: args.run.repeat as usize,
    }
}

/// How to reach the target, the version choice (the option's, else the target file's, else
/// `auto`) and the options the cases run with; on an error, says it and gives the exit code.
fn setup(args: &ServerArgs) -> Result<(Connect, Choice, Options), ExitCode> {
    let (connect, fixtures, file_version) = match target(args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return Err(ExitCode::from(2));
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
            return Err(ExitCode::from(2));
        }
    };
    // Each unit sets the version it plays.
    let options = Options {
        case_timeout: args.run.timeout.unwrap_or(Duration::from_secs(10)),
        reply_timeout: args.run.reply_timeout,
        startup_timeout: args.run.startup_timeout,
        fixtures,
        ..Options::default()
    };
    Ok((connect, choice, options))
}

/// Without a target file, the server's own tools play the roles they fit, by name and
/// schema; a case needing another role is skipped with what it needs. Either way the cases
/// know what the server declared of its tools at each version.
fn with_discovered(mut options: Options, spoken: &Spoken) -> Options {
    options.fixtures = Some(conformance::discovery::fixtures_for(
        options.fixtures.take(),
        &spoken.listings,
    ));
    options
}

/// What the target speaks; a target that could not even be asked is untestable, with why.
/// Over stdio, a probe's process whose session is clean goes to `pool`.
fn spoken_or_untestable(
    connect: &Connect,
    choice: &Choice,
    options: &Options,
    pool: Option<&share::Pool>,
) -> Spoken {
    match spoken::spoken_handing(connect, choice, options, pool) {
        Ok(spoken) => spoken,
        Err(e) => Spoken {
            untestable: Some(versions::Untestable {
                why: vec![e.to_string()],
                stderr: vec![],
                stderr_total: 0,
            }),
            ..Spoken::default()
        },
    }
}

/// An explicit version the target does not speak: a stateless one the probe did not find,
/// or a handshake one the target agreed to in no case.
fn unspoken(choice: &Choice, spoken: &Spoken, results: &[Vec<CaseResult>]) -> bool {
    match choice {
        Choice::Exact(v) if v.has_handshake() => results.iter().all(|runs| {
            runs.iter()
                .all(|r| r.as_ref().is_ok_and(|r| r.outcome == Outcome::Skip))
        }),
        Choice::Exact(v) => !spoken.versions.contains(v),
        _ => false,
    }
}

/// How to reach the target, its fixture mapping, and the version its target file asks for.
type Reach = (Connect, Option<Fixtures>, Option<String>);

/// Why the command line does not say how to reach a server.
#[derive(Debug, thiserror::Error)]
enum TargetError {
    /// A target file and a URL or argv both.
    #[error("give the server either with --target FILE or with --url and `--`, not both")]
    Both,
    /// The target file cannot be used.
    #[error(transparent)]
    File(#[from] target_file::LoadError),
    /// A URL with `{port}` that no started server can fill.
    #[error("`{url}` has `{PORT}`, which only a server the harness starts can listen on; give its command after `--`, or the port it listens on")]
    PortWithoutCommand {
        /// The URL, as given.
        url: String,
    },
    /// This executable, which serves the bundled reference server, cannot be found.
    #[cfg(feature = "bundled-reference")]
    #[error("cannot find this executable to run the bundled reference server: {0}; give a server after `--`")]
    NoExecutable(#[source] std::io::Error),
    /// No server given, and none bundled.
    #[cfg(not(feature = "bundled-reference"))]
    #[error("no server given, and this build has no bundled reference server (feature `bundled-reference`); give the server's command after `--` or a target file with --target")]
    NoBundledReference,
}

/// How to reach the target: a target file, a URL (with an argv to start it), an argv, or
/// the bundled reference server.
fn target(args: &ServerArgs) -> Result<Reach, TargetError> {
    if let Some(path) = &args.target {
        if !args.run.argv.is_empty() || args.url.is_some() {
            return Err(TargetError::Both);
        }
        let file = target_file::load(path)?;
        return Ok((file.connect(), file.fixtures, file.protocol_version));
    }
    let launch = (!args.run.argv.is_empty()).then(|| Launch::argv(args.run.argv.clone()));
    match (&args.url, launch) {
        (Some(url), launch) => {
            if url.contains(PORT) && launch.is_none() {
                return Err(TargetError::PortWithoutCommand { url: url.clone() });
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
fn bundled_reference() -> Result<Reach, TargetError> {
    let exe = std::env::current_exe().map_err(TargetError::NoExecutable)?;
    let argv = vec![exe.display().to_string(), "reference-server".into()];
    Ok((Connect::Stdio(Launch::argv(argv)), None, None))
}

#[cfg(not(feature = "bundled-reference"))]
fn bundled_reference() -> Result<Reach, TargetError> {
    Err(TargetError::NoBundledReference)
}

/// The target's name for reports that keep history by it: the target file's name, else the
/// name the server gives itself, else the program (or the script an interpreter runs), else
/// the URL as given.
fn stable_name(args: &ServerArgs, connect: &Connect, spoken: &versions::Spoken) -> String {
    if let Some(stem) = args.target.as_ref().and_then(|p| p.file_stem()) {
        return stem.to_string_lossy().into_owned();
    }
    if let Some(identity) = &spoken.identity {
        return identity.name.clone();
    }
    match connect {
        Connect::Stdio(launch) => super::program_name(&launch.argv),
        Connect::Http(target) => match &target.launch {
            Some(launch) => super::program_name(&launch.argv),
            // The server's address, as given (its scheme and path are no name).
            None => target
                .url
                .split("://")
                .last()
                .and_then(|rest| rest.split('/').next())
                .unwrap_or(&target.url)
                .to_string(),
        },
    }
}
