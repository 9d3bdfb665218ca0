//! Failure text for a person reading a red CI run: where, which requirement, what differed
//! (a unified diff of the expected and the actual transcript), what the target logged, and
//! what to do next.
//!
//! - [`gate`]: what a run's results mean for CI (pass, fail, baseline, blessing, exit code);
//! - [`json`], [`junit`]: the machine-readable reports;
//! - [`dump`]: transcripts as files.

pub mod dump;
pub mod gate;
pub mod json;
pub mod junit;

use crate::case::Case;
use crate::engine::Report;
use crate::outcome::{Finding, Outcome, Severity};
use crate::pattern::canonical;
use crate::transcript::{Direction, Entry};
use crate::transport::Channel;
use similar::TextDiff;
use std::fmt::Write as _;

/// How many stderr lines a failure shows.
const STDERR_TAIL: usize = 12;

/// The actual side of the diff: the case's own messages as exchanged, each received message
/// normalised toward the pattern it was compared with. Harness messages (handshake, barrier,
/// witness) and notifications no step looked at are left out; the dump has everything.
pub fn actual_lines(report: &Report) -> Vec<String> {
    in_case_order(&report.transcript)
        .into_iter()
        .filter(|e| !e.internal)
        .filter_map(|e| match e.direction {
            Direction::Sent => Some(format!("> {}", e.shown.as_ref().unwrap_or(&e.text))),
            Direction::Transport => None,
            Direction::Received => {
                let is_notification = e.value.as_ref().is_some_and(|v| v.get("method").is_some());
                if is_notification && e.consumed_by.is_none_or(|l| l == 0) {
                    return None;
                }
                let text = e.shown.clone().unwrap_or_else(|| {
                    let text = e
                        .value
                        .as_ref()
                        .map(canonical)
                        .unwrap_or_else(|| e.text.clone());
                    match e.channel {
                        Channel::Stdio => text,
                        channel => format!("{channel} {text}"),
                    }
                });
                Some(format!("< {text}"))
            }
        })
        .collect()
}

/// The transcript in the order the diff shows it: as it happened, except that messages that
/// arrived together on different HTTP streams (between two lines the harness sent) are put in
/// the order of the case lines that took them, since across streams the order of arrival
/// means nothing. On stdio the order of arrival is the order of writing, and is kept.
fn in_case_order(transcript: &[Entry]) -> Vec<&Entry> {
    fn flush<'a>(run: &mut Vec<&'a Entry>, out: &mut Vec<&'a Entry>) {
        run.sort_by_key(|e| e.consumed_by.filter(|l| *l > 0).unwrap_or(usize::MAX));
        out.append(run);
    }
    let mut out: Vec<&Entry> = Vec::with_capacity(transcript.len());
    let mut run: Vec<&Entry> = vec![];
    for entry in transcript {
        let unordered = entry.direction != Direction::Sent && entry.channel != Channel::Stdio;
        if unordered {
            run.push(entry);
        } else {
            flush(&mut run, &mut out);
            out.push(entry);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// The unified diff of expected against actual.
pub fn diff(case: &Case, report: &Report) -> String {
    let expected = report.expected.join("\n") + "\n";
    let mut actual = actual_lines(report);
    if case.role == crate::case::Role::Client {
        // The arrows keep the protocol's direction: the harness, as server, writes `<` lines.
        for line in &mut actual {
            let swapped = match line.as_bytes().first() {
                Some(b'>') => format!("<{}", &line[1..]),
                Some(b'<') => format!(">{}", &line[1..]),
                _ => continue,
            };
            *line = swapped;
        }
    }
    let actual = actual.join("\n") + "\n";
    if expected == actual {
        return String::new();
    }
    TextDiff::from_lines(&expected, &actual)
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("expected: {}", case.path),
            &format!("actual: {}", report.target),
        )
        .to_string()
}

/// The full explanation of a case that did not pass. `next` is the advice that ends it.
pub fn explain(case: &Case, report: &Report, next: &str) -> String {
    let mut out = String::new();
    if report.outcome == Outcome::Skip {
        let _ = writeln!(
            out,
            "skipped: {}",
            report.skip_reason.as_deref().unwrap_or("not applicable")
        );
        return out;
    }
    let mut findings: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity > Severity::Note)
        .collect();
    findings.sort_by_key(|f| (std::cmp::Reverse(f.severity), f.line));
    // The same finding many times over (progress after a cancel, say) is listed once.
    let same = |a: &Finding, b: &Finding| {
        a.severity == b.severity && a.kind == b.kind && a.message == b.message
    };
    let mut listed: Vec<&Finding> = vec![];
    for f in findings {
        if listed.iter().any(|g| same(g, f)) {
            continue;
        }
        listed.push(f);
        let times: u32 = report
            .findings
            .iter()
            .filter(|g| same(g, f))
            .map(|g| g.times)
            .sum();
        let again = if times > 1 {
            format!(" ({times} times)")
        } else {
            String::new()
        };
        let severity = match f.severity {
            Severity::Fail => "fail",
            Severity::Warn => "warn",
            _ => "info",
        };
        let requirement = if f.kind.is_expectation() {
            case.requirements.join(" ")
        } else {
            f.requirement().to_string()
        };
        let _ = writeln!(
            out,
            "{}:{}: {severity} [{requirement}] {}{again}",
            case.path, f.line, f.message
        );
    }
    let _ = writeln!(
        out,
        "case: {} (level {}, {})",
        case.intent,
        case.level.as_str(),
        case.requirements.join(" ")
    );
    let notes: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Note)
        .collect();
    for f in notes {
        let _ = writeln!(out, "note: {}:{}: {}", case.path, f.line, f.message);
    }
    let diff = diff(case, report);
    if !diff.is_empty() {
        out.push_str(&diff);
    }
    let tail = report.log.tail(STDERR_TAIL);
    if tail.is_empty() {
        let _ = writeln!(out, "stderr of {}: empty", report.target);
    } else {
        let _ = writeln!(
            out,
            "stderr of {} (last {} of {} lines):",
            report.target,
            tail.len(),
            report.log.total
        );
        for line in tail {
            let _ = writeln!(out, "  | {line}");
        }
    }
    let _ = writeln!(out, "next: {next}");
    out
}
