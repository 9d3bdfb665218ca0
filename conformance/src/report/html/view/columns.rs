//! The matrix's columns: a report is one column per transport (stdio first) and, for a run
//! at `--protocol-version all`, per version; each column says what ran, where and when, and
//! counts its outcomes. Apart from the rows because a column is about a run, not a case.

use super::Column;
use crate::report::json::{CaseReport, RunReport, Summary};
use crate::report::timing;
use std::collections::BTreeMap;

/// The columns of the matrix, and per column the cases in it: a report is one column per
/// transport (stdio first) and, at `all`, per version (oldest first).
pub(super) fn columns_of(reports: Vec<(String, RunReport)>) -> (Vec<Column>, Vec<Vec<CaseReport>>) {
    let mut columns: Vec<Column> = vec![];
    let mut per_column: Vec<Vec<CaseReport>> = vec![];
    for (source, report) in reports {
        for ((_, transport, version), cases) in groups_of(&report) {
            let key = format!("r{}", columns.len());
            columns.push(column(key, &source, &report, transport, version, &cases));
            per_column.push(cases);
        }
    }
    (columns, per_column)
}

/// A report's cases by (not stdio, transport, version); a run that played no case (its
/// target could not be tested) is a group too.
fn groups_of(report: &RunReport) -> BTreeMap<(bool, String, String), Vec<CaseReport>> {
    let split_versions = report.protocol_version == "all";
    let mut groups: BTreeMap<(bool, String, String), Vec<CaseReport>> = BTreeMap::new();
    for case in report.cases.iter().cloned() {
        let version = match (&case.protocol_version, split_versions) {
            (Some(v), true) => v.clone(),
            _ => report.protocol_version.clone(),
        };
        groups
            .entry((case.transport != "stdio", case.transport.clone(), version))
            .or_default()
            .push(case);
    }
    if groups.is_empty() {
        let key = (
            report.transport != "stdio",
            report.transport.clone(),
            report.protocol_version.clone(),
        );
        groups.insert(key, vec![]);
    }
    groups
}

/// The column of one group of a report's cases.
fn column(
    key: String,
    source: &str,
    report: &RunReport,
    transport: String,
    version: String,
    cases: &[CaseReport],
) -> Column {
    let mut counts = Summary::default();
    for case in cases {
        counts.add(&case.outcome);
    }
    let short_version = version.clone();
    let mut used: Vec<&str> = cases
        .iter()
        .filter(|c| c.outcome != "skip")
        .filter_map(|c| c.protocol_version.as_deref())
        .collect();
    used.sort_unstable();
    used.dedup();
    let used = used.join(", ");
    let version = if version == "auto" {
        format!("auto: {used}")
    } else {
        version
    };
    let target = match (&report.target.name, &report.target.version) {
        (Some(name), Some(version)) => format!("{name} {version}"),
        (Some(name), None) => name.clone(),
        _ => report.target.command.clone(),
    };
    Column {
        key,
        target,
        command: report.target.command.clone(),
        role: report.role.clone(),
        transport,
        version,
        short_version,
        used,
        started_at: report.started_at.clone(),
        harness: report.harness.version.clone(),
        source: source.to_string(),
        counts,
        timings: timing::of_run(cases.iter().map(|c| &c.timings)),
        error: report.error.as_ref().map(|e| e.message.clone()),
    }
}
