//! A checked trace as the reports of two cases, one per side (`NAME/server`, `NAME/client`,
//! NAME the trace's file name), so that the console, JSON, JUnit and HTML reports of live
//! runs show it as they show any case: its outcome the worst of its findings, each finding at
//! its trace line (`trace.jsonl:14: fail [CAN-05] …`), its transcript the recorded session.

use super::Checked;
use crate::case::{Case, Level, Role, TransportKind};
use crate::case_report::{Placement, Report};
use crate::outcome::{Finding, Outcome};
use crate::trace::{Trace, Transport};
use std::path::Path;
use std::time::Duration;

/// The requirements the server's side is judged by.
pub const SERVER_REQUIREMENTS: [&str; 11] = [
    "CAN-05", "CAN-08", "PRG-02", "PRG-03", "PRG-06", "PRG-07", "RPC-01", "RPC-04", "RPC-05",
    "STD-01", "STD-03",
];
/// The requirements the client's side is judged by.
pub const CLIENT_REQUIREMENTS: [&str; 10] = [
    "CAN-01", "CAN-02", "CAN-03", "CAN-04", "CAN-12", "PRG-01", "RPC-02", "RPC-03", "LIF-10",
    "STD-04",
];

/// The two sides' cases and reports, the server's first.
pub fn sides(trace: &Trace, checked: Checked) -> Vec<(Case, Report)> {
    let name = stem(&trace.path);
    let path = trace.path.display().to_string();
    let transport = match trace.header.transport {
        Transport::Stdio => TransportKind::Stdio,
        Transport::Http => TransportKind::Http,
    };
    let target = trace.header.server.argv.as_ref().map_or_else(
        || trace.header.server.url.clone().unwrap_or_default(),
        |argv| argv.join(" "),
    );
    let duration = trace.events.last().map_or(Duration::ZERO, |e| e.at);
    let side = |who: &str, findings: Vec<Finding>, requirements: &[&str]| {
        let case = Case {
            id: format!("{name}/{who}"),
            path: path.clone(),
            source: String::new(),
            intent: format!("What the {who} did in the recorded session, judged by the standing rules the live cases use"),
            requirements: requirements.iter().map(|r| (*r).to_string()).collect(),
            level: Level::Must,
            versions: checked.versions.clone(),
            fixtures: vec![],
            handshake: false,
            transports: vec![transport],
            stamp: false,
            timeout: None,
            fresh: None,
            plays: None,
            needs: vec![],
            deviation: None,
            deviation_line: 0,
            // The diff of a trace is empty on either side: both are drawn as recorded.
            role: Role::Server,
            steps: vec![],
            actions: vec![],
            outcomes: vec![],
            outcomes_line: 0,
        };
        let report = Report {
            outcome: Outcome::from_findings(Level::Must, &findings),
            findings,
            skip_reason: None,
            transcript: checked.transcript.clone(),
            log: checked.log.clone(),
            expected: vec![],
            bless: vec![],
            version: checked.version(),
            duration,
            stretched: 1.0,
            target: target.clone(),
            placement: Placement::Alone,
            opened: true,
            shared_opening: vec![],
            witnessed: vec![],
        };
        (case, report)
    };
    vec![
        side("server", checked.server.clone(), &SERVER_REQUIREMENTS),
        side("client", checked.client.clone(), &CLIENT_REQUIREMENTS),
    ]
}

/// The trace's file name without its extension (`session` for `out/session.jsonl`).
pub fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| "trace".to_string(), |s| s.to_string_lossy().into_owned())
}
