//! `--dump DIR`: every case's transcript as a file that reads like a case, so it can be
//! studied after a red CI run or seed a new case.

use crate::case::{Case, Role};
use crate::engine::Report;
use crate::transcript;
use std::path::Path;

/// The text a dump file holds: the case's header as comments, then the transcript.
pub fn dump_text(case: &Case, report: &Report) -> String {
    let mut out = format!(
        "# transcript of {} against {}\n# protocol version: {}\n# outcome: {}\n",
        case.id,
        report.target,
        report.version.as_deref().unwrap_or("none agreed"),
        report.outcome
    );
    for f in &report.findings {
        out.push_str(&format!(
            "# line {}: [{}] {}\n",
            f.line,
            f.requirement(),
            f.message
        ));
    }
    out.push_str(&transcript::render(
        &report.transcript,
        &report.log,
        case.role == Role::Server,
    ));
    out
}

/// Writes `DIR/<case id>.mcpt` with the actual transcript, or `DIR/<case id>@<version>.mcpt`
/// when `version` is given (a run that plays a case at several versions keeps each).
pub fn dump(
    dir: &Path,
    case: &Case,
    report: &Report,
    version: Option<&str>,
) -> std::io::Result<()> {
    let name = match version {
        Some(version) => format!("{}@{version}.mcpt", case.id),
        None => format!("{}.mcpt", case.id),
    };
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, dump_text(case, report))
}
