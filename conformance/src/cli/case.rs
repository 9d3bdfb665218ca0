//! `conformance case`: the command line around [`conformance::from_trace`]: which trace, where
//! the case goes, and what to run next.

use crate::args::{CaseCommand, FromTraceArgs};
use crate::console::say;
use conformance::from_trace::draft_file;
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
    let drafted = draft_file(&args.trace, &args.output, args.force)?;
    let ids: Vec<&str> = drafted.requirements.iter().map(|r| r.as_str()).collect();
    say(format_args!(
        "wrote {}: {} lines drafted from {}, checking {}",
        args.output.display(),
        drafted.lines.len(),
        args.trace.display(),
        ids.join(" ")
    ));
    say(format_args!(
        "next: read it (what varies between runs is a pattern), then replay it: conformance server --cases {} -- <server argv>",
        cases_dir(&args.output).display()
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
