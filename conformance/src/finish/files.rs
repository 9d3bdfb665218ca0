//! Writing the run's JSON and HTML reports (`--json`, `--html`), and `conformance report`:
//! one HTML page from JSON reports written earlier (CI artifacts of several targets,
//! versions and transports).

use crate::finish::wishes::{Finished, Wishes};
use conformance::report::build::{run_report, RunFacts};
use conformance::report::gate::Verdict;
use conformance::report::json::RunReport;
use conformance::report::{html, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Writes the JSON and HTML reports the wishes name; false if one could not be written
/// (said on stderr).
pub fn write(run: &Finished, verdicts: &[Verdict], wishes: &Wishes) -> bool {
    let elapsed = run.started.elapsed();
    let units: Vec<usize> = run.units.iter().map(|u| u.case).collect();
    let facts = RunFacts {
        cases: run.cases,
        units: &units,
        results: run.results,
        verdicts,
        target: run.target,
        transport: run.transport,
        protocol_version: run.choice.as_str(),
        spoken: &run.spoken.versions,
        started_at: std::time::SystemTime::now() - elapsed,
        duration: elapsed,
        identity: run.spoken.identity.as_ref(),
        untestable: run.spoken.untestable.as_ref().map(|u| u.why.join("; ")),
    };
    let report = run_report(&facts);
    let source = wishes
        .json
        .map_or_else(|| "this run".to_string(), |p| file_name(p));
    write_report(
        report,
        wishes.json.map(PathBuf::as_path),
        wishes.html.map(PathBuf::as_path),
        source,
    )
}

/// Writes `report` as JSON to `json` and as an HTML page to `html` (named `source` on the
/// page), each when given: a live run's and a checked trace's reports alike. False if one
/// could not be written (said on stderr).
pub fn write_report(
    report: RunReport,
    json: Option<&Path>,
    html: Option<&Path>,
    source: String,
) -> bool {
    let mut ok = true;
    if let Some(path) = json {
        let written = serde_json::to_string_pretty(&report)
            .map_err(|e| e.to_string())
            .and_then(|text| std::fs::write(path, text + "\n").map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!(
                "error: cannot write the JSON report {}: {e}",
                path.display()
            );
            ok = false;
        }
    }
    if let Some(path) = html {
        let written = html::render(vec![(source, report)])
            .map_err(|e| e.to_string())
            .and_then(|page| std::fs::write(path, page).map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!(
                "error: cannot write the HTML report {}: {e}",
                path.display()
            );
            ok = false;
        }
    }
    ok
}

/// `conformance report A.json B.json … -o FILE.html`.
pub fn merge(inputs: &[PathBuf], output: &Path) -> ExitCode {
    let mut reports = vec![];
    for path in inputs {
        match json::read(path) {
            Ok(report) => reports.push((file_name(path), report)),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let runs = reports.len();
    match html::render(reports)
        .map_err(|e| e.to_string())
        .and_then(|page| {
            std::fs::write(output, page)
                .map_err(|e| format!("cannot write {}: {e}", output.display()))
        }) {
        Ok(()) => {
            crate::console::say(format_args!(
                "wrote {} from {runs} report{}",
                output.display(),
                if runs == 1 { "" } else { "s" }
            ));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// How a page names the report a run came from.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
