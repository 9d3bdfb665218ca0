//! What the command line offers and how results become output and an exit code.

mod case;
mod check;
mod client;
mod compare;
mod init;
mod record;
mod server;

use crate::args::{Args, Command, RunArgs};
use crate::console::say;
use crate::finish::Wishes;
use client::client;
use conformance::baseline::Baseline;
use conformance::case::{Case, CaseError, Role};
use conformance::transport::reap;
use conformance::{harness, suite};
use server::server;
use std::path::PathBuf;
use std::process::ExitCode;

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
            conformance::interrupt::guard();
            let code = server(args);
            reap::kill_everything();
            conformance::interrupt::hold_if_interrupted();
            code
        }
        Command::Init(args) => {
            conformance::interrupt::guard();
            let code = init::init(args);
            reap::kill_everything();
            conformance::interrupt::hold_if_interrupted();
            code
        }
        Command::Client(args) => {
            conformance::interrupt::guard();
            let code = client(args);
            reap::kill_everything();
            conformance::interrupt::hold_if_interrupted();
            code
        }
        Command::Record(args) => record::record(args),
        Command::Check(args) => check::check(&args),
        Command::Case(command) => case::case(command),
        Command::Compare(args) => compare::compare(&args),
        Command::Report { reports, output } => crate::finish::files::merge(&reports, &output),
        Command::Relay { addr, token } => ExitCode::from(
            u8::try_from(conformance::transport::relay::run(&addr, token.as_deref())).unwrap_or(1),
        ),
    }
}

fn load(dir: Option<&PathBuf>, filter: &str) -> Result<Vec<Case>, ExitCode> {
    if let Some(dir) = dir {
        if !dir.is_dir() {
            eprintln!("error: --cases {}: no such folder", dir.display());
            return Err(ExitCode::from(2));
        }
        if suite::case_files(dir).is_empty() {
            eprintln!(
                "error: --cases {}: no `*.mcpt` case files in this folder or below it; point --cases at a cases folder (the repository's `cases/`)",
                dir.display()
            );
            return Err(ExitCode::from(2));
        }
    }
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
        html: args.html.as_ref(),
        junit: args.junit.as_ref(),
        next,
    }
}

fn cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

/// A command's name without its path: the program's file name or, for an interpreter or a
/// package runner, the file name of the script or package it runs.
fn program_name(argv: &[String]) -> String {
    const RUNNERS: [&str; 14] = [
        "node", "nodejs", "deno", "bun", "npx", "python", "python3", "uv", "uvx", "sh", "bash",
        "env", "pipx", "cargo",
    ];
    let base = |a: &str| {
        std::path::Path::new(a)
            .file_name()
            .map_or_else(|| a.to_string(), |f| f.to_string_lossy().into_owned())
    };
    let Some(program) = argv.first() else {
        return "target".into();
    };
    let program = base(program);
    if !RUNNERS.contains(&program.as_str()) {
        return program;
    }
    // A shell's `-c` script is named by its first word.
    argv[1..]
        .iter()
        .map(|a| a.split_whitespace().next().unwrap_or(a))
        .find(|a| !a.starts_with('-') && !a.contains('=') && !RUNNERS.contains(&base(a).as_str()))
        .map_or(program, base)
}
