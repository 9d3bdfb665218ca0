//! What the page shows, worked out from the JSON reports before the template lays it out:
//! the runs as columns (a report at `--protocol-version all` is one column per version, a
//! client report over both transports one per transport), the cases as rows grouped by
//! requirement family, each cell an outcome, the problems first, and each run's timings.

mod columns;
mod rows;

use super::super::json::{FindingReport, RunReport, StderrLine, Summary, TranscriptEntry};
use super::super::timing::{CancelTiming, RunTimings};
use columns::columns_of;
use rows::{families_of, problems_of, rows_of};
use serde::Serialize;

/// One column of the matrix: a run of one target at one protocol version over one transport.
#[derive(Debug, Serialize)]
pub struct Column {
    /// Where it is in the page (`r0`, `r1`, …).
    pub key: String,
    /// The target's name and version, or its command when it gave none.
    pub target: String,
    /// The command (or URL) the target was started with.
    pub command: String,
    pub role: String,
    pub transport: String,
    /// The protocol version of the column: one version, or `auto: …`.
    pub version: String,
    /// The same in a word: the version, or `auto`.
    pub short_version: String,
    /// The versions its cases ran at.
    pub used: String,
    pub started_at: String,
    pub harness: String,
    /// The JSON report it came from.
    pub source: String,
    pub counts: Summary,
    pub timings: RunTimings,
    /// Why the target could not be tested at all, when it could not.
    pub error: Option<String>,
}

/// A family of requirements (CAN, PRG, HTTP, …) and its cases.
#[derive(Debug, Serialize)]
pub struct Family {
    pub code: String,
    pub name: String,
    pub rows: Vec<Row>,
}

/// A case, across the columns.
#[derive(Debug, Serialize)]
pub struct Row {
    /// The case id (without a client case's `@http`, which is a column here).
    pub id: String,
    /// Where its details are (`case-…`).
    pub anchor: String,
    pub intent: String,
    pub level: String,
    pub requirements: Vec<String>,
    /// One cell per column, `None` where the column did not run the case.
    pub cells: Vec<Option<Cell>>,
}

/// A case in a column.
#[derive(Debug, Serialize)]
pub struct Cell {
    /// Where its details are (`c-r0-…`).
    pub anchor: String,
    /// Its index among the cells whose transcripts the page embeds.
    pub data: usize,
    pub column: String,
    pub outcome: String,
    pub message: String,
    pub version: String,
    pub duration_ms: u64,
    pub flaky: bool,
    pub baseline: Option<String>,
    pub skip_reason: Option<String>,
    pub error: Option<String>,
    /// The findings, the weightiest first.
    pub findings: Vec<FindingReport>,
    /// The diff, line by line.
    pub diff: Vec<DiffLine>,
    /// The last lines of the target's stderr.
    pub stderr: Vec<StderrLine>,
    /// How many stderr lines there were in all.
    pub stderr_total: usize,
    /// The opening of the shared session the case went on in, one line per message with its
    /// arrow (`> …` the harness's, `< …` the target's); empty when it opened its own.
    pub shared_opening: Vec<String>,
    pub cancels: Vec<CancelTiming>,
    pub startup_ms: Option<f64>,
    /// How many entries the transcript has (its diagram is drawn from the embedded data).
    pub entries: usize,
    /// Shown open when the page loads: the first [`OPEN_AT_LOAD`] problems.
    pub open: bool,
}

/// How many problem cells the page opens (and draws) when it loads.
const OPEN_AT_LOAD: usize = 40;

/// One line of a diff, with what it is: `add`, `del`, `hunk`, `head` or `same`.
#[derive(Debug, Serialize)]
pub struct DiffLine {
    pub kind: &'static str,
    pub text: String,
}

/// What a diagram is drawn from: embedded in the page as JSON, drawn by its script.
#[derive(Debug)]
pub struct Diagram {
    /// The target as its lane is named.
    pub target: String,
    /// `server` or `client`: which side the target plays; `trace` for a recorded session,
    /// whose lanes are its client and its server.
    pub role: String,
    /// The findings above a note: (line, severity, requirement). A trace's entries carry
    /// their trace lines, so its diagram marks each finding on its message.
    pub findings: Vec<(usize, String, String)>,
    pub entries: Vec<TranscriptEntry>,
    pub cancels: Vec<CancelTiming>,
}

/// A cell that did not pass, for the list at the top.
#[derive(Debug, Serialize)]
pub struct Problem {
    pub anchor: String,
    pub outcome: String,
    pub id: String,
    pub column: String,
    pub message: String,
}

/// The page.
#[derive(Debug, Serialize)]
pub struct Page {
    /// The matrix's columns: a target at a protocol version over a transport.
    pub columns: Vec<Column>,
    /// The matrix's rows, grouped by requirement family.
    pub families: Vec<Family>,
    /// The cells that did not pass, for the list at the top.
    pub problems: Vec<Problem>,
    /// All cells together.
    pub totals: Summary,
    /// Per cell (by its `data`), what its diagram is drawn from.
    #[serde(skip)]
    pub diagrams: Vec<Diagram>,
}

/// The families in the order a reader of a cancellation harness looks for them.
const FAMILIES: [(&str, &str); 11] = [
    ("CAN", "Cancellation"),
    ("PRG", "Progress"),
    ("TMO", "Timeouts"),
    ("TSK", "Tasks"),
    ("LIF", "Lifecycle"),
    ("PING", "Ping"),
    ("RPC", "JSON-RPC messages"),
    ("TOOL", "Tool results"),
    ("STD", "stdio transport"),
    ("HTTP", "Streamable HTTP"),
    ("AMB", "Ambiguities"),
];

/// The family of a case: that of its first requirement.
pub fn family_of(requirements: &[String]) -> (String, String) {
    let code = requirements
        .first()
        .and_then(|r| r.split('-').next())
        .unwrap_or("")
        .to_string();
    let name = FAMILIES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or_else(|| "Other".to_string(), |(_, n)| n.to_string());
    (code, name)
}

/// How bad an outcome is, worst first.
pub fn rank(outcome: &str) -> u8 {
    match outcome {
        "fail" => 0,
        "warn" => 1,
        "info" => 2,
        "pass" => 3,
        _ => 4,
    }
}

/// The page for these reports, each with the name of the file it came from.
pub fn page(reports: Vec<(String, RunReport)>) -> Page {
    let (columns, per_column) = columns_of(reports);
    let (rows, totals, diagrams) = rows_of(&columns, per_column);
    let mut families = families_of(rows, columns.len());
    let problems = problems_of(&mut families);
    Page {
        columns,
        families,
        problems,
        totals,
        diagrams,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn case(
        id: &str,
        outcome: &str,
        version: &str,
        transport: &str,
        req: &str,
    ) -> serde_json::Value {
        json!({
            "id": id, "intent": "", "outcome": outcome, "level": "must", "requirements": [req],
            "message": format!("{outcome} message"), "durationMs": 1, "baseline": null,
            "runs": [outcome], "flaky": false, "protocolVersion": version, "era": null,
            "transport": transport, "findings": [], "stderr": {"lines": [], "total": 0},
            "transcript": [], "timings": {}
        })
    }

    fn report(protocol: &str, role: &str, cases: Vec<serde_json::Value>) -> RunReport {
        let stats = json!({"count": 0, "medianMs": null, "p95Ms": null, "maxMs": null});
        serde_json::from_value(json!({
            "schemaVersion": 1, "harness": {"name": "conformance", "version": "0"},
            "startedAt": "2026-12-02T00:00:00Z", "durationMs": 1, "role": role,
            "target": {"command": "t", "name": "srv", "version": "1"}, "transport": "stdio",
            "protocolVersion": protocol, "targetVersions": [],
            "summary": {"pass": 0, "fail": 0, "warn": 0, "info": 0, "skip": 0},
            "timings": {"cancelToQuiet": stats, "startup": stats, "roundTrip": stats},
            "cases": cases,
        }))
        .expect("a report")
    }

    #[test]
    fn columns_split_by_version_for_all_and_by_transport_rows_by_family() {
        let all = report(
            "all",
            "server",
            vec![
                case("server/a", "pass", "2025-11-25", "stdio", "PRG-01"),
                case("server/a", "fail", "2026-07-28", "stdio", "PRG-01"),
                case("server/b", "warn", "2026-07-28", "stdio", "CAN-05"),
            ],
        );
        let client = report(
            "auto",
            "client",
            vec![
                case("client/c@http", "pass", "2025-11-25", "http", "LIF-01"),
                case("client/c", "skip", "2025-11-25", "stdio", "LIF-01"),
            ],
        );
        let page = page(vec![("a.json".into(), all), ("c.json".into(), client)]);
        let columns: Vec<(&str, &str)> = page
            .columns
            .iter()
            .map(|c| (c.transport.as_str(), c.short_version.as_str()))
            .collect();
        assert_eq!(
            columns,
            [
                ("stdio", "2025-11-25"),
                ("stdio", "2026-07-28"),
                ("stdio", "auto"),
                ("http", "auto")
            ]
        );
        let families: Vec<&str> = page.families.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(families, ["CAN", "PRG", "LIF"], "cancellation first");
        // The client case over both transports is one row, a cell in each column.
        let c = &page.families[2].rows[0];
        assert_eq!(c.id, "client/c");
        assert!(c.cells[..2].iter().all(Option::is_none));
        assert!(c.cells[2..].iter().all(Option::is_some));
        let problems: Vec<(&str, &str)> = page
            .problems
            .iter()
            .map(|p| (p.outcome.as_str(), p.id.as_str()))
            .collect();
        assert_eq!(problems, [("fail", "server/a"), ("warn", "server/b")]);
        assert!(page.families[1].rows[0].cells[1]
            .as_ref()
            .is_some_and(|c| c.open));
        assert_eq!(page.totals.fail, 1);
        assert_eq!(page.columns[1].counts.fail, 1);
        assert_eq!(page.diagrams.len(), 5);
    }
}
