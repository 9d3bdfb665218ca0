//! `conformance compare`: one comparison of many targets (SDKs and servers) from their JSON
//! reports, as data. The hand-written result tables it replaces went stale as soon as a rerun
//! moved an outcome; a summary made by a pure function of the reports can be regenerated and
//! checked instead. This module holds that function ([`summarize`]) and the summary's shape
//! ([`Comparison`], written as `targets/comparison.json`); [`tables`] renders it as Markdown
//! between generated markers, [`evidence`] reads the written explanation of each finding, and
//! [`latency`] reduces the cancel timings of a run to a distribution.

pub mod evidence;
pub mod latency;
pub mod tables;

use crate::report::json::{CaseReport, RunReport, Summary};
use latency::Latency;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version of [`Comparison`]'s shape; raised when a key is renamed, removed or changes
/// meaning.
pub const COMPARISON_VERSION: u32 = 1;

/// The comparison of every target run: what `targets/comparison.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// [`COMPARISON_VERSION`].
    pub comparison_version: u32,
    /// The harness version that ran the targets (the first report's; the reports say if
    /// they differ, in [`TargetRun::harness`]).
    pub harness: String,
    /// One entry per report, in the order given.
    pub targets: Vec<TargetRun>,
}

/// Which SDK (or published server) a target is built on, as its target file says.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Sdk {
    /// The package name, e.g. `rmcp` or `@modelcontextprotocol/sdk`.
    pub name: String,
    /// Its exact version.
    pub version: String,
}

/// One report: one target file (or client adapter) run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetRun {
    /// The name the run is known by: the target file's name without `.json`, or
    /// `client-` and the adapter's folder.
    pub target: String,
    /// What it is built on.
    pub sdk: Sdk,
    /// `server` or `client`.
    pub role: String,
    /// `stdio`, `http` or `stdio+http`.
    pub transport: String,
    /// The harness version of this run.
    pub harness: String,
    /// When the run started (its report's `startedAt`): a comparison made again from the
    /// same reports is no second run.
    #[serde(default)]
    pub started_at: String,
    /// The protocol versions the target speaks (server runs).
    pub versions: Vec<String>,
    /// How many case-versions had each outcome.
    pub summary: Summary,
    /// How fast it went quiet after cancels.
    pub latency: Latency,
    /// Per case (its id without `server/` or `client/`), per protocol version (`@http` added
    /// for a client case over HTTP): the outcome.
    pub cases: BTreeMap<String, BTreeMap<String, Cell>>,
}

/// One case at one version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    /// `pass`, `warn`, `fail`, `info` or `skip`.
    pub outcome: String,
    /// For `fail` and `warn`: the requirement of the finding that decided it (the case's
    /// first requirement when no finding names one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirement: Option<String>,
}

impl Cell {
    /// A finding against the target: a failure or a warning.
    pub fn is_finding(&self) -> bool {
        matches!(self.outcome.as_str(), "fail" | "warn")
    }
}

/// One report to compare, with what the caller knows about it.
pub struct Input<'a> {
    /// The name the run is known by (see [`TargetRun::target`]).
    pub target: String,
    /// What it is built on.
    pub sdk: Sdk,
    /// The report.
    pub report: &'a RunReport,
}

/// The comparison of these reports.
pub fn summarize(inputs: &[Input]) -> Comparison {
    Comparison {
        comparison_version: COMPARISON_VERSION,
        harness: inputs
            .first()
            .map(|i| i.report.harness.version.clone())
            .unwrap_or_default(),
        targets: inputs.iter().map(target_run).collect(),
    }
}

fn target_run(input: &Input) -> TargetRun {
    let report = input.report;
    let mut cases: BTreeMap<String, BTreeMap<String, Cell>> = BTreeMap::new();
    for case in &report.cases {
        let (id, version) = case_key(case);
        cases.entry(id).or_default().insert(version, cell(case));
    }
    TargetRun {
        target: input.target.clone(),
        sdk: input.sdk.clone(),
        role: report.role.clone(),
        transport: report.transport.clone(),
        harness: report.harness.version.clone(),
        started_at: report.started_at.clone(),
        versions: report.target_versions.clone(),
        summary: report.summary,
        latency: latency::of_run(report),
        cases,
    }
}

/// `comparison`, each target's latency beside that of the same target in `previous` (an
/// earlier comparison, e.g. the committed one), when that was another run of it.
pub fn after(mut comparison: Comparison, previous: &Comparison) -> Comparison {
    for t in &mut comparison.targets {
        let before = previous
            .targets
            .iter()
            .find(|p| p.target == t.target && p.started_at != t.started_at);
        if let Some(before) = before {
            t.latency = std::mem::take(&mut t.latency).after(&before.latency);
        }
    }
    comparison
}

/// A case's name in the comparison, and the column it takes: its version, with `@http` for a
/// client case over HTTP (a client report holds both transports).
pub fn case_key(case: &CaseReport) -> (String, String) {
    let id = case
        .id
        .strip_prefix("server/")
        .or_else(|| case.id.strip_prefix("client/"))
        .unwrap_or(&case.id);
    let (id, http) = match id.strip_suffix("@http") {
        Some(id) => (id, true),
        None => (id, false),
    };
    let mut version = case
        .protocol_version
        .clone()
        .unwrap_or_else(|| "any".into());
    if http {
        version.push_str("@http");
    }
    (id.to_string(), version)
}

fn cell(case: &CaseReport) -> Cell {
    let requirement = matches!(case.outcome.as_str(), "fail" | "warn").then(|| {
        case.findings
            .iter()
            .find(|f| f.severity == case.outcome && f.requirement.contains('-'))
            .map(|f| f.requirement.clone())
            .or_else(|| case.requirements.first().cloned())
            .unwrap_or_else(|| "case".into())
    });
    Cell {
        outcome: case.outcome.clone(),
        requirement,
    }
}

#[cfg(test)]
mod tests;
