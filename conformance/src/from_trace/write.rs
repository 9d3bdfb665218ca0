//! The one file-level step of drafting, shared by `conformance case from-trace` and
//! `conformance record --case`: read the trace, draft, render, write the case.

use super::{draft, render, Draft};
use crate::trace::Trace;
use std::io::Write as _;
use std::path::Path;

/// Drafts the case at `case` from the trace at `trace`: with `overwrite` anew whatever was
/// there, else only if it does not exist. The error is a sentence naming the file to blame
/// (`path:line` where a line is).
pub fn draft_file(trace: &Path, case: &Path, overwrite: bool) -> Result<Draft, String> {
    if case.extension().is_none_or(|e| e != "mcpt") {
        return Err(format!(
            "{}: a case file ends in `.mcpt`; name one such as cases/server/my-bug.mcpt",
            case.display()
        ));
    }
    if !overwrite && case.exists() {
        return Err(format!(
            "{} exists; give --force to overwrite it, or another path",
            case.display()
        ));
    }
    let read = Trace::read(trace).map_err(|e| e.to_string())?;
    let drafted = draft(&read).map_err(|e| e.to_string())?;
    let text = render(&drafted, case).map_err(|e| e.to_string())?;
    let shown = case.display();
    // `-o cases/server/my-bug.mcpt` in a repository without that folder yet: make it.
    if let Some(folder) = case.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder)
            .map_err(|e| format!("cannot make the folder {}: {e}", folder.display()))?;
    }
    let written = if overwrite {
        std::fs::write(case, &text)
    } else {
        // Only if it still does not exist: another session may have written it meanwhile.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(case)
            .and_then(|mut file| file.write_all(text.as_bytes()))
    };
    written.map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            format!("{shown} appeared meanwhile; give --force to overwrite it")
        }
        _ => format!("cannot write {shown}: {e}"),
    })?;
    Ok(drafted)
}
