//! Failure text for a person reading a red CI run: where, which requirement, what differed
//! (a unified diff of the expected and the actual transcript), what the target logged, and
//! what to do next.
//!
//! - [`gate`]: what a run's results mean for CI (pass, fail, baseline, blessing, exit code);
//! - [`json`], [`junit`]: the machine-readable reports ([`build`] makes the JSON one);
//! - [`html`]: the page a person reads, from one or several JSON reports;
//! - [`timeline`], [`timing`]: cancels, proofs and timings read from a transcript;
//! - [`dump`]: transcripts as files.

pub mod build;
pub mod dump;
pub mod gate;
pub mod html;
pub mod json;
pub mod junit;
pub mod timeline;
pub mod timing;

use crate::case::Case;
use crate::case_report::Report;
use crate::outcome::{Finding, FindingKind, Outcome, Severity};
use crate::pattern::canonical;
use crate::transcript::{Direction, Entry};
use crate::transport::Channel;
use similar::TextDiff;
use std::collections::hash_map::Entry as Slot;
use std::collections::HashMap;
use std::fmt::Write as _;

/// How many stderr lines a failure shows.
const STDERR_TAIL: usize = 12;
/// How many different findings of one requirement (and severity) a failure lists; the rest
/// are counted in one line.
pub const FINDINGS_SHOWN: usize = 10;
/// How many lines of the diff a failure shows; the dump (`--dump`) has the whole transcript.
const DIFF_LINES: usize = 200;
/// How long computing the diff may take; past it, the diff is coarser (whole runs of lines).
const DIFF_TIME: std::time::Duration = std::time::Duration::from_millis(500);

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
    let diff = TextDiff::configure()
        .timeout(DIFF_TIME)
        .diff_lines(&expected, &actual)
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("expected: {}", case.path),
            &format!("actual: {}", report.target),
        )
        .to_string();
    let lines = diff.lines().count();
    if lines <= DIFF_LINES {
        return diff;
    }
    let mut cut: String = diff
        .lines()
        .take(DIFF_LINES)
        .flat_map(|l| [l, "\n"])
        .collect();
    let _ = writeln!(
        cut,
        "… and {} more lines of the diff (--dump DIR keeps the whole transcript)",
        lines - DIFF_LINES
    );
    cut
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
    let mut judged: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.severity > Severity::Note)
        .collect();
    judged.sort_by_key(|f| (std::cmp::Reverse(f.severity), f.line));
    list(&mut out, case, judged);
    let _ = writeln!(
        out,
        "case: {} (level {}, {})",
        case.intent,
        case.level.as_str(),
        case.requirements.join(" ")
    );
    let notes = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Note)
        .collect();
    list(&mut out, case, notes);
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

/// Lists findings in the order given: the same finding many times over (progress after a
/// cancel, say) once, with its count; past [`FINDINGS_SHOWN`] different ones of a requirement
/// and severity, the rest in one line that counts them.
fn list(out: &mut String, case: &Case, findings: Vec<&Finding>) {
    let mut groups: Vec<(&Finding, u64)> = vec![];
    let mut index: HashMap<(Severity, FindingKind, &str), usize> = HashMap::new();
    for f in findings {
        match index.entry((f.severity, f.kind, f.message.as_str())) {
            Slot::Occupied(at) => groups[*at.get()].1 += u64::from(f.times),
            Slot::Vacant(at) => {
                at.insert(groups.len());
                groups.push((f, u64::from(f.times)));
            }
        }
    }
    let label = |f: &Finding| {
        let requirement = if f.kind.is_expectation() {
            case.requirements.join(" ")
        } else {
            f.requirement().to_string()
        };
        (f.severity, requirement)
    };
    // Per label: how many different findings, how many of them were not listed, and how many
    // times those happened.
    let mut counts: HashMap<(Severity, String), (usize, usize, u64)> = HashMap::new();
    let mut order = vec![];
    for (f, times) in groups {
        let label = label(f);
        let count = counts.entry(label.clone()).or_insert_with(|| {
            order.push(label.clone());
            (0, 0, 0)
        });
        count.0 += 1;
        if count.0 > FINDINGS_SHOWN {
            count.1 += 1;
            count.2 += times;
            continue;
        }
        let again = if times > 1 {
            format!(" ({times} times)")
        } else {
            String::new()
        };
        let _ = match f.severity {
            Severity::Note => writeln!(out, "note: {}:{}: {}", case.path, f.line, f.message),
            severity => writeln!(
                out,
                "{}:{}: {} [{}] {}{again}",
                case.path,
                f.line,
                word(severity),
                label.1,
                f.message
            ),
        };
    }
    for label in order {
        let (_, more, times) = counts[&label];
        if more == 0 {
            continue;
        }
        let what = match label.0 {
            Severity::Note => "note:".to_string(),
            severity => format!("{} [{}]", word(severity), label.1),
        };
        let _ = writeln!(
            out,
            "{}: {what} and {more} more different findings like these ({times} times in all; --dump DIR lists them)",
            case.path
        );
    }
}

/// The word a failure uses for a severity.
fn word(severity: Severity) -> &'static str {
    match severity {
        Severity::Fail => "fail",
        Severity::Warn => "warn",
        _ => "info",
    }
}
