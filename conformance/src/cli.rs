//! What the command line offers and how results become output and an exit code.

use crate::finish::{finish, Finished, Wishes};
use clap::{Parser, Subcommand};
use conformance::baseline::Baseline;
use conformance::case::{parse_duration, Case, CaseError, Role};
use conformance::engine::client::run_client_case;
use conformance::engine::server::Connect;
use conformance::engine::Options;
use conformance::fixtures::Fixtures;
use conformance::report::gate::CaseResult;
use conformance::transport::http::{HttpTarget, PORT};
use conformance::transport::process::{display_argv, Launch};
use conformance::{harness, runner, suite, target_file};
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
    /// Run the server cases against a server over stdio or Streamable HTTP (the bundled
    /// reference server over stdio if none is given).
    #[command(after_help = EXIT_CODES)]
    Server(ServerArgs),
    /// List the cases with their level, requirements and intent.
    List {
        /// Read cases from this folder instead of the embedded copy.
        #[arg(long, value_name = "DIR")]
        cases: Option<PathBuf>,
        /// Only cases whose id contains this text.
        filter: Option<String>,
    },
    /// Serve MCP as the bundled reference server (its own arguments follow).
    #[cfg(feature = "bundled-reference")]
    #[command(hide = true)]
    ReferenceServer {
        /// The reference server's own arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run the client cases against a client adapter: the harness plays the server (README:
    /// Testing a client).
    #[command(after_help = EXIT_CODES)]
    Client(ClientArgs),
    /// The server a client under test starts: relays its stdio to the harness at ADDR.
    #[command(hide = true)]
    Relay {
        /// The harness's loopback address.
        addr: String,
    },
}

/// What both `server` and `client` runs take.
#[derive(clap::Args, Debug)]
struct RunArgs {
    /// Only cases whose id contains this text.
    filter: Option<String>,
    /// Read cases from this folder instead of the embedded copy.
    #[arg(long, value_name = "DIR")]
    cases: Option<PathBuf>,
    /// The protocol version to request (server cases) or to play when the client asks for
    /// one the harness does not know (client cases) [default: a target file's, else
    /// 2025-11-25].
    #[arg(long, value_name = "VERSION")]
    protocol_version: Option<String>,
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
    /// Time limit for one case, a hang becomes a failure with the transcript so far
    /// [default: 10s for servers, 30s for client adapters].
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    timeout: Option<Duration>,
    /// How long to wait for an expected message or an answer.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration)]
    reply_timeout: Duration,
    /// How long a server may take to answer `initialize` (interpreters and package runners
    /// start slowly, more so with cases in parallel).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = duration)]
    startup_timeout: Duration,
    /// Warnings (broken SHOULDs) fail the run.
    #[arg(long)]
    strict: bool,
    /// Rewrite the expected lines that differ from what the target sent (needs --cases;
    /// refused when CI is set). Also enabled by CONFORMANCE_BLESS=1.
    #[arg(long)]
    bless: bool,
    /// Write the actual transcript of every case to DIR/<case id>.mcpt.
    #[arg(long, value_name = "DIR")]
    dump: Option<PathBuf>,
    /// How many cases run at once [default: twice the CPUs for servers, the CPUs for client
    /// adapters].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// The target's command, run without a shell.
    #[arg(last = true, value_name = "ARGV")]
    argv: Vec<String>,
}

#[derive(clap::Args, Debug)]
struct ServerArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Test a server over Streamable HTTP at this MCP endpoint. With a command after `--`
    /// the harness also starts the server, once per case; `{port}` in the URL and the
    /// command becomes a free loopback port, and the harness waits (within
    /// --startup-timeout) until it accepts connections.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// A target file (JSON): the server's command and which of its tools play the fixture
    /// roles. See the README.
    #[arg(long, value_name = "FILE")]
    target: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct ClientArgs {
    #[command(flatten)]
    run: RunArgs,
}

fn duration(text: &str) -> Result<Duration, String> {
    parse_duration(text)
        .ok_or_else(|| format!("`{text}` is not a duration; write e.g. 500ms or 5s"))
}

/// Runs the command.
pub fn main(args: Args) -> ExitCode {
    match args.command {
        #[cfg(feature = "bundled-reference")]
        Command::ReferenceServer { .. } => reference_server::main_entry(),
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
        Command::Client(args) => client(args),
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

/// Prints each case's outcome as it finishes.
fn progress_line(case: &Case, result: &CaseResult) {
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
    let version = args
        .run
        .protocol_version
        .clone()
        .or(file_version)
        .unwrap_or_else(|| Options::default().protocol_version);
    let options = Options {
        protocol_version: version.clone(),
        case_timeout: args.run.timeout.unwrap_or(Duration::from_secs(10)),
        reply_timeout: args.run.reply_timeout,
        startup_timeout: args.run.startup_timeout,
        fixtures,
    };
    // Cases that share one running server could see each other's requests: one at a time,
    // unless the user says otherwise.
    let shared = matches!(&connect, Connect::Http(t) if !t.isolated());
    let jobs = args
        .run
        .jobs
        .unwrap_or_else(|| if shared { 1 } else { (cpus() * 2).max(4) });
    let started = std::time::Instant::now();
    let results = runner::execute(
        &prepared.cases,
        &connect,
        &options,
        &|_| version.clone(),
        jobs,
        &progress_line,
    );
    let next = if args.run.baseline.is_some() || args.run.write_baseline.is_some() {
        "read the diff and the transcript (--dump DIR keeps it); fix the target, or list the case in the baseline if the failure is known"
    } else {
        "read the diff and the transcript (--dump DIR keeps it); fix the target, rerun this case alone by giving its id as the filter, or record known failures with --write-baseline FILE"
    };
    let target = connect.display();
    let run = Finished {
        cases: &prepared.cases,
        results: &results,
        target: &target,
        transport: connect.transport().as_str(),
        version: &version,
        started,
    };
    finish(&run, &wishes(&args.run, &prepared, next))
}

fn client(args: ClientArgs) -> ExitCode {
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
    let version = args
        .protocol_version
        .clone()
        .unwrap_or_else(|| Options::default().protocol_version);
    let options = Options {
        protocol_version: version.clone(),
        case_timeout: args.timeout.unwrap_or(Duration::from_secs(30)),
        reply_timeout: args.reply_timeout,
        startup_timeout: args.startup_timeout,
        fixtures: None,
    };
    let jobs = args.jobs.unwrap_or_else(cpus);
    let started = std::time::Instant::now();
    let results = runner::execute_each(&prepared.cases, jobs, &progress_line, &|runtime, case| {
        runtime.block_on(run_client_case(case, &launch, &relay, &options))
    });
    let next = "read the diff and the transcript (--dump DIR keeps it, with the adapter's outcome lines); fix the client or its adapter, or rerun one case with its id as the filter";
    let target = display_argv(&launch.argv);
    let run = Finished {
        cases: &prepared.cases,
        results: &results,
        target: &target,
        transport: "stdio",
        version: &version,
        started,
    };
    finish(&run, &wishes(&args, &prepared, next))
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
