//! What the command line offers and how results become output and an exit code.

use clap::{Parser, Subcommand};
use conformance::case::{parse_duration, Case, CaseError};
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

const EXIT_CODES: &str = "\
Exit codes:
  0  every case passed (warnings allowed unless --strict)
  1  a case failed (or warned, with --strict)
  2  usage error, a broken case file, or a target that could not be started";

/// Replays scripted MCP cancellation cases against a target and judges the transcript.
#[derive(Parser, Debug)]
#[command(name = "conformance", version, after_help = EXIT_CODES)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the server cases against a stdio server (the bundled reference server if none is
    /// given).
    #[command(after_help = EXIT_CODES)]
    Server(ServerArgs),
    /// List the cases with their level, versions and requirements.
    List {
        /// Read cases from this folder instead of the embedded copy.
        #[arg(long, value_name = "DIR")]
        cases: Option<PathBuf>,
        /// Only cases whose id contains this text.
        filter: Option<String>,
    },
    /// Serve MCP on stdin/stdout as the bundled reference server.
    #[command(hide = true)]
    ReferenceServer,
}

#[derive(Parser, Debug)]
struct ServerArgs {
    /// Only cases whose id contains this text.
    filter: Option<String>,
    /// Read cases from this folder instead of the embedded copy.
    #[arg(long, value_name = "DIR")]
    cases: Option<PathBuf>,
    /// The protocol version to request at initialize.
    #[arg(long, value_name = "VERSION", default_value = "2025-11-25")]
    protocol_version: String,
    /// Time limit for one case (a hang becomes a failure with the transcript so far).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    timeout: Duration,
    /// How long to wait for an expected message or an answer.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration)]
    reply_timeout: Duration,
    /// Warnings (broken SHOULDs) fail the run.
    #[arg(long)]
    strict: bool,
    /// Rewrite the `<` lines that differ from what the target sent (needs --cases; refused
    /// when CI is set). Also enabled by CONFORMANCE_BLESS=1.
    #[arg(long)]
    bless: bool,
    /// Write the actual transcript of every case to DIR/<case id>.mcpt.
    #[arg(long, value_name = "DIR")]
    dump: Option<PathBuf>,
    /// How many cases run at once.
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// The server command, run without a shell.
    #[arg(last = true, value_name = "SERVER ARGV")]
    argv: Vec<String>,
}

fn duration(text: &str) -> Result<Duration, String> {
    parse_duration(text)
        .ok_or_else(|| format!("`{text}` is not a duration; write e.g. 500ms or 5s"))
}

/// Runs the command.
pub fn main(args: Args) -> ExitCode {
    match args.command {
        Command::ReferenceServer => reference_server::run(reference_server::ServeOptions {
            verbose: std::env::var_os("REFERENCE_SERVER_VERBOSE").is_some_and(|v| v == "1"),
            ..Default::default()
        }),
        Command::List { cases, filter } => {
            match load(cases.as_ref(), filter.as_deref().unwrap_or("")) {
                Ok(cases) => {
                    for case in cases {
                        println!(
                            "{:<44} {:<6} {:<28} {}",
                            case.id,
                            case.level.as_str(),
                            case.requirements.join(" "),
                            case.intent
                        );
                    }
                    ExitCode::SUCCESS
                }
                Err(code) => code,
            }
        }
        Command::Server(args) => server(args),
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

fn server(args: ServerArgs) -> ExitCode {
    let bless = args.bless || std::env::var_os("CONFORMANCE_BLESS").is_some_and(|v| v == "1");
    if bless && std::env::var_os("CI").is_some() {
        eprintln!("error: blessing is refused when CI is set: it would accept whatever the target did; bless locally and commit the diff");
        return ExitCode::from(2);
    }
    if bless && args.cases.is_none() {
        eprintln!("error: --bless rewrites case files, so it needs --cases DIR (the embedded cases cannot be rewritten)");
        return ExitCode::from(2);
    }
    let cases = match load(args.cases.as_ref(), args.filter.as_deref().unwrap_or("")) {
        Ok(cases) => cases,
        Err(code) => return code,
    };
    let argv = if args.argv.is_empty() {
        match std::env::current_exe() {
            Ok(exe) => vec![exe.display().to_string(), "reference-server".into()],
            Err(e) => {
                eprintln!("error: cannot find this executable to run the bundled reference server: {e}; give a server after `--`");
                return ExitCode::from(2);
            }
        }
    } else {
        args.argv.clone()
    };
    let launch = Launch {
        argv,
        env: vec![],
        cwd: None,
    };
    let options = Options {
        protocol_version: args.protocol_version.clone(),
        case_timeout: args.timeout,
        reply_timeout: args.reply_timeout,
    };
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get() * 2)
            .unwrap_or(4)
            .max(4)
    });
    let version = args.protocol_version.clone();
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
    let results = runner::execute(
        &cases,
        &launch,
        &options,
        &|_| version.clone(),
        jobs,
        &print,
    );

    let mut start_errors = false;
    let mut blessed = 0;
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
        if bless && !report.bless.is_empty() && only_mismatches(report) {
            match suite::bless(case, &report.bless) {
                Ok(()) => {
                    blessed += 1;
                    println!(
                        "blessed {} ({} lines); review with `git diff`",
                        case.path,
                        report.bless.len()
                    );
                    continue;
                }
                Err(e) => eprintln!("error: cannot rewrite {}: {e}", case.path),
            }
        }
        let show = match report.outcome {
            Outcome::Fail => "FAILED",
            Outcome::Warn if args.strict => "FAILED (strict)",
            Outcome::Warn => "WARNING (does not fail the run without --strict)",
            _ => continue,
        };
        println!("---- {} {show} ----", case.id);
        let next = "read the diff and the transcript (--dump DIR keeps it), fix the target, or rerun one case with its id as the filter";
        println!("{}", report::explain(case, report, next));
    }
    let summary = Summary::of(&results);
    println!(
        "conformance: {} cases against {} in {:.2}s{}",
        cases.len(),
        launch.argv.join(" "),
        started.elapsed().as_secs_f64(),
        if blessed > 0 {
            format!(", {blessed} blessed")
        } else {
            String::new()
        }
    );
    println!("{summary}");
    if start_errors {
        ExitCode::from(2)
    } else if summary.fail > blessed || (args.strict && summary.warn > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Blessing only rewrites what differed; hangs, exits and broken rules are never blessed.
fn only_mismatches(report: &conformance::run::Report) -> bool {
    report
        .findings
        .iter()
        .filter(|f| f.severity > conformance::outcome::Severity::Note)
        .all(|f| f.requirement == "case" && f.message.starts_with("the message differs"))
}
