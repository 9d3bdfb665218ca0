//! `conformance check TRACE`: reads a trace, judges it (`conformance::check`), and says the
//! verdicts the way a live run does: a line per side, the explanation of each side that did
//! not pass (findings at `TRACE:LINE`), the notes, and the JSON, JUnit and HTML reports. The
//! exit code is a live run's: 1 for a broken MUST (a SHOULD too with `--strict`), 2 for a
//! trace that cannot be read or a report that cannot be written.

use crate::args::CheckArgs;
use crate::console::{paint, say};
use conformance::case::Case;
use conformance::case_report::{CaseResult, Report};
use conformance::check::{self, sides};
use conformance::outcome::Severity;
use conformance::report::build::{run_report, RunFacts};
use conformance::report::gate::{self, Gate, Verdict};
use conformance::report::{actual_lines, junit};
use conformance::trace::{Trace, Transport};
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

/// The advice that ends the explanation of a side that did not pass.
const NEXT: &str = "each finding names the trace line of the message it is about; `--html FILE` draws the session with the findings on it";

/// Runs `conformance check`.
pub fn check(args: &CheckArgs) -> ExitCode {
    let trace = match Trace::read(&args.trace) {
        Ok(trace) => trace,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(line) = trace.cut {
        say(format_args!(
            "note: {}:{line}: the last line was cut short (the recording ended while it was written); everything before it is judged",
            trace.path.display()
        ));
    }
    let checked = check::check(&trace);
    let version = checked.version();
    let mut pairs = sides::sides(&trace, checked);
    let gate = Gate {
        strict: args.strict,
        ..Gate::default()
    };
    let mut verdicts = vec![];
    for (case, report) in &mut pairs {
        // A trace has no expected side: what is shown is what was recorded.
        report.expected = actual_lines(report);
        let result: CaseResult = Ok(report.clone());
        let verdict = gate::verdict(case, &result, &gate, NEXT);
        show(case, report, &verdict, args.strict);
        verdicts.push(verdict);
    }
    let transport = match trace.header.transport {
        Transport::Stdio => "stdio",
        Transport::Http => "http",
    };
    let ok = write_files(
        args,
        &trace,
        &pairs,
        &verdicts,
        transport,
        version.as_deref(),
    );
    say(format_args!(
        "conformance check: {} ({} events over {transport}, protocol {}, {:.1} s recorded): server {}, client {}",
        trace.path.display(),
        trace.events.len(),
        version.as_deref().unwrap_or("unknown"),
        trace.events.last().map_or(0.0, |e| e.at.as_secs_f64()),
        verdicts[0].outcome,
        verdicts[1].outcome,
    ));
    ExitCode::from(gate::exit_code(&verdicts, args.strict, !ok, false))
}

/// One side's line, its explanation when it did not pass, else its notes.
fn show(case: &Case, report: &Report, verdict: &Verdict, strict: bool) {
    let judged = report
        .findings
        .iter()
        .filter(|f| f.severity > Severity::Note)
        .count();
    let notes = report.findings.len() - judged;
    say(format_args!(
        "{} [{:<6}] {} ({judged} finding{}, {notes} note{})",
        paint(verdict.outcome.as_str(), 5),
        case.level.as_str(),
        case.id,
        if judged == 1 { "" } else { "s" },
        if notes == 1 { "" } else { "s" },
    ));
    if !verdict.details.is_empty() {
        let word = if gate::failing(verdict.outcome, strict) {
            "FAILED"
        } else {
            "WARNING (does not fail the check without --strict)"
        };
        say(format_args!("---- {} {word} ----", case.id));
        say(format_args!("{}", verdict.details));
        return;
    }
    for f in report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Note)
    {
        say(format_args!(
            "  note: {}:{}: {}",
            case.path, f.line, f.message
        ));
    }
}

/// Writes the reports `args` name; false if one could not be written (said on stderr).
fn write_files(
    args: &CheckArgs,
    trace: &Trace,
    pairs: &[(Case, Report)],
    verdicts: &[Verdict],
    transport: &str,
    version: Option<&str>,
) -> bool {
    let name = sides::stem(&trace.path);
    let mut ok = true;
    if let Some(path) = &args.junit {
        ok &= write(path, "JUnit report", || {
            Ok(junit::render(&name, verdicts, args.strict))
        });
    }
    if args.json.is_none() && args.html.is_none() {
        return ok;
    }
    let cases: Vec<Case> = pairs.iter().map(|(c, _)| c.clone()).collect();
    let results: Vec<Vec<CaseResult>> = pairs.iter().map(|(_, r)| vec![Ok(r.clone())]).collect();
    let version = version.unwrap_or("unknown");
    let units: Vec<usize> = (0..cases.len()).collect();
    let recorded = trace.events.last().map(|e| e.at).unwrap_or_default();
    let target = pairs[0].1.target.clone();
    let mut report = run_report(&RunFacts {
        cases: &cases,
        units: &units,
        results: &results,
        verdicts,
        target: &target,
        transport,
        protocol_version: version,
        spoken: &[],
        started_at: SystemTime::now(),
        duration: recorded,
        identity: None,
        untestable: None,
    });
    // Neither side is the harness: the diagram's lanes are the recorded client and server.
    report.role = "trace".into();
    let source = args.json.as_deref().map_or_else(
        || trace.path.display().to_string(),
        |p| p.display().to_string(),
    );
    ok & crate::finish::files::write_report(
        report,
        args.json.as_deref(),
        args.html.as_deref(),
        source,
    )
}

/// Writes what `make` makes to `path`; false (said on stderr) when it cannot.
fn write(path: &Path, what: &str, make: impl FnOnce() -> Result<String, String>) -> bool {
    match make().and_then(|text| std::fs::write(path, text).map_err(|e| e.to_string())) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("error: cannot write the {what} {}: {e}", path.display());
            false
        }
    }
}
