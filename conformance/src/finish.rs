//! After a run, for either role: dumps, blessing, baselines, the JSON and JUnit reports, the
//! failure explanations, the summary line and the exit code. The decisions are the library's
//! ([`conformance::report::gate`]); this prints them and writes the files.

pub mod files;
mod skips;
pub mod wishes;

pub use wishes::{Finished, Wishes};

use crate::console::say;
use conformance::baseline;
use conformance::case::Case;
use conformance::case_report::CaseResult;
use conformance::outcome::Outcome;
use conformance::report::gate::{self, BaselineState, Gate, Summary, Verdict};
use conformance::report::{dump, junit};
use conformance::suite;
use conformance::versions::{Choice, Unit};
use skips::skip_groups;
use std::process::ExitCode;

/// Writes everything the wishes name and returns the exit code (0, 1 or 2; see `--help`).
pub fn finish(run: &Finished, wishes: &Wishes) -> ExitCode {
    say(format_args!(""));
    let mut judged = Judged::default();
    let gate = Gate {
        strict: wishes.strict,
        bless: wishes.bless,
        baseline: wishes.baseline,
    };
    // A case played at several versions keeps a transcript of each.
    let mut plays = std::collections::HashMap::new();
    for unit in run.units {
        *plays.entry(unit.case).or_insert(0usize) += 1;
    }
    let per_version = plays.values().any(|n| *n > 1);
    for (unit, runs) in run.units.iter().zip(run.results) {
        let (verdict, said) = judged.judge(run, wishes, &gate, (unit, runs), per_version);
        if !said {
            show(&run.cases[unit.case], &verdict, wishes.strict);
        }
        judged.verdicts.push(verdict);
    }
    let Judged {
        verdicts,
        mut trouble,
        blessed,
    } = judged;
    let summary = Summary::of(run.results);
    trouble |= !write_files(run, &verdicts, wishes);
    say_summary(run, &verdicts, blessed);
    say(format_args!("{summary}"));
    if run.nothing_verified {
        say_nothing_verified(run);
    }
    let code = gate::exit_code(
        &verdicts,
        wishes.strict,
        trouble,
        wishes.write_baseline.is_some(),
    );
    ExitCode::from(if run.nothing_verified {
        code.max(1)
    } else {
        code
    })
}

/// The verdicts so far, and what happened on the way: trouble writing a file, cases blessed.
#[derive(Default)]
struct Judged {
    verdicts: Vec<Verdict>,
    trouble: bool,
    blessed: usize,
}

impl Judged {
    /// The verdict on one unit's runs; dumps its transcript and blesses its case as the
    /// wishes say (a blessed case passes). With it, whether it was said already: a case the
    /// target could not even start for is said here as an error, and a blessed case as
    /// blessed.
    fn judge(
        &mut self,
        run: &Finished,
        wishes: &Wishes,
        gate: &Gate,
        (unit, runs): (&Unit, &[CaseResult]),
        per_version: bool,
    ) -> (Verdict, bool) {
        let case = &run.cases[unit.case];
        let mut verdict = gate::verdict_of_runs(case, runs, gate, wishes.next);
        verdict.version = Some(unit.version.to_string());
        let Ok(report) = gate::worst(runs) else {
            say(format_args!("error: {}: {}", case.id, verdict.message));
            return (verdict, true);
        };
        if let Some(dir) = wishes.dump {
            let version = per_version.then_some(unit.version.as_str());
            if let Err(e) = dump::dump(dir, case, report, version) {
                eprintln!(
                    "error: cannot write the dump of {} into {}: {e}",
                    case.id,
                    dir.display()
                );
                self.trouble = true;
            }
        }
        if verdict.bless {
            match suite::bless(case, &report.bless) {
                Ok(()) => {
                    self.blessed += 1;
                    say(format_args!(
                        "blessed {} ({} lines); review with `git diff`",
                        case.path,
                        report.bless.len()
                    ));
                    verdict.outcome = Outcome::Pass;
                    return (verdict, true);
                }
                Err(e) => {
                    eprintln!("error: cannot rewrite {}: {e}", case.path);
                    let unblessed = Gate {
                        bless: false,
                        ..*gate
                    };
                    verdict = gate::verdict_of_runs(case, runs, &unblessed, wishes.next);
                    verdict.version = Some(unit.version.to_string());
                }
            }
        }
        (verdict, false)
    }
}

/// Says a verdict that needs a look: a stale baseline entry, a failure, a warning, a flaky
/// case (with its explanation). A clean, steady case is not said.
fn show(case: &Case, verdict: &Verdict, strict: bool) {
    if verdict.baseline == Some(BaselineState::Stale) {
        say(format_args!(
            "---- {} STALE BASELINE ENTRY ----\n{}\n",
            case.id, verdict.message
        ));
    }
    let flaky = if verdict.flaky {
        let runs: Vec<&str> = verdict.runs.iter().map(|o| o.as_str()).collect();
        format!(" FLAKY ({}; the worst counts)", runs.join(", "))
    } else {
        String::new()
    };
    let show = match (verdict.outcome, verdict.baseline) {
        (_, Some(BaselineState::ExpectedFailure)) => "FAILED (expected: listed in the baseline)",
        (Outcome::Fail, _) => "FAILED",
        (Outcome::Warn, _) if strict => "FAILED (strict)",
        (Outcome::Warn, _) => "WARNING (does not fail the run without --strict)",
        // A flaky case is shown whatever its worst run was: the summary points here.
        (Outcome::Pass, _) if verdict.flaky => "PASSED",
        (Outcome::Info, _) if verdict.flaky => "INFO",
        (Outcome::Skip, _) if verdict.flaky => "SKIPPED",
        _ => return,
    };
    say(format_args!("---- {} {show}{flaky} ----", case.id));
    say(format_args!("{}", verdict.details));
}

/// Writes the files the wishes name: the baseline, the JSON and HTML reports, the JUnit
/// report. `false` when one could not be written (each said as an error).
fn write_files(run: &Finished, verdicts: &[Verdict], wishes: &Wishes) -> bool {
    let mut ok = true;
    if let Some(path) = wishes.write_baseline {
        let ids: Vec<&str> = verdicts
            .iter()
            .filter(|v| gate::failing(v.outcome, wishes.strict))
            .map(|v| v.id.as_str())
            .collect();
        match std::fs::write(path, baseline::render(&ids, run.target)) {
            Ok(()) => say(format_args!(
                "wrote {} failing case(s) to {}",
                ids.len(),
                path.display()
            )),
            Err(e) => {
                eprintln!("error: cannot write the baseline {}: {e}", path.display());
                ok = false;
            }
        }
    }
    if wishes.json.is_some() || wishes.html.is_some() {
        ok &= files::write(run, verdicts, wishes);
    }
    if let Some(path) = wishes.junit {
        if let Err(e) = std::fs::write(path, junit::render(run.name, verdicts, wishes.strict)) {
            eprintln!(
                "error: cannot write the JUnit report {}: {e}",
                path.display()
            );
            ok = false;
        }
    }
    ok
}

/// The lines after the cases: the flaky ones counted, the skipped ones grouped by reason,
/// and what ran against what, at which versions, for how long.
fn say_summary(run: &Finished, verdicts: &[Verdict], blessed: usize) {
    let flaky = verdicts.iter().filter(|v| v.flaky).count();
    if flaky > 0 {
        say(format_args!(
            "{flaky} flaky case(s): their runs disagreed (see FLAKY above); the worst run counts"
        ));
    }
    let mut used: Vec<&str> = run
        .units
        .iter()
        .filter(|u| u.skip.is_none())
        .map(|u| u.version.as_str())
        .collect();
    used.sort_unstable();
    used.dedup();
    let protocol = match run.choice {
        Choice::Exact(v) => v.to_string(),
        other => format!("{}: {}", other.as_str(), used.join(", ")),
    };
    let groups = skip_groups(run);
    let skipped: usize = groups.iter().map(|(n, _)| n).sum();
    if skipped > 0 {
        say(format_args!(
            "skipped {skipped} case{} (`-v` lists each with its reason):",
            if skipped == 1 { "" } else { "s" }
        ));
        for (count, why) in &groups {
            say(format_args!("  {count:>3} {why}"));
        }
    }
    say(format_args!(
        "conformance: {} case{} against {} (protocol {protocol}, over {}) in {:.2}s: {} ran, {skipped} skipped{}",
        run.units.len(),
        if run.units.len() == 1 { "" } else { "s" },
        run.target,
        run.transport.replace('+', " and "),
        run.started.elapsed().as_secs_f64(),
        run.units.len() - skipped,
        if blessed > 0 {
            format!(", {blessed} blessed")
        } else {
            String::new()
        }
    ));
}

/// The error for an explicit version nothing was verified at.
fn say_nothing_verified(run: &Finished) {
    let why = if run.spoken.evidence.is_empty() {
        // A client run: no case covers the version, or the client did not speak it.
        "every case was skipped: no case covers it, or the client did not speak it (the JSON report gives each reason)".to_string()
    } else {
        format!(
            "the target does not speak it ({}): every case was skipped",
            run.spoken.evidence.join("; ")
        )
    };
    eprintln!(
        "error: nothing was verified at {}: {why}",
        run.choice.as_str(),
    );
}

/// A target that answered none of the harness's opening requests: what each saw, said once,
/// with the target's stderr; the reports get the same reason. Exits 2: nothing was tested.
pub fn untestable(run: &Finished, wishes: &Wishes) -> ExitCode {
    let Some(why) = &run.spoken.untestable else {
        return ExitCode::from(2);
    };
    let target = run.target;
    let mut text = format!(
        "error: cannot test {target}: it answered none of the harness's opening requests, so no case was played"
    );
    for line in &why.why {
        text.push_str(&format!("\n  {line}"));
    }
    let stderr = if why.stderr.is_empty() {
        format!("stderr of {target}: empty")
    } else {
        let mut shown = format!(
            "stderr of {target} (last {} of {} lines):",
            why.stderr.len(),
            why.stderr_total
        );
        for line in &why.stderr {
            shown.push_str(&format!("\n  {line}"));
        }
        shown
    };
    eprintln!(
        "{text}\n{stderr}\nnext: {}",
        advice(&why.why, run.transport)
    );
    files::write(run, &[], wishes);
    if let Some(path) = wishes.junit {
        let doc = junit::render_untestable(run.name, &why.why.join("; "), &stderr);
        if let Err(e) = std::fs::write(path, doc) {
            eprintln!(
                "error: cannot write the JUnit report {}: {e}",
                path.display()
            );
        }
    }
    ExitCode::from(2)
}

/// What to try next, from what the probes saw.
fn advice(why: &[String], transport: &str) -> &'static str {
    let said = |what: &str| why.iter().any(|w| w.contains(what));
    if said("not JSON") {
        "make the server write only MCP messages to stdout (logs and banners go to stderr)"
    } else if said("Connection refused") || said("accept connections") {
        "check that the server listens at the URL (with a command after `--`, that it takes its port from `{port}`)"
    } else if said("exited") || said("output ended") {
        "run the command by hand: it should start and wait for JSON-RPC messages on stdin (read its stderr above)"
    } else if transport == "http" {
        "check that the URL is the server's MCP endpoint (often /mcp) and that it speaks Streamable HTTP"
    } else {
        "check that the command starts an MCP server on stdio; a slow start may need a longer --startup-timeout"
    }
}
