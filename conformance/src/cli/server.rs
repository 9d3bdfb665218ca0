//! `conformance server`: finding the target (a target file, a URL, an argv or the bundled
//! reference server), asking which versions it speaks, and running the cases against it.

use super::{default_jobs, prepare, progress_line, wishes};
use crate::args::ServerArgs;
use crate::finish::{finish, Finished};
use conformance::case::Role;
use conformance::engine::server::Connect;
use conformance::engine::Options;
use conformance::era::HANDSHAKE_VERSIONS;
use conformance::fixtures::Fixtures;
use conformance::outcome::Outcome;
use conformance::transport::http::{HttpTarget, PORT};
use conformance::transport::process::Launch;
use conformance::versions::{self, Choice};
use conformance::{runner, spoken, target_file};
use std::process::ExitCode;
use std::time::Duration;

pub(super) fn server(args: ServerArgs) -> ExitCode {
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
    let spoken = match spoken::spoken_by(&connect, &choice, &options) {
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
        return Ok((file.connect(), file.fixtures, file.protocol_version));
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
