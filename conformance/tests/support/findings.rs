//! Findings as the check tests compare them: the judged ones as (severity, requirement,
//! trace line), so a test states a verdict in one line.

use conformance::outcome::{Finding, Severity};

/// The findings above a note: (severity, requirement, trace line).
pub fn judged(findings: &[Finding]) -> Vec<(Severity, &'static str, usize)> {
    findings
        .iter()
        .filter(|f| f.severity > Severity::Note)
        .map(|f| (f.severity, f.requirement(), f.line))
        .collect()
}
