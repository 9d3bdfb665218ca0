//! What the command line offers and how results become output and an exit code.

use clap::{Parser, Subcommand};
use conformance::baseline::{self, Baseline};
use conformance::case::{parse_duration, Case, CaseError, Role};
use conformance::outcome::Outcome;
use conformance::profile::{self, Fixtures};
use conformance::run::Options;
use conformance::runner::{self, CaseResult, Summary, Verdict};
use conformance::target::Launch;
use conformance::{json_report, junit, report, suite};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const EXIT_CODES: &str = "\
Exit codes:
  0  every case passed, or failed as its baseline expected (warnings allowed unless --strict)
  1  a case failed (or warned, with --strict), or a baseline entry is stale
  2  usage error, a broken case or target file, or a target that could not be started";

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
    /// Run the client cases against a client adapter: the harness plays the server (README:
    /// Testing a client).
    #[command(after_help = EXIT_CODES)]
    Client(crate::client_cli::ClientArgs),
    /// The server a client under test starts: relays its stdio to the harness at ADDR.
    #[command(hide = true)]
    Relay {
        /// The harness's loopback address.
        addr: String,
    },
}

#[derive(Parser, Debug)]
struct ServerArgs {
    /// Only cases whose id contains this text.
    filter: Option<String>,
    /// Read cases from this folder instead of the embedded copy.
    #[arg(long, value_name = "DIR")]
    cases: Option<PathBuf>,
    /// The protocol version to request at initialize [default: the target file's, else
    /// 2025-11-25].
    #[arg(long, value_name = "VERSION")]
    protocol_version: Option<String>,
    /// A target file (JSON): the server's command and which of its tools play the fixture
    /// roles. See the README.
    #[arg(long, value_name = "FILE")]
    target: Option<PathBuf>,
    /// Case ids known to fail (one a line, `#` comments). Listed failures do not fail the run;
    /// a listed case that passes fails it as stale.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write today's failing case ids to FILE (the run then exits 0 unless it could not run).
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// Write a JSON report to PATH.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write a JUnit XML report to PATH.
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Time limit for one case (a hang becomes a failure with the transcript so far).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    timeout: Duration,
    /// How long to wait for an expected message or an answer.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration)]
    reply_timeout: Duration,
    /// How long the target may take to answer `initialize` (interpreters and package
    /// runners start slowly, more so with cases in parallel).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = duration)]
    startup_timeout: Duration,
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
        Command::Client(args) => crate::client_cli::client(args),
        Command::Relay { addr } => {
            ExitCode::from(u8::try_from(conformance::relay::run(&addr)).unwrap_or(1))
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
    let cases: Vec<Case> = cases
        .into_iter()
        .filter(|c| c.role == Role::Server)
        .collect();
    if cases.is_empty() {
        eprintln!("error: no server case matches; run `conformance list` to see them");
        return ExitCode::from(2);
    }
    let (launch, fixtures, file_version) = match target(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let baseline = match &args.baseline {
        Some(path) => match Baseline::load(path) {
            Ok(b) => Some(b),
            Err(e) => {
                eprintln!("error: {e}; create it with --write-baseline");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let version = args
        .protocol_version
        .clone()
        .or(file_version)
        .unwrap_or_else(|| Options::default().protocol_version);
    let options = Options {
        protocol_version: version.clone(),
        case_timeout: args.timeout,
        reply_timeout: args.reply_timeout,
        startup_timeout: args.startup_timeout,
        fixtures,
    };
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get() * 2)
            .unwrap_or(4)
            .max(4)
    });
    let shown_target = conformance::target::display_argv(&launch.argv);
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
    let mut verdicts = vec![];
    let next = if baseline.is_some() || args.write_baseline.is_some() {
        "read the diff and the transcript (--dump DIR keeps it); fix the target, or list the case in the baseline if the failure is known"
    } else {
        "read the diff and the transcript (--dump DIR keeps it); fix the target, rerun this case alone by giving its id as the filter, or record known failures with --write-baseline FILE"
    };
    println!();
    for (case, result) in cases.iter().zip(&results) {
        let mut verdict = Verdict {
            id: case.id.clone(),
            outcome: Outcome::Fail,
            level: case.level.as_str(),
            requirements: case.requirements.clone(),
            message: String::new(),
            details: String::new(),
            duration_ms: 0,
            baseline: None,
        };
        let report = match result {
            Ok(report) => report,
            Err(e) => {
                start_errors = true;
                println!("error: {}: {e}", case.id);
                verdict.message = e.clone();
                verdicts.push(verdict);
                continue;
            }
        };
        verdict.outcome = report.outcome;
        verdict.duration_ms = report.duration.as_millis() as u64;
        verdict.message = headline(report);
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
                    verdict.outcome = Outcome::Pass;
                    verdicts.push(verdict);
                    continue;
                }
                Err(e) => eprintln!("error: cannot rewrite {}: {e}", case.path),
            }
        }
        let failing =
            report.outcome == Outcome::Fail || (args.strict && report.outcome == Outcome::Warn);
        if let Some(b) = &baseline {
            if let Some(line) = b.line_of(&case.id) {
                if failing {
                    verdict.baseline = Some("expected-failure");
                } else if matches!(
                    report.outcome,
                    Outcome::Pass | Outcome::Warn | Outcome::Info
                ) {
                    verdict.baseline = Some("stale");
                    verdict.message = format!(
                        "{}:{line}: stale baseline entry: {} passes now; delete that line",
                        b.path, case.id
                    );
                    println!(
                        "---- {} STALE BASELINE ENTRY ----\n{}\n",
                        case.id, verdict.message
                    );
                }
            }
        }
        if report.outcome != Outcome::Pass && report.outcome != Outcome::Info {
            verdict.details = report::explain(case, report, next);
        }
        let show = match (report.outcome, verdict.baseline) {
            (_, Some("expected-failure")) => "FAILED (expected: listed in the baseline)",
            (Outcome::Fail, _) => "FAILED",
            (Outcome::Warn, _) if args.strict => "FAILED (strict)",
            (Outcome::Warn, _) => "WARNING (does not fail the run without --strict)",
            _ => {
                verdicts.push(verdict);
                continue;
            }
        };
        println!("---- {} {show} ----", case.id);
        println!("{}", verdict.details);
        verdicts.push(verdict);
    }
    let summary = Summary::of(&results);
    let unexpected = verdicts
        .iter()
        .filter(|v| {
            let failing = v.outcome == Outcome::Fail || (args.strict && v.outcome == Outcome::Warn);
            (failing && v.baseline.is_none()) || v.baseline == Some("stale")
        })
        .count();
    if let Some(path) = &args.write_baseline {
        let failing: Vec<&str> = verdicts
            .iter()
            .filter(|v| v.outcome == Outcome::Fail || (args.strict && v.outcome == Outcome::Warn))
            .map(|v| v.id.as_str())
            .collect();
        match std::fs::write(path, baseline::render(&failing, &shown_target)) {
            Ok(()) => println!(
                "wrote {} failing case(s) to {}",
                failing.len(),
                path.display()
            ),
            Err(e) => {
                eprintln!("error: cannot write the baseline {}: {e}", path.display());
                start_errors = true;
            }
        }
    }
    if let Some(path) = &args.json {
        let doc = json_report::render(&shown_target, &version, &verdicts, &summary);
        if let Err(e) = std::fs::write(path, format!("{doc:#}\n")) {
            eprintln!(
                "error: cannot write the JSON report {}: {e}",
                path.display()
            );
            start_errors = true;
        }
    }
    if let Some(path) = &args.junit {
        if let Err(e) = std::fs::write(path, junit::render(&shown_target, &verdicts, args.strict)) {
            eprintln!(
                "error: cannot write the JUnit report {}: {e}",
                path.display()
            );
            start_errors = true;
        }
    }
    println!(
        "conformance: {} cases against {} (protocol {version}) in {:.2}s{}",
        cases.len(),
        shown_target,
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
    } else if unexpected > 0 && args.write_baseline.is_none() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// How to start the target: a target file, an argv, or the bundled reference server.
fn target(args: &ServerArgs) -> Result<(Launch, Option<Fixtures>, Option<String>), String> {
    if let Some(path) = &args.target {
        if !args.argv.is_empty() {
            return Err("give the server either with --target FILE or after `--`, not both".into());
        }
        let file = profile::load(path)?;
        return Ok((file.launch, file.fixtures, file.protocol_version));
    }
    if !args.argv.is_empty() {
        return Ok((
            Launch {
                argv: args.argv.clone(),
                env: vec![],
                cwd: None,
            },
            None,
            None,
        ));
    }
    let exe = std::env::current_exe().map_err(|e| {
        format!("cannot find this executable to run the bundled reference server: {e}; give a server after `--`")
    })?;
    let argv = vec![exe.display().to_string(), "reference-server".into()];
    Ok((
        Launch {
            argv,
            env: vec![],
            cwd: None,
        },
        None,
        None,
    ))
}

/// The one line that says why a case did not pass.
fn headline(report: &conformance::run::Report) -> String {
    if let Some(reason) = &report.skip_reason {
        return reason.clone();
    }
    report
        .findings
        .iter()
        .max_by_key(|f| f.severity)
        .filter(|f| f.severity > conformance::outcome::Severity::Note)
        .map(|f| format!("line {}: [{}] {}", f.line, f.requirement, f.message))
        .or_else(|| report.findings.first().map(|f| f.message.clone()))
        .unwrap_or_default()
}

/// Blessing only rewrites what differed; hangs, exits and broken rules are never blessed.
fn only_mismatches(report: &conformance::run::Report) -> bool {
    report
        .findings
        .iter()
        .filter(|f| f.severity > conformance::outcome::Severity::Note)
        .all(|f| f.requirement == "case" && f.message.starts_with("the message differs"))
}
