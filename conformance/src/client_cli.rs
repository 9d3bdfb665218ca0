//! `conformance client`: the client cases against an adapter program, the harness playing the
//! server. The adapter contract is in the README ("Testing a client").

use clap::Parser;
use conformance::case::{parse_duration, Case, Role};
use conformance::client_run::run_client_case;
use conformance::outcome::Outcome;
use conformance::report;
use conformance::run::Options;
use conformance::runner::{self, CaseResult, Summary};
use conformance::suite;
use conformance::target::Launch;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser, Debug)]
pub struct ClientArgs {
    /// Only cases whose id contains this text.
    filter: Option<String>,
    /// Read cases from this folder instead of the embedded copy.
    #[arg(long, value_name = "DIR")]
    cases: Option<PathBuf>,
    /// The protocol version the harness's server plays when the client asks for one it does
    /// not know.
    #[arg(long, value_name = "VERSION", default_value = "2025-11-25")]
    protocol_version: String,
    /// Time limit for one case (a hang becomes a failure with the transcript so far).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration)]
    timeout: Duration,
    /// How long to wait for an expected message from the client.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration)]
    reply_timeout: Duration,
    /// Warnings (broken SHOULDs) fail the run.
    #[arg(long)]
    strict: bool,
    /// Write the actual transcript of every case to DIR/<case id>.mcpt.
    #[arg(long, value_name = "DIR")]
    dump: Option<PathBuf>,
    /// How many cases run at once [default: the number of CPUs].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// The client adapter's command, run without a shell.
    #[arg(last = true, value_name = "CLIENT ARGV")]
    argv: Vec<String>,
}

fn duration(text: &str) -> Result<Duration, String> {
    parse_duration(text)
        .ok_or_else(|| format!("`{text}` is not a duration; write e.g. 500ms or 5s"))
}

/// Runs the client cases; the exit codes are those of the server command.
pub fn client(args: ClientArgs) -> ExitCode {
    if args.argv.is_empty() {
        eprintln!("error: give the client adapter's command after `--`, e.g. `conformance client -- node adapter.mjs` (README: Testing a client)");
        return ExitCode::from(2);
    }
    let loaded = match &args.cases {
        Some(dir) => suite::from_dir(dir),
        None => suite::embedded(),
    };
    let cases = match loaded {
        Ok(cases) => cases,
        Err(errors) => {
            for e in &errors {
                eprintln!("error: bug in case: {e}");
            }
            eprintln!(
                "{} case file(s) could not be read; fix them and run again",
                errors.len()
            );
            return ExitCode::from(2);
        }
    };
    let cases: Vec<Case> = suite::select(cases, args.filter.as_deref().unwrap_or(""))
        .into_iter()
        .filter(|c| c.role == Role::Client)
        .collect();
    if cases.is_empty() {
        eprintln!("error: no client case matches; run `conformance list client` to see them");
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
    let options = Options {
        protocol_version: args.protocol_version.clone(),
        case_timeout: args.timeout,
        reply_timeout: args.reply_timeout,
        ..Options::default()
    };
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    });
    let started = std::time::Instant::now();
    let print = |case: &Case, result: &CaseResult| {
        let (word, ms) = match result {
            Ok(r) => (r.outcome.as_str(), r.duration.as_millis()),
            Err(_) => ("error", 0),
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "{word:<5} [{:<6}] {} ({ms} ms)",
            case.level.as_str(),
            case.id
        );
    };
    let results = runner::execute_each(&cases, jobs, &print, &|runtime, case| {
        runtime.block_on(run_client_case(case, &launch, &relay, &options))
    });

    let mut start_errors = false;
    println!();
    for (case, result) in cases.iter().zip(&results) {
        let report = match result {
            Ok(report) => report,
            Err(e) => {
                start_errors = true;
                println!("error: {}: {e}", case.id);
                continue;
            }
        };
        if let Some(dir) = &args.dump {
            if let Err(e) = runner::dump(dir, case, report) {
                eprintln!(
                    "error: cannot write the dump of {} into {}: {e}",
                    case.id,
                    dir.display()
                );
                start_errors = true;
            }
        }
        let show = match report.outcome {
            Outcome::Fail => "FAILED",
            Outcome::Warn if args.strict => "FAILED (strict)",
            Outcome::Warn => "WARNING (does not fail the run without --strict)",
            _ => continue,
        };
        println!("---- {} {show} ----", case.id);
        let next = "read the diff and the transcript (--dump DIR keeps it, with the adapter's outcome lines); fix the client or its adapter, or rerun one case with its id as the filter";
        println!("{}", report::explain(case, report, next));
    }
    let summary = Summary::of(&results);
    println!(
        "conformance: {} client cases against {} in {:.2}s",
        cases.len(),
        launch.argv.join(" "),
        started.elapsed().as_secs_f64()
    );
    println!("{summary}");
    if start_errors {
        ExitCode::from(2)
    } else if summary.fail > 0 || (args.strict && summary.warn > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
