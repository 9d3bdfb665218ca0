//! `--dump DIR`: every case's transcript as a file that reads like a case, so it can be
//! studied after a red CI run or seed a new case.

use crate::case::{Case, Role};
use crate::case_report::Report;
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
    if let Some(deviation) = &case.deviation {
        out.push_str(&format!(
            "# deviation (on purpose; everything else is valid for the session): {deviation}\n"
        ));
    }
    if let Some((request, rest)) = report.shared_opening.split_first() {
        let version = report.version.as_deref().unwrap_or("none agreed");
        out.push_str(&format!(
            "# session: opened by an earlier case on the shared target, at {version}; this transcript goes on in it. The opening:\n#   > {request}\n"
        ));
        for (i, message) in rest.iter().enumerate() {
            let arrow = if i == 0 { '<' } else { '>' };
            out.push_str(&format!("#   {arrow} {message}\n"));
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_case_in_a_shared_session_says_how_it_was_opened() {
        let source = "# intent\n@requirement RPC-01\n@level must\n! barrier\n";
        let case = crate::case::parse("server/x", "x.mcpt", source).expect("a case");
        let mut report = Report::skipped(String::new(), "srv".into());
        report.version = Some("2025-11-25".into());
        assert!(!dump_text(&case, &report).contains("# session:"));
        report.shared_opening = vec![
            json!({"id": "init", "method": "initialize"}),
            json!({"id": "init", "result": {}}),
            json!({"method": "notifications/initialized"}),
        ];
        let text = dump_text(&case, &report);
        assert!(
            text.contains(
                "# session: opened by an earlier case on the shared target, at 2025-11-25"
            ),
            "{text}"
        );
        assert!(text.contains("#   > {\"id\":\"init\",\"method\":\"initialize\"}\n#   < {\"id\":\"init\",\"result\":{}}\n#   > {\"method\":\"notifications/initialized\"}\n"), "{text}");
    }
}
