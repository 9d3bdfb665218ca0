//! A run's results as its JSON report ([`RunReport`]): the verdicts the gate decided, and
//! from each case's report its findings, diff, stderr, transcript (with the cancels marked)
//! and timings; plus who the target said it was and when the run took place.

use super::gate::Verdict;
use super::json::{
    CaseReport, FindingReport, Harness, RunReport, Stderr, StderrLine, Summary, Target,
    TranscriptEntry, SCHEMA_VERSION,
};
use super::timeline::{self, Mark};
use super::timing::{self, ms};
use crate::case::{Case, Role};
use crate::case_report::CaseResult;
use crate::case_report::Report;
use crate::era::{Era, ProtocolVersion, META_CLIENT_INFO, META_SERVER_INFO};
use crate::outcome::{Outcome, Severity};
use crate::transcript::{Direction, Entry};
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

/// What a finished run holds, as the JSON report needs it. `units`, `results` and
/// `verdicts` go together, one of each per case and version (the verdict says the version).
pub struct RunFacts<'a> {
    /// The cases of the run.
    pub cases: &'a [Case],
    /// What ran: for each unit (a case at a version), the index of its case.
    pub units: &'a [usize],
    /// The results of each unit, one per repeat.
    pub results: &'a [Vec<CaseResult>],
    /// The verdict of each unit, after the baseline.
    pub verdicts: &'a [Verdict],
    /// The target as the console shows it.
    pub target: &'a str,
    /// The transport(s) of the run.
    pub transport: &'a str,
    /// The protocol version(s) asked for.
    pub protocol_version: &'a str,
    /// The versions the target speaks.
    pub spoken: &'a [ProtocolVersion],
    /// When the run started.
    pub started_at: SystemTime,
    /// How long it took.
    pub duration: Duration,
    /// Who the target said it is, when a probe asked (server runs).
    pub identity: Option<&'a crate::versions::Identity>,
    /// Why no case was played, when the target could not be tested at all.
    pub untestable: Option<String>,
}

/// The JSON report of a run.
pub fn run_report(run: &RunFacts) -> RunReport {
    let role = run.cases.first().map_or(Role::Server, |c| c.role);
    let mut cases = vec![];
    let mut identity = None;
    for ((&unit, runs), verdict) in run.units.iter().zip(run.results).zip(run.verdicts) {
        let case = &run.cases[unit];
        let report = super::gate::worst(runs).as_ref().ok();
        if identity.is_none() {
            identity = report.and_then(|r| implementation(role, &r.transcript));
        }
        let transport = match (role, case.transports.first()) {
            (Role::Client, Some(kind)) => kind.as_str().to_string(),
            _ => run.transport.to_string(),
        };
        cases.push(case_report(case, verdict, report, transport));
    }
    let (name, version) = match run.identity {
        Some(id) => (Some(id.name.clone()), Some(id.version.clone())),
        None => {
            let (name, version) = identity.unzip();
            (name, version.flatten())
        }
    };
    let mut summary = Summary::default();
    for case in &cases {
        summary.add(&case.outcome);
    }
    RunReport {
        schema_version: SCHEMA_VERSION,
        harness: Harness {
            name: "conformance".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        started_at: humantime::format_rfc3339_seconds(run.started_at).to_string(),
        duration_ms: run.duration.as_millis() as u64,
        role: match role {
            Role::Server => "server",
            Role::Client => "client",
        }
        .into(),
        target: Target {
            command: run.target.to_string(),
            name,
            version,
        },
        transport: run.transport.to_string(),
        protocol_version: run.protocol_version.to_string(),
        target_versions: run.spoken.iter().map(|v| v.to_string()).collect(),
        summary,
        timings: timing::of_run(cases.iter().map(|c| &c.timings)),
        cases,
        error: run.untestable.clone().map(|message| super::json::RunError {
            kind: "untestable".into(),
            message,
        }),
    }
}

/// One case's entry in the report: the verdict, and what its report holds.
fn case_report(
    case: &Case,
    verdict: &Verdict,
    report: Option<&Report>,
    transport: String,
) -> CaseReport {
    let out = verdict_entry(case, verdict, transport);
    match report {
        Some(report) => with_report(out, case, report),
        None => CaseReport {
            error: Some(verdict.message.clone()),
            ..out
        },
    }
}

/// A case's entry as its verdict gives it, with nothing from a report yet.
fn verdict_entry(case: &Case, verdict: &Verdict, transport: String) -> CaseReport {
    let era = verdict
        .version
        .as_deref()
        .and_then(ProtocolVersion::parse)
        .map(|v| match v.era() {
            Era::Handshake => "handshake".to_string(),
            Era::Stateless => "stateless".to_string(),
        });
    CaseReport {
        id: verdict.id.clone(),
        intent: case.intent.clone(),
        outcome: verdict.outcome.as_str().into(),
        level: verdict.level.into(),
        requirements: verdict.requirements.clone(),
        message: verdict.message.clone(),
        duration_ms: verdict.duration_ms,
        baseline: verdict.baseline.map(|b| b.as_str().to_string()),
        runs: verdict
            .runs
            .iter()
            .map(|o| o.as_str().to_string())
            .collect(),
        flaky: verdict.flaky,
        protocol_version: verdict.version.clone(),
        era,
        transport,
        skip_reason: None,
        error: None,
        findings: vec![],
        diff: None,
        stderr: Stderr::default(),
        transcript: vec![],
        timings: Default::default(),
        placement: None,
        shared_opening: vec![],
        deviation: case.deviation.clone(),
    }
}

/// The entry completed from the case's report: skip reason, placement, findings, diff,
/// stderr, transcript and timings.
fn with_report(mut out: CaseReport, case: &Case, report: &Report) -> CaseReport {
    out.skip_reason = report.skip_reason.clone();
    if case.role == crate::case::Role::Server && report.transcript.len() + report.findings.len() > 0
    {
        out.placement = Some(placement(&report.placement));
    }
    out.shared_opening = report.shared_opening.clone();
    out.findings = report
        .findings
        .iter()
        .map(|f| FindingReport {
            severity: severity(f.severity).into(),
            requirement: f.requirement().into(),
            line: f.line,
            message: f.message.clone(),
            times: f.times,
        })
        .collect();
    if report.outcome != Outcome::Skip {
        let diff = super::diff(case, report);
        out.diff = (!diff.is_empty()).then_some(diff);
    }
    out.stderr = Stderr {
        lines: report
            .log
            .lines
            .iter()
            .map(|(at, text)| StderrLine {
                at_ms: ms(*at),
                text: text.clone(),
            })
            .collect(),
        total: report.log.total,
    };
    let cancels = timeline::cancels(&report.transcript);
    let marks = timeline::marks(&report.transcript, &cancels);
    out.transcript = entries(&report.transcript, &marks);
    out.timings = timing::of_case(&report.transcript, &cancels, &report.witnessed);
    out
}

/// Where a case ran, as the report gives it.
fn placement(placement: &crate::case_report::Placement) -> super::json::PlacementReport {
    let process = placement.process();
    super::json::PlacementReport {
        mode: placement.mode().into(),
        process: process.map(|p| p.ordinal),
        pid: process.map(|p| p.pid),
        shared_outcome: match placement {
            crate::case_report::Placement::Rerun(_, outcome) => Some(outcome.as_str().into()),
            _ => None,
        },
    }
}

/// The transcript as the report gives it.
fn entries(transcript: &[Entry], marks: &HashMap<usize, Mark>) -> Vec<TranscriptEntry> {
    transcript
        .iter()
        .enumerate()
        .map(|(i, e)| TranscriptEntry {
            at_ms: ms(e.at),
            direction: match e.direction {
                Direction::Sent => "sent",
                Direction::Received => "received",
                Direction::Transport => "transport",
            }
            .into(),
            channel: e.channel.to_string(),
            session: e.session,
            internal: e.internal && e.direction != Direction::Transport,
            stamped: e.stamped,
            line: e.consumed_by.filter(|l| *l > 0),
            mark: marks.get(&i).map(|m| m.as_str().to_string()),
            text: e.text.clone(),
        })
        .collect()
}

/// The word the report uses for a severity.
fn severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Note => "note",
        Severity::Info => "info",
        Severity::Warn => "warn",
        Severity::Fail => "fail",
    }
}

/// The name and version the target gave in its opening: a server's `serverInfo` (in the
/// answer to `initialize`, or the stateless era's `_meta` on its results), a client's
/// `clientInfo` (in its `initialize`, or its requests' `_meta`).
pub fn implementation(role: Role, transcript: &[Entry]) -> Option<(String, Option<String>)> {
    transcript
        .iter()
        .filter(|e| e.direction == Direction::Received)
        .filter_map(|e| e.value.as_ref())
        .find_map(|v| {
            let info = match role {
                Role::Server => v
                    .pointer("/result/serverInfo")
                    .or_else(|| v.get("result")?.get("_meta")?.get(META_SERVER_INFO)),
                Role::Client => v
                    .pointer("/params/clientInfo")
                    .filter(|_| v.get("method") == Some(&Value::from("initialize")))
                    .or_else(|| v.get("params")?.get("_meta")?.get(META_CLIENT_INFO)),
            }?;
            let name = info.get("name")?.as_str()?.to_string();
            let version = info
                .get("version")
                .and_then(Value::as_str)
                .map(String::from);
            Some((name, version))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::timeline::tests::transcript;
    use serde_json::json;

    #[test]
    fn the_target_names_itself_in_its_opening() {
        let server = transcript(&[
            (
                0,
                Direction::Sent,
                json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{}}),
            ),
            (
                9,
                Direction::Received,
                json!({"jsonrpc":"2.0","id":"init","result":{"protocolVersion":"2025-11-25","serverInfo":{"name":"srv","version":"1.2"}}}),
            ),
        ]);
        assert_eq!(
            implementation(Role::Server, &server),
            Some(("srv".into(), Some("1.2".into())))
        );
        let stateless = transcript(&[(
            9,
            Direction::Received,
            json!({"jsonrpc":"2.0","id":"d","result":{"_meta":{META_SERVER_INFO:{"name":"s2"}}}}),
        )]);
        assert_eq!(
            implementation(Role::Server, &stateless),
            Some(("s2".into(), None))
        );
        let client = transcript(&[(
            1,
            Direction::Received,
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"cli","version":"3"}}}),
        )]);
        assert_eq!(
            implementation(Role::Client, &client),
            Some(("cli".into(), Some("3".into())))
        );
        assert_eq!(implementation(Role::Server, &client), None);
    }
}
