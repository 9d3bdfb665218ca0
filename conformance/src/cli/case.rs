//! `conformance case`: the command line around [`conformance::from_trace`]: which trace, where
//! the case goes, and what to run next.

use crate::args::{CaseCommand, FromTraceArgs};
use crate::console::say;
use conformance::from_trace::{draft, render};
use conformance::trace::Trace;
use std::io::Write as _;
use std::process::ExitCode;

pub(super) fn case(command: CaseCommand) -> ExitCode {
    match command {
        CaseCommand::FromTrace(args) => match from_trace(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
    }
}

fn from_trace(args: &FromTraceArgs) -> Result<(), String> {
    if args.output.exists() && !args.force {
        return Err(format!(
            "{} exists; give --force to overwrite it, or -o another path",
            args.output.display()
        ));
    }
    if args.output.extension().is_none_or(|e| e != "mcpt") {
        return Err(format!(
            "{}: a case file ends in `.mcpt`; give -o a path such as cases/server/my-bug.mcpt",
            args.output.display()
        ));
    }
    let trace = Trace::read(&args.trace).map_err(|e| e.to_string())?;
    let drafted = draft(&trace).map_err(|e| e.to_string())?;
    let text = render(&drafted, &args.output).map_err(|e| e.to_string())?;
    write(args, &text)?;
    let steps = drafted.lines.len();
    let ids: Vec<&str> = drafted.requirements.iter().map(|r| r.as_str()).collect();
    say(format_args!(
        "wrote {}: {steps} lines drafted from {}, checking {}",
        args.output.display(),
        args.trace.display(),
        ids.join(" ")
    ));
    let dir = cases_dir(&args.output);
    say(format_args!(
        "next: read it (what varies between runs is a pattern), then replay it: conformance server --cases {} -- <server argv>",
        dir.display()
    ));
    Ok(())
}

/// The folder a case at `path` is run from: the one above `server/`, else its own.
fn cases_dir(path: &std::path::Path) -> std::path::PathBuf {
    let parent = path.parent().unwrap_or(std::path::Path::new("."));
    let parent = if parent.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        parent
    };
    match parent.file_name() {
        Some(name) if name == "server" => parent.parent().unwrap_or(parent).to_path_buf(),
        _ => parent.to_path_buf(),
    }
}

/// Writes the case; without --force, only if it still does not exist.
fn write(args: &FromTraceArgs, text: &str) -> Result<(), String> {
    let shown = args.output.display();
    let mut file = super::create_drafted(&args.output, args.force).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            format!("{shown} appeared meanwhile; give --force to overwrite it")
        }
        _ => format!("cannot write {shown}: {e}"),
    })?;
    file.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write {shown}: {e}"))
}
