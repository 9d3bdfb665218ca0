//! The matrix's rows and cells: one row per case id, grouped by requirement family, a cell
//! per column with the case's outcome, findings, diff and stderr; the problems listed first
//! and the first of them opened. Apart from the columns because a row is about a case.

use super::{family_of, rank, Cell, Column, Diagram, DiffLine, Family, Problem, Row};
use super::{FAMILIES, OPEN_AT_LOAD};
use crate::report::json::{CaseReport, Summary};
use std::collections::BTreeMap;

/// The row a case belongs to: its id, less the `@http` that names a client case's transport.
fn row_id(case: &CaseReport) -> &str {
    match case.transport.as_str() {
        "http" => case.id.strip_suffix("@http").unwrap_or(&case.id),
        _ => &case.id,
    }
}

/// Makes text fit for an HTML id.
fn slug(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The rows (one per case id, a cell per column), the outcomes counted over every cell, and
/// the transcripts the cells' diagrams are drawn from.
pub(super) fn rows_of(
    columns: &[Column],
    per_column: Vec<Vec<CaseReport>>,
) -> (BTreeMap<String, Row>, Summary, Vec<Diagram>) {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut totals = Summary::default();
    let mut diagrams = vec![];
    for (index, cases) in per_column.into_iter().enumerate() {
        let column = &columns[index];
        for case in cases {
            let id = row_id(&case).to_string();
            let row = rows.entry(id.clone()).or_insert_with(|| Row {
                anchor: format!("case-{}", slug(&id)),
                id: id.clone(),
                intent: case.intent.clone(),
                level: case.level.clone(),
                requirements: case.requirements.clone(),
                cells: vec![],
            });
            row.cells.resize_with(columns.len(), || None);
            totals.add(&case.outcome);
            // A column holds a case once; a repeated id keeps the first.
            if row.cells[index].is_some() {
                continue;
            }
            row.cells[index] = Some(cell(column, &id, diagrams.len(), &case));
            diagrams.push(Diagram {
                target: column.target.clone(),
                role: column.role.clone(),
                findings: case
                    .findings
                    .iter()
                    .filter(|f| f.severity != "note")
                    .map(|f| (f.line, f.severity.clone(), f.requirement.clone()))
                    .collect(),
                entries: case.transcript,
                cancels: case.timings.cancels,
            });
        }
    }
    (rows, totals, diagrams)
}

/// The rows by requirement family, the families in [`FAMILIES`]' order (others after, by
/// code).
pub(super) fn families_of(rows: BTreeMap<String, Row>, columns: usize) -> Vec<Family> {
    let mut families: Vec<Family> = vec![];
    for (_, mut row) in rows {
        row.cells.resize_with(columns, || None);
        let (code, name) = family_of(&row.requirements);
        match families.iter_mut().find(|f| f.code == code) {
            Some(family) => family.rows.push(row),
            None => families.push(Family {
                code,
                name,
                rows: vec![row],
            }),
        }
    }
    let order = |code: &str| {
        FAMILIES
            .iter()
            .position(|(c, _)| *c == code)
            .unwrap_or(FAMILIES.len())
    };
    families.sort_by(|a, b| {
        order(&a.code)
            .cmp(&order(&b.code))
            .then(a.code.cmp(&b.code))
    });
    families
}

/// The failures and warnings, worst first; the first [`OPEN_AT_LOAD`] of them are opened
/// in their cells.
pub(super) fn problems_of(families: &mut [Family]) -> Vec<Problem> {
    let mut problems: Vec<Problem> = families
        .iter()
        .flat_map(|f| &f.rows)
        .flat_map(|row| row.cells.iter().flatten().map(move |cell| (row, cell)))
        .filter(|(_, cell)| rank(&cell.outcome) <= 1)
        .map(|(row, cell)| Problem {
            anchor: cell.anchor.clone(),
            outcome: cell.outcome.clone(),
            id: row.id.clone(),
            column: cell.column.clone(),
            message: cell.message.clone(),
        })
        .collect();
    problems.sort_by_key(|p| rank(&p.outcome));
    let opened: Vec<&str> = problems
        .iter()
        .take(OPEN_AT_LOAD)
        .map(|p| p.anchor.as_str())
        .collect();
    for cell in families
        .iter_mut()
        .flat_map(|f| &mut f.rows)
        .flat_map(|r| r.cells.iter_mut().flatten())
    {
        cell.open = opened.contains(&cell.anchor.as_str());
    }
    problems
}

/// A case's cell in a column.
fn cell(column: &Column, id: &str, data: usize, case: &CaseReport) -> Cell {
    let mut findings = case.findings.clone();
    findings.sort_by_key(|f| std::cmp::Reverse(severity_rank(&f.severity)));
    let diff = case
        .diff
        .as_deref()
        .unwrap_or("")
        .lines()
        .map(|line| DiffLine {
            kind: match line.as_bytes().first() {
                _ if line.starts_with("+++") || line.starts_with("---") => "head",
                Some(b'+') => "add",
                Some(b'-') => "del",
                Some(b'@') => "hunk",
                _ => "same",
            },
            text: line.to_string(),
        })
        .collect();
    let kept = case.stderr.lines.len();
    Cell {
        anchor: format!("c-{}-{}", column.key, slug(id)),
        data,
        column: format!(
            "{} · {} · {}",
            column.target, column.transport, column.short_version
        ),
        outcome: case.outcome.clone(),
        message: case.message.clone(),
        version: case.protocol_version.clone().unwrap_or_default(),
        duration_ms: case.duration_ms,
        flaky: case.flaky,
        baseline: case.baseline.clone(),
        skip_reason: case.skip_reason.clone(),
        error: case.error.clone(),
        findings,
        diff,
        stderr: case.stderr.lines[kept.saturating_sub(STDERR_SHOWN)..].to_vec(),
        stderr_total: case.stderr.total,
        shared_opening: case
            .shared_opening
            .iter()
            .enumerate()
            .map(|(i, m)| format!("{} {m}", if i == 1 { '<' } else { '>' }))
            .collect(),
        cancels: case.timings.cancels.clone(),
        startup_ms: case.timings.startup_ms,
        entries: case.transcript.len(),
        open: false,
    }
}

/// How many stderr lines a cell shows (the JSON report has all that were kept).
const STDERR_SHOWN: usize = 20;

/// How much a finding weighs, for ordering.
fn severity_rank(severity: &str) -> u8 {
    match severity {
        "fail" => 3,
        "warn" => 2,
        "info" => 1,
        _ => 0,
    }
}
