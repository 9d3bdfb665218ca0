//! After a run, for either role: dumps, blessing, baselines, the JSON and JUnit reports, the
//! failure explanations, the summary line and the exit code. One place, so a server run and a
//! client run are read, gated and reported the same way.

use conformance::baseline::{self, Baseline};
use conformance::case::Case;
use conformance::outcome::{Outcome, Severity};
use conformance::run::Report;
use conformance::runner::{self, CaseResult, Summary, Verdict};
use conformance::{json_report, junit, report, suite};
use std::path::PathBuf;
use std::process::ExitCode;

/// What the user asked to have done with the results.
pub struct Wishes<'a> {
    pub strict: bool,
    pub bless: bool,
    pub dump: Option<&'a PathBuf>,
    pub baseline: Option<&'a Baseline>,
    pub write_baseline: Option<&'a PathBuf>,
    pub json: Option<&'a PathBuf>,
    pub junit: Option<&'a PathBuf>,
    /// The advice that ends each failure's explanation.
    pub next: &'a str,
}

/// How the run went, for the summary line and the reports.
pub struct Run<'a> {
    pub cases: &'a [Case],
    pub results: &'a [CaseResult],
    /// The target as shown to people.
    pub target: &'a str,
    /// The protocol version requested.
    pub version: &'a str,
    pub started: std::time::Instant,
}

/// Writes everything the wishes name and returns the exit code (0, 1 or 2; see `--help`).
pub fn finish(run: &Run, wishes: &Wishes) -> ExitCode {
    let mut trouble = false;
    let mut blessed = 0;
    let mut verdicts = vec![];
    println!();
    for (case, result) in run.cases.iter().zip(run.results) {
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
                trouble = true;
                println!("error: {}: {e}", case.id);
                verdict.message = e.clone();
                verdicts.push(verdict);
                continue;
            }
        };
        verdict.outcome = report.outcome;
        verdict.duration_ms = report.duration.as_millis() as u64;
        verdict.message = headline(report);
        if let Some(dir) = wishes.dump {
            if let Err(e) = runner::dump(dir, case, report) {
                eprintln!(
                    "error: cannot write the dump of {} into {}: {e}",
                    case.id,
                    dir.display()
                );
                trouble = true;
            }
        }
        if wishes.bless && !report.bless.is_empty() && only_mismatches(report) {
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
        let failing = failing(report.outcome, wishes.strict);
        if let Some(b) = wishes.baseline {
            if let Some(line) = b.line_of(&case.id) {
                if failing {
                    verdict.baseline = Some("expected-failure");
                } else if report.outcome != Outcome::Skip {
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
        if !matches!(report.outcome, Outcome::Pass | Outcome::Info) {
            verdict.details = report::explain(case, report, wishes.next);
        }
        let show = match (report.outcome, verdict.baseline) {
            (_, Some("expected-failure")) => "FAILED (expected: listed in the baseline)",
            (Outcome::Fail, _) => "FAILED",
            (Outcome::Warn, _) if wishes.strict => "FAILED (strict)",
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
    let summary = Summary::of(run.results);
    let unexpected = verdicts
        .iter()
        .filter(|v| {
            (failing(v.outcome, wishes.strict) && v.baseline.is_none())
                || v.baseline == Some("stale")
        })
        .count();
    if let Some(path) = wishes.write_baseline {
        let ids: Vec<&str> = verdicts
            .iter()
            .filter(|v| failing(v.outcome, wishes.strict))
            .map(|v| v.id.as_str())
            .collect();
        match std::fs::write(path, baseline::render(&ids, run.target)) {
            Ok(()) => println!("wrote {} failing case(s) to {}", ids.len(), path.display()),
            Err(e) => {
                eprintln!("error: cannot write the baseline {}: {e}", path.display());
                trouble = true;
            }
        }
    }
    if let Some(path) = wishes.json {
        let doc = json_report::render(run.target, run.version, &verdicts, &summary);
        if let Err(e) = std::fs::write(path, format!("{doc:#}\n")) {
            eprintln!(
                "error: cannot write the JSON report {}: {e}",
                path.display()
            );
            trouble = true;
        }
    }
    if let Some(path) = wishes.junit {
        if let Err(e) = std::fs::write(path, junit::render(run.target, &verdicts, wishes.strict)) {
            eprintln!(
                "error: cannot write the JUnit report {}: {e}",
                path.display()
            );
            trouble = true;
        }
    }
    println!(
        "conformance: {} case{} against {} (protocol {}) in {:.2}s{}",
        run.cases.len(),
        if run.cases.len() == 1 { "" } else { "s" },
        run.target,
        run.version,
        run.started.elapsed().as_secs_f64(),
        if blessed > 0 {
            format!(", {blessed} blessed")
        } else {
            String::new()
        }
    );
    println!("{summary}");
    if trouble {
        ExitCode::from(2)
    } else if unexpected > 0 && wishes.write_baseline.is_none() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn failing(outcome: Outcome, strict: bool) -> bool {
    outcome == Outcome::Fail || (strict && outcome == Outcome::Warn)
}

/// The one line that says why a case did not pass.
fn headline(report: &Report) -> String {
    if let Some(reason) = &report.skip_reason {
        return reason.clone();
    }
    report
        .findings
        .iter()
        .max_by_key(|f| f.severity)
        .filter(|f| f.severity > Severity::Note)
        .map(|f| format!("line {}: [{}] {}", f.line, f.requirement, f.message))
        .or_else(|| report.findings.first().map(|f| f.message.clone()))
        .unwrap_or_default()
}

/// Blessing only rewrites what differed; hangs, exits and broken rules are never blessed.
fn only_mismatches(report: &Report) -> bool {
    report
        .findings
        .iter()
        .filter(|f| f.severity > Severity::Note)
        .all(|f| f.requirement == "case" && f.message.starts_with("the message differs"))
}
